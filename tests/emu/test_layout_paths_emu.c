/* Layout paths on the emulator (EMULATED, not hardware) beyond the plain
 * transposes of test_layout_emu.c: bf16 -> fp8 transposes, weight packs, and
 * the BIG path for bf16, several samples, partial tiles and c < 64. Compared
 * byte for byte with the CPU references (cj_ref_*): the kernels only move or
 * convert bytes, so there is no tolerance. Hazard checker on.
 *
 *   cvt 1,64,64 / 2,24,1000 / 1,3,1001 / 2,100,130   bf16 -> arch fp8 on random bit patterns
 *   wpack bf16 (C 3 -> 8, tail 216 -> 224), fp8 (C 20 -> 32, 288 -> 384)
 *   BIG (>= 2^31 bytes, per-block rebase): 1,1024,3456000 bf16 (7 GB),
 *       3,1000,1000003 bf16 (partial tiles, 3 samples), 2,40,30000000 fp8
 *       (c < 64, 8-byte stores), on a procedural x (bytes = hash of the
 *       offset) and a sink y keeping the checked tiles; four work-groups
 *       each, including the last tile. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "codegen/kplan.h"
#include "emu/emu.h"
#include "emu/memory.h"
#include "ref/ref.h"
#include "pipeline/build.h"
#include "util/numfmt.h"

typedef struct loaded {
  cj_built built;
  emu_ctx *ctx;
  emu_module *mod;
  const emu_kernel *k;
} loaded;

static void load(const cj_kplan *p, loaded *L) {
  memset(L, 0, sizeof *L);
  if (cj_build_kernel(p, 0, &L->built) != CONVJIT_OK) fail_msg("build %s: %s", p->name, cj_error_text());
  assert_int_equal(emu_ctx_create(p->arch->name, NULL, &L->ctx), CONVJIT_OK);
  if (emu_module_load(L->ctx, L->built.code_object.data, L->built.code_object.size, &L->mod) != CONVJIT_OK)
    fail_msg("load %s: %s", p->name, cj_error_text());
  assert_int_equal(emu_kernel_get(L->mod, p->name, &L->k), CONVJIT_OK);
}

static void unload(loaded *L) {
  emu_module_unload(L->mod);
  emu_ctx_destroy(L->ctx);
  cj_built_free(&L->built);
}

/* Launch; any error fails the test, an instruction the emulator lacks
 * included (it used to "skip" and pass: every layout kernel must run). */
static float g_qscale = 1.0f; /* the QSCALE argument of quantizing plans */

static void launch(const cj_kplan *p, loaded *L, uint64_t x, uint64_t y, const emu_launch_opts *o) {
  uint8_t ka[256] = {0};
  assert_true(L->built.info->kernarg_size <= sizeof ka);
  memcpy(ka, &x, 8); /* args x, y at offsets 0 and 8 (test_layout_build checks the metadata) */
  memcpy(ka + 8, &y, 8);
  if (p->nargs > 2) {
    assert_int_equal(p->args[2].role, CJ_ARG_QSCALE);
    memcpy(ka + 16, &g_qscale, 4); /* the third argument, 4 bytes by value, right after the two pointers */
  }
  uint32_t grid[3] = {(uint32_t)p->grid[0], (uint32_t)p->grid[1], (uint32_t)p->grid[2]};
  convjit_status st = emu_launch(L->k, grid, p->block, ka, L->built.info->kernarg_size, o, NULL);
  if (st != CONVJIT_OK) fail_msg("launch %s on %s: %s", p->name, p->arch->name, cj_error_text());
}

