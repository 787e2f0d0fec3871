/* The objects behind the public handles (convjit_context, convjit_plan) and
 * the one launch path. Internal to src/host: tests may look inside; tools
 * use host/tool_api.h (which also declares the plan-creation and descriptor
 * functions they share with the host files).
 *
 * A plan is resolved at creation into launch-ready steps: each kernel step
 * holds its loaded kernel (with the code object's offset/size of every
 * explicit argument: cj_loaded.arg, the packer's layout), its grid/block,
 * and for every explicit argument the bind (what value), so a launch only
 * resolves binds and copies a few words into a stack buffer: no lookup, no
 * allocation, no lock. */
#ifndef CJ_HOST_PLAN_H
#define CJ_HOST_PLAN_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include "convjit/convjit.h"
#include "host/select.h"
#include "host/tool_api.h"
#include "runtime/cache.h"
#include "runtime/device.h"

/* plan_memo.c: the context's conv plan memo (normalized problem -> plan
 * copy), CJ_PLAN_MEMO_CAP entries, LRU, one mutex. Only
 * convjit_plan_create_conv uses it (no forced options). */
#define CJ_PLAN_MEMO_CAP 64
/* The key's 64-bit words per problem field type (plan_memo.c writes them). */
#define CJ_MEMO_WORDS_I64 1
#define CJ_MEMO_WORDS_I64X3 3
#define CJ_MEMO_WORDS_DTYPE 1
#define CJ_MEMO_WORDS_LAYOUT 1
#define CJ_MEMO_WORDS_KIND 1
#define CJ_MEMO_WORDS_F32 1
#define CJ_MEMO_WORDS_FLAG 1
#define CJ_MEMO_WORDS_INT 1
#define CJ_MEMO_WORDS_EPI (1 + CJ_EPI_MAX_OPS)
#define CJ_MEMO_WORDS(type, name, text, reason) +CJ_MEMO_WORDS_##type
enum { CJ_PLAN_MEMO_KEY_WORDS = 0 CJ_CONV_PROBLEM_FIELDS(CJ_MEMO_WORDS) };
typedef struct cj_plan_memo_entry {
  uint64_t key[CJ_PLAN_MEMO_KEY_WORDS]; /* the problem, field by field */
  uint64_t hash, used;                  /* used: the memo's clock at the last hit */
  uint64_t gen;                         /* cj_tune_generation() when put: older entries are not served */
  struct convjit_plan *plan;            /* owned; never handed out, only copied */
} cj_plan_memo_entry;
typedef struct cj_plan_memo {
  pthread_mutex_t mu;
  uint32_t cap, n; /* cap: CJ_PLAN_MEMO_CAP, lowered by tests and tools (0 = off) */
  uint64_t clock;
  _Atomic uint64_t hits; /* read without mu (convjit_context_get_info takes a const context) */
  cj_plan_memo_entry e[CJ_PLAN_MEMO_CAP];
} cj_plan_memo;

/* A context's handle (lifetime.c): a slot of a process-wide table that is
 * never freed, and the generation the slot had while this context lived.
 * Plans and events keep a copy, so they can ask whether their context is
 * still alive without reading it (it may be freed memory by then). */
typedef struct cj_ctx_ref {
  uint32_t slot;
  uint64_t gen; /* odd while the context lives; bumped at destroy */
} cj_ctx_ref;

struct convjit_context {
  cj_ctx_ref ref;
  struct convjit_event *events; /* live events (lifetime.c), released at destroy */
  cj_device *dev;
  const cj_arch *arch;
  int cu_count;
  uint32_t code_object_version; /* 5 or 6: every kernel of the context is emitted as this */
  cj_cache *cache;
  struct cj_db *tune_db; /* the tuning table's own connection to the cache database (tune_db.c) */
  char device_name[8];
  /* experimental emulator subset (api_emu.c): the copied id list the
   * emulator's launch options point to */
  uint64_t *emu_wg;
  size_t emu_nwg;
  cj_plan_memo memo;
  /* asynchronous compile (plan_async.c): the default of convjit_plan_create_conv
   * ($CONVJIT_ASYNC_COMPILE=1 at creation), the background jobs (waited for
   * before the cache and device go), a test hook holding every job's build
   * back until it is cleared (the context's destroy clears it) */
  int async_default;
  cj_jobs jobs;
  _Atomic int async_hold;
};

