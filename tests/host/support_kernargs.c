/* Kernel-argument test support (contract in support_kernargs.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "pipeline/compile.h"
#include "pipeline/build.h"
#include "support_kernargs.h"

/* ---- metadata through llvm-readelf ------------------------------------------ */

/* "  key:   value" -> key without the leading '.', value; 0 if no colon. */
static int md_kv(const char *line, char *key, size_t kcap, char *val, size_t vcap) {
  const char *s = line;
  while (*s == ' ' || *s == '-') s++;
  if (*s == '.') s++;
  const char *colon = strchr(s, ':');
  if (!colon) return 0;
  snprintf(key, kcap, "%.*s", (int)(colon - s), s);
  const char *v = colon + 1;
  while (*v == ' ') v++;
  snprintf(val, vcap, "%s", v);
  size_t n = strlen(val);
  while (n && (val[n - 1] == '\n' || val[n - 1] == ' ')) val[--n] = 0;
  return 1;
}

static int indent_of(const char *line) {
  int i = 0;
  while (line[i] == ' ') i++;
  return i;
}

/* YAML as llvm-readelf prints the msgpack note: kernels are "  - " items of
 * amdhsa.kernels with their keys at indent 4; args are "      - " items of
 * .args with keys at indent 8. */
int md_read(const void *image, size_t size, md_kernel *k, int max) {
  char path[256];
  snprintf(path, sizeof path, "%s/md-%d-XXXXXX", CJ_BINARY_DIR, (int)getpid());
  int fd = mkstemp(path);
  if (fd < 0) return -1;
  int ok = write(fd, image, size) == (ssize_t)size;
  close(fd);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "'%s/llvm-readelf' --notes '%s'", CJ_LLVM_BINDIR, path);
  FILE *f = ok ? popen(cmd, "r") : NULL;
  if (!f) {
    unlink(path);
    return -1;
  }
  char line[512], key[64], val[256];
  int n = -1, in_kernels = 0;
  md_arg *arg = NULL;
  while (fgets(line, sizeof line, f)) {
    int ind = indent_of(line);
    if (!strncmp(line, "amdhsa.kernels:", 15)) { in_kernels = 1; continue; }
    if (ind == 0 && line[0] != '\n') in_kernels = 0;
    if (!in_kernels || !md_kv(line, key, sizeof key, val, sizeof val)) continue;
    if (ind == 2 && line[2] == '-') { /* a new kernel */
      if (n + 1 >= max) break;
      memset(&k[++n], 0, sizeof k[n]);
      arg = NULL;
    }
    if (n < 0) continue;
    if (ind <= 4) {
      arg = NULL;
      if (!strcmp(key, "name")) snprintf(k[n].name, sizeof k[n].name, "%s", val);
      continue;
    }
    if (ind == 6 && line[6] == '-') { /* a new argument */
      arg = k[n].nargs < MD_MAX_ARGS ? &k[n].args[k[n].nargs++] : NULL;
      if (arg) memset(arg, 0, sizeof *arg);
    }
    if (!arg) continue;
    if (!strcmp(key, "name")) snprintf(arg->name, sizeof arg->name, "%s", val);
    else if (!strcmp(key, "value_kind")) snprintf(arg->value_kind, sizeof arg->value_kind, "%s", val);
    else if (!strcmp(key, "offset")) arg->offset = (unsigned)strtoul(val, NULL, 10);
    else if (!strcmp(key, "size")) arg->size = (unsigned)strtoul(val, NULL, 10);
  }
  int rc = pclose(f);
  unlink(path);
  if (rc != 0 || n < 0) {
    printf("md_read: %s gave status %d and %d kernels\n", cmd, rc, n + 1);
    return -1;
  }
  /* keep the explicit arguments only */
  for (int i = 0; i <= n; i++) {
    int m = 0;
    for (int a = 0; a < k[i].nargs; a++)
      if (!strcmp(k[i].args[a].value_kind, "global_buffer") || !strcmp(k[i].args[a].value_kind, "by_value"))
        k[i].args[m++] = k[i].args[a];
    k[i].nargs = m;
  }
  return n + 1;
}