/* Runs plan p on in (in_bytes) and compares all out_bytes with want. */
static void run_dense(const cj_kplan *p, const uint8_t *in, size_t in_bytes, const uint8_t *want, size_t out_bytes) {
  loaded L;
  load(p, &L);
  emu_mem *m = emu_ctx_mem(L.ctx);
  uint64_t dx, dy;
  assert_int_equal(emu_mem_alloc(m, in_bytes, &dx), CONVJIT_OK);
  assert_int_equal(emu_mem_alloc(m, out_bytes, &dy), CONVJIT_OK);
  assert_int_equal(emu_mem_h2d(m, dx, in, in_bytes), CONVJIT_OK);
  assert_int_equal(emu_mem_memset(m, dy, 0xEE, out_bytes), CONVJIT_OK); /* unwritten bytes show up */
  launch(p, &L, dx, dy, NULL);
  uint8_t *got = malloc(out_bytes);
  assert_non_null(got);
  assert_int_equal(emu_mem_d2h(m, got, dy, out_bytes), CONVJIT_OK);
  for (size_t i = 0; i < out_bytes; i++)
    if (got[i] != want[i]) fail_msg("%s on %s: byte %zu = 0x%02x, want 0x%02x", p->name, p->arch->name, i, got[i], want[i]);
  free(got);
  unload(&L);
}

static void fill_pattern(uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(i * 131 + (i >> 8) * 7 + 1); /* no long zero runs */
}

/* bf16 -> fp8 transposes on random bf16 bit patterns (NaN, inf, denormals,
 * values past the fp8 range included) against cj_ref_transpose_bf16_fp8 in
 * the arch's format: the clamp + RNE must match exactly. */
static void test_transpose_cvt_dense(void **state) {
  (void)state;
  static const uint64_t sh[][3] = {{1, 64, 64}, {2, 24, 1000}, {1, 3, 1001}, {2, 100, 130}};
  int na = 0;
  const cj_arch *const *arches = cj_arch_list(&na);
  uint64_t seed = 0x9E3779B97F4A7C15u;
  for (int a = 0; a < na; a++)
    for (size_t i = 0; i < sizeof sh / sizeof sh[0]; i++) {
      cj_kplan p;
      assert_int_equal(cj_kplan_transpose_cvt_init(&p, arches[a], sh[i][0], sh[i][1], sh[i][2]), CONVJIT_OK);
      size_t elems = sh[i][0] * sh[i][1] * sh[i][2];
      uint16_t *x = malloc(elems * 2);
      uint8_t *want = malloc(elems);
      assert_true(x && want);
      for (size_t e = 0; e < elems; e++) {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        x[e] = (uint16_t)(seed >> 20);
        if (e % 5 == 0) x[e] = (uint16_t)(0x3C00 + (seed >> 50)); /* many values inside the fp8 range too */
      }
      int fmt = arches[a]->fp8 == CJ_FP8_E4M3FNUZ ? CJ_NF_E4M3FNUZ : CJ_NF_E4M3FN;
      cj_ref_transpose_bf16_fp8(x, want, fmt, sh[i][0], sh[i][1], sh[i][2]);
      run_dense(&p, (const uint8_t *)x, elems * 2, want, elems);
      free(x);
      free(want);
    }
}

/* The conv pre-pass modes (kplan_layout.h cj_prep_mode) against the
 * reference rules: QUANT = cj_ref_fp8_quantize_bf16 with scale s (the
 * kernel gets fl32(1/s)) then the plain layout op; FN_FNUZ =
 * cj_ref_fp8_fn_to_fnuz on every byte value, then the layout op. Exact. */