typedef struct cj_plan_step {
  cj_step_kind kind;
  /* KERNEL */
  const cj_loaded *k;
  char name[64];
  uint32_t grid[3], block[3];
  uint32_t nargs;
  cj_bind bind[CJ_KPLAN_MAX_ARGS]; /* argument i's value; where it goes: k->arg[i] */
  cj_cache_src source;
  double compile_ms;
  /* MEMSET */
  cj_bind dst;
  uint64_t memset_bytes;
} cj_plan_step;

typedef enum { CJ_PLAN_CONV = 1, CJ_PLAN_TRANSPOSE = 2 } cj_plan_op;

struct convjit_plan {
  convjit_context *ctx;
  cj_ctx_ref ctx_ref;            /* ctx's handle: checked before ctx is touched */
  cj_plan_op op;
  cj_seq seq;                    /* as selected (kernel plans, for describe) */
  cj_plan_step pack[CJ_SEQ_MAX_STEPS], fwd[CJ_SEQ_MAX_STEPS];
  uint32_t npack, nfwd;
  int tuned;                     /* 1: the tuning table's winner or convjit_plan_tune's */
  cj_conv_problem prob;          /* CJ_PLAN_CONV */
  /* Launch facts of a conv plan, derived once from its problem and kind
   * row (cj_plan_launch_facts) so that a launch only reads them. */
  uint32_t need, optional;       /* tensor masks: the kind's reads | writes, its optional ones */
  uint8_t align[CJ_TENSOR_COUNT]; /* bytes each tensor's base must be aligned to */
  /* Asynchronous plans (plan_async.c): the state shared with the background
   * build, NULL otherwise. pack/fwd then hold the fallback's steps and seq
   * the sizes announced; the launch lists come from cj_plan_launch_lists. */
  struct cj_plan_async *async;
};

/* Asynchronous compile (docs/api.md "Asynchronous compile"): the state a
 * plan shares with its background build (plan_async.c starts and runs it;
 * plan_lists.c reads it for launches and introspection). Reference-counted
 * by the plan and the job; the lists are written once, before the state
 * turns READY (release), and read after an acquire load of it. */
enum { CJ_ASYNC_PENDING = 0, CJ_ASYNC_READY = 1, CJ_ASYNC_FAILED = 2 };
typedef struct cj_plan_async {
  _Atomic int refs;
  _Atomic int state;
  pthread_mutex_t mu; /* with cv: waiters for the end of the job */
  pthread_cond_t cv;
  convjit_status st; /* FAILED: why */
  char err[1024];
  /* READY: the built plan's sequence and lists */
  cj_seq seq;
  cj_plan_step pack[CJ_SEQ_MAX_STEPS], fwd[CJ_SEQ_MAX_STEPS];
  uint32_t npack, nfwd;
  /* the job's input */
  convjit_context *ctx;
  struct convjit_plan *work; /* the plan being built: a private copy (owned) */
  cj_conv_opts forced;       /* the caller's forced options (has_forced) */
  int has_forced, memoize;
  uint64_t ws_bytes;         /* the workspace announced at creation: the built plan may not need more */
  cj_kplan pack_plan;        /* the packed weight's layout announced (the chosen pack step's plan) */
} cj_plan_async;

/* plan_lists.c. The lists a launch or an introspection uses: the plan's
 * own, or an asynchronous plan's built ones once published. */
typedef struct cj_plan_lists {
  const cj_plan_step *pack, *fwd;
  uint32_t npack, nfwd;
  const cj_seq *seq; /* the sequence the lists run (describe) */
  int pending;       /* the background build has not ended */
} cj_plan_lists;
void cj_plan_lists_now(const struct convjit_plan *p, cj_plan_lists *l);
/* cj_plan_lists_now for a launch on stream: a pending plan launched on a
 * stream being captured waits for its build (a graph must not keep the
 * fallback). */
convjit_status cj_plan_launch_lists(const struct convjit_plan *p, void *stream, cj_plan_lists *l);
/* Waits for the background build: OK with the plan's own kernels in use (or
 * a synchronous plan), else the build's failure (the plan keeps the fallback). */
