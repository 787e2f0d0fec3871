/* The ISA table and the decoder, asked from outside the emulator (contract
 * in emu.h): tools get names, classes and verdicts, not emu_internal.h. */
#include "emu/emu_internal.h"

const char *emu_isa_mnemonic(int i, emu_class *cls) {
  int n = 0;
  const emu_isa_row *rows = emu_isa_rows(&n);
  if (i < 0 || i >= n) return NULL;
  if (cls) *cls = (emu_class)rows[i].cls;
  return rows[i].name;
}

int emu_isa_has(const char *mn) { return mn && emu_isa_lookup_mnemonic(mn, NULL) != NULL; }

const char *emu_decode_why(const char *text, uint32_t pc, const uint8_t *bytes, uint32_t size) {
  emu_inst in;
  emu_decode_text(text, pc, bytes, size, &in); /* it reports what it cannot parse in in.bad */
  return in.bad;                               /* a static reason (decode.c) */
}