static void test_prep_modes_dense(void **state) {
  (void)state;
  static const uint64_t tsh[][3] = {{2, 24, 1000}, {1, 64, 64}, {1, 3, 1001}};
  static const struct { uint32_t k, c, trs, c_pad, row; } wsh[] = {{64, 3, 27, 16, 432}, {32, 20, 9, 32, 288}};
  const float s = 0.0371f; /* not a power of 2: the product rounds */
  int na = 0;
  const cj_arch *const *arches = cj_arch_list(&na);
  uint64_t seed = 0x2545F4914F6CDD1Du;
  for (int a = 0; a < na; a++) {
    int fmt = arches[a]->fp8 == CJ_FP8_E4M3FNUZ ? CJ_NF_E4M3FNUZ : CJ_NF_E4M3FN;
    for (int shape = 0; shape < 5; shape++)
      for (int mode = CJ_PREP_FN_FNUZ; mode <= CJ_PREP_QUANT; mode++) {
        int tr = shape < 3;
        size_t elems = tr ? tsh[shape][0] * tsh[shape][1] * tsh[shape][2]
                          : (size_t)wsh[shape - 3].k * wsh[shape - 3].c * wsh[shape - 3].trs;
        size_t out = tr ? elems : (size_t)wsh[shape - 3].k * wsh[shape - 3].row;
        uint32_t eb = mode == CJ_PREP_QUANT ? 2 : 1;
        uint8_t *in = malloc(elems * eb), *mapped = malloc(elems), *want = malloc(out);
        assert_true(in && mapped && want);
        for (size_t e = 0; e < elems; e++) {
          seed ^= seed << 13;
          seed ^= seed >> 7;
          seed ^= seed << 17;
          if (eb == 1) {
            in[e] = (uint8_t)(e < 256 ? e : seed >> 56); /* every code at least once */
            mapped[e] = cj_ref_fp8_fn_to_fnuz(in[e]);
          } else { /* bf16 near the fp8 range (some saturate after * 1/s), plus any bit pattern */
            uint16_t v = e % 3 ? (uint16_t)(0x3800 + (seed >> 52)) : (uint16_t)(seed >> 48);
            if (e % 7 == 0) v |= 0x8000;
            memcpy(in + 2 * e, &v, 2);
          }
        }
        if (eb == 2) assert_int_equal(cj_ref_fp8_quantize_bf16((const uint16_t *)in, elems, s, fmt, mapped), CONVJIT_OK);
        cj_kplan p;
        if (tr) {
          assert_int_equal(cj_kplan_transpose_prep_init(&p, arches[a], eb, (cj_prep_mode)mode, tsh[shape][0],
                                                        tsh[shape][1], tsh[shape][2]),
                           CONVJIT_OK);
          cj_ref_transpose(mapped, want, 1, tsh[shape][0], tsh[shape][1], tsh[shape][2]);
        } else {
          const int w = shape - 3;
          assert_int_equal(cj_kplan_wpack_prep_init(&p, arches[a], eb, (cj_prep_mode)mode, wsh[w].k, wsh[w].c,
                                                    wsh[w].trs, wsh[w].c_pad, wsh[w].row),
                           CONVJIT_OK);
          cj_ref_weight_pack(mapped, want, 1, wsh[w].k, wsh[w].c, wsh[w].trs, wsh[w].c_pad, wsh[w].row);
        }
        g_qscale = 1.0f / s;
        run_dense(&p, in, elems * eb, want, out);
        g_qscale = 1.0f;
        free(in);
        free(mapped);
        free(want);
      }
  }
}

static void test_wpack_dense(void **state) {
  (void)state;
  static const struct { uint32_t eb, k, c, trs, c_pad, row; } sh[] = {{2, 64, 3, 27, 8, 224}, {1, 32, 20, 9, 32, 384}};
  int na = 0;
  const cj_arch *const *arches = cj_arch_list(&na);
  for (int a = 0; a < na; a++)
    for (size_t i = 0; i < 2; i++) {
      cj_kplan p;
      assert_int_equal(cj_kplan_wpack_init(&p, arches[a], sh[i].eb, sh[i].k, sh[i].c, sh[i].trs, sh[i].c_pad, sh[i].row),
                       CONVJIT_OK);
      size_t in_bytes = (size_t)sh[i].k * sh[i].c * sh[i].trs * sh[i].eb;
      size_t out_bytes = (size_t)sh[i].k * sh[i].row * sh[i].eb;
      uint8_t *w = malloc(in_bytes), *want = malloc(out_bytes);
      assert_true(w && want);
      fill_pattern(w, in_bytes);
      cj_ref_weight_pack(w, want, sh[i].eb, sh[i].k, sh[i].c, sh[i].trs, sh[i].c_pad, sh[i].row);
      run_dense(&p, w, in_bytes, want, out_bytes);
      free(w);
      free(want);
    }
}

/* BIG: x bytes are a hash of their offset, so any misplaced byte is caught. */
static uint8_t hash_byte(uint64_t i) { return (uint8_t)((i * UINT64_C(0x9E3779B97F4A7C15)) >> 56); }
static void fill_hash(void *user, uint64_t off, void *dst, size_t n) {
  (void)user;
  uint8_t *d = dst;
  for (size_t i = 0; i < n; i++) d[i] = hash_byte(off + i);
}

