/* convjit — JIT-specialized implicit-GEMM convolution kernels for AMD GPUs
 * (gfx942 / MI300X, gfx950 / MI355X), built with LLVM 22 at run time.
 *
 * This is the only header users include. Every function returns a
 * convjit_status; convjit_last_error() gives the text of the last failure on
 * the calling thread, naming the field and the value that was wrong.
 *
 * OWNERSHIP: every *_create has a *_destroy that accepts NULL.
 *
 * The path of one call: context -> plan (compiles or fetches every kernel)
 * -> workspace / packed-weight sizes -> weight pack (once per weight) ->
 * forward (enqueue only, many times). docs/api.md documents every function,
 * its errors and its ownership rules. The status codes below are fixed and
 * never renumbered.
 */
#ifndef CONVJIT_CONVJIT_H
#define CONVJIT_CONVJIT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(CONVJIT_BUILDING)
#define CONVJIT_API __attribute__((visibility("default")))
#else
#define CONVJIT_API
#endif

#define CONVJIT_VERSION_MAJOR 0
#define CONVJIT_VERSION_MINOR 1
#define CONVJIT_VERSION_PATCH 0
#define CONVJIT_VERSION_NUMBER \
  (CONVJIT_VERSION_MAJOR * 10000 + CONVJIT_VERSION_MINOR * 100 + CONVJIT_VERSION_PATCH)

/* Status codes: fixed numeric values, stable across versions. */
typedef enum convjit_status {
  CONVJIT_OK = 0,
  CONVJIT_ERR_INVALID_ARG = 1,  /* a parameter or descriptor field is wrong */
  CONVJIT_ERR_UNSUPPORTED = 2,  /* valid, but no kernel handles it (yet) */
  CONVJIT_ERR_OUT_OF_MEMORY = 3,
  CONVJIT_ERR_COMPILE = 4,      /* LLVM or ld.lld failed */
  CONVJIT_ERR_DEVICE = 5,       /* HIP / emulator backend failure */
  CONVJIT_ERR_RESOURCE = 6,     /* kernel spills, uses scratch or too much LDS */
  CONVJIT_ERR_IO = 7,           /* file system / cache database */
  CONVJIT_ERR_VERSION = 8,      /* header and library disagree */
  CONVJIT_ERR_INTERNAL = 9,     /* a convjit bug: please report */
  CONVJIT_ERR_EMULATION = 10    /* the emulator stopped the kernel (bad access, hazard, unknown op, budget) */
} convjit_status;

CONVJIT_API const char *convjit_status_string(convjit_status s);
/* Text of the last error on this thread ("" if none). Valid until the next
 * convjit call on the same thread. */
CONVJIT_API const char *convjit_last_error(void);
/* Library version as CONVJIT_VERSION_NUMBER. */
CONVJIT_API int convjit_version(void);


/* ========================================================================
 * Stable API
 * ======================================================================== */

/* ---- enums (fixed numeric values) -------------------------------------- */
typedef enum convjit_device_kind {
  CONVJIT_DEVICE_AUTO = 0, /* HIP when a device is present, else an error */
  CONVJIT_DEVICE_HIP = 1,  /* libamdhip64 loaded at run time (dlopen) */
  CONVJIT_DEVICE_EMU = 2   /* convjit's CPU emulator: times are EMULATED */
} convjit_device_kind;

typedef enum convjit_log_level {
  CONVJIT_LOG_FROM_ENV = 0, /* keep CONVJIT_LOG (default: silent) */
  CONVJIT_LOG_OFF = 1,
  CONVJIT_LOG_ERROR = 2,
  CONVJIT_LOG_INFO = 3,     /* compiles with ms, cache hits/misses, chosen kernels */
  CONVJIT_LOG_DEBUG = 4
} convjit_log_level;

typedef enum convjit_dtype {
  CONVJIT_DTYPE_BF16 = 1,
  CONVJIT_DTYPE_FP8_E4M3FN = 2,   /* OCP fp8 (gfx950 native) */
  CONVJIT_DTYPE_FP8_E4M3FNUZ = 3, /* gfx942 native fp8 */
  CONVJIT_DTYPE_F32 = 4,
  CONVJIT_DTYPE_F16 = 5           /* IEEE binary16 (docs/api.md "Dtypes") */
} convjit_dtype;

/* The fused epilogue's activation, applied last (docs/api.md "Fused
 * epilogue"). Fixed numeric values. */
typedef enum convjit_activation {
  CONVJIT_ACT_IDENTITY = 0,
  CONVJIT_ACT_RELU = 1,
  CONVJIT_ACT_SILU = 2,     /* v * sigmoid(v) */
  CONVJIT_ACT_GELU_TANH = 3 /* 0.5 v (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3))) */
} convjit_activation;

/* What a conv computes. The descriptor always describes the FORWARD
 * problem (x N,C,D,H,W; w K,C/groups,T,R,S; y N,K,Do,Ho,Wo), as MIOpen's
 * directions do; the kind says which of those tensors are inputs and which
 * is the output (convjit_conv_args). Fixed numeric values. */
typedef enum convjit_conv_kind {
  CONVJIT_CONV_FORWARD = 0,         /* y from x and w */
  CONVJIT_CONV_BACKWARD_DATA = 1,   /* dx from dy and w (also the transposed convolution's forward) */
  CONVJIT_CONV_BACKWARD_WEIGHT = 2  /* dw (and optionally db) from x and dy */
} convjit_conv_kind;

typedef enum convjit_layout {
  CONVJIT_LAYOUT_NCDHW = 1, /* channels-first (NCHW / NCW for 2D / 1D) */
  CONVJIT_LAYOUT_NDHWC = 2  /* channels-last (PyTorch channels_last_3d; NHWC / NWC), read and written in place */
} convjit_layout;

/* ---- context ------------------------------------------------------------
 * A context binds one device backend, its loaded kernels and the kernel
 * cache. Thread-safe: plans may be created from many threads at once. */
typedef struct convjit_context convjit_context;

typedef struct convjit_context_options {
  size_t struct_size;       /* sizeof(convjit_context_options) as compiled by the caller */
  int header_version;       /* CONVJIT_VERSION_NUMBER as compiled by the caller */
  convjit_device_kind device;
  int device_index;         /* HIP device ordinal; -1 = the current device */
  const char *arch;         /* "gfx942" / "gfx950"; NULL = the device's (emulator: gfx950) */
  const char *cache_dir;    /* NULL = $CONVJIT_CACHE_DIR, $XDG_CACHE_HOME/convjit, ~/.cache/convjit */
  int disable_disk_cache;   /* 1 = memory cache only (also CONVJIT_DISABLE_CACHE=1) */
  convjit_log_level log_level; /* process-wide; FROM_ENV leaves it alone */
  /* AMDGPU code object version of the kernels (ELF EI_ABIVERSION): 5 or 6;
   * 0 = the library's default, 5 (loads on ROCm 5.2 and later; v6 needs
   * ROCm 6.2; table in docs/api.md). Part of the cache key; a struct
   * from a header without this field gets the default. */
  int code_object_version;
} convjit_context_options;

