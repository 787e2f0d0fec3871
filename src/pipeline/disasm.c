/* Disassembly of .text (the one loop the emulator's decoder, the ISA
 * coverage gate and convjit-dump share) and mnemonic histograms (contract
 * in disasm.h). */
#include <stdlib.h>
#include <string.h>
#include <llvm-c/Disassembler.h>
#include "arch/arch.h"
#include "pipeline/compile.h"
#include "pipeline/disasm.h"

/* LLVM 22's disassembler crashes (printing an operand whose field holds
 * 255, the literal code, where no literal can follow, or an SDWA select of
 * 7) on: an SDWA select field of 7, a VOP3 compare or
 * v_readlane with SGPR destination 255, a VOP3 source of 255 where its
 * decoder reads no VOP3 literal (gfx942: arch->llvm_vop3_literal = 0), and a
 * MUBUF/MTBUF soffset of 255 (found by test_decode's random-bytes test and
 * a fork-per-instruction fuzzer). No compiler emits these; such words are
 * reported as undecodable without asking LLVM. */
#define CJ_DISASM_MAX_INST 16 /* bytes: longer than any gfx9 encoding (8 + a 4-byte literal) */

static int llvm_would_crash(const cj_arch *arch, const uint8_t *p, uint64_t left) {
  uint32_t w0, w1;
  memcpy(&w0, p, 4);
  /* MUBUF / MTBUF with soffset = 255 (literal) */
  if (((w0 >> 26) == 0x38 || (w0 >> 26) == 0x3a) && left >= 8) {
    memcpy(&w1, p + 4, 4);
    if ((w1 >> 24) == 0xff) return 1;
  }
  /* VOP1/VOP2/VOPC SDWA (src0 = 249) with a select field of 7 (invalid) */
  if ((w0 >> 31) == 0 || (w0 >> 25) == 0x3e || (w0 >> 25) == 0x3f) {
    if ((w0 & 0x1ff) == 0xf9 && left >= 8) {
      memcpy(&w1, p + 4, 4);
      int vopc = (w0 >> 25) == 0x3e;
      if (((w1 >> 16) & 7) == 7 || ((w1 >> 24) & 7) == 7 || (!vopc && ((w1 >> 8) & 7) == 7)) return 1;
    }
    return 0;
  }
  if ((w0 >> 26) != 0x34) return 0; /* not VOP3/VOP3P */
  /* The f8f6f4 MFMAs (an arch whose fp8 MFMA is one: gfx950; VOP3P 0x3ad
   * 16x16x128, 0x3ae 32x32x64) with an
   * A or B source that is not a VGPR/AGPR (an SGPR, ttmp or constant code):
   * LLVM 22 crashes building the register tuple of the format cbsz/blgp
   * select (found by tests/fuzz/fuzz_codeobj in CI, pinned down by a
   * fork-per-instruction search; docs/testing.md). A compiler emits only
   * VGPR/AGPR A and B there (C may be the inline constant 0). */
  if (arch->mfma_fp8 == CJ_MFMA_F8F6F4_16x16x128 && ((w0 >> 16) == 0xd3ad || (w0 >> 16) == 0xd3ae) && left >= 8) {
    memcpy(&w1, p + 4, 4);
    if ((w1 & 0x1ff) < 0x100 || ((w1 >> 9) & 0x1ff) < 0x100) return 1;
  }
  uint32_t op = (w0 >> 16) & 0x3ff;
  if ((w0 & 0xff) == 0xff && (op < 0x100 || op == 0x289)) return 1;
  /* without VOP3 literals in the decoder, a source field of 255 (literal)
   * also crashes the printer */
  if (!arch->llvm_vop3_literal && left >= 8) {
    memcpy(&w1, p + 4, 4);
    if ((w1 & 0x1ff) == 0xff || ((w1 >> 9) & 0x1ff) == 0xff || ((w1 >> 18) & 0x1ff) == 0xff) return 1;
  }
  return 0;
}