static void run_big(const cj_arch *arch, uint32_t eb, uint64_t N, uint64_t C, uint64_t S) {
  cj_kplan p;
  assert_int_equal(cj_kplan_transpose_init(&p, arch, eb, N, C, S), CONVJIT_OK);
  assert_int_equal(p.u.tr.big, 1);
  loaded L;
  load(&p, &L);
  /* Work-group x = c_tile + c_tiles * s_tile, z = n (kplan_layout.h). Tiles
   * (s tile, c tile, n): first, last (partial on both edges when C, S are not
   * multiples of 64), middle, near-last. */
  const uint32_t ct = p.u.tr.c_tiles, stl = p.u.tr.s_tiles, gz = (uint32_t)p.grid[2];
  assert_int_equal(p.grid[0], (uint64_t)ct * stl);
  const uint32_t wg[4][3] = {{0, 0, 0}, {stl - 1, ct - 1, gz - 1}, {stl / 2, ct / 2, gz - 1}, {stl - 2, 3 % ct, 0}};
  uint64_t list[4], off[4 * 64], len[4 * 64];
  uint32_t nw = 0;
  for (int w = 0; w < 4; w++) {
    list[w] = wg[w][1] + (uint64_t)ct * wg[w][0] + p.grid[0] * wg[w][2];
    uint64_t s0 = wg[w][0] * UINT64_C(64), c0 = wg[w][1] * UINT64_C(64), n = wg[w][2];
    uint64_t cl = C - c0 < 64 ? C - c0 : 64;
    for (uint64_t r = 0; r < 64 && s0 + r < S; r++) {
      off[nw] = ((n * S + s0 + r) * C + c0) * eb; /* y[n][s0+r][c0 ..] */
      len[nw++] = cl * eb;
    }
  }
  emu_mem *m = emu_ctx_mem(L.ctx);
  uint64_t bytes = N * C * S * eb, dx, dy;
  assert_int_equal(emu_mem_alloc_procedural(m, bytes, fill_hash, NULL, &dx), CONVJIT_OK);
  assert_int_equal(emu_mem_alloc_sink(m, bytes, off, len, nw, &dy), CONVJIT_OK);
  emu_launch_opts o = {0};
  o.size = sizeof o;
  o.wg_list = list;
  o.wg_list_len = 4;
  o.hazard = -1;
  launch(&p, &L, dx, dy, &o);
  for (uint32_t i = 0; i < nw; i++) {
    uint8_t buf[128];
    assert_int_equal(emu_mem_d2h(m, buf, dy + off[i], len[i]), CONVJIT_OK);
    for (uint64_t b = 0; b < len[i]; b++) {
      uint64_t yo = off[i] + b, e = yo / eb;
      uint64_t c = e % C, s = (e / C) % S, n = e / (C * S);
      uint64_t xo = ((n * C + c) * S + s) * eb + yo % eb; /* x[n][c][s], same byte of the element */
      if (buf[b] != hash_byte(xo))
        fail_msg("%s on %s: y byte %llu = 0x%02x, want x byte %llu = 0x%02x", p.name, arch->name,
                 (unsigned long long)yo, buf[b], (unsigned long long)xo, hash_byte(xo));
    }
  }
  unload(&L);
}

static void test_transpose_big(void **state) {
  (void)state;
  int na = 0;
  const cj_arch *const *arches = cj_arch_list(&na);
  for (int a = 0; a < na; a++) {
    /* (1,1024,3456000 fp8, the acceptance shape, is in test_layout_emu.c) */
    run_big(arches[a], 2, 1, 1024, 3456000);   /* bf16 (7 GB) */
    run_big(arches[a], 2, 3, 1000, 1000003);   /* partial tiles, 3 samples, 2-byte path */
    run_big(arches[a], 1, 2, 40, 30000000);    /* c < 64, 8-byte stores */
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_transpose_cvt_dense),
      cmocka_unit_test(test_wpack_dense),
      cmocka_unit_test(test_prep_modes_dense),
      cmocka_unit_test(test_transpose_big),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
