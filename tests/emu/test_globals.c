/* Code-object data on the emulator: the loaded image (emu_module_load ->
 * pipeline/codeobj.c cj_image_read/place) and s_getpc_b64 pointing into it.
 * Kernels built from LLVM IR by the project pipeline (-shared, ld.lld):
 *   - a constant table (.rodata, internal: s_getpc + rel32) read by lane;
 *   - a default-visibility global (.data, through the GOT: an s_load of the
 *     entry the loader fills from R_AMDGPU_ABS64), a hidden one (.data,
 *     rel32), an internal zero one (.bss, rel32) and a pointer-valued global
 *     initialised with a hidden global's address (R_AMDGPU_RELATIVE64);
 *   - state shared by launches of one module, not by two modules;
 *   - refusals: an unknown relocation type and an undefined symbol (bytes of
 *     a real object patched), named in the error; an undefined weak symbol
 *     binds to 0.
 * On gfx942 and gfx950. Expected values are computed here from the table and
 * the initial values this file writes into the IR. */
#include <elf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "support_mem.h"

#define OK(x) assert_int_equal((x), CONVJIT_OK)

static const int32_t TAB[16] = {31, -4, 159, 26, -535, 89, 79, 3, 238, -462, 643, 38, 327, -950, 288, 41};
enum { G0 = 1000, H0 = 7 };

/* k:    out[l] = tab[l & 15] + g + h + z + *pt       (pt = &h)
 * bump: lane 0 only: out[0] = z, out[1] = g; z += 1; g += 10; h = 2h + 1 */
static char *ir_text(void) {
  char tab[512];
  int n = 0;
  for (int i = 0; i < 16; i++) n += snprintf(tab + n, sizeof tab - (size_t)n, "%si32 %d", i ? ", " : "", TAB[i]);
  static const char *fmt =
      "target triple = \"amdgcn-amd-amdhsa\"\n"
      "@tab = internal addrspace(4) constant [16 x i32] [%s]\n"
      "@g = addrspace(1) global i32 %d\n"
      "@h = hidden addrspace(1) global i32 %d\n"
      "@z = internal addrspace(1) global i32 0\n"
      "@pt = addrspace(1) global ptr addrspace(1) @h\n"
      "declare i32 @llvm.amdgcn.workitem.id.x()\n"
      "define amdgpu_kernel void @k(ptr addrspace(1) %%out) {\n"
      "  %%l = call i32 @llvm.amdgcn.workitem.id.x()\n"
      "  %%i = and i32 %%l, 15\n"
      "  %%tp = getelementptr [16 x i32], ptr addrspace(4) @tab, i32 0, i32 %%i\n"
      "  %%t = load i32, ptr addrspace(4) %%tp\n"
      "  %%gv = load volatile i32, ptr addrspace(1) @g\n"
      "  %%hv = load volatile i32, ptr addrspace(1) @h\n"
      "  %%zv = load volatile i32, ptr addrspace(1) @z\n"
      "  %%pp = load volatile ptr addrspace(1), ptr addrspace(1) @pt\n"
      "  %%pv = load volatile i32, ptr addrspace(1) %%pp\n"
      "  %%a1 = add i32 %%t, %%gv\n"
      "  %%a2 = add i32 %%a1, %%hv\n"
      "  %%a3 = add i32 %%a2, %%zv\n"
      "  %%a4 = add i32 %%a3, %%pv\n"
      "  %%o = getelementptr i32, ptr addrspace(1) %%out, i32 %%l\n"
      "  store i32 %%a4, ptr addrspace(1) %%o\n"
      "  ret void\n"
      "}\n"
      "define amdgpu_kernel void @bump(ptr addrspace(1) %%out) {\n"
      "  %%l = call i32 @llvm.amdgcn.workitem.id.x()\n"
      "  %%c = icmp eq i32 %%l, 0\n"
      "  br i1 %%c, label %%one, label %%done\n"
      "one:\n"
      "  %%zv = load volatile i32, ptr addrspace(1) @z\n"
      "  %%gv = load volatile i32, ptr addrspace(1) @g\n"
      "  %%hv = load volatile i32, ptr addrspace(1) @h\n"
      "  store i32 %%zv, ptr addrspace(1) %%out\n"
      "  %%o1 = getelementptr i32, ptr addrspace(1) %%out, i32 1\n"
      "  store i32 %%gv, ptr addrspace(1) %%o1\n"
      "  %%z1 = add i32 %%zv, 1\n"
      "  store volatile i32 %%z1, ptr addrspace(1) @z\n"
      "  %%g1 = add i32 %%gv, 10\n"
      "  store volatile i32 %%g1, ptr addrspace(1) @g\n"
      "  %%h2 = mul i32 %%hv, 2\n"
      "  %%h1 = add i32 %%h2, 1\n"
      "  store volatile i32 %%h1, ptr addrspace(1) @h\n"
      "  br label %%done\n"
      "done:\n"
      "  ret void\n"
      "}\n";
  size_t cap = strlen(fmt) + sizeof tab + 64;
  char *b = malloc(cap);
  assert_non_null(b);
  snprintf(b, cap, fmt, tab, G0, H0);
  return b;
}