/* Defaults: struct_size/header_version of this header, device AUTO, index -1,
 * code object version 0 (the library's default). */
static inline convjit_context_options convjit_context_options_default(void) {
  convjit_context_options o;
  o.struct_size = sizeof(convjit_context_options);
  o.header_version = CONVJIT_VERSION_NUMBER;
  o.device = CONVJIT_DEVICE_AUTO;
  o.device_index = -1;
  o.arch = NULL;
  o.cache_dir = NULL;
  o.disable_disk_cache = 0;
  o.log_level = CONVJIT_LOG_FROM_ENV;
  o.code_object_version = 0;
  return o;
}

/* opts may be NULL (defaults). Errors: INVALID_ARG (bad field, or arch
 * differs from the device's), VERSION (header major differs from the
 * library's, or struct_size unknown), DEVICE (no HIP library / no device:
 * the loader's or HIP's text), UNSUPPORTED (the device is not gfx942/950).
 * The disk cache never fails creation: an unusable directory or a damaged
 * database is logged and the disk level rebuilt or turned off.
 * *ctx is NULL on failure. */
CONVJIT_API convjit_status convjit_context_create(const convjit_context_options *opts, convjit_context **ctx);
/* Frees the context and its kernels. NULL-safe. Its plans and events may be
 * destroyed before or after it; using them after it is INVALID_ARG. */
CONVJIT_API void convjit_context_destroy(convjit_context *ctx);

typedef struct convjit_context_info {
  size_t struct_size;     /* set by the caller: sizeof(convjit_context_info) */
  char device[8];         /* "hip" / "emu" */
  char arch[16];          /* "gfx942" / "gfx950" */
  int cu_count;
  int emulated;           /* 1: every time this context reports is EMULATED */
  int disk_cache;         /* 1 if the disk cache is on */
  char cache_path[512];   /* the SQLite file, "" when off */
  /* Counters since creation (all plans): */
  uint64_t kernels_compiled;  /* codegen + LLVM + link runs */
  uint64_t memory_hits;       /* found loaded in this context */
  uint64_t disk_hits;         /* code object read from the disk cache */
  uint64_t disk_misses;
  /* Later field (a struct_size up to disk_misses is accepted: filled to there): */
  char device_model[64];      /* HIP: hipDeviceGetName ("AMD Instinct MI300X"), "" if unknown; emu: "" */
  /* convjit_plan_create_conv calls answered by the context's plan memo (a
   * copy of the plan this descriptor got before; no kernel lookup, so the
   * four counters above do not move): */
  uint64_t plan_memo_hits;
} convjit_context_info;
CONVJIT_API convjit_status convjit_context_get_info(const convjit_context *ctx, convjit_context_info *info);

/* ---- convolution descriptor -----------------------------------------------
 * A conv problem, described as its forward conv (kind: forward unless set;
 * backward data, also the transposed convolution's forward, computes dx
 * from dy and w, convjit_conv_desc_from_transpose fills it from
 * PyTorch-style ConvTranspose parameters; backward weight computes dw in
 * w_dtype, the inputs' 16-bit type or f32, and db when has_bias). Forward conv,
 * y = act(alpha * conv(x, w) + beta * z + bias) (the fused
 * epilogue fields last; the default is y = conv(x, w) + bias). Extents are given for the first
 * spatial_rank dims (D,H,W for 3D; H,W for 2D; W for 1D); the rest are
 * ignored. A valid descriptor that no kernel handles yet gives
 * CONVJIT_ERR_UNSUPPORTED with the reason, never a wrong answer.
 *
 * Dtypes (docs/api.md "Dtypes", "fp8 formats"): x and w both bf16 compute
 * in bf16, both f16 in f16 (f16 beside another dtype: UNSUPPORTED), with
 * fp32 accumulation; y_dtype is the inputs' 16-bit type (round to nearest
 * even; f16 past 65504 is inf) or f32 (no final rounding).
 * When either is fp8 the conv computes in fp8 and gives bf16 (or f32)
 *   y = acc * x_scale * w_scale * scale[k] + bias[k]
 * (scale[k] only with has_channel_scale): an fp8 operand may be either
 * E4M3 flavour (E4M3FN is mapped exactly on gfx942; E4M3FNUZ on gfx950 is
 * UNSUPPORTED), a bf16 operand beside it is quantized by the pre-pass to
 * fp8(fl32(v * fl32(1 / its scale))), saturated to the largest finite fp8.
 * Scales are per tensor, fp32, finite and > 0 (0 = 1.0) and only for fp8
 * convs; they are plan values, not kernel constants. */