const md_kernel *md_find(const md_kernel *k, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (!strcmp(k[i].name, name)) return &k[i];
  return NULL;
}

/* ---- the probe kernel ---------------------------------------------------------- */

static const char k_probe_ir[] =
    "define amdgpu_kernel void @" PROBE_NAME "(ptr addrspace(1) %x, i32 %a, ptr addrspace(1) %y, float %b,\n"
    "                                         i32 %c) {\n"
    "  store i32 %a, ptr addrspace(1) %x, align 4\n"
    "  %x1 = getelementptr i32, ptr addrspace(1) %x, i64 1\n"
    "  store i32 %c, ptr addrspace(1) %x1, align 4\n"
    "  store float %b, ptr addrspace(1) %y, align 4\n"
    "  ret void\n"
    "}\n"
    "!llvm.module.flags = !{!0}\n"
    "!0 = !{i32 1, !\"amdhsa_code_object_version\", i32 500}\n";

static convjit_status probe_build(const cj_arch *arch, cj_blob *co) {
  return cj_build_ir_text(arch, k_probe_ir, "probe IR", co);
}

static void probe_arg(cj_kplan *kp, const char *name, int is_ptr) {
  kp->args[kp->nargs++] = (cj_karg_desc){.name = name, .is_ptr = (uint8_t)is_ptr, .size = is_ptr ? 8 : 4};
}

convjit_status probe_open(probe *p, convjit_context *c, uint32_t a, float b, uint32_t cc) {
  memset(p, 0, sizeof *p);
  CJ_TRY(probe_build(c->arch, &p->co));
  CJ_TRY(cj_codeobj_parse(p->co.data, p->co.size, &p->parsed));
  p->loaded.info = cj_codeobj_find(p->parsed, PROBE_NAME);
  CJ_CHECK(p->loaded.info, CONVJIT_ERR_INTERNAL, "probe: no kernel %s in its code object", PROBE_NAME);
  CJ_TRY(c->dev->ops->module_load(c->dev, p->co.data, p->co.size, &p->mod));
  CJ_TRY(c->dev->ops->kernel_get(c->dev, p->mod, PROBE_NAME, &p->loaded.kern));
  snprintf(p->kp.name, sizeof p->kp.name, "%s", PROBE_NAME);
  p->kp.arch = c->arch;
  probe_arg(&p->kp, "x", 1);
  probe_arg(&p->kp, "a", 0);
  probe_arg(&p->kp, "y", 1);
  probe_arg(&p->kp, "b", 0);
  probe_arg(&p->kp, "c", 0);
  uint32_t bbits;
  memcpy(&bbits, &b, 4);
  p->bind[0] = (cj_bind){.kind = CJ_BIND_X};
  p->bind[1] = (cj_bind){.kind = CJ_BIND_CONST_U32, .value = a};
  p->bind[2] = (cj_bind){.kind = CJ_BIND_Y};
  p->bind[3] = (cj_bind){.kind = CJ_BIND_CONST_F32, .value = bbits};
  p->bind[4] = (cj_bind){.kind = CJ_BIND_CONST_U32, .value = cc};
  cj_plan_step *s = &p->step;
  s->kind = CJ_STEP_KERNEL;
  s->k = &p->loaded;
  snprintf(s->name, sizeof s->name, "%s", PROBE_NAME);
  for (int i = 0; i < 3; i++) s->grid[i] = s->block[i] = 1;
  s->block[0] = 64;
  /* the layout as the cache computes it for a loaded kernel (the packer's) */
  CJ_TRY(cj_kernargs_layout(p->loaded.info, &p->kp, CJ_KERNARG_MAX, p->loaded.arg, CJ_KPLAN_MAX_ARGS,
                            &p->loaded.nargs, &p->loaded.kernarg_bytes));
  return cj_plan_step_bind_args(&p->kp, p->bind, &p->loaded, s);
}

void probe_close(probe *p, convjit_context *c) {
  if (p->mod) c->dev->ops->module_unload(c->dev, p->mod);
  cj_codeobj_destroy(p->parsed);
  cj_blob_free(&p->co);
  memset(p, 0, sizeof *p);
}
