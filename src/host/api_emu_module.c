/* The experimental "run any code object" entry points (convjit.h, "running
 * any code object on the emulator"): a module is an emulator module plus
 * the handle of its context (lifetime.c's rule: it may be unloaded after
 * the context, never used after it). Arguments are packed by the code
 * object's metadata into the explicit kernarg bytes, the bytes a HIP
 * module launch takes, by the one packer (pipeline/kernargs.h); the hidden arguments are the emulator's to fill
 * (emu/dispatch.c), as they are the HIP runtime's on a GPU. Every check
 * names the argument, its value kind and size, or the launch field. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "arch/arch.h"
#include "host/plan.h"
#include "pipeline/kernargs.h"
#include "runtime/device_emu.h"

struct convjit_emu_module {
  convjit_context *ctx;
  cj_ctx_ref ref;
  emu_module *m;
};

CONVJIT_API convjit_status convjit_emu_code_object_arch(const void *code_object, size_t bytes, char *arch,
                                                        size_t cap) {
  cj_error_clear();
  CJ_CHECK(arch && cap > 0, CONVJIT_ERR_INVALID_ARG, "arch = NULL or cap = 0");
  arch[0] = 0;
  CJ_CHECK(code_object && bytes > 0, CONVJIT_ERR_INVALID_ARG, "code_object = NULL or bytes = 0");
  cj_codeobj *co = NULL;
  CJ_TRY(cj_codeobj_parse(code_object, bytes, &co));
  const cj_arch *a = cj_arch_from_elf_mach(co->elf_mach);
  convjit_status st = CONVJIT_OK;
  if (!a)
    st = CJ_ERR(CONVJIT_ERR_UNSUPPORTED,
                "code object target \"%s\" (ELF mach 0x%x): the emulator runs code objects of %s", co->target,
                co->elf_mach, cj_arch_names());
  else if (strlen(a->name) >= cap)
    st = CJ_ERR(CONVJIT_ERR_INVALID_ARG, "cap = %zu: \"%s\" needs %zu bytes", cap, a->name, strlen(a->name) + 1);
  else
    snprintf(arch, cap, "%s", a->name);
  cj_codeobj_destroy(co);
  return st;
}

CONVJIT_API convjit_status convjit_emu_module_load(convjit_context *ctx, const void *code_object, size_t bytes,
                                                   convjit_emu_module **mod) {
  cj_error_clear();
  CJ_CHECK(mod, CONVJIT_ERR_INVALID_ARG, "mod = NULL");
  *mod = NULL;
  CJ_TRY(cj_need_emu(ctx, "convjit_emu_module_load"));
  CJ_CHECK(code_object, CONVJIT_ERR_INVALID_ARG, "code_object = NULL");
  CJ_CHECK(bytes > 0, CONVJIT_ERR_INVALID_ARG, "bytes = 0: a code object is an ELF file");
  convjit_emu_module *h = calloc(1, sizeof *h);
  CJ_ALLOC_CHECK(h);
  convjit_status st = emu_module_load(cj_device_emu_ctx(ctx->dev), code_object, bytes, &h->m);
  if (st != CONVJIT_OK) {
    free(h);
    return st;
  }
  h->ctx = ctx;
  h->ref = ctx->ref;
  *mod = h;
  return CONVJIT_OK;
}

CONVJIT_API void convjit_emu_module_unload(convjit_emu_module *mod) {
  if (!mod) return;
  /* After its context, the context's emulator memory (and the module's
   * image in it) is gone: free the host side only. */
  if (cj_ctx_alive(mod->ref)) emu_module_unload(mod->m);
  else emu_module_unload_detached(mod->m);
  free(mod);
}

static convjit_status check_mod(const convjit_emu_module *mod) {
  CJ_CHECK(mod, CONVJIT_ERR_INVALID_ARG, "mod = NULL");
  CJ_CHECK(cj_ctx_alive(mod->ref), CONVJIT_ERR_INVALID_ARG,
           "module: its context was destroyed (a module may be unloaded after its context, but not used)");
  return CONVJIT_OK;
}

CONVJIT_API convjit_status convjit_emu_module_image(const convjit_emu_module *mod, void **addr, uint64_t *bytes) {
  cj_error_clear();
  if (addr) *addr = NULL;
  if (bytes) *bytes = 0;
  CJ_TRY(check_mod(mod));
  uint64_t n = 0, a = emu_module_image(mod->m, &n);
  if (addr) *addr = (void *)(uintptr_t)a;
  if (bytes) *bytes = n;
  return CONVJIT_OK;
}

