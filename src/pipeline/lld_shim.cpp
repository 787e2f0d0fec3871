// lld's ELF driver called as a library
// (Debian's liblld-22-dev), behind the C entry points of lld_shim.h.
//
// lld's library entry point (lld::lldMain with the ELF driver) runs one
// link per call and resets its global context afterwards; it is not
// reentrant, so link.c holds a mutex around every call. What lld prints
// goes to a string stream instead of the process's stdout/stderr.
//
// lld turns the malformed-ELF errors of its input readers into fatal()
// errors, and a fatal error outside an enabled llvm::CrashRecoveryContext
// ends the process with _exit(). Enabling crash recovery would install
// process-wide signal handlers in a library, so instead
// cj_liblld_check_input parses the object with LLVM's own reader first
// (the reader lld uses) and refuses what it cannot read.
#include <cstdio>
#include <string>

#include "lld/Common/Driver.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include "pipeline/lld_shim.h"

LLD_HAS_DRIVER(elf)

namespace lld {
std::string getLLDVersion(); // lld/Common/Version.h, whose Version.inc Debian does not ship
}

namespace {

void put(char *out, size_t cap, const std::string &s) {
  if (cap) std::snprintf(out, cap, "%s", s.c_str());
}

// Every part of the object that lld's ELF reader would reach through a
// fatal() check, read once; the first failure's text in why.
bool readable(const llvm::object::ObjectFile &obj, std::string &why) {
  uint64_t nsyms = 0;
  for (const llvm::object::SymbolRef &sym : obj.symbols()) {
    llvm::Expected<llvm::StringRef> name = sym.getName();
    if (!name) return why = "symbol name: " + llvm::toString(name.takeError()), false;
    llvm::Expected<llvm::object::section_iterator> sec = sym.getSection();
    if (!sec) return why = "symbol section: " + llvm::toString(sec.takeError()), false;
    llvm::Expected<llvm::object::SymbolRef::Type> type = sym.getType();
    if (!type) return why = "symbol type: " + llvm::toString(type.takeError()), false;
    nsyms++;
  }
  for (const llvm::object::SectionRef &s : obj.sections()) {
    llvm::Expected<llvm::StringRef> name = s.getName();
    if (!name) return why = "section name: " + llvm::toString(name.takeError()), false;
    llvm::Expected<llvm::StringRef> bytes = s.getContents();
    if (!bytes) return why = "section " + name->str() + ": " + llvm::toString(bytes.takeError()), false;
    for (const llvm::object::RelocationRef &r : s.relocations()) {
      llvm::object::symbol_iterator target = r.getSymbol();
      // an ELF symbol's raw reference is (symbol table section, index);
      // index 0 is the null symbol, which symbols() leaves out
      if (target != obj.symbol_end() && target->getRawDataRefImpl().d.b > nsyms) {
        char n[96];
        std::snprintf(n, sizeof n, " names symbol %llu of %llu",
                      static_cast<unsigned long long>(target->getRawDataRefImpl().d.b),
                      static_cast<unsigned long long>(nsyms));
        return why = "relocation in " + name->str() + n, false;
      }
    }
  }
  return true;
}

} // namespace

extern "C" int cj_liblld_check_input(const void *data, size_t size, char *msg, size_t cap) {
  llvm::StringRef bytes(static_cast<const char *>(data), size);
  if (!bytes.starts_with("\x7f" "ELF")) return 0; // lld's linker-script reader reports plain errors
  llvm::Expected<std::unique_ptr<llvm::object::ObjectFile>> obj =
      llvm::object::ObjectFile::createELFObjectFile(llvm::MemoryBufferRef(bytes, "object"));
  if (!obj) return put(msg, cap, "malformed ELF object: " + llvm::toString(obj.takeError())), 1;
  std::string why;
  if (!readable(**obj, why)) return put(msg, cap, "malformed ELF object: " + why), 1;
  return 0;
}

extern "C" int cj_liblld_link(int argc, const char *const *argv, char *msg, size_t cap, int *can_run_again) {
  std::string said;
  llvm::raw_string_ostream os(said);
  lld::Result r = lld::lldMain(llvm::ArrayRef<const char *>(argv, static_cast<size_t>(argc)), os, os,
                               {{lld::Gnu, &lld::elf::link}});
  os.flush();
  put(msg, cap, said);
  *can_run_again = r.canRunAgain ? 1 : 0;
  return r.retCode;
}

extern "C" void cj_liblld_version(char *out, size_t cap) { put(out, cap, lld::getLLDVersion()); }