convjit_status cj_disasm_range(const cj_codeobj *co, const cj_arch *a, uint64_t start, uint64_t end, cj_disasm_fn fn,
                               void *user) {
  CJ_CHECK(co && a && fn, CONVJIT_ERR_INVALID_ARG, "cj_disasm_range: NULL argument");
  CJ_CHECK(start <= end && end <= co->text.size, CONVJIT_ERR_INVALID_ARG,
           "cj_disasm_range: [0x%llx, 0x%llx) is outside .text (%zu bytes)", (unsigned long long)start,
           (unsigned long long)end, co->text.size);
  cj_llvm_init();
  /* A CPU string with features aborts LLVM's disassembler set-up: bare name,
   * features (none needed to decode) in their own argument. */
  LLVMDisasmContextRef dc = LLVMCreateDisasmCPUFeatures("amdgcn-amd-amdhsa", a->name, "", NULL, 0, NULL, NULL);
  CJ_CHECK(dc != NULL, CONVJIT_ERR_INTERNAL, "LLVM disassembler for %s unavailable", a->name);
  const uint8_t *text = co->text.data;
  char buf[256];
  for (uint64_t pc = start; pc + 4 <= end;) {
    cj_inst_text it = {.offset = (uint32_t)pc, .bytes = text + pc};
    buf[0] = 0;
    size_t len = 0;
    /* LLVM 22 also crashes printing an instruction whose literal (operand
     * code 255: SOP1/SOP2/SOPC, VOP2, VOP3) lies past the end of the bytes
     * it was given (found by tests/fuzz/fuzz_codeobj). Near the end it gets
     * a zero-padded copy instead; a length past the real end is refused
     * below, and an instruction that fits decodes from the same bytes. */
    uint8_t tail[2 * CJ_DISASM_MAX_INST] = {0};
    const uint8_t *at = text + pc;
    uint64_t avail = end - pc;
    if (avail < CJ_DISASM_MAX_INST) {
      memcpy(tail, at, avail);
      at = tail;
      avail = sizeof tail;
    }
    if (!llvm_would_crash(a, at, avail))
      len = LLVMDisasmInstruction(dc, (uint8_t *)at, avail, co->text_vaddr + pc, buf, sizeof buf);
    if (len == 0 || len > end - pc) {
      it.size = 4;
      it.text = NULL;
    } else {
      const char *t = buf;
      while (*t == ' ' || *t == '\t') t++;
      it.size = (uint32_t)len;
      it.text = t;
    }
    pc += it.size;
    if (fn(user, &it)) break;
  }
  LLVMDisasmDispose(dc);
  return CONVJIT_OK;
}

convjit_status cj_disasm_kernel(const cj_codeobj *co, const cj_kernel_info *k, cj_disasm_fn fn, void *user) {
  CJ_CHECK(co && k && fn, CONVJIT_ERR_INVALID_ARG, "cj_disasm_kernel: NULL argument");
  const cj_arch *a = cj_arch_from_elf_mach(co->elf_mach);
  CJ_CHECK(a != NULL, CONVJIT_ERR_INVALID_ARG, "disassembly: code object machine 0x%x is none of %s",
           co->elf_mach, cj_arch_names());
  CJ_CHECK(k->entry_vaddr >= co->text_vaddr && k->entry_vaddr - co->text_vaddr <= co->text.size &&
               k->code_size <= co->text.size - (k->entry_vaddr - co->text_vaddr),
           CONVJIT_ERR_INVALID_ARG, "disassembly: kernel %s: code [0x%llx, +%llu) is outside .text", k->name,
           (unsigned long long)k->entry_vaddr, (unsigned long long)k->code_size);
  uint64_t start = k->entry_vaddr - co->text_vaddr;
  return cj_disasm_range(co, a, start, start + k->code_size, fn, user);
}

size_t cj_mnemonic_of(const char *text, char *out, size_t cap) {
  size_t n = strcspn(text, " \t");
  if (cap) {
    size_t c = n < cap - 1 ? n : cap - 1;
    memcpy(out, text, c);
    out[c] = 0;
  }
  return n;
}

typedef struct hist_ctx {
  cj_mnem_hist *h;
  convjit_status st;
} hist_ctx;

static int hist_add(void *user, const cj_inst_text *it) {
  hist_ctx *c = user;
  cj_mnem_hist *h = c->h;
  h->total++;
  if (!it->text) {
    h->undecoded++;
    return 0;
  }
  char name[sizeof h->v[0].name];
  cj_mnemonic_of(it->text, name, sizeof name);
  for (uint32_t i = 0; i < h->n; i++)
    if (!strcmp(h->v[i].name, name)) {
      h->v[i].count++;
      return 0;
    }
  if (h->n == h->cap) {
    uint32_t nc = h->cap ? h->cap * 2 : 64;
    cj_mnem_count *nv = realloc(h->v, nc * sizeof *nv);
    if (!nv) {
      c->st = CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "mnemonic histogram: out of memory");
      return 1;
    }
    h->v = nv;
    h->cap = nc;
  }
  memcpy(h->v[h->n].name, name, sizeof name);
  h->v[h->n++].count = 1;
  return 0;
}

static int hist_cmp(const void *a, const void *b) {
  const cj_mnem_count *x = a, *y = b;
  if (x->count != y->count) return x->count > y->count ? -1 : 1;
  return strcmp(x->name, y->name);
}

convjit_status cj_mnem_hist_kernel(const cj_codeobj *co, const cj_kernel_info *k, cj_mnem_hist *h) {
  CJ_CHECK(h != NULL, CONVJIT_ERR_INVALID_ARG, "cj_mnem_hist_kernel: NULL histogram");
  memset(h, 0, sizeof *h);
  hist_ctx c = {h, CONVJIT_OK};
  convjit_status st = cj_disasm_kernel(co, k, hist_add, &c);
  if (st == CONVJIT_OK) st = c.st;
  if (st != CONVJIT_OK) {
    cj_mnem_hist_free(h);
    return st;
  }
  if (h->n) qsort(h->v, h->n, sizeof h->v[0], hist_cmp);
  return CONVJIT_OK;
}

void cj_mnem_hist_free(cj_mnem_hist *h) {
  if (!h) return;
  free(h->v);
  memset(h, 0, sizeof *h);
}
