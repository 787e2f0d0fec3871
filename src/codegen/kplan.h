/* The kernel plan: every compile-time decision for one kernel, as a plain
 * struct filled before any IR exists. Pure C, no LLVM.
 *
 * One plan type for every kernel convjit builds (layout, conv, finalize):
 * the common header says how to launch it (block, grid, LDS, argument list);
 * the union holds the kind's specialization fields, each with its reason.
 *
 * The cache key is written field by field as text (cj_kplan_key), never a
 * memcmp of a padded struct; the runtime adds arch, LLVM and convjit version.
 *
 * Kernel arguments: every kernel's explicit arguments are listed in order in
 * args[] (name, size, pointer or value). Plan creation matches them with the
 * code object's metadata offsets and a bind per role (cj_plan_step_bind_args,
 * src/host/api_plan.c); a launch writes each bound value at its offset
 * (cj_plan_run, src/host/api_launch.c): one way to launch every kernel.
 */
#ifndef CJ_CODEGEN_KPLAN_H
#define CJ_CODEGEN_KPLAN_H

#include <stdint.h>
#include "arch/arch.h"
#include "util/cj.h"

#include "codegen/kops.h"

typedef enum cj_kop {
  CJ_KOP_NONE = 0,
#define CJ_KOP_ENUM(id, name, key, print, build, spec, prefix) CJ_KOP_##id,
  CJ_KOP_TABLE(CJ_KOP_ENUM)
#undef CJ_KOP_ENUM
  CJ_KOP_COUNT
} cj_kop;

/* What a kernel argument is, so builders fetch arguments and the host binds
 * them by meaning, never by position or name. R(ID, default name). */
#define CJ_ARG_ROLE_TABLE(R)                                                          \
  R(SRC, "src")             /* a layout kernel's input (x, or the raw weight) */      \
  R(DST, "dst")             /* a layout kernel's output */                            \
  R(X, "x")                 /* conv input activations */                              \
  R(W, "w")                 /* conv weight, packed */                                 \
  R(BIAS, "bias")           /* fp32 per output channel */                             \
  R(Y, "y")                 /* conv output */                                         \
  R(WORKSPACE, "ws")        /* fp32 split-K partial sums */                           \
  R(RESIDUAL, "residual")   /* z shaped and typed like y: + beta * z in the epilogue */ \
  R(SCALE, "scale")         /* fp32 per-channel scales (a pointer) */                \
  R(ALPHA, "alpha")         /* fp32 by value: per-tensor dequantization factor */    \
  R(QSCALE, "qscale")       /* fp32 by value: multiplier before an fp8 quantization */ \
  R(DY, "dy")               /* backward weight: the output gradient on the grid (GEMM A) */ \
  R(DW, "dw")               /* backward weight: the weight gradient (KCTRS) */ \
  R(DB, "db")               /* backward weight: the bias gradient (fp32, K) */ \
  R(DB_PART, "db_part")     /* backward weight: db's fp32 partial sums by dy's pre-pass (workspace) */ \
  R(GEOM, "geom")           /* u32 by value: a shape-generic kernel's sizes, in its plan's order */
typedef enum cj_arg_role {
  CJ_ARG_NONE = 0,
#define CJ_ARG_ENUM(id, name) CJ_ARG_##id,
  CJ_ARG_ROLE_TABLE(CJ_ARG_ENUM)
#undef CJ_ARG_ENUM
  CJ_ARG_ROLE_COUNT
} cj_arg_role;
const char *cj_arg_role_name(cj_arg_role r); /* "x", ...; NULL if unknown */

#define CJ_KPLAN_MAX_ARGS 32 /* the generic conv: 8 tensors and scalars + 24 sizes */
typedef struct cj_karg_desc {
  cj_arg_role role; /* what it is (builders and binders look it up by role) */
  const char *name; /* for dumps, error text and the kernel's parameter name */
  uint8_t is_ptr;   /* 1: global pointer (8 bytes), 0: by value */
  uint8_t size;     /* bytes: 4 or 8 */
} cj_karg_desc;

#include "codegen/kplan_layout.h"
#include "codegen/kplan_wgrad.h"
#include "codegen/kplan_conv.h"
#include "codegen/kplan_finalize.h"
#include "codegen/kplan_generic.h"
#include "codegen/kplan_direct.h"