static const char *ARCHES[2] = {"gfx942", "gfx950"};

typedef struct fix {
  tmem t;
  const emu_kernel *bump;
  uint64_t out;
} fix;

static void fix_open(fix *f, const char *arch) {
  char *ir = ir_text();
  convjit_status st = tmem_open(&f->t, arch, ir);
  if (st != CONVJIT_OK) fail_msg("%s: %s", arch, cj_error_text());
  free(ir);
  OK(emu_kernel_get(f->t.mod, "bump", &f->bump));
  f->out = tmem_buf(&f->t, NULL, 64 * 4);
  assert_true(f->out != 0);
}

/* One launch of k (one workgroup of 64): out[l] == tab[l & 15] + g + 2h + z. */
static void check_k(fix *f, int32_t g, int32_t h, int32_t z, const char *what) {
  OK(tmem_run(&f->t, 1, 64, &f->out, sizeof f->out));
  int32_t got[64];
  OK(emu_mem_d2h(f->t.mem, got, f->out, sizeof got));
  for (int l = 0; l < 64; l++)
    if (got[l] != TAB[l & 15] + g + 2 * h + z)
      fail_msg("%s: lane %d: %d, expected tab[%d] %d + g %d + 2 * h %d + z %d", what, l, got[l], l & 15,
               TAB[l & 15], g, h, z);
}

static void bump(fix *f, int32_t *z_before, int32_t *g_before) {
  uint32_t grid[3] = {1, 1, 1}, block[3] = {64, 1, 1};
  OK(emu_launch(f->bump, grid, block, &f->out, sizeof f->out, NULL, NULL));
  int32_t got[2];
  OK(emu_mem_d2h(f->t.mem, got, f->out, sizeof got));
  *z_before = got[0];
  *g_before = got[1];
}

/* (a) + (b): the table, the GOT global, the rel32 ones, the RELATIVE64
 * pointer; and the paths really are the ones named: the built object has an
 * R_AMDGPU_ABS64 for g (its GOT entry) and a RELATIVE64 (pt's value). */
static void t_read_data(void **st) {
  (void)st;
  for (int a = 0; a < 2; a++) {
    fix f;
    fix_open(&f, ARCHES[a]);
    cj_image im;
    OK(cj_image_read(f.t.co.data, f.t.co.size, &im));
    int abs_g = 0, rel = 0;
    for (uint32_t i = 0; i < im.nrelocs; i++) {
      abs_g += im.relocs[i].type == 3 && !strcmp(im.relocs[i].sym, "g"); /* R_AMDGPU_ABS64 */
      rel += im.relocs[i].type == 13;                                     /* R_AMDGPU_RELATIVE64 */
    }
    assert_int_equal(abs_g, 1);
    assert_true(rel >= 1);
    uint64_t isz = 0, ia = emu_module_image(f.t.mod, &isz);
    assert_true(ia != 0 && isz == im.size);
    cj_image_free(&im);
    check_k(&f, G0, H0, 0, ARCHES[a]);
    tmem_close(&f.t);
  }
}

/* (c): bump's writes persist into later launches of the module (bump and
 * k), and a second module of the same object has its own globals. */
static void t_shared_state(void **st) {
  (void)st;
  for (int a = 0; a < 2; a++) {
    fix f;
    fix_open(&f, ARCHES[a]);
    int32_t g = G0, h = H0;
    for (int32_t it = 0; it < 3; it++) {
      int32_t zb, gb;
      bump(&f, &zb, &gb);
      assert_int_equal(zb, it);
      assert_int_equal(gb, g);
      g += 10;
      h = 2 * h + 1;
      check_k(&f, g, h, it + 1, "after bump");
    }
    emu_module *m2 = NULL;
    const emu_kernel *k2 = NULL;
    OK(emu_module_load(f.t.ctx, f.t.co.data, f.t.co.size, &m2));
    OK(emu_kernel_get(m2, "k", &k2));
    uint32_t grid[3] = {1, 1, 1}, block[3] = {64, 1, 1};
    OK(emu_launch(k2, grid, block, &f.out, sizeof f.out, NULL, NULL));
    int32_t got[64];
    OK(emu_mem_d2h(f.t.mem, got, f.out, sizeof got));
    for (int l = 0; l < 64; l++) assert_int_equal(got[l], TAB[l & 15] + G0 + 2 * H0);
    emu_module_unload(m2);
    check_k(&f, g, h, 3, "first module after the second unloaded");
    tmem_close(&f.t);
  }
}

/* ---- patching a real object ---------------------------------------------- */

typedef struct elfpatch {
  uint8_t *p;
  size_t rela_off;   /* file offset of the relocation naming `sym` */
  size_t sym_off;    /* file offset of that symbol's Elf64_Sym */
} elfpatch;