typedef struct convjit_conv_desc {
  size_t struct_size;      /* sizeof(convjit_conv_desc) */
  int spatial_rank;        /* 1, 2 or 3 */
  int64_t n, c, k;         /* batch, input channels, output channels */
  int64_t in[3];           /* input extents (D,H,W) */
  int64_t filter[3];       /* filter extents (T,R,S) */
  int64_t stride[3];       /* >= 1 */
  int64_t pad_lo[3];       /* padding before, >= 0 */
  int64_t pad_hi[3];       /* padding after, >= 0 */
  int64_t dilation[3];     /* >= 1 */
  int64_t groups;          /* >= 1, divides c and k; w is k x c/groups x T x R x S (PyTorch). c/groups must be
                              a multiple of 8 (bf16, f16) / 16 (fp8), or 1 (depthwise: bf16 / f16, k/c in 1..8,
                              the direct kernels of every kind; otherwise UNSUPPORTED) */
  convjit_dtype x_dtype, w_dtype, y_dtype;
  convjit_layout x_layout, y_layout;
  int has_bias;            /* 1: fp32 bias of k elements */
  float x_scale, w_scale;  /* dequantization scales (0 = 1.0) of an fp8 conv: x ~ x_scale * fp8 x */
  /* appended after the 0.1 fields: a struct_size without it reads as 0 */
  int has_channel_scale;   /* 1: convjit_conv_args.scale, fp32 x k weight scales (fp8 w only) */
  /* Fused epilogue, cuDNN's ConvBiasActivation form (docs/api.md):
   *   y = act(alpha * conv(x, w) + beta * z + bias)
   * alpha the fp8 dequantization above (1 for bf16 and f16), z = args.residual
   * (y's dtype, shape and layout). Appended after has_channel_scale: a struct_size
   * without them reads as no residual, beta 1, identity. */
  int has_residual;        /* 1: convjit_conv_args.residual is read */
  float beta;              /* z's factor, finite (0 = 1.0; a plan constant) */
  convjit_activation act;
  /* Causal streaming (docs/api.md "Causal streaming"): 1 = the time taps
   * before this chunk read convjit_conv_args.x_prev (the previous chunk's
   * last pad_lo[0] input frames, N,C,pad_lo[0],H,W in x_dtype) instead of
   * zeros. 3D, pad_lo[0] == (filter[0]-1)*dilation[0] > 0, stride[0] 1,
   * n 1. Appended after act: a struct_size without it reads as 0. */
  int has_x_prev;
  /* What the plan computes (convjit_conv_kind). Appended after has_x_prev:
   * a struct_size without it reads as forward. */
  convjit_conv_kind kind;
  /* Backward data only (the transposed convolution's output_padding, per
   * dim of the first spatial_rank): 0 <= output_padding[i] < max(stride[i],
   * dilation[i]) (PyTorch's rule). x = dx keeps the extents in[]; dy's are
   * the forward output dims of in[i] - output_padding[i] input positions
   * (convjit_conv_output_dims gives them), which is how a transposed conv
   * picks one of the stride sizes mapping to the same dy. The fused
   * epilogue works over dx (bias of c elements, residual shaped like dx).
   * Appended after kind: a struct_size without it reads as 0. */
  int64_t output_padding[3];
  /* Forward only: nearest-neighbour upsampling of x fused into the conv's
   * input read, per dim of the first spatial_rank: 1 or 2 (0 = 1). The conv
   * (stride, padding, dilation, output dims) is over x upsampled to
   * upsample[i]*in[i]; x itself is never upsampled in memory. The result is
   * bit for bit that of the same conv of the upsampled tensor (the same
   * products summed in the same order). Appended after output_padding: a
   * struct_size without it reads as 0. */
  int64_t upsample[3];
  /* Backward weight's cross-workgroup reduction (docs/api.md "Problem
   * kinds"): 0 = deterministic, dw and db bit-identical on every run and
   * every grid (fixed reduction blocks, added in order); 1 = fp32 atomics
   * across the blocks instead: less workspace, but dw's last bits may
   * differ from run to run. Other kinds: 0. Appended after upsample: a
   * struct_size without it reads as 0. */
  int nondeterministic;
} convjit_conv_desc;

/* A 3D descriptor with every field at its neutral value (stride and
 * dilation 1, padding 0, groups 1, bf16, NCDHW, no bias, no scales); set
 * n, c, k, in, filter. */
static inline convjit_conv_desc convjit_conv_desc_default(void) {
  convjit_conv_desc d;
  int i;
  d.struct_size = sizeof(convjit_conv_desc);
  d.spatial_rank = 3;
  d.n = d.c = d.k = 0;
  for (i = 0; i < 3; i++) {
    d.in[i] = 0; d.filter[i] = 0; d.stride[i] = 1;
    d.pad_lo[i] = 0; d.pad_hi[i] = 0; d.dilation[i] = 1;
  }
  d.groups = 1;
  d.x_dtype = d.w_dtype = d.y_dtype = CONVJIT_DTYPE_BF16;
  d.x_layout = d.y_layout = CONVJIT_LAYOUT_NCDHW;
  d.has_bias = 0;
  d.x_scale = d.w_scale = 0.0f;
  d.has_channel_scale = 0;
  d.has_residual = 0;
  d.beta = 0.0f;
  d.act = CONVJIT_ACT_IDENTITY;
  d.has_x_prev = 0;
  d.kind = CONVJIT_CONV_FORWARD;
  for (i = 0; i < 3; i++) {
    d.output_padding[i] = 0;
    d.upsample[i] = 0;
  }
  d.nondeterministic = 0;
  return d;
}

/* A transposed convolution as PyTorch's ConvTranspose1d/2d/3d and
 * conv_transpose1d/2d/3d state it: input (N, c_in, in...), weight (c_in,
 * c_out/groups, filter...), output (N, c_out, out...) with out[i] =
 * (in[i]-1)*stride[i] - 2*padding[i] + dilation[i]*(filter[i]-1) +
 * output_padding[i] + 1. Per dim of the first spatial_rank. */
typedef struct convjit_conv_transpose_params {
  size_t struct_size;   /* sizeof(convjit_conv_transpose_params) */
  int spatial_rank;     /* 1, 2 or 3 */
  int64_t n, c_in, c_out;
  int64_t in[3];        /* the transposed conv's input extents */
  int64_t filter[3];
  int64_t stride[3];    /* >= 1 */
  int64_t padding[3];   /* >= 0, both sides */
  int64_t output_padding[3]; /* 0 <= output_padding < max(stride, dilation) */
  int64_t dilation[3];  /* >= 1 */
  int64_t groups;       /* divides c_in and c_out */
} convjit_conv_transpose_params;

/* stride, dilation 1, padding and output_padding 0, groups 1, rank 3; set
 * n, c_in, c_out, in, filter. */
static inline convjit_conv_transpose_params convjit_conv_transpose_params_default(void) {
  convjit_conv_transpose_params t;
  int i;
  t.struct_size = sizeof(convjit_conv_transpose_params);
  t.spatial_rank = 3;
  t.n = t.c_in = t.c_out = 0;
  for (i = 0; i < 3; i++) {
    t.in[i] = t.filter[i] = 0;
    t.stride[i] = t.dilation[i] = 1;
    t.padding[i] = t.output_padding[i] = 0;
  }
  t.groups = 1;
  return t;
}

/* Checks a descriptor without a context (no compile). Errors: INVALID_ARG
 * naming the field and value; UNSUPPORTED for valid-but-unhandled fields
 * (a kind's own limits, e.g. "desc.x_dtype = ...: backward weight takes ..."). */
CONVJIT_API convjit_status convjit_conv_desc_validate(const convjit_conv_desc *desc);
/* Output extents (Do,Ho,Wo; unused dims 1) of a valid descriptor: the
 * forward problem's y (for backward data: dy's extents). */
CONVJIT_API convjit_status convjit_conv_output_dims(const convjit_conv_desc *desc, int64_t out[3]);
/* Fills desc's problem fields from a transposed convolution: kind =
 * backward data of the forward conv it transposes (x = its output: c =
 * c_out, extents out[] above; w: k = c_in; pads padding[] both sides;
 * output_padding), spatial_rank, n, stride, dilation, groups. desc must
 * come from convjit_conv_desc_default (or be valid): its dtypes, layouts
 * and epilogue fields stay as the caller set them (bias: c_out elements,
 * residual shaped like the output). INVALID_ARG naming the params field
 * (params.output_padding[1] = 2: must be < max(stride, dilation) = 2; an
 * output extent < 1); VERSION for an unknown struct_size. desc is only
 * written on success. */
