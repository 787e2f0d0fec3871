// The middle end's runner with per-pass CPU timing, and LLVM's backend
// pass timers (contract in pass_profile_llvm.h, pass_profile.h).
//
// Middle end: the new pass manager gives every pass and analysis to
// instrumentation callbacks, so timing is this call's own business: a
// stack of running passes and analyses, the innermost charged with the
// thread's CPU time until the next start or stop (exclusive times that add
// up to the whole). Nothing process-wide is touched; the same runner,
// without callbacks, is every build's middle end.
//
// Backend: codegen still runs on the legacy pass manager, which times
// passes only through LLVM's process-wide -time-passes switch and keeps
// the timers in one global group, keyed by pass address (a later build's
// pass allocated where an earlier build's was inherits that timer and its
// name, so only a process's first timed codegen is attributed right:
// pass_profile.h). The report, LLVM's text (title, a column header naming
// "--User+System--" among its columns, one line per timer, "Total" last),
// is read back here.
#include <time.h>

#include <string>
#include <vector>

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassInstrumentation.h"
#include "llvm/IR/PassTimingInfo.h"
#include "llvm/Pass.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/StandardInstrumentations.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "pipeline/pass_profile_llvm.h"

namespace {

double thread_cpu_s() {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

// The pass managers and adaptors nest real passes: their own time is the
// bookkeeping between them, charged to the pass that ran them (as LLVM's
// own pass timers do).
bool is_container(llvm::StringRef name) {
  return llvm::isSpecialPass(name, {"PassManager", "PassAdaptor", "AnalysisManagerProxy", "ModuleInlinerWrapperPass",
                                    "DevirtSCCRepeatedPass"});
}

class PassClock {
public:
  PassClock(cj_pass_cb cb, void *ctx) : cb(cb), ctx(ctx) {}

  void start(llvm::StringRef name, bool analysis) {
    charge();
    running.push_back({name.str(), analysis});
  }
  void stop() {
    charge();
    if (!running.empty()) running.pop_back();
  }

private:
  struct Entry {
    std::string name;
    bool analysis;
  };
  // The time since the last event goes to the innermost running entry.
  void charge() {
    double now = thread_cpu_s();
    if (!running.empty()) cb(ctx, running.back().name.c_str(), running.back().analysis, now - last);
    last = now;
  }
  cj_pass_cb cb;
  void *ctx;
  std::vector<Entry> running;
  double last = thread_cpu_s();
};

// LLVM's -time-passes report: the index among a line's "seconds (percent%)"
// fields of the column titled want, -1 if none. Titles sit between runs of
// two or more dashes.
int column_of(llvm::StringRef header, llvm::StringRef want) {
  int col = 0;
  for (size_t at = 0;;) {
    size_t start = header.find("--", at);
    if (start == llvm::StringRef::npos) return -1;
    size_t end = header.find_first_not_of('-', start);
    size_t close = end == llvm::StringRef::npos ? end : header.find("--", end);
    if (close == llvm::StringRef::npos) return -1;
    llvm::StringRef title = header.slice(end, close).trim();
    if (title == want) return col;
    if (title == "Name") return -1;
    col++;
    at = header.find_first_not_of('-', close);
    if (at == llvm::StringRef::npos) return -1;
  }
}

} // namespace

extern "C" LLVMErrorRef cj_llvm_run_passes(LLVMModuleRef m, const char *passes, LLVMTargetMachineRef tm,
                                           cj_pass_cb cb, void *ctx) {
  llvm::Module *mod = llvm::unwrap(m);
  llvm::PassInstrumentationCallbacks pic;
  llvm::PassBuilder pb(reinterpret_cast<llvm::TargetMachine *>(tm), llvm::PipelineTuningOptions(), std::nullopt,
                       &pic);
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  pb.registerLoopAnalyses(lam);
  pb.registerFunctionAnalyses(fam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerModuleAnalyses(mam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::StandardInstrumentations si(mod->getContext(), false, false);
  si.registerCallbacks(pic, &mam);
  PassClock clock(cb, ctx);
  if (cb) {
    pic.registerBeforeNonSkippedPassCallback([&clock](llvm::StringRef p, llvm::Any) {
      if (!is_container(p)) clock.start(p, false);
    });
    pic.registerAfterPassCallback([&clock](llvm::StringRef p, llvm::Any, const llvm::PreservedAnalyses &) {
      if (!is_container(p)) clock.stop();
    });
    pic.registerAfterPassInvalidatedCallback([&clock](llvm::StringRef p, const llvm::PreservedAnalyses &) {
      if (!is_container(p)) clock.stop();
    });
    pic.registerBeforeAnalysisCallback([&clock](llvm::StringRef p, llvm::Any) { clock.start(p, true); });
    pic.registerAfterAnalysisCallback([&clock](llvm::StringRef, llvm::Any) { clock.stop(); });
  }
  llvm::ModulePassManager mpm;
  if (llvm::Error e = pb.parsePassPipeline(mpm, passes)) return llvm::wrap(std::move(e));
  mpm.run(*mod, mam);
  return nullptr;
}

extern "C" void cj_llvm_time_passes(int on) { llvm::TimePassesIsEnabled = on != 0; }

extern "C" void cj_llvm_take_timers(void (*add)(void *ctx, const char *name, double cpu_s), void *ctx) {
  std::string text;
  {
    llvm::raw_string_ostream os(text);
    llvm::reportAndResetTimings(&os);
  }
  if (!add) return; // a reset only
  llvm::SmallVector<llvm::StringRef, 256> lines;
  llvm::StringRef(text).split(lines, '\n');
  int col = -1; // the User+System column
  for (llvm::StringRef line : lines) {
    llvm::StringRef l = line.trim();
    if (l.contains("--- Name ---")) {
      col = column_of(l, "User+System");
      continue;
    }
    if (col < 0 || l.empty()) continue;
    double cpu = 0;
    int field = 0;
    llvm::StringRef rest = l;
    while (!rest.empty() && (rest[0] == '.' || (rest[0] >= '0' && rest[0] <= '9'))) {
      size_t sp = rest.find(' '), close = rest.find(')');
      if (sp == llvm::StringRef::npos || close == llvm::StringRef::npos) break;
      double v = 0;
      if (field == col && !rest.substr(0, sp).getAsDouble(v)) cpu = v;
      field++;
      rest = rest.drop_front(close + 1).ltrim();
    }
    if (field <= col || rest.empty() || rest == "Total") continue;
    add(ctx, rest.str().c_str(), cpu);
  }
}
