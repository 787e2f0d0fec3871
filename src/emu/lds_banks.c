/* lds_banks.c — the LDS bank model (lds_banks.h; rules and their sources in
 * docs/emulator.md, "LDS bank model"). Layer 0: calls no emulator file. */
#include "emu/lds_banks.h"

#include <string.h>

int emu_lds_banks_for(const cj_arch *arch, emu_lds_banks *out) {
  if (!arch || !out || !arch->lds_banks) return -1;
  out->banks = arch->lds_banks, out->bank_bytes = 4;
  return 0;
}

/* dword slots one lane's access fills: 12-byte accesses are served like
 * 16-byte ones (an assumption, docs/emulator.md) */
static unsigned lane_slots(unsigned bytes) { return bytes <= 4 ? 1u : bytes <= 8 ? 2u : 4u; }

unsigned emu_lds_phase_lanes(const emu_lds_banks *m, unsigned bytes) {
  unsigned n = m->banks / lane_slots(bytes);
  return n == 0 ? 1u : n > 64 ? 64u : n;
}

/* Cycles of one phase (lanes: its active lanes, bit i = lane p + i): the
 * largest number of distinct dwords in one bank, at least 1. */
static unsigned phase_cycles(const emu_lds_banks *m, const uint32_t *addr, uint64_t lanes, unsigned bytes,
                             unsigned shift) {
  const uint32_t bmask = m->banks - 1;
  /* fast path: no bank touched twice means one cycle (a lane's k <= 5
   * dwords from bank b are k bits from bit b, wrapping at `banks`) */
  const uint64_t all = m->banks >= 64 ? ~0ull : (1ull << m->banks) - 1;
  uint64_t seen = 0, clash = 0;
  for (uint64_t e = lanes; e; e &= e - 1) {
    uint32_t a = addr[__builtin_ctzll(e)];
    uint32_t d = a >> shift, k = ((a + bytes - 1) >> shift) - d + 1, b = d & bmask;
    uint64_t run = (1ull << k) - 1;
    uint64_t bits = b ? ((run << b) | (run >> (m->banks - b))) & all : run;
    clash |= seen & bits;
    seen |= bits;
  }
  if (!clash) return 1;
  /* distinct dwords per bank: a chain per bank through the dwords seen */
  uint32_t dw[64 * 5];
  uint16_t next[64 * 5], head[64];
  uint8_t cnt[64];
  memset(head, 0xff, sizeof head);
  memset(cnt, 0, sizeof cnt);
  unsigned n = 0, deg = 1;
  for (uint64_t e = lanes; e; e &= e - 1) {
    uint32_t a = addr[__builtin_ctzll(e)];
    for (uint32_t d = a >> shift, last = (a + bytes - 1) >> shift; d <= last; d++) {
      uint32_t b = d & bmask;
      uint16_t j = head[b];
      while (j != 0xffff && dw[j] != d) j = next[j];
      if (j != 0xffff) continue; /* the same dword: broadcast */
      dw[n] = d, next[n] = head[b], head[b] = (uint16_t)n++;
      if (++cnt[b] > deg) deg = cnt[b];
    }
  }
  return deg;
}

emu_lds_cost emu_lds_cost_of(const emu_lds_banks *m, const uint32_t addr[64], uint64_t exec, unsigned bytes) {
  emu_lds_cost c = {0, 0, 0};
  if (!exec || bytes == 0) return c;
  const unsigned per = emu_lds_phase_lanes(m, bytes), shift = (unsigned)__builtin_ctz(m->bank_bytes);
  const uint64_t pmask = per >= 64 ? ~0ull : (1ull << per) - 1;
  for (unsigned p = 0; p < 64; p += per) {
    uint64_t lanes = (exec >> p) & pmask;
    if (!lanes) continue;
    unsigned deg = phase_cycles(m, addr + p, lanes, bytes, shift);
    c.cycles += deg;
    c.min_cycles++;
    if (deg > c.degree) c.degree = deg;
  }
  return c;
}