CONVJIT_API convjit_status convjit_conv_desc_from_transpose(const convjit_conv_transpose_params *params,
                                                           convjit_conv_desc *desc);

/* ---- transpose (layout op) descriptor -------------------------------------
 * y[n][s][c] = x[n][c][s]: NCDHW -> NDHWC with s = D*H*W, element bytes from
 * dtype (bf16, f16: 2; fp8 either flavour: 1). The pre-pass of the conv kernels,
 * reachable on its own. */
typedef struct convjit_transpose_desc {
  size_t struct_size;   /* sizeof(convjit_transpose_desc) */
  int64_t n, c, s;
  convjit_dtype dtype;
} convjit_transpose_desc;

/* ---- plans ----------------------------------------------------------------
 * A plan is one op for one shape on one context: every kernel of its launch
 * sequence compiled (or fetched from the cache) and loaded at creation.
 * Immutable after creation (convjit_plan_tune alone replaces its kernels):
 * launches from several threads are safe. */
typedef struct convjit_plan convjit_plan;

/* Errors: INVALID_ARG, UNSUPPORTED, COMPILE (LLVM/ld.lld text), RESOURCE (a
 * kernel spills, uses scratch or too much LDS), DEVICE (module load), IO is
 * never returned (a broken disk cache is moved aside and rebuilt). A conv
 * descriptor the context planned before gets a copy of that plan from the
 * context's plan memo (64 plans, LRU; docs/api.md), a plan like any other. */
CONVJIT_API convjit_status convjit_plan_create_conv(convjit_context *ctx, const convjit_conv_desc *desc,
                                                    convjit_plan **plan);
CONVJIT_API convjit_status convjit_plan_create_transpose(convjit_context *ctx, const convjit_transpose_desc *desc,
                                                         convjit_plan **plan);

/* Asynchronous compile (docs/api.md "Asynchronous compile"). With
 * CONVJIT_PLAN_ASYNC_COMPILE (or CONVJIT_ASYNC_COMPILE=1 in the environment
 * when the context was created, for convjit_plan_create_conv) a conv plan
 * is returned before its own kernels are built: until they are, its
 * launches run shape-generic kernels of the same dtypes and epilogue
 * (compiled once per process, kept by the disk cache and by a warm
 * application cache, convjit-prebuild), which read the same buffers and
 * meet the same error bounds; the plan switches to its own kernels at the
 * first launch after they are loaded, never inside a launch, and a launch
 * on a stream being captured waits for them first. The workspace and
 * packed-weight sizes are final at creation. A problem with no generic
 * kernels (another kind, causal streaming, tensors of 4 GiB or more) is
 * planned synchronously, as without the flag. CONVJIT_PLAN_SYNC_COMPILE
 * builds them now whatever the environment says. */
#define CONVJIT_PLAN_ASYNC_COMPILE 1u
#define CONVJIT_PLAN_SYNC_COMPILE 2u
/* convjit_plan_create_conv with flags (CONVJIT_PLAN_*; other bits, or both:
 * INVALID_ARG). */
CONVJIT_API convjit_status convjit_plan_create_conv_flags(convjit_context *ctx, const convjit_conv_desc *desc,
                                                          unsigned flags, convjit_plan **plan);
/* Conv knobs: the tuning choices a caller may force (tile, wave grid,
 * stages, split-K, WGM, ...; docs/tuning.md), the tunable rows of convjit's
 * knob table, so that a framework offering them (the hipDNN engine plugin,
 * docs/hipdnn.md) reads names and domains here instead of retyping them. */
typedef struct convjit_knob_info {
  size_t struct_size;  /* set by the caller: sizeof(convjit_knob_info) */
  char name[16];       /* "tile", "waves", "stages", "splitk", "wgm", ... */
  int pair;            /* 1: the value is AxB (two numbers), else one number */
  uint32_t lo, hi;     /* the domain of each number */
  char help[128];
} convjit_knob_info;
/* How many knobs convjit_conv_knob_info describes (indices 0 .. count-1). */
CONVJIT_API convjit_status convjit_conv_knob_count(int *count);
/* INVALID_ARG naming the index past the end; VERSION for an unknown struct_size. */
CONVJIT_API convjit_status convjit_conv_knob_info(int index, convjit_knob_info *info);
/* convjit_plan_create_conv with some knobs forced: knobs is space-separated
 * name=value text ("tile=128x128 waves=2x4 stages=4 splitk=1 wgm=8", the
 * form of convjit_tune_candidate.knobs); NULL or "" forces nothing and is
 * convjit_plan_create_conv. INVALID_ARG naming the knob for an unknown
 * name, bad syntax or a 0; a value the plan init refuses for this shape
 * fails creation with its reason (a forced plan never falls back to
 * another choice). Forced plans bypass the plan memo and the tuning table. */
CONVJIT_API convjit_status convjit_plan_create_conv_knobs(convjit_context *ctx, const convjit_conv_desc *desc,
                                                          const char *knobs, convjit_plan **plan);
/* Waits until the plan runs its own kernels: OK then (at once for a plan
 * compiled synchronously); else the background build's failure (COMPILE,
 * RESOURCE, ... with its text), and the plan keeps running the generic
 * kernels, correct but slower. */
CONVJIT_API convjit_status convjit_plan_wait(const convjit_plan *plan);
/* NULL-safe; also after the plan's context is destroyed. */
CONVJIT_API void convjit_plan_destroy(convjit_plan *plan);

/* Bytes of caller-allocated scratch convjit_conv_fwd needs (may be 0). */
CONVJIT_API convjit_status convjit_plan_workspace_size(const convjit_plan *plan, size_t *bytes);
/* Bytes of the packed-weight buffer convjit_weight_pack writes (conv plans). */
CONVJIT_API convjit_status convjit_plan_packed_weight_size(const convjit_plan *plan, size_t *bytes);

/* Once per weight: w (K,C,T,R,S, w_dtype) -> w_packed (caller memory of
 * convjit_plan_packed_weight_size bytes). Enqueued on stream. A plan whose
 * kind reads no weight (backward weight, a transpose) is INVALID_ARG. */
CONVJIT_API convjit_status convjit_weight_pack(const convjit_plan *plan, const void *w, void *w_packed,
                                               void *stream);
