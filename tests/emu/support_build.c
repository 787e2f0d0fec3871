/* Test support: assemble exact-instruction kernels (see support.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "support.h"

convjit_status tb_read_file(const char *path, cj_blob *out) {
  FILE *f = fopen(path, "rb");
  if (!f) return CJ_ERR(CONVJIT_ERR_IO, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *p = malloc((size_t)n + 1);
  if (!p || fread(p, 1, (size_t)n, f) != (size_t)n) { fclose(f); free(p); return CJ_ERR(CONVJIT_ERR_IO, "read %s", path); }
  fclose(f);
  out->data = p;
  out->size = (size_t)n;
  return CONVJIT_OK;
}

convjit_status tb_asm_build(const char *arch, const char *body, unsigned kernarg_bytes, unsigned lds_bytes,
                            cj_blob *co) {
  char dir[] = "/tmp/cj_emu_asm_XXXXXX";
  if (!mkdtemp(dir)) return CJ_ERR(CONVJIT_ERR_IO, "mkdtemp failed");
  char s_path[128], o_path[128], co_path[128], log_path[128], cmd[1024];
  snprintf(s_path, sizeof s_path, "%s/k.s", dir);
  snprintf(o_path, sizeof o_path, "%s/k.o", dir);
  snprintf(co_path, sizeof co_path, "%s/k.co", dir);
  snprintf(log_path, sizeof log_path, "%s/log", dir);
  FILE *f = fopen(s_path, "w");
  if (!f) return CJ_ERR(CONVJIT_ERR_IO, "cannot write %s", s_path);
  fprintf(f, ".amdgcn_target \"amdgcn-amd-amdhsa--%s\"\n.text\n.globl k\n.p2align 8\n.type k,@function\nk:\n%s\n  s_endpgm\n"
             ".Lend:\n.size k, .Lend-k\n.rodata\n.p2align 6\n.amdhsa_kernel k\n"
             "  .amdhsa_user_sgpr_kernarg_segment_ptr 1\n  .amdhsa_system_sgpr_workgroup_id_x 1\n"
             "  .amdhsa_system_sgpr_workgroup_id_y 1\n  .amdhsa_system_sgpr_workgroup_id_z 1\n"
             "  .amdhsa_system_vgpr_workitem_id 2\n"
             "  .amdhsa_next_free_vgpr 256\n  .amdhsa_next_free_sgpr 96\n  .amdhsa_accum_offset 128\n"
             "  .amdhsa_group_segment_fixed_size %u\n  .amdhsa_kernarg_size %u\n.end_amdhsa_kernel\n",
          arch, body, lds_bytes, kernarg_bytes);
  fprintf(f, ".amdgpu_metadata\n---\namdhsa.version: [ 1, 2 ]\namdhsa.target: amdgcn-amd-amdhsa--%s\namdhsa.kernels:\n"
             "  - .name: k\n    .symbol: k.kd\n    .kernarg_segment_size: %u\n    .kernarg_segment_align: 8\n"
             "    .group_segment_fixed_size: %u\n    .private_segment_fixed_size: 0\n    .wavefront_size: 64\n"
             "    .sgpr_count: 96\n    .vgpr_count: 256\n    .agpr_count: 128\n    .max_flat_workgroup_size: 1024\n"
             "    .sgpr_spill_count: 0\n    .vgpr_spill_count: 0\n",
          arch, kernarg_bytes, lds_bytes);
  if (kernarg_bytes >= 8) {
    fprintf(f, "    .args:\n      - .offset: 0\n        .size: 8\n        .value_kind: global_buffer\n        .address_space: global\n");
    for (unsigned o = 8; o + 4 <= kernarg_bytes; o += 4)
      fprintf(f, "      - .offset: %u\n        .size: 4\n        .value_kind: by_value\n", o);
  }
  fprintf(f, "...\n.end_amdgpu_metadata\n");
  fclose(f);
  snprintf(cmd, sizeof cmd, "%s/llvm-mc -triple=amdgcn-amd-amdhsa -mcpu=%s -filetype=obj %s -o %s > %s 2>&1 && %s -shared %s -o %s >> %s 2>&1",
           CJ_LLVM_BINDIR, arch, s_path, o_path, log_path, CJ_LLD_PATH, o_path, co_path, log_path);
  int rc = system(cmd);
  convjit_status st = CONVJIT_OK;
  if (rc != 0) {
    cj_blob log = {0};
    if (tb_read_file(log_path, &log) == CONVJIT_OK) {
      st = CJ_ERR(CONVJIT_ERR_COMPILE, "assembling test kernel failed: %.*s", (int)(log.size > 2000 ? 2000 : log.size),
                  (const char *)log.data);
      cj_blob_free(&log);
    } else {
      st = CJ_ERR(CONVJIT_ERR_COMPILE, "assembling test kernel failed (rc %d)", rc);
    }
  } else {
    st = tb_read_file(co_path, co);
  }
  unlink(s_path); unlink(o_path); unlink(co_path); unlink(log_path); rmdir(dir);
  return st;
}

convjit_status tb_load(tb_run *r, const char *arch, const cj_blob *co, const char *kernel) {
  emu_options opt = {sizeof opt, 1, 1};
  CJ_TRY(emu_ctx_create(arch, &opt, &r->ctx));
  CJ_TRY(emu_module_load(r->ctx, co->data, co->size, &r->mod));
  CJ_TRY(emu_kernel_get(r->mod, kernel, &r->k));
  return CONVJIT_OK;
}

convjit_status tb_asm_run(tb_run *r, const char *arch, const char *body, uint32_t groups, uint32_t threads,
                          const void *args, unsigned argsz, unsigned lds_bytes, uint32_t wave) {
  memset(r, 0, sizeof *r);
  cj_blob co = {0};
  CJ_TRY(tb_asm_build(arch, body, argsz, lds_bytes, &co));
  convjit_status st = tb_load(r, arch, &co, "k");
  cj_blob_free(&co);
  if (st != CONVJIT_OK) return st;
  r->wave = calloc(1, sizeof(emu_wave));
  CJ_ALLOC_CHECK(r->wave);
  emu_launch_opts o;
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  o.hazard = -1;
  o.final_state = r->wave;
  o.final_wave = wave;
  uint32_t grid[3] = {groups, 1, 1}, block[3] = {threads, 1, 1};
  return emu_launch(r->k, grid, block, args, argsz, &o, &r->stats);
}

void tb_run_free(tb_run *r) {
  if (!r) return;
  emu_stats_free(&r->stats);
  emu_module_unload(r->mod);
  emu_ctx_destroy(r->ctx);
  free(r->wave);
  memset(r, 0, sizeof *r);
}