convjit_status cj_plan_async_wait(const struct convjit_plan *p);
/* Waits, then folds the built lists into p (no shared state after): the
 * tuner, which replaces a plan's kernels. */
convjit_status cj_plan_async_settle(struct convjit_plan *p);
/* Drops one reference (the plan's at destroy, the job's at its end). */
void cj_plan_async_unref(cj_plan_async *a);
void cj_plan_async_release(struct convjit_plan *p); /* destroy: the plan's reference */
/* api_plan.c: the synchronous path in parts, for plan_async.c above it.
 * begin: a new plan of the descriptor (normalized), or the memo's copy
 * (*done = 1; o NULL only); on failure *out is NULL. choose: the tuning
 * table's winner when nothing is forced, else the candidate walk, every
 * kernel through the cache. finish: choose, then (o NULL) into the memo;
 * on failure p is freed. */
convjit_status cj_plan_conv_begin(convjit_context *ctx, const convjit_conv_desc *desc, const cj_conv_opts *o,
                                  struct convjit_plan **out, int *done);
convjit_status cj_plan_conv_choose(convjit_context *ctx, const cj_conv_opts *o, struct convjit_plan *p);
/* Nothing forced (o NULL, or every option 0): the tuning table may choose. */
int cj_conv_opts_automatic(const cj_conv_opts *o);
convjit_status cj_plan_conv_finish(convjit_context *ctx, const cj_conv_opts *o, struct convjit_plan *p);
/* plan_async.c: p (begun, not done) gets the kind's fallback steps and a
 * background job building its own; *started = 0 when the problem has no
 * fallback (or no thread starts): p is untouched and the caller finishes
 * it synchronously. */
convjit_status cj_plan_async_start(convjit_context *ctx, struct convjit_plan *p, const cj_conv_opts *o, int memoize,
                                   int *started);

/* plan_memo.c. get: 1 and *out = the memoized plan of prob (a copy), else
 * 0 (out untouched). put: memoizes a copy of p, a plan just built on the
 * public path (its steps then report memory hits, no compile time); an
 * allocation failure only skips the entry. set_cap: at most CJ_PLAN_MEMO_CAP,
 * evicting down to it. All thread-safe. */
void cj_plan_memo_init(cj_plan_memo *m);
void cj_plan_memo_free(cj_plan_memo *m);
int cj_plan_memo_get(cj_plan_memo *m, const cj_conv_problem *prob, struct convjit_plan *out);
void cj_plan_memo_put(cj_plan_memo *m, const struct convjit_plan *p);
/* put that replaces the problem's entry (a plan convjit_plan_tune switched). */
void cj_plan_memo_replace(cj_plan_memo *m, const struct convjit_plan *p);
void cj_plan_memo_set_cap(cj_plan_memo *m, uint32_t cap);
uint64_t cj_plan_memo_hits(const cj_plan_memo *m);

/* The values binds resolve to for one launch: the caller's pointer of each
 * tensor role (kinds.h), indexed by role (t[CJ_TENSOR_X]) or by its field's
 * name (.x), the same storage. */
