/* The emulator's device address space (src/emu/memory.c) tested directly:
 * plain ranges and host copies, addresses outside every range (incl. the
 * guard page and a freed range), procedural ranges (bytes from the offset,
 * read-only), write-sink ranges (windows kept, rest dropped, reads outside
 * windows rejected), f32 atomics, and lock-free lookups from many threads
 * while ranges are being registered. Expected bytes come from closed-form
 * formulas written here, not from memory.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <pthread.h>
#include <stdio.h>
#include <cmocka.h>

#include "emu/memory.h"

static emu_access_ctx ctx0 = {"test_kernel", 0x1c4, "buffer_load_dword v1, v0, s[4:7], 0 offen", 5};

static void plain_roundtrip_and_errors(void **state) {
  (void)state;
  emu_mem *m;
  assert_int_equal(emu_mem_create(&m), CONVJIT_OK);
  uint64_t a, b;
  assert_int_equal(emu_mem_alloc(m, 100, &a), CONVJIT_OK);
  assert_int_equal(emu_mem_alloc(m, 5000, &b), CONVJIT_OK);
  assert_true(a >= EMU_MEM_BASE);
  assert_int_equal(a % EMU_MEM_PAGE, 0);
  assert_int_equal(b % EMU_MEM_PAGE, 0);
  assert_true(b >= a + 100 + EMU_MEM_PAGE - 100); /* a guard page at least between them */
  uint8_t src[100], dst[100];
  for (int i = 0; i < 100; i++) src[i] = (uint8_t)(i * 7 + 3);
  assert_int_equal(emu_mem_h2d(m, a, src, 100), CONVJIT_OK);
  memset(dst, 0, sizeof dst);
  assert_int_equal(emu_mem_read(m, a + 10, dst, 8, &ctx0), CONVJIT_OK);
  for (int i = 0; i < 8; i++) assert_int_equal(dst[i], (uint8_t)((10 + i) * 7 + 3));
  uint32_t v = 0xdeadbeef;
  assert_int_equal(emu_mem_write(m, a + 96, &v, 4, &ctx0), CONVJIT_OK);
  assert_int_equal(emu_mem_d2h(m, dst, a, 100), CONVJIT_OK);
  assert_memory_equal(dst + 96, &v, 4);
  /* fresh allocations are zero */
  uint8_t z[16] = {0}, t[16];
  assert_int_equal(emu_mem_d2h(m, t, b + 4000, 16), CONVJIT_OK);
  assert_memory_equal(t, z, 16);
  /* one byte past the end: error naming address, kernel, offset */
  assert_int_equal(emu_mem_read(m, a + 97, dst, 4, &ctx0), CONVJIT_ERR_EMULATION);
  const char *e = cj_error_text();
  char want[64];
  snprintf(want, sizeof want, "0x%llx", (unsigned long long)(a + 97));
  assert_non_null(strstr(e, want));
  assert_non_null(strstr(e, "test_kernel"));
  assert_non_null(strstr(e, "0x1c4"));
  assert_int_equal(emu_mem_write(m, a + 100, &v, 1, &ctx0), CONVJIT_ERR_EMULATION);
  assert_int_equal(emu_mem_read(m, 0, dst, 4, &ctx0), CONVJIT_ERR_EMULATION);
  assert_int_equal(emu_mem_read(m, EMU_MEM_BASE - 4, dst, 4, &ctx0), CONVJIT_ERR_EMULATION);
  /* memset */
  assert_int_equal(emu_mem_memset(m, b + 1, 0xab, 3), CONVJIT_OK);
  assert_int_equal(emu_mem_d2h(m, t, b, 5), CONVJIT_OK);
  assert_int_equal(t[0], 0);
  assert_int_equal(t[1], 0xab);
  assert_int_equal(t[3], 0xab);
  assert_int_equal(t[4], 0);
  /* host pointer */
  uint8_t *hp = emu_mem_host_ptr(m, a, 100);
  assert_non_null(hp);
  assert_int_equal(hp[5], (uint8_t)(5 * 7 + 3));
  assert_null(emu_mem_host_ptr(m, a, 101));
  /* free: the address is dead afterwards and never reused */
  assert_int_equal(emu_mem_free(m, a), CONVJIT_OK);
  assert_int_equal(emu_mem_read(m, a, dst, 1, &ctx0), CONVJIT_ERR_EMULATION);
  assert_int_equal(emu_mem_free(m, a), CONVJIT_ERR_INVALID_ARG);
  assert_int_equal(emu_mem_free(m, b + 8), CONVJIT_ERR_INVALID_ARG);
  uint64_t c;
  assert_int_equal(emu_mem_alloc(m, 100, &c), CONVJIT_OK);
  assert_true(c > b);
  /* size 0 */
  uint64_t zero = 1;
  assert_int_equal(emu_mem_alloc(m, 0, &zero), CONVJIT_OK);
  assert_int_equal(zero, 0);
  assert_int_equal(emu_mem_free(m, 0), CONVJIT_OK);
  uint32_t n;
  uint64_t hb;
  emu_mem_usage(m, &n, &hb);
  assert_int_equal(n, 2);
  assert_int_equal(hb, 5100);
  emu_mem_destroy(m);
  emu_mem_destroy(NULL);
}