/* Kernel `index` of the module: its metadata and its emulator kernel. */
static convjit_status kernel_at(const convjit_emu_module *mod, int index, const cj_kernel_info **ki,
                                const emu_kernel **k) {
  *ki = NULL, *k = NULL; /* set on every path: callers read them only after OK */
  CJ_TRY(check_mod(mod));
  const cj_codeobj *co = emu_module_codeobj(mod->m);
  CJ_CHECK(index >= 0 && (uint32_t)index < co->nkernels, CONVJIT_ERR_INVALID_ARG,
           "index = %d: the module has %u kernels (0..%u)", index, co->nkernels, co->nkernels ? co->nkernels - 1 : 0);
  *ki = &co->kernels[index];
  return emu_kernel_get(mod->m, (*ki)->name, k);
}

/* The start of every query: the caller's info struct (its struct_size
 * field, NULL when info is NULL) and the kernel it asks about. */
static convjit_status query_start(const convjit_emu_module *mod, int index, const size_t *struct_size, size_t want,
                                  const cj_kernel_info **ki, const emu_kernel **k) {
  *ki = NULL, *k = NULL; /* as kernel_at: set on every path */
  CJ_CHECK(struct_size, CONVJIT_ERR_INVALID_ARG, "info = NULL");
  CJ_CHECK(*struct_size == want, CONVJIT_ERR_VERSION, "info.struct_size = %zu: expected %zu", *struct_size, want);
  return kernel_at(mod, index, ki, k);
}

static int explicit_count(const cj_kernel_info *ki) {
  int n = 0;
  for (uint32_t a = 0; a < ki->nargs; a++) n += cj_kernel_arg_is_explicit(&ki->args[a]);
  return n;
}

CONVJIT_API convjit_status convjit_emu_module_kernel_count(const convjit_emu_module *mod, int *count) {
  cj_error_clear();
  CJ_CHECK(count, CONVJIT_ERR_INVALID_ARG, "count = NULL");
  *count = 0;
  CJ_TRY(check_mod(mod));
  *count = (int)emu_module_codeobj(mod->m)->nkernels;
  return CONVJIT_OK;
}

CONVJIT_API convjit_status convjit_emu_module_kernel_info(const convjit_emu_module *mod, int index,
                                                          convjit_emu_kernel_info *info) {
  cj_error_clear();
  const cj_kernel_info *ki;
  const emu_kernel *k;
  CJ_TRY(query_start(mod, index, info ? &info->struct_size : NULL, sizeof *info, &ki, &k));
  memset(info, 0, sizeof *info);
  info->struct_size = sizeof *info;
  snprintf(info->name, sizeof info->name, "%s", ki->name);
  snprintf(info->target, sizeof info->target, "%s", emu_module_codeobj(mod->m)->target);
  info->nargs = ki->nargs;
  info->explicit_args = (uint32_t)explicit_count(ki);
  info->kernarg_bytes = ki->kernarg_size;
  info->static_lds_bytes = ki->group_segment_size;
  info->max_lds_bytes = mod->ctx->arch->lds_bytes;
  info->max_block_threads = ki->max_flat_workgroup_size ? ki->max_flat_workgroup_size : 1024;
  info->wavefront_size = ki->wavefront_size;
  info->vgprs = ki->vgpr_count;
  info->agprs = ki->agpr_count;
  info->sgprs = ki->sgpr_count;
  info->vgpr_spills = ki->vgpr_spill_count;
  info->sgpr_spills = ki->sgpr_spill_count;
  info->scratch_bytes = ki->private_segment_size;
  info->code_bytes = ki->code_size;
  emu_kernel_scan(k, &info->instructions, &info->unsupported);
  return CONVJIT_OK;
}