/* Enqueues the forward conv on stream: no compile, no allocation, no
 * synchronization (safe under HIP graph capture). bias: NULL unless the
 * descriptor has_bias. workspace: workspace_bytes >= the plan's size (may
 * be NULL/0 when that is 0). Pointers are device pointers of the context,
 * aligned: x, w_packed, workspace 16 bytes; y 4 elements; bias 4 bytes
 * (docs/api.md "Alignment"; else INVALID_ARG naming the pointer). */
CONVJIT_API convjit_status convjit_conv_fwd(const convjit_plan *plan, const void *x, const void *w_packed,
                                            const void *bias, void *y, void *workspace, size_t workspace_bytes,
                                            void *stream);

/* The tensors of one forward conv, by role: the argument list of
 * convjit_conv_forward, a struct so that inputs of fused epilogues have a
 * place without a new entry point per epilogue. Device pointers of the
 * context; optional ones are NULL unless the plan takes them. */
typedef struct convjit_conv_args {
  size_t struct_size;     /* sizeof(convjit_conv_args) as compiled by the caller */
  const void *x;          /* input activations (N,C,D,H,W, x_dtype) */
  const void *w_packed;   /* written by convjit_weight_pack */
  const void *bias;       /* fp32, k elements; NULL unless the descriptor has_bias */
  const void *residual;   /* z: y's dtype and shape, beta * z added before the bias; NULL unless has_residual */
  const void *scale;      /* fp32 per output channel; NULL unless the descriptor has_channel_scale */
  void *y;                /* output (N,K,Do,Ho,Wo, y_dtype) */
  void *workspace;        /* workspace_bytes of scratch (may be NULL when the plan needs 0) */
  size_t workspace_bytes; /* >= convjit_plan_workspace_size */
  /* appended: the previous chunk's last frames (has_x_prev plans only; NULL
   * otherwise); a struct_size without it reads as NULL */
  const void *x_prev;
  /* appended: the bytes of the x_prev tensor the caller holds. The plan
   * reads exactly N*C*pad_lo[0]*H*W elements of x_dtype (NCDHW) there, so
   * with x_prev given this must equal that (INVALID_ARG naming both
   * otherwise: a tensor of other frames, channels or extents is not read).
   * A struct_size without it (an older header) is not checked. */
  size_t x_prev_bytes;
  /* appended: the tensors of the backward kinds (convjit_conv_execute), NULL
   * for a forward plan; a struct_size without them reads as NULL.
   * dy: the output gradient (y's shape), read by backward data and weight;
   * dx: the input gradient (x's shape), written by backward data;
   * dw: the weight gradient (w's shape), written by backward weight;
   * db: the bias gradient (fp32, k elements), optional output of backward weight. */
  const void *dy;
  void *dx;
  void *dw;
  void *db;
} convjit_conv_args;

/* struct_size of this header, every pointer NULL, workspace_bytes 0. */
static inline convjit_conv_args convjit_conv_args_default(void) {
  convjit_conv_args a;
  a.struct_size = sizeof(convjit_conv_args);
  a.x = a.w_packed = a.bias = a.residual = a.scale = NULL;
  a.y = a.workspace = NULL;
  a.workspace_bytes = 0;
  a.x_prev = NULL;
  a.x_prev_bytes = 0;
  a.dy = NULL;
  a.dx = a.dw = a.db = NULL;
  return a;
}

/* convjit_conv_fwd with the tensors in a struct (same enqueue-only rules).
 * Errors: INVALID_ARG (NULL plan/args, a required pointer NULL, bias or an
 * epilogue input the plan takes missing — scale when has_channel_scale,
 * residual when has_residual, x_prev when has_x_prev —, x_prev_bytes not
 * the plan's, bias given without has_bias, short workspace, not a conv
 * plan, a plan of another kind),
 * UNSUPPORTED (residual or scale given to a plan that takes none),
 * VERSION (struct_size unknown). */
CONVJIT_API convjit_status convjit_conv_forward(const convjit_plan *plan, const convjit_conv_args *args,
                                                void *stream);
/* Enqueues a conv plan of any kind (the descriptor's): the tensors its kind
 * reads and writes, by role (forward: x, w_packed, y and its epilogue
 * inputs; backward data: dy, w_packed, dx; backward weight: x, dy, dw and
 * optionally db), checked as convjit_conv_forward checks them; a tensor
 * the kind does not take, given, is INVALID_ARG naming it. The same
 * enqueue-only rules. convjit_conv_forward / convjit_conv_fwd take forward
 * plans only (another kind: INVALID_ARG naming convjit_conv_execute). */
CONVJIT_API convjit_status convjit_conv_execute(const convjit_plan *plan, const convjit_conv_args *args,
                                                void *stream);
/* Enqueues a transpose plan: x (N,C,S) -> y (N,S,C). Same rules as conv_fwd. */
CONVJIT_API convjit_status convjit_transpose(const convjit_plan *plan, const void *x, void *y, void *stream);

/* ---- autotuning (docs/tuning.md) ------------------------------------------
 * convjit_plan_tune times the candidate kernels of a conv plan's family on
 * the caller's buffers and stream, switches the plan to the fastest one
 * whose output agrees with the default kernel's, and records it in the
 * tuning table of the context's cache database, where later plan creations
 * (any process, same device and versions) find it. */
#define CONVJIT_TUNE_MAX_CANDIDATES 32

/* Fixed numeric values. */
typedef enum convjit_tune_status {
  CONVJIT_TUNE_TIMED = 0,     /* ms is the median of HIP event times */
  CONVJIT_TUNE_MODELLED = 1,  /* ms is MODELLED (emulator: the bounds model), not a GPU time */
  CONVJIT_TUNE_ILLEGAL = 2,   /* the plan init refuses these knobs for this shape */
  CONVJIT_TUNE_RESOURCE = 3,  /* the kernel spills, uses scratch or too much LDS */
  CONVJIT_TUNE_WORKSPACE = 4, /* needs more workspace than args.workspace_bytes (workspace_bytes says how much) */
  CONVJIT_TUNE_VETOED = 5,    /* its output differs from the default kernel's: never wins */
  CONVJIT_TUNE_FAILED = 6     /* compile, launch or emulation failed (reason) */
} convjit_tune_status;

typedef struct convjit_tune_candidate {
  char knobs[160];        /* "tile=128x128 waves=2x4 stages=4 splitk=1 wgm=8": kernel-spec option form */
  convjit_tune_status status;
  double ms;              /* TIMED: median ms; MODELLED: modelled ms; else 0 */
  int reps;               /* timed repetitions (0 when modelled) */
  double max_err;         /* largest |y - y_default| over the tolerance (<= 1 passes); -1 if not compared */
  size_t workspace_bytes; /* what this candidate needs */
  char reason[192];       /* why it is not a contender ("" when it is) */
} convjit_tune_candidate;