/* Procedural bytes: byte at offset o is (o * 131 + (o >> 16)) & 0xff. */
static void fill_pattern(void *user, uint64_t off, void *dst, size_t n) {
  int *calls = user;
  __atomic_add_fetch(calls, 1, __ATOMIC_RELAXED);
  uint8_t *d = dst;
  for (size_t i = 0; i < n; i++) {
    uint64_t o = off + i;
    d[i] = (uint8_t)((o * 131 + (o >> 16)) & 0xff);
  }
}

static void procedural_range(void **state) {
  (void)state;
  emu_mem *m;
  assert_int_equal(emu_mem_create(&m), CONVJIT_OK);
  int calls = 0;
  uint64_t size = 6ull << 30; /* 6 GiB past 2^32: nothing allocated */
  uint64_t p;
  assert_int_equal(emu_mem_alloc_procedural(m, size, fill_pattern, &calls, &p), CONVJIT_OK);
  uint64_t hb;
  emu_mem_usage(m, NULL, &hb);
  assert_int_equal(hb, 0);
  uint64_t offs[] = {0, 1, 65535, 65536, (1ull << 32) + 5, size - 16};
  for (size_t k = 0; k < sizeof offs / sizeof offs[0]; k++) {
    uint8_t b[16];
    assert_int_equal(emu_mem_read(m, p + offs[k], b, 16, &ctx0), CONVJIT_OK);
    for (int i = 0; i < 16; i++) {
      uint64_t o = offs[k] + i;
      assert_int_equal(b[i], (uint8_t)((o * 131 + (o >> 16)) & 0xff));
    }
  }
  assert_int_equal(calls, 6);
  uint8_t b[16];
  assert_int_equal(emu_mem_read(m, p + size - 15, b, 16, &ctx0), CONVJIT_ERR_EMULATION);
  assert_int_equal(emu_mem_d2h(m, b, p + 100, 4), CONVJIT_OK);
  assert_int_equal(b[0], (uint8_t)((100 * 131) & 0xff));
  /* writes are errors */
  assert_int_equal(emu_mem_write(m, p, b, 4, &ctx0), CONVJIT_ERR_EMULATION);
  assert_non_null(strstr(cj_error_text(), "procedural"));
  assert_int_equal(emu_mem_h2d(m, p, b, 4), CONVJIT_ERR_EMULATION);
  assert_int_equal(emu_mem_memset(m, p, 0, 4), CONVJIT_ERR_INVALID_ARG);
  assert_int_equal(emu_mem_atomic_add_f32(m, p, 1.0f, NULL, &ctx0), CONVJIT_ERR_EMULATION);
  /* bad arguments */
  uint64_t q;
  assert_int_equal(emu_mem_alloc_procedural(m, 64, NULL, NULL, &q), CONVJIT_ERR_INVALID_ARG);
  emu_mem_destroy(m);
}