CONVJIT_API convjit_status convjit_emu_kernel_find(const convjit_emu_module *mod, const char *name, int *index) {
  cj_error_clear();
  CJ_CHECK(index, CONVJIT_ERR_INVALID_ARG, "index = NULL");
  *index = -1;
  CJ_TRY(check_mod(mod));
  CJ_CHECK(name, CONVJIT_ERR_INVALID_ARG, "name = NULL");
  const cj_codeobj *co = emu_module_codeobj(mod->m);
  for (uint32_t i = 0; i < co->nkernels; i++)
    if (!strcmp(co->kernels[i].name, name)) {
      *index = (int)i;
      return CONVJIT_OK;
    }
  cj_strbuf list = {0}; /* only for the message: the lookup itself builds nothing */
  for (uint32_t i = 0; i < co->nkernels; i++) cj_sb_printf(&list, "%s%s", i ? ", " : "", co->kernels[i].name);
  convjit_status st = CJ_ERR(CONVJIT_ERR_INVALID_ARG, "kernel \"%s\" is not in the module; its %u kernel%s: %s", name,
                             co->nkernels, co->nkernels == 1 ? "" : "s", list.len && !list.oom ? list.s : "(none)");
  cj_sb_free(&list);
  return st;
}

CONVJIT_API convjit_status convjit_emu_kernel_arg(const convjit_emu_module *mod, int index, uint32_t arg,
                                                  convjit_emu_arg_info *info) {
  cj_error_clear();
  const cj_kernel_info *ki;
  const emu_kernel *k;
  CJ_TRY(query_start(mod, index, info ? &info->struct_size : NULL, sizeof *info, &ki, &k));
  CJ_CHECK(arg < ki->nargs, CONVJIT_ERR_INVALID_ARG, "arg = %u: kernel %s has %u arguments", arg, ki->name, ki->nargs);
  const cj_kernel_arg *a = &ki->args[arg];
  memset(info, 0, sizeof *info);
  info->struct_size = sizeof *info;
  snprintf(info->name, sizeof info->name, "%s", a->name);
  snprintf(info->value_kind, sizeof info->value_kind, "%s", a->value_kind);
  info->offset = a->offset;
  info->size = a->size;
  info->hidden = !cj_kernel_arg_is_explicit(a);
  info->explicit_index = -1;
  if (!info->hidden) {
    info->explicit_index = 0;
    for (uint32_t i = 0; i < arg; i++) info->explicit_index += cj_kernel_arg_is_explicit(&ki->args[i]);
  }
  return CONVJIT_OK;
}

CONVJIT_API convjit_status convjit_emu_kernel_unsupported(const convjit_emu_module *mod, int index, uint32_t i,
                                                          convjit_emu_inst_info *info) {
  cj_error_clear();
  const cj_kernel_info *ki;
  const emu_kernel *k;
  CJ_TRY(query_start(mod, index, info ? &info->struct_size : NULL, sizeof *info, &ki, &k));
  uint32_t off = 0, n = 0, bad = 0;
  const char *text = NULL, *reason = NULL;
  emu_kernel_scan(k, &n, &bad);
  CJ_CHECK(emu_kernel_bad_inst(k, i, &off, &text, &reason) == 0, CONVJIT_ERR_INVALID_ARG,
           "i = %u: kernel %s has %u instructions outside the emulator's subset", i, ki->name, bad);
  memset(info, 0, sizeof *info);
  info->struct_size = sizeof *info;
  info->offset = off;
  snprintf(info->text, sizeof info->text, "%s", text ? text : "?");
  snprintf(info->reason, sizeof info->reason, "%s", reason ? reason : "?");
  return CONVJIT_OK;
}

/* ---- launch ------------------------------------------------------------------ */

/* The metadata argument a caller's name refers to: "#<i>" (the i-th
 * explicit one) or an explicit argument's .name. */