typedef struct convjit_tune_result {
  size_t struct_size;     /* set by the caller: sizeof(convjit_tune_result) */
  int modelled;           /* 1: every ms below is MODELLED (emulator), not measured */
  int count;              /* candidates in cand[] */
  int winner;             /* index into cand[] of the kernel the plan now runs */
  double default_ms, best_ms; /* the default (cand[0]) and the winner */
  size_t workspace_needed;    /* the largest workspace of the legal candidates */
  int stored;             /* 1: the winner was written to the tuning table */
  convjit_tune_candidate cand[CONVJIT_TUNE_MAX_CANDIDATES];
} convjit_tune_result;

/* Called after each candidate (index, of count) with the best ms so far. */
typedef void (*convjit_tune_progress_fn)(void *user, int index, int count, const convjit_tune_candidate *cand,
                                         double best_ms);

typedef struct convjit_tune_options {
  size_t struct_size;     /* sizeof(convjit_tune_options) */
  int warmup;             /* untimed launches per candidate first (default 2) */
  int min_reps, max_reps; /* timed repetitions: at least min, at most max (default 3, 50) ... */
  double budget_ms;       /* ... stopping after min once the candidate's timed total passes this (default 20) */
  int store;              /* 1 (default): record a timed winner in the tuning table */
  int store_modelled;     /* 1: also record a MODELLED (emulator) winner, marked modelled (default 0) */
  convjit_tune_progress_fn progress; /* may be NULL */
  void *progress_user;
} convjit_tune_options;

static inline convjit_tune_options convjit_tune_options_default(void) {
  convjit_tune_options o;
  o.struct_size = sizeof(convjit_tune_options);
  o.warmup = 2;
  o.min_reps = 3;
  o.max_reps = 50;
  o.budget_ms = 20.0;
  o.store = 1;
  o.store_modelled = 0;
  o.progress = NULL;
  o.progress_user = NULL;
  return o;
}

/* Tunes a conv plan on the caller's tensors (args as for
 * convjit_conv_forward: x, w_packed from convjit_weight_pack, y and the
 * workspace are overwritten; no device memory is allocated). Synchronizes
 * stream; the plan must not be launched by another thread meanwhile.
 * Candidates that need more workspace than args.workspace_bytes are
 * skipped (result.workspace_needed says what covers them all). opts may be
 * NULL (defaults); result may be NULL. Errors: INVALID_ARG (a bad field,
 * named; a graph capture in progress on stream), VERSION (struct_size),
 * UNSUPPORTED (no candidate could run), DEVICE / EMULATION (the default
 * kernel failed). The plan keeps its kernels on any error. */
CONVJIT_API convjit_status convjit_plan_tune(convjit_plan *plan, const convjit_conv_args *args, void *stream,
                                             const convjit_tune_options *opts, convjit_tune_result *result);

/* ---- plan introspection -------------------------------------------------- */
typedef enum convjit_cache_source {
  CONVJIT_CACHE_COMPILED = 0, /* built by this plan's creation */
  CONVJIT_CACHE_MEMORY = 1,   /* already loaded in this context */
  CONVJIT_CACHE_DISK = 2      /* code object read from the disk cache */
} convjit_cache_source;

typedef struct convjit_kernel_info {
  size_t struct_size;          /* set by the caller: sizeof(convjit_kernel_info) */
  char name[128];              /* kernel symbol */
  char stage[8];               /* "pack" or "fwd" */
  uint32_t vgpr, agpr, sgpr;
  uint32_t lds_bytes;          /* static LDS per work-group */
  uint32_t scratch_bytes;      /* private segment per lane (0 for shipped kernels) */
  uint32_t vgpr_spills, sgpr_spills;
  uint32_t block[3];
  uint64_t grid[3];            /* work-groups */
  convjit_cache_source source; /* where this plan got the kernel */
  double compile_ms;           /* codegen + LLVM + link when compiled, else 0 */
} convjit_kernel_info;

/* Kernel steps of the plan (pack steps first, then fwd). */
CONVJIT_API convjit_status convjit_plan_kernel_count(const convjit_plan *plan, int *count);
CONVJIT_API convjit_status convjit_plan_kernel_info(const convjit_plan *plan, int index, convjit_kernel_info *info);
/* Human-readable plan (every kernel's plan fields). Writes at most cap
 * bytes including the NUL into buf (may be NULL with cap 0); *needed (may
 * be NULL) receives the full length + 1. Truncation is not an error. */
CONVJIT_API convjit_status convjit_plan_describe(const convjit_plan *plan, char *buf, size_t cap, size_t *needed);

/* ---- device memory and ordering, on the context's backend ----------------
 * For tests, tools and examples (a framework uses its own allocator). On
 * the emulator, device pointers are emulator addresses, not host pointers:
 * move bytes with the memcpy functions. stream NULL = default stream. */
CONVJIT_API convjit_status convjit_malloc(convjit_context *ctx, size_t bytes, void **dptr);
/* NULL-safe. INVALID_ARG (nothing freed) for a pointer that is not a live
 * convjit_malloc block of ctx: unknown, interior, or already freed. */
CONVJIT_API convjit_status convjit_free(convjit_context *ctx, void *dptr);
CONVJIT_API convjit_status convjit_memcpy_h2d(convjit_context *ctx, void *dst, const void *src, size_t bytes,
                                             void *stream);
CONVJIT_API convjit_status convjit_memcpy_d2h(convjit_context *ctx, void *dst, const void *src, size_t bytes,
                                             void *stream);
CONVJIT_API convjit_status convjit_memset(convjit_context *ctx, void *dst, int value, size_t bytes, void *stream);
CONVJIT_API convjit_status convjit_synchronize(convjit_context *ctx, void *stream);

typedef struct convjit_event convjit_event;
CONVJIT_API convjit_status convjit_event_create(convjit_context *ctx, convjit_event **ev);
CONVJIT_API void convjit_event_destroy(convjit_event *ev); /* NULL-safe; also after its context */
CONVJIT_API convjit_status convjit_event_record(convjit_event *ev, void *stream);
/* Milliseconds between two recorded events (EMULATED on the emulator). */
CONVJIT_API convjit_status convjit_event_elapsed_ms(const convjit_event *start, const convjit_event *stop,
                                                   float *ms);

/* ========================================================================
 * Experimental API — emulator only. May change between minor versions.
 * Every function returns CONVJIT_ERR_UNSUPPORTED on a non-emulator context.
 * ======================================================================== */

/* A device buffer whose bytes are computed from their offset (nothing is
 * stored): fill(user, offset, dst, n) must be pure and thread-safe. Writes
 * into it are emulation errors. Free with convjit_free. */