static void sink_range(void **state) {
  (void)state;
  emu_mem *m;
  assert_int_equal(emu_mem_create(&m), CONVJIT_OK);
  uint64_t size = 5ull << 30;
  /* windows: [100,116), [(4<<30), +64) and two overlapping ones merged into [1000,1032) */
  uint64_t off[] = {100, 4ull << 30, 1000, 1016};
  uint64_t len[] = {16, 64, 20, 16};
  uint64_t s;
  assert_int_equal(emu_mem_alloc_sink(m, size, off, len, 4, &s), CONVJIT_OK);
  uint64_t hb;
  emu_mem_usage(m, NULL, &hb);
  assert_int_equal(hb, 16 + 64 + 32);
  uint8_t buf[64];
  for (int i = 0; i < 64; i++) buf[i] = (uint8_t)(i + 1);
  /* a write straddling the first window keeps only its inside part */
  assert_int_equal(emu_mem_write(m, s + 92, buf, 16, &ctx0), CONVJIT_OK);
  /* a write far outside every window is accepted and dropped */
  assert_int_equal(emu_mem_write(m, s + (3ull << 30), buf, 64, &ctx0), CONVJIT_OK);
  uint8_t r[16];
  assert_int_equal(emu_mem_read(m, s + 100, r, 16, &ctx0), CONVJIT_OK);
  for (int i = 0; i < 8; i++) assert_int_equal(r[i], (uint8_t)(i + 9)); /* bytes 100..107 = buf[8..15] */
  for (int i = 8; i < 16; i++) assert_int_equal(r[i], 0);               /* never written */
  /* the merged window */
  assert_int_equal(emu_mem_write(m, s + 1028, buf, 4, &ctx0), CONVJIT_OK);
  assert_int_equal(emu_mem_read(m, s + 1000, buf, 32, &ctx0), CONVJIT_OK);
  assert_int_equal(buf[28], 1);
  assert_int_equal(buf[31], 4);
  /* reads outside the windows (or straddling one's end) are errors */
  assert_int_equal(emu_mem_read(m, s + 96, r, 8, &ctx0), CONVJIT_ERR_EMULATION);
  assert_non_null(strstr(cj_error_text(), "window"));
  assert_int_equal(emu_mem_read(m, s + 112, r, 8, &ctx0), CONVJIT_ERR_EMULATION);
  assert_int_equal(emu_mem_read(m, s + 5000, r, 4, &ctx0), CONVJIT_ERR_EMULATION);
  /* past the sink's end: error like any range */
  assert_int_equal(emu_mem_write(m, s + size - 2, buf, 4, &ctx0), CONVJIT_ERR_EMULATION);
  /* host copies obey the windows */
  uint8_t hb4[4] = {9, 9, 9, 9};
  assert_int_equal(emu_mem_h2d(m, s + (4ull << 30) + 60, hb4, 4), CONVJIT_OK);
  assert_int_equal(emu_mem_d2h(m, r, s + (4ull << 30) + 60, 4), CONVJIT_OK);
  assert_memory_equal(r, hb4, 4);
  assert_int_equal(emu_mem_memset(m, s + 90, 0x11, 20), CONVJIT_OK);
  assert_int_equal(emu_mem_read(m, s + 100, r, 16, &ctx0), CONVJIT_OK);
  assert_int_equal(r[9], 0x11);
  assert_int_equal(r[10], 0);
  /* atomics: inside a window applied, outside dropped */
  float one = 1.5f, old = -1;
  assert_int_equal(emu_mem_write(m, s + 1000, &one, 4, &ctx0), CONVJIT_OK);
  assert_int_equal(emu_mem_atomic_add_f32(m, s + 1000, 2.0f, &old, &ctx0), CONVJIT_OK);
  assert_true(old == 1.5f);
  float now;
  assert_int_equal(emu_mem_read(m, s + 1000, &now, 4, &ctx0), CONVJIT_OK);
  assert_true(now == 3.5f);
  assert_int_equal(emu_mem_atomic_add_f32(m, s + 2000, 2.0f, &old, &ctx0), CONVJIT_OK);
  assert_true(old == 0.0f);
  /* bad windows */
  uint64_t bo = 10, bl = 100, q;
  assert_int_equal(emu_mem_alloc_sink(m, 64, &bo, &bl, 1, &q), CONVJIT_ERR_INVALID_ARG);
  assert_non_null(strstr(cj_error_text(), "window 0"));
  emu_mem_destroy(m);
}