static convjit_status resolve_arg(const cj_kernel_info *ki, const char *name, uint32_t *out) {
  CJ_CHECK(name && *name, CONVJIT_ERR_INVALID_ARG, "kernel %s: an argument has no name (give .name or \"#<index>\")",
           ki->name);
  if (name[0] == '#') {
    char *end = NULL;
    unsigned long want = strtoul(name + 1, &end, 10);
    CJ_CHECK(name[1] >= '0' && name[1] <= '9' && end && !*end, CONVJIT_ERR_INVALID_ARG,
             "argument '%s': \"#\" must be followed by a decimal index", name);
    unsigned long j = 0;
    for (uint32_t a = 0; a < ki->nargs; a++) {
      if (!cj_kernel_arg_is_explicit(&ki->args[a])) continue;
      if (j++ == want) {
        *out = a;
        return CONVJIT_OK;
      }
    }
    return CJ_ERR(CONVJIT_ERR_INVALID_ARG, "argument '%s': kernel %s has %lu explicit arguments (#0..#%lu)", name,
                  ki->name, j, j ? j - 1 : 0);
  }
  for (uint32_t a = 0; a < ki->nargs; a++) {
    const cj_kernel_arg *m = &ki->args[a];
    if (strcmp(m->name, name) && strcmp(m->value_kind, name)) continue;
    CJ_CHECK(cj_kernel_arg_is_explicit(m), CONVJIT_ERR_INVALID_ARG,
             "argument '%s' of kernel %s is hidden (%s): the launch fills it", name, ki->name, m->value_kind);
    if (!strcmp(m->name, name)) {
      *out = a;
      return CONVJIT_OK;
    }
  }
  cj_strbuf list = {0}; /* only for the message */
  for (uint32_t a = 0; a < ki->nargs; a++)
    if (cj_kernel_arg_is_explicit(&ki->args[a]))
      cj_sb_printf(&list, "%s%s", list.len ? ", " : "", ki->args[a].name[0] ? ki->args[a].name : "(unnamed)");
  convjit_status st =
      CJ_ERR(CONVJIT_ERR_INVALID_ARG, "argument '%s' is not an argument of kernel %s; its explicit arguments: %s", name,
             ki->name, list.len && !list.oom ? list.s : "(none)");
  cj_sb_free(&list);
  return st;
}

static const char *type_name(convjit_emu_arg_type t) {
  switch (t) {
  case CONVJIT_EMU_ARG_PTR: return "a pointer";
  case CONVJIT_EMU_ARG_I32: return "an integer (I32)";
  case CONVJIT_EMU_ARG_I64: return "an integer (I64)";
  case CONVJIT_EMU_ARG_F32: return "a float (F32)";
  case CONVJIT_EMU_ARG_F64: return "a double (F64)";
  case CONVJIT_EMU_ARG_BYTES: return "raw bytes";
  }
  return "an unknown type";
}

/* One caller value for the metadata argument m, checked against its kind
 * and size, as the bytes the packer copies: *out points at them (into *bits
 * for a value of up to 8 bytes, at the caller's bytes for CONVJIT_EMU_ARG_BYTES). */
static convjit_status value_of(emu_mem *mem, const cj_kernel_info *ki, const cj_kernel_arg *m,
                               const convjit_emu_arg *v, uint64_t *bits, const void **out) {
  const char *nm = v->name;
  int is_ptr = m->kind == CJ_ARG_GLOBAL_BUFFER;
  *bits = 0;
  *out = bits;
  if (v->type == CONVJIT_EMU_ARG_PTR) {
    CJ_CHECK(is_ptr && m->size == 8, CONVJIT_ERR_INVALID_ARG,
             "argument '%s' of kernel %s is %s of %u bytes: give it a value, not a pointer", nm, ki->name,
             m->value_kind, m->size);
    uint64_t p = (uint64_t)(uintptr_t)v->ptr;
    CJ_CHECK(p == 0 || emu_mem_find(mem, p, 0), CONVJIT_ERR_INVALID_ARG,
             "argument '%s' = 0x%" PRIx64 ": not an address inside an emulator allocation of this context "
             "(convjit_malloc; a host pointer is not a device address)", nm, p);
    *bits = p;
    return CONVJIT_OK;
  }
  CJ_CHECK(!is_ptr, CONVJIT_ERR_INVALID_ARG, "argument '%s' of kernel %s is a global_buffer: give a pointer, not %s",
           nm, ki->name, type_name(v->type));
  switch (v->type) {
  case CONVJIT_EMU_ARG_I32: {
    CJ_CHECK(m->size == 1 || m->size == 2 || m->size == 4, CONVJIT_ERR_INVALID_ARG,
             "argument '%s' of kernel %s is %s of %u bytes: an I32 fits 1, 2 or 4 (I64 or F64 for 8)", nm, ki->name,
             m->value_kind, m->size);
    int64_t lo = -(INT64_C(1) << (8 * m->size - 1)), hi = (INT64_C(1) << (8 * m->size)) - 1;
    CJ_CHECK(v->i >= lo && v->i <= hi, CONVJIT_ERR_INVALID_ARG,
             "argument '%s' = %" PRId64 ": does not fit its %u bytes (%" PRId64 "..%" PRId64 ")", nm, v->i, m->size, lo,
             hi);
    *bits = (uint32_t)(uint64_t)v->i; /* the packer copies its low m->size bytes */
    return CONVJIT_OK;
  }
  case CONVJIT_EMU_ARG_I64:
  case CONVJIT_EMU_ARG_F64:
    CJ_CHECK(m->size == 8, CONVJIT_ERR_INVALID_ARG, "argument '%s' of kernel %s is %s of %u bytes: %s is 8 bytes", nm,
             ki->name, m->value_kind, m->size, type_name(v->type));
    if (v->type == CONVJIT_EMU_ARG_I64) memcpy(bits, &v->i, 8);
    else memcpy(bits, &v->f, 8);
    return CONVJIT_OK;
  case CONVJIT_EMU_ARG_F32: {
    CJ_CHECK(m->size == 4, CONVJIT_ERR_INVALID_ARG, "argument '%s' of kernel %s is %s of %u bytes: an F32 is 4 bytes",
             nm, ki->name, m->value_kind, m->size);
    float f = (float)v->f;
    memcpy(bits, &f, 4);
    return CONVJIT_OK;
  }
  case CONVJIT_EMU_ARG_BYTES:
    CJ_CHECK(v->bytes && v->nbytes == m->size, CONVJIT_ERR_INVALID_ARG,
             "argument '%s' of kernel %s is %s of %u bytes: given %zu bytes%s", nm, ki->name, m->value_kind, m->size,
             v->nbytes, v->bytes ? "" : " (bytes = NULL)");
    *out = v->bytes;
    return CONVJIT_OK;
  default:
    return CJ_ERR(CONVJIT_ERR_INVALID_ARG, "argument '%s': type = %d is not a convjit_emu_arg_type", nm, (int)v->type);
  }
}