typedef void (*convjit_emu_fill_fn)(void *user, uint64_t offset, void *dst, size_t n);
CONVJIT_API convjit_status convjit_emu_alloc_procedural(convjit_context *ctx, uint64_t bytes,
                                                        convjit_emu_fill_fn fill, void *user, void **dptr);
/* A write sink of `bytes`: only bytes inside the windows [off[i],
 * off[i]+len[i]) are kept (readable with memcpy_d2h). Free with convjit_free. */
CONVJIT_API convjit_status convjit_emu_alloc_sink(convjit_context *ctx, uint64_t bytes, const uint64_t *off,
                                                  const uint64_t *len, uint32_t nwindows, void **dptr);
/* Following launches on this context run only these workgroups (linear ids
 * x + gx*(y + gy*z)); count 0 = all again. The list is copied. */
CONVJIT_API convjit_status convjit_emu_set_workgroups(convjit_context *ctx, const uint64_t *ids, size_t count);

typedef struct convjit_emu_counts {
  uint64_t salu, valu, vmem, lds, mfma, waitcnt, barrier, smem, branch, total;
} convjit_emu_counts;
typedef struct convjit_emu_stats {
  size_t struct_size;        /* set by the caller */
  uint64_t salu, valu, vmem, lds, mfma, waitcnt, barrier, smem, branch, total; /* dynamic instructions, all waves */
  uint64_t workgroups, waves;
  double emulated_ms;        /* weighted_cycles_max_wave (or the spread of all waves over the modelled
                              * device, when larger) at the arch's nominal clock: what
                              * convjit_event_elapsed_ms sums on the emulator. A weighted count in
                              * milliseconds, NOT a GPU time (convjit-dump --emit bounds models time) */
  double host_ms;            /* how long the emulator took on the host */
  convjit_emu_counts wave_min, wave_max; /* per wave: smallest / largest count over the waves */
  char kernel[128];          /* the launched kernel's name */
  /* EMULATED weighted issue count: each instruction's class weight (SALU,
   * branch, SMEM, waitcnt, barrier 1; VALU, VMEM, LDS 4; MFMA its passes)
   * summed in program order per wave: no latency, LDS bandwidth, bank
   * conflicts or barrier waits. The slowest wave, and all waves. */
  uint64_t weighted_cycles_max_wave, weighted_cycles_all_waves;
  /* LDS bank model (docs/emulator.md "LDS bank model"), all waves: LDS
   * instructions priced (ds_* and buffer_load ... lds), their LDS cycles,
   * the conflict-free minimum of the same accesses, the worst conflict
   * degree of one access (1 = none), the arch's banks. */
  uint64_t lds_accesses, lds_cycles, lds_conflict_free_cycles;
  uint32_t lds_max_degree, lds_banks;
} convjit_emu_stats;
/* Statistics of the last kernel launch on this context. */
CONVJIT_API convjit_status convjit_emu_last_launch_stats(convjit_context *ctx, convjit_emu_stats *stats);
/* on != 0: clear the record and keep the statistics of every following
 * kernel launch on this context; on = 0: stop (the record stays readable). */
CONVJIT_API convjit_status convjit_emu_record_launches(convjit_context *ctx, int on);
/* The recorded launches in launch order: *count = how many were recorded;
 * the first min(max, *count) are written to stats[] (each element's
 * struct_size set by the caller). stats may be NULL when max is 0. */
CONVJIT_API convjit_status convjit_emu_recorded_stats(convjit_context *ctx, convjit_emu_stats *stats, size_t max,
                                                      size_t *count);

/* ---- running any code object on the emulator ----------------------------
 * Load a gfx942/gfx950 code object (an ELF shared object as ld.lld links
 * it: convjit-dump --save-dir's, hipcc --genco's, llvm-mc + ld.lld's), look
 * up a kernel by name and launch it with typed arguments that convjit packs
 * by the code object's own metadata (names, offsets, sizes): the explicit
 * bytes a HIP module launch takes, with the hidden arguments (block counts,
 * group sizes, grid dims, dynamic LDS size...) filled as the HIP runtime
 * fills them. docs/emulator.md "Running your own kernels" lists the
 * instruction subset and what is (not) modelled. */
typedef struct convjit_emu_module convjit_emu_module;

/* The arch a code object is for, without loading it: "gfx942" / "gfx950"
 * into arch (cap bytes incl. the NUL). INVALID_ARG for a malformed object,
 * UNSUPPORTED naming its target for another AMDGPU arch. */
CONVJIT_API convjit_status convjit_emu_code_object_arch(const void *code_object, size_t bytes, char *arch, size_t cap);

/* Parses the ELF and its metadata, loads its image into the context's
 * emulator memory (segments placed, dynamic relocations applied) and
 * decodes the whole .text (nothing of code_object is kept). INVALID_ARG, naming what is wrong: not an ELF, not
 * an AMDGPU code object, another arch than the context's, malformed
 * metadata, a dynamic relocation type the loader does not apply or an
 * undefined symbol (each named). The module may be unloaded before or after its context; using
 * it after the context is destroyed is INVALID_ARG. */
CONVJIT_API convjit_status convjit_emu_module_load(convjit_context *ctx, const void *code_object, size_t bytes,
                                                   convjit_emu_module **mod);
CONVJIT_API void convjit_emu_module_unload(convjit_emu_module *mod); /* NULL-safe */
/* The module's loaded image in the context's emulator memory: every
 * PT_LOAD segment at *addr + its p_vaddr, relocated (its .rodata, .data
 * and .bss: globals live there, shared by all launches of the module;
 * docs/emulator.md "Code-object data"). *addr is a device address (read it
 * with convjit_memcpy_d2h), *bytes its size; either may be NULL. Freed by
 * convjit_emu_module_unload. INVALID_ARG after the context is destroyed. */
CONVJIT_API convjit_status convjit_emu_module_image(const convjit_emu_module *mod, void **addr, uint64_t *bytes);