/* Finds the dynamic relocation whose symbol is `sym` (test-only walk: the
 * objects are the pipeline's own, well-formed). */
static void find_reloc(uint8_t *p, const char *sym, elfpatch *out) {
  Elf64_Ehdr eh;
  memcpy(&eh, p, sizeof eh);
  out->p = p;
  out->rela_off = out->sym_off = 0;
  for (uint32_t i = 0; i < eh.e_shnum; i++) {
    Elf64_Shdr sh, ss, st;
    memcpy(&sh, p + eh.e_shoff + i * sizeof sh, sizeof sh);
    if (sh.sh_type != SHT_RELA || !(sh.sh_flags & SHF_ALLOC)) continue;
    memcpy(&ss, p + eh.e_shoff + sh.sh_link * sizeof ss, sizeof ss);
    memcpy(&st, p + eh.e_shoff + ss.sh_link * sizeof st, sizeof st);
    for (uint64_t j = 0; j < sh.sh_size / sizeof(Elf64_Rela); j++) {
      Elf64_Rela r;
      memcpy(&r, p + sh.sh_offset + j * sizeof r, sizeof r);
      uint32_t si = (uint32_t)ELF64_R_SYM(r.r_info);
      if (!si) continue;
      Elf64_Sym s;
      memcpy(&s, p + ss.sh_offset + si * sizeof s, sizeof s);
      if (strcmp((const char *)p + st.sh_offset + s.st_name, sym)) continue;
      out->rela_off = sh.sh_offset + j * sizeof r;
      out->sym_off = ss.sh_offset + si * sizeof s;
      return;
    }
  }
  fail_msg("no dynamic relocation names %s", sym);
}

static void expect_refused(const char *arch, const cj_blob *co, const char *frag1, const char *frag2) {
  emu_options o = {sizeof o, 1, 1};
  emu_ctx *c = NULL;
  emu_module *m = NULL;
  OK(emu_ctx_create(arch, &o, &c));
  assert_int_equal(emu_module_load(c, co->data, co->size, &m), CONVJIT_ERR_INVALID_ARG);
  assert_null(m);
  const char *e = cj_error_text();
  if (!strstr(e, frag1) || !strstr(e, frag2)) fail_msg("error lacks '%s' / '%s': %s", frag1, frag2, e);
  uint32_t nr = 9;
  emu_mem_usage(emu_ctx_mem(c), &nr, NULL);
  assert_int_equal(nr, 0); /* the image of the refused module was freed */
  emu_ctx_destroy(c);
}

static void t_refusals(void **st) {
  (void)st;
  for (int a = 0; a < 2; a++) {
    char *ir = ir_text();
    cj_blob co;
    OK(tmem_build(ARCHES[a], ir, &co));
    free(ir);
    elfpatch ep;
    find_reloc(co.data, "g", &ep);
    Elf64_Rela r0;
    Elf64_Sym s0;
    memcpy(&r0, co.data + ep.rela_off, sizeof r0);
    memcpy(&s0, co.data + ep.sym_off, sizeof s0);
    /* type 4 (R_AMDGPU_REL32): a type the loader does not apply */
    Elf64_Rela r = r0;
    r.r_info = ELF64_R_INFO(ELF64_R_SYM(r0.r_info), 4);
    memcpy(co.data + ep.rela_off, &r, sizeof r);
    expect_refused(ARCHES[a], &co, "relocation type 4", "symbol g");
    memcpy(co.data + ep.rela_off, &r0, sizeof r0);
    /* g made undefined (strong): nothing to bind the GOT entry to */
    Elf64_Sym s = s0;
    s.st_shndx = SHN_UNDEF;
    memcpy(co.data + ep.sym_off, &s, sizeof s);
    expect_refused(ARCHES[a], &co, "undefined symbol g", "R_AMDGPU_ABS64");
    /* undefined weak: binds to 0, so g's GOT entry holds addend 0 */
    s.st_info = ELF64_ST_INFO(STB_WEAK, ELF64_ST_TYPE(s0.st_info));
    memcpy(co.data + ep.sym_off, &s, sizeof s);
    emu_options o = {sizeof o, 1, 1};
    emu_ctx *c = NULL;
    emu_module *m = NULL;
    OK(emu_ctx_create(ARCHES[a], &o, &c));
    OK(emu_module_load(c, co.data, co.size, &m));
    uint64_t isz, ia = emu_module_image(m, &isz);
    uint64_t got = 1;
    assert_true(r0.r_offset + 8 <= isz);
    OK(emu_mem_d2h(emu_ctx_mem(c), &got, ia + r0.r_offset, 8));
    assert_int_equal(got, (uint64_t)r0.r_addend);
    /* unloading after the context: the detached form, no memory touched */
    emu_ctx_destroy(c);
    emu_module_unload_detached(m);
    cj_blob_free(&co);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(t_read_data),
      cmocka_unit_test(t_shared_state),
      cmocka_unit_test(t_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