/* Lock-free lookups: reader threads hammer two ranges while the main thread
 * registers and frees others (each publish makes a new snapshot). */
typedef struct {
  emu_mem *m;
  uint64_t a;
  int bad;
} rd_arg;

static void *reader(void *p) {
  rd_arg *ra = p;
  emu_access_ctx c = {"reader", 0, "x", -1};
  for (int it = 0; it < 200000; it++) {
    uint32_t v;
    uint64_t off = (uint64_t)(it % 256) * 4;
    if (emu_mem_read(ra->m, ra->a + off, &v, 4, &c) != CONVJIT_OK || v != (uint32_t)(it % 256) * 3u) ra->bad++;
  }
  return NULL;
}

static void concurrent_lookups(void **state) {
  (void)state;
  emu_mem *m;
  assert_int_equal(emu_mem_create(&m), CONVJIT_OK);
  uint64_t a;
  assert_int_equal(emu_mem_alloc(m, 1024, &a), CONVJIT_OK);
  uint32_t init[256];
  for (int i = 0; i < 256; i++) init[i] = (uint32_t)i * 3u;
  assert_int_equal(emu_mem_h2d(m, a, init, sizeof init), CONVJIT_OK);
  pthread_t th[3];
  rd_arg ra[3];
  for (int i = 0; i < 3; i++) {
    ra[i] = (rd_arg){m, a, 0};
    pthread_create(&th[i], NULL, reader, &ra[i]);
  }
  for (int i = 0; i < 300; i++) {
    uint64_t x;
    assert_int_equal(emu_mem_alloc(m, 64 + (uint64_t)i, &x), CONVJIT_OK);
    if (i % 2) assert_int_equal(emu_mem_free(m, x), CONVJIT_OK);
  }
  for (int i = 0; i < 3; i++) {
    pthread_join(th[i], NULL);
    assert_int_equal(ra[i].bad, 0);
  }
  emu_mem_destroy(m);
}

/* A new address space reuses the same device addresses (and maybe the same
 * heap address for its struct): a thread's cached lookup from the old one
 * must not be taken for the new one. */
static void recreate_after_destroy(void **state) {
  (void)state;
  for (int i = 0; i < 20; i++) {
    emu_mem *m;
    assert_int_equal(emu_mem_create(&m), CONVJIT_OK);
    uint64_t a;
    assert_int_equal(emu_mem_alloc(m, 64 + (uint64_t)(i % 3) * 4096, &a), CONVJIT_OK);
    assert_int_equal(a, EMU_MEM_BASE); /* same address every time */
    uint32_t v = 0x1000u + (uint32_t)i, got = 0;
    assert_int_equal(emu_mem_write(m, a + 8, &v, 4, &ctx0), CONVJIT_OK);
    assert_int_equal(emu_mem_read(m, a + 8, &got, 4, &ctx0), CONVJIT_OK);
    assert_int_equal(got, v);
    emu_mem_destroy(m);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(plain_roundtrip_and_errors),
      cmocka_unit_test(procedural_range),
      cmocka_unit_test(sink_range),
      cmocka_unit_test(concurrent_lookups),
      cmocka_unit_test(recreate_after_destroy),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