typedef union cj_launch_ptrs {
  const void *t[CJ_TENSOR_COUNT];
  struct {
    const void *none_; /* CJ_TENSOR_NONE */
#define CJ_PTR_MEMBER(id, field, in_args, align, access, flag, noun, does, given) const void *field;
    CJ_TENSOR_TABLE(CJ_PTR_MEMBER)
#undef CJ_PTR_MEMBER
  };
} cj_launch_ptrs;
#define CJ_PTR_AT(id, field, in_args, align, access, flag, noun, does, given) \
  _Static_assert(offsetof(cj_launch_ptrs, field) == CJ_TENSOR_##id * sizeof(void *), "cj_launch_ptrs ." #field);
CJ_TENSOR_TABLE(CJ_PTR_AT)
#undef CJ_PTR_AT
/* api_launch.c: a launch's pointers from the caller's args, role by role. */
cj_launch_ptrs cj_launch_ptrs_of(const convjit_conv_args *a);
/* api_launch.c: the caller's convjit_conv_args read as this library's (struct_size
 * checked, VERSION naming it; appended fields past it read as NULL / 0). */
convjit_status cj_conv_args_read(const convjit_conv_args *args, convjit_conv_args *out);

/* api_plan.c: fills out's binds (nargs, bind) for kernel k, loaded for kp
 * (its argument layout fits kp: the cache checked it); INTERNAL when an
 * argument has no binding. */
convjit_status cj_plan_step_bind_args(const cj_kplan *kp, const cj_bind *bind, const cj_loaded *k, cj_plan_step *out);
/* api_launch.c: the checks of a conv launch (convjit_conv_execute and the forward
 * entry points; f: the message prefix of the fields, "args."), without the
 * launch, driven by the plan's kind row and the tensor-role table. */
convjit_status cj_conv_args_check(const struct convjit_plan *p, const convjit_conv_args *a, const char *f);
/* Bytes of convjit_conv_args in version 0.1 (every field up to
 * workspace_bytes): a caller's struct must hold at least these. */
#define CONV_ARGS_V1_SIZE (offsetof(convjit_conv_args, workspace_bytes) + sizeof(size_t))
/* api_launch.c: derives p's launch facts from its problem and kind (every
 * plan creation does, in plan_finish; a test that edits a plan's kind
 * calls it again). */
void cj_plan_launch_facts(convjit_plan *p);
/* api_launch.c: runs a step list (the only launch code). */
convjit_status cj_plan_run(const convjit_plan *p, const cj_plan_step *steps, uint32_t n, const cj_launch_ptrs *ptrs,
                           void *stream);
/* api_plan.c: p (prob set) rebuilt as the candidate o: selection and every
 * kernel through the cache. On failure p has no steps and the status says
 * why (UNSUPPORTED illegal, RESOURCE the gate, others). */
convjit_status cj_plan_build_with(convjit_context *ctx, const cj_conv_opts *o, convjit_plan *p);
/* api_plan.c: p's selected sequence (p->seq) resolved into launch steps, every
 * kernel through the cache; the steps of a failure are cleared. */
convjit_status cj_plan_resolve(convjit_context *ctx, convjit_plan *p);
/* lifetime.c: the context handle table. register gives ctx a live handle
 * (OUT_OF_MEMORY past CJ_MAX_CONTEXTS live contexts); release destroys the
 * context's remaining device events (their handles stay valid, detached)
 * and ends the handle; alive reads only the table. */
#define CJ_MAX_CONTEXTS 4096
convjit_status cj_ctx_register(convjit_context *ctx);
void cj_ctx_release(convjit_context *ctx);
int cj_ctx_alive(cj_ctx_ref r);
/* api_emu.c: OK for an emulator context; UNSUPPORTED naming fn and the device otherwise. */
convjit_status cj_need_emu(convjit_context *ctx, const char *fn);
/* INVALID_ARG unless the plan's context is alive (every plan entry point
 * that reaches the context or its kernels checks this first). */
convjit_status cj_plan_check_ctx(const convjit_plan *p);
convjit_status cj_check_dtype(convjit_dtype t, const char *field);
/* a*b into *r; INVALID_ARG naming `what` past 2^62. */
convjit_status cj_mul_checked(int64_t a, int64_t b, int64_t *r, const char *what);
/* desc.c: a caller's struct_size is known (>= v1 size, <= ours) or VERSION. */
convjit_status cj_check_struct_size(size_t struct_size, size_t v1, size_t ours, const char *what);
/* desc.c: a field appended to a public struct after its first version. */
typedef struct cj_appended {
  size_t off, size;
} cj_appended;
#define CJ_APPENDED(T, f) {offsetof(T, f), sizeof(((T *)0)->f)}
/* desc.c: a versioned public struct read from a caller: *dst holds this
 * library's defaults (its *_default()); the first version's fields (those
 * before f[0]) and every appended field (f[0..n), in order) the caller's
 * struct_size holds whole are copied from src, the others keep their
 * defaults. */
void cj_versioned_copy(void *dst, const void *src, size_t struct_size, const cj_appended *f, size_t n);
/* desc.c: the rank-3 descriptor that normalizes to p again (the tuning
 * table's problem text is parsed through it). */
void cj_conv_problem_to_desc(const cj_conv_problem *p, convjit_conv_desc *d);

#endif