typedef struct convjit_emu_kernel_info {
  size_t struct_size;         /* set by the caller */
  char name[128];
  char target[64];            /* the module's amdhsa.target, e.g. "amdgcn-amd-amdhsa--gfx942" */
  uint32_t nargs;             /* metadata arguments, hidden ones included (convjit_emu_kernel_arg) */
  uint32_t explicit_args;     /* the ones a launch must give */
  uint32_t kernarg_bytes;     /* .kernarg_segment_size */
  uint32_t static_lds_bytes;  /* .group_segment_fixed_size */
  uint32_t max_lds_bytes;     /* the arch's LDS per workgroup: static + dynamic may not exceed it */
  uint32_t max_block_threads; /* .max_flat_workgroup_size */
  uint32_t wavefront_size;
  uint32_t vgprs, agprs, sgprs, vgpr_spills, sgpr_spills;
  uint32_t scratch_bytes;     /* per lane; the emulator refuses kernels with scratch */
  uint64_t code_bytes;        /* machine code from the entry point */
  uint32_t instructions;      /* decoded instructions in the code */
  /* Instructions in the code the emulator cannot run (not in its ISA
   * table, or bytes LLVM does not decode): a launch stops if it reaches
   * one. 0 = the whole kernel is inside the subset. The list:
   * convjit_emu_kernel_unsupported. */
  uint32_t unsupported;
} convjit_emu_kernel_info;

typedef struct convjit_emu_arg_info {
  size_t struct_size;         /* set by the caller */
  char name[40];              /* .name, or "" when the metadata has none (give it as "#<index>") */
  char value_kind[40];        /* "global_buffer", "by_value", "hidden_block_count_x", ... */
  uint32_t offset, size;      /* in the kernarg segment */
  int hidden;                 /* 1: filled by the launch, never given */
  int explicit_index;         /* its "#<index>" among the explicit arguments; -1 if hidden */
} convjit_emu_arg_info;

typedef struct convjit_emu_inst_info {
  size_t struct_size;         /* set by the caller */
  uint64_t offset;            /* bytes from the kernel's entry point */
  char text[128];             /* the instruction as LLVM prints it, or ".long 0x..." */
  char reason[96];            /* why the emulator cannot run it */
} convjit_emu_inst_info;

CONVJIT_API convjit_status convjit_emu_module_kernel_count(const convjit_emu_module *mod, int *count);
/* index: 0 .. count-1, in the metadata's order. */
CONVJIT_API convjit_status convjit_emu_module_kernel_info(const convjit_emu_module *mod, int index,
                                                          convjit_emu_kernel_info *info);
/* INVALID_ARG naming the kernel and the module's kernels when absent. */
CONVJIT_API convjit_status convjit_emu_kernel_find(const convjit_emu_module *mod, const char *name, int *index);
CONVJIT_API convjit_status convjit_emu_kernel_arg(const convjit_emu_module *mod, int index, uint32_t arg,
                                                  convjit_emu_arg_info *info);
/* The i-th of the kernel's info.unsupported instructions, in address order. */
CONVJIT_API convjit_status convjit_emu_kernel_unsupported(const convjit_emu_module *mod, int index, uint32_t i,
                                                          convjit_emu_inst_info *info);

typedef enum convjit_emu_arg_type {
  CONVJIT_EMU_ARG_PTR = 1,    /* ptr: an emulator address inside a live allocation of the context, or NULL;
                               * only for global_buffer arguments */
  CONVJIT_EMU_ARG_I32 = 2,    /* i: a by_value argument of 1, 2 or 4 bytes; the value must fit (signed or unsigned) */
  CONVJIT_EMU_ARG_I64 = 3,    /* i: a by_value argument of 8 bytes */
  CONVJIT_EMU_ARG_F32 = 4,    /* f, rounded to float: a by_value argument of 4 bytes */
  CONVJIT_EMU_ARG_F64 = 5,    /* f: a by_value argument of 8 bytes */
  CONVJIT_EMU_ARG_BYTES = 6   /* bytes/nbytes: raw little-endian bytes of exactly the argument's size (a struct) */
} convjit_emu_arg_type;

typedef struct convjit_emu_arg {
  const char *name;           /* the metadata .name, or "#<index>" among the explicit arguments */
  convjit_emu_arg_type type;
  const void *ptr;            /* PTR */
  int64_t i;                  /* I32 / I64 */
  double f;                   /* F32 / F64 */
  const void *bytes;          /* BYTES */
  size_t nbytes;
} convjit_emu_arg;

/* The instruction budget of every emulated launch (convjit's kernels and
 * convjit_emu_launch alike): a wave that has executed this many
 * instructions without ending stops the launch with EMULATION, naming the
 * kernel, the workgroup, the wave and the program counter (a kernel that
 * never ends, e.g. a branch to itself). $CONVJIT_EMU_MAX_INSTRUCTIONS (an
 * integer >= 1) replaces it; docs/emulator.md "Instruction budget" says why
 * this value. */
#define CONVJIT_EMU_MAX_INSTRUCTIONS_DEFAULT (UINT64_C(1) << 25)

typedef struct convjit_emu_launch_options {
  size_t struct_size;         /* sizeof(convjit_emu_launch_options) as compiled by the caller */
  uint32_t grid[3];           /* WORKGROUPS per dimension (hipModuleLaunchKernel's gridDim), each >= 1 */
  uint32_t block[3];          /* threads per workgroup, product <= the kernel's max_block_threads */
  uint32_t dynamic_lds_bytes; /* hipModuleLaunchKernel's sharedMemBytes: LDS after the static part */
  int hazards;                /* 1: the hazard checker stops the run at the first hazard (default); 0: off */
  /* appended: instructions one wave may execute (the budget above); 0 =
   * $CONVJIT_EMU_MAX_INSTRUCTIONS, else CONVJIT_EMU_MAX_INSTRUCTIONS_DEFAULT.
   * A struct_size without it reads as 0. */
  uint64_t max_instructions;
} convjit_emu_launch_options;

static inline convjit_emu_launch_options convjit_emu_launch_options_default(void) {
  convjit_emu_launch_options o;
  o.struct_size = sizeof(convjit_emu_launch_options);
  o.grid[0] = o.grid[1] = o.grid[2] = 1;
  o.block[0] = o.block[1] = o.block[2] = 1;
  o.dynamic_lds_bytes = 0;
  o.hazards = 1;
  o.max_instructions = 0;
  return o;
}

/* Runs kernel `index` to completion (the emulator's enqueue). Every
 * explicit argument must be given exactly once; INVALID_ARG names the
 * argument (unknown, missing, given twice, wrong type for its value kind
 * or size, value out of range, pointer outside every allocation) or the
 * launch field (grid, block, LDS over the arch's limit). EMULATION names
 * the instruction, its offset, the workgroup, wave and lane (bad access,
 * hazard, an instruction outside the subset, the instruction budget spent;
 * the lane where one lane's address is at fault). Statistics:
 * convjit_emu_last_launch_stats. The workgroup subset of
 * convjit_emu_set_workgroups applies. */
CONVJIT_API convjit_status convjit_emu_launch(const convjit_emu_module *mod, int index,
                                              const convjit_emu_launch_options *opts, const convjit_emu_arg *args,
                                              size_t nargs);

#ifdef __cplusplus
}
#endif
#endif