/* The first version of convjit_emu_launch_options ended at hazards
 * (max_instructions was appended). */
#define LAUNCH_OPTS_V1_SIZE (offsetof(convjit_emu_launch_options, hazards) + sizeof(int))

/* The caller's options in this library's layout: fields past an older
 * caller's struct_size keep their defaults. */
static convjit_status read_launch_opts(const convjit_emu_launch_options *in, convjit_emu_launch_options *o) {
  CJ_CHECK(in, CONVJIT_ERR_INVALID_ARG, "opts = NULL: grid and block are required");
  CJ_TRY(cj_check_struct_size(in->struct_size, LAUNCH_OPTS_V1_SIZE, sizeof *o, "opts"));
  *o = convjit_emu_launch_options_default();
  memcpy(o, in, in->struct_size);
  return CONVJIT_OK;
}

static convjit_status check_launch_opts(const cj_kernel_info *ki, const cj_arch *arch,
                                        const convjit_emu_launch_options *o) {
  for (int d = 0; d < 3; d++) {
    CJ_CHECK(o->grid[d] >= 1, CONVJIT_ERR_INVALID_ARG, "opts.grid[%d] = 0: workgroups per dimension must be >= 1", d);
    CJ_CHECK(o->block[d] >= 1 && o->block[d] <= 1024, CONVJIT_ERR_INVALID_ARG,
             "opts.block[%d] = %u: threads per dimension must be in 1..1024", d, o->block[d]);
  }
  uint64_t threads = (uint64_t)o->block[0] * o->block[1] * o->block[2];
  uint32_t maxwg = ki->max_flat_workgroup_size ? ki->max_flat_workgroup_size : 1024;
  CJ_CHECK(threads <= maxwg, CONVJIT_ERR_INVALID_ARG,
           "opts.block = %ux%ux%u = %" PRIu64 " threads: kernel %s allows at most %u (.max_flat_workgroup_size)",
           o->block[0], o->block[1], o->block[2], threads, ki->name, maxwg);
  uint64_t lds = (uint64_t)ki->group_segment_size + o->dynamic_lds_bytes;
  CJ_CHECK(lds <= arch->lds_bytes, CONVJIT_ERR_INVALID_ARG,
           "opts.dynamic_lds_bytes = %u: with kernel %s's %u static bytes a workgroup needs %" PRIu64
           " bytes of LDS; %s has %u", o->dynamic_lds_bytes, ki->name, ki->group_segment_size, lds, arch->name,
           arch->lds_bytes);
  CJ_CHECK(o->hazards == 0 || o->hazards == 1, CONVJIT_ERR_INVALID_ARG, "opts.hazards = %d: must be 0 or 1",
           o->hazards);
  return CONVJIT_OK;
}