/* The AMDGPU code object version a kernel is emitted as when its plan says
 * 0: v5 loads on every ROCm runtime since 5.2, v6 only since 6.2, and
 * convjit uses nothing v6 adds (generic targets); docs/api.md has the table. */
#define CJ_CODE_OBJECT_VERSION_DEFAULT 5u

typedef struct cj_kplan {
  cj_kop op;
  const cj_arch *arch;
  uint32_t code_object_version; /* 5 or 6; 0 = CJ_CODE_OBJECT_VERSION_DEFAULT (cj_kplan_co_version) */
  char name[64];          /* kernel symbol, derived from the plan (unique per key) */
  uint32_t block[3];      /* work-group size */
  uint64_t grid[3];       /* work-groups per dimension (must fit the launch limits) */
  uint32_t lds_bytes;     /* static LDS the kernel declares */
  uint32_t nargs;
  cj_karg_desc args[CJ_KPLAN_MAX_ARGS];
  union {
    cj_transpose_plan tr;
    cj_wpack_plan wp;
    cj_conv_plan conv;
    cj_finalize_plan fin;
    cj_grid_pack_plan gp;
    cj_wgrad_finalize_plan wf;
    cj_generic_plan gen;
    cj_direct_plan dir;
  } u;
} cj_kplan;

/* The code object version p's kernel is emitted as (5 or 6). */
uint32_t cj_kplan_co_version(const cj_kplan *p);
/* kops.c: canonical cache key of the plan (no arch/LLVM/convjit version:
 * the runtime appends those): the common head, then the op's own fields
 * through the op table's key hook. */
void cj_kplan_key(const cj_kplan *p, cj_strbuf *key);
/* kops.c: human-readable plan, one field per line, with each flag's reason. */
void cj_kplan_print(const cj_kplan *p, cj_strbuf *out);
/* An op's own key or print part (the op table's key and print columns). */
typedef void (*cj_kplan_part)(const cj_kplan *p, cj_strbuf *sb);
/* The common head of the key / the printout (p not NULL): op, name,
 * launch shape, LDS, arguments. */
void cj_kplan_key_head(const cj_kplan *p, cj_strbuf *key);
void cj_kplan_print_head(const cj_kplan *p, cj_strbuf *out);
/* Names the kernel "<prefix>_<16 hex digits of the key's hash>", the key
 * (cj_kplan_key's text: head + own_key, the op's key hook) being written
 * while p->name is still empty: one symbol per distinct plan. The op's
 * plan file passes its own hook, so naming calls nothing above it. */
convjit_status cj_kplan_name_from_key(cj_kplan *p, const char *prefix, cj_kplan_part own_key);
/* For the per-kind key/print parts (kplan_<family>.c), so every kind writes
 * the same syntax: key "field=value;", print "  field = value  # reason". */
void cj_kplan_key_u64(cj_strbuf *key, const char *field, uint64_t v);
void cj_kplan_print_u64(cj_strbuf *out, const char *field, uint64_t v, const char *reason);
const char *cj_kop_name(cj_kop op);         /* "transpose", ...; NULL if unknown */
cj_kop cj_kop_from_name(const char *name);  /* CJ_KOP_NONE if unknown */
const char *cj_kop_prefix(cj_kop op);       /* kernel symbol prefix; NULL if unknown */
/* Appends a pointer argument with its role (name NULL: the role's name). */
void cj_kplan_add_arg(cj_kplan *p, cj_arg_role role, const char *name);
/* Appends a 4-byte by-value argument (an fp32 scalar: ALPHA, QSCALE). */
void cj_kplan_add_value_arg(cj_kplan *p, cj_arg_role role, const char *name);
/* Index of the argument with that role in p->args, or -1 if it has none. */
int cj_kplan_arg_index(const cj_kplan *p, cj_arg_role role);

/* The op table's hooks (kops.h), each in its op's plan file. */
#define CJ_KOP_HOOKS(id, name, key, print, build, spec, prefix) \
  void key(const cj_kplan *p, cj_strbuf *sb);                   \
  void print(const cj_kplan *p, cj_strbuf *sb);
CJ_KOP_TABLE(CJ_KOP_HOOKS)
#undef CJ_KOP_HOOKS

#endif