/* After a failed launch: if the emulator's text names an allocation that a
 * pointer argument points into, say which argument's buffer it is (the
 * usual cause of an access past the end is too small a buffer). */
static void name_fault_buffer(emu_mem *mem, const convjit_emu_arg *args, size_t nargs, convjit_status st) {
  char text[1400];
  snprintf(text, sizeof text, "%s", cj_error_text());
  for (size_t j = 0; j < nargs; j++) {
    if (args[j].type != CONVJIT_EMU_ARG_PTR || !args[j].ptr) continue;
    const emu_range *r = emu_mem_find(mem, (uint64_t)(uintptr_t)args[j].ptr, 0);
    char key[64];
    if (!r) continue;
    snprintf(key, sizeof key, EMU_MEM_RANGE_FMT, r->base, r->size);
    if (strstr(text, key)) {
      CJ_ERR(st, "%s; that allocation is the buffer of argument '%s' (%" PRIu64 " bytes): is it too small?", text,
             args[j].name, r->size);
      return;
    }
  }
}

CONVJIT_API convjit_status convjit_emu_launch(const convjit_emu_module *mod, int index,
                                              const convjit_emu_launch_options *opts, const convjit_emu_arg *args,
                                              size_t nargs) {
  cj_error_clear();
  const cj_kernel_info *ki;
  const emu_kernel *k;
  CJ_TRY(kernel_at(mod, index, &ki, &k));
  convjit_emu_launch_options ov;
  CJ_TRY(read_launch_opts(opts, &ov));
  opts = &ov;
  CJ_TRY(check_launch_opts(ki, mod->ctx->arch, opts));
  CJ_CHECK(nargs == 0 || args, CONVJIT_ERR_INVALID_ARG, "args = NULL with nargs = %zu", nargs);
  emu_mem *mem = emu_ctx_mem(cj_device_emu_ctx(mod->ctx->dev));
  /* The packer's layout of this kernel, then one value per explicit
   * argument (by name or "#<i>"), in explicit-argument order. */
  uint32_t n = 0, bytes = 0, cap = ki->nargs ? ki->nargs : 1;
  cj_kernarg_slot *slot = calloc(cap, sizeof *slot);
  const void **val = calloc(cap, sizeof *val);
  uint64_t *bits = calloc(cap, sizeof *bits);
  convjit_status st = slot && val && bits ? cj_kernargs_layout(ki, NULL, UINT32_MAX, slot, cap, &n, &bytes)
                                          : CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "out of memory packing arguments");
  uint8_t *ka = st == CONVJIT_OK ? calloc(1, bytes ? bytes : 1) : NULL;
  if (st == CONVJIT_OK && !ka) st = CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "out of memory packing arguments");
  for (size_t j = 0; j < nargs && st == CONVJIT_OK; j++) {
    uint32_t a = 0, e = 0;
    st = resolve_arg(ki, args[j].name, &a);
    while (st == CONVJIT_OK && slot[e].meta != a) e++; /* an explicit argument: it has a slot */
    if (st == CONVJIT_OK && val[e])
      st = CJ_ERR(CONVJIT_ERR_INVALID_ARG, "argument '%s'%s%s%s of kernel %s is given twice", args[j].name,
                  strcmp(args[j].name, ki->args[a].name) && ki->args[a].name[0] ? " (" : "",
                  strcmp(args[j].name, ki->args[a].name) ? ki->args[a].name : "",
                  strcmp(args[j].name, ki->args[a].name) && ki->args[a].name[0] ? ")" : "", ki->name);
    if (st == CONVJIT_OK) st = value_of(mem, ki, &ki->args[a], &args[j], &bits[e], &val[e]);
  }
  if (st == CONVJIT_OK) st = cj_kernargs_write(ki, slot, n, bytes, val, ka);
  if (st == CONVJIT_OK) {
    st = cj_device_emu_launch(mod->ctx->dev, k, opts->grid, opts->block, ka, bytes, opts->dynamic_lds_bytes,
                              opts->hazards, opts->max_instructions);
    if (st == CONVJIT_ERR_EMULATION) name_fault_buffer(mem, args, nargs, st);
  }
  free(slot);
  free(val);
  free(bits);
  free(ka);
  return st;
}
