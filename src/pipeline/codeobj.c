/* AMDGPU code object reader (contract in codeobj.h).
 *
 *   ELF64 header -> section headers -> .text copy
 *                -> NT_AMDGPU_METADATA note ("AMDGPU", type 32, msgpack)
 *                -> per kernel: metadata fields, args, "<name>.kd" symbol,
 *                   its 64 bytes, entry = kd address + i64 at kd offset 16
 *
 * The input is untrusted bytes (a disk cache may hand us anything), so every
 * header is copied out with memcpy (no alignment assumptions), every offset
 * and size is range-checked against the buffer before use, and every string
 * is bounded. Failures are CONVJIT_ERR_INVALID_ARG naming what was wrong.
 * Facts used here are listed in docs/isa-notes.md §5 (checked with
 * llvm-readelf-22 --notes on objects built by this pipeline).
 */
#include <elf.h>
#include <msgpack.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "pipeline/codeobj.h"

#define CJ_NT_AMDGPU_METADATA 32 /* llvm/BinaryFormat/ELF.h: NT_AMDGPU_METADATA */
#define CJ_KD_BYTES 64           /* llvm/Support/AMDHSAKernelDescriptor.h */
#define CJ_KD_ENTRY_OFFSET 16    /* kernel_code_entry_byte_offset, i64, relative to the kd */

/* ---- bounds-checked views of the ELF ------------------------------------ */

typedef struct cj_elf {
  const uint8_t *p;
  size_t size;
  Elf64_Ehdr eh;
} cj_elf;

/* off + len lies inside the buffer (no overflow). */
static int cj_in(const cj_elf *e, uint64_t off, uint64_t len) {
  return off <= e->size && len <= e->size - off;
}

static convjit_status cj_shdr(const cj_elf *e, uint32_t i, Elf64_Shdr *sh) {
  CJ_CHECK(i < e->eh.e_shnum, CONVJIT_ERR_INVALID_ARG, "code object: section index %u >= e_shnum %u", i,
           (unsigned)e->eh.e_shnum);
  memcpy(sh, e->p + e->eh.e_shoff + (uint64_t)i * sizeof *sh, sizeof *sh);
  if (sh->sh_type != SHT_NOBITS)
    CJ_CHECK(cj_in(e, sh->sh_offset, sh->sh_size), CONVJIT_ERR_INVALID_ARG,
             "code object: section %u (offset %llu, size %llu) lies outside the %zu-byte file", i,
             (unsigned long long)sh->sh_offset, (unsigned long long)sh->sh_size, e->size);
  return CONVJIT_OK;
}

/* NUL-terminated string at offset off of string table section strtab, or NULL. */
static const char *cj_str(const cj_elf *e, const Elf64_Shdr *strtab, uint64_t off) {
  if (strtab->sh_type != SHT_STRTAB || off >= strtab->sh_size) return NULL;
  const char *s = (const char *)e->p + strtab->sh_offset + off;
  return memchr(s, 0, strtab->sh_size - off) ? s : NULL;
}

static convjit_status cj_elf_open(cj_elf *e, const void *data, size_t size) {
  e->p = data;
  e->size = size;
  CJ_CHECK(data != NULL, CONVJIT_ERR_INVALID_ARG, "code object: data is NULL");
  CJ_CHECK(size >= sizeof(Elf64_Ehdr), CONVJIT_ERR_INVALID_ARG,
           "code object: %zu bytes is shorter than an ELF64 header (%zu)", size, sizeof(Elf64_Ehdr));
  memcpy(&e->eh, data, sizeof e->eh);
  const unsigned char *id = e->eh.e_ident;
  CJ_CHECK(memcmp(id, ELFMAG, SELFMAG) == 0, CONVJIT_ERR_INVALID_ARG, "code object: not an ELF file (bad magic)");
  CJ_CHECK(id[EI_CLASS] == ELFCLASS64, CONVJIT_ERR_INVALID_ARG, "code object: EI_CLASS = %u, expected ELF64",
           id[EI_CLASS]);
  CJ_CHECK(id[EI_DATA] == ELFDATA2LSB, CONVJIT_ERR_INVALID_ARG,
           "code object: EI_DATA = %u, expected little-endian", id[EI_DATA]);
  CJ_CHECK(e->eh.e_machine == EM_AMDGPU, CONVJIT_ERR_INVALID_ARG, "code object: e_machine = %u, expected EM_AMDGPU (%u)",
           (unsigned)e->eh.e_machine, (unsigned)EM_AMDGPU);
  CJ_CHECK(e->eh.e_shnum > 0 && e->eh.e_shentsize == sizeof(Elf64_Shdr), CONVJIT_ERR_INVALID_ARG,
           "code object: e_shnum = %u, e_shentsize = %u: no usable section headers",
           (unsigned)e->eh.e_shnum, (unsigned)e->eh.e_shentsize);
  CJ_CHECK(cj_in(e, e->eh.e_shoff, (uint64_t)e->eh.e_shnum * sizeof(Elf64_Shdr)), CONVJIT_ERR_INVALID_ARG,
           "code object: section headers (e_shoff %llu, %u entries) lie outside the %zu-byte file",
           (unsigned long long)e->eh.e_shoff, (unsigned)e->eh.e_shnum, size);
  CJ_CHECK(e->eh.e_shstrndx < e->eh.e_shnum, CONVJIT_ERR_INVALID_ARG,
           "code object: e_shstrndx = %u >= e_shnum %u", (unsigned)e->eh.e_shstrndx, (unsigned)e->eh.e_shnum);
  return CONVJIT_OK;
}

/* ---- the metadata note ---------------------------------------------------- */

/* Finds the AMDGPU metadata note's descriptor in the SHT_NOTE sections. */
static convjit_status cj_find_metadata(const cj_elf *e, const uint8_t **desc, size_t *desc_size) {
  for (uint32_t i = 0; i < e->eh.e_shnum; i++) {
    Elf64_Shdr sh;
    CJ_TRY(cj_shdr(e, i, &sh));
    if (sh.sh_type != SHT_NOTE) continue;
    /* Notes are 4-byte aligned here; 8-byte note sections pad to 8. */
    uint64_t al = sh.sh_addralign == 8 ? 8 : 4;
    uint64_t pos = 0;
    while (pos + sizeof(Elf64_Nhdr) <= sh.sh_size) {
      Elf64_Nhdr nh;
      memcpy(&nh, e->p + sh.sh_offset + pos, sizeof nh);
      uint64_t name_off = pos + sizeof nh;
      uint64_t desc_off = name_off + (((uint64_t)nh.n_namesz + al - 1) & ~(al - 1));
      uint64_t next = desc_off + (((uint64_t)nh.n_descsz + al - 1) & ~(al - 1));
      CJ_CHECK(desc_off <= sh.sh_size && nh.n_descsz <= sh.sh_size - desc_off, CONVJIT_ERR_INVALID_ARG,
               "code object: note at offset %llu of section %u (namesz %u, descsz %u) overruns the section",
               (unsigned long long)pos, i, nh.n_namesz, nh.n_descsz);
      const char *name = (const char *)e->p + sh.sh_offset + name_off;
      if (nh.n_type == CJ_NT_AMDGPU_METADATA && nh.n_namesz == 7 && memcmp(name, "AMDGPU", 7) == 0) {
        *desc = e->p + sh.sh_offset + desc_off;
        *desc_size = nh.n_descsz;
        return CONVJIT_OK;
      }
      pos = next;
    }
  }
  return CJ_ERR(CONVJIT_ERR_INVALID_ARG, "code object: no NT_AMDGPU_METADATA note (\"AMDGPU\", type 32)");
}

/* ---- msgpack helpers ------------------------------------------------------ */

/* msgpack-c allocates an array or map for its declared count before reading
 * its elements, so a corrupted count (2^32) would ask for gigabytes. This
 * pre-scan walks the encoding once and rejects any count larger than the
 * bytes left (every element takes at least one byte) and nesting deeper than
 * msgpack-c's own stack; after it, unpacking is bounded by the note size. */
static uint64_t cj_be(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; i++) v = v << 8 | p[i];
  return v;
}

static int cj_mp_scan(const uint8_t *p, size_t n, size_t *pos, int depth) {
  if (depth > 32 || *pos >= n) return 0;
  uint8_t b = p[(*pos)++];
  size_t left = n - *pos;
  uint64_t len = 0, count = 0;
  int hdr = 0, elems = 0; /* hdr: size of the length field; elems: 1 array, 2 map */
  if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3) return 1;
  if (b >= 0x80 && b <= 0x8f) { count = b & 0xf; elems = 2; }
  else if (b >= 0x90 && b <= 0x9f) { count = b & 0xf; elems = 1; }
  else if (b >= 0xa0 && b <= 0xbf) len = b & 0x1f;
  else switch (b) {
    case 0xc4: case 0xd9: hdr = 1; break;            /* bin8, str8 */
    case 0xc5: case 0xda: hdr = 2; break;            /* bin16, str16 */
    case 0xc6: case 0xdb: hdr = 4; break;            /* bin32, str32 */
    case 0xc7: hdr = 1; len = 1; break;              /* ext8: + type byte */
    case 0xc8: hdr = 2; len = 1; break;
    case 0xc9: hdr = 4; len = 1; break;
    case 0xca: len = 4; break;                       /* float32 */
    case 0xcb: len = 8; break;                       /* float64 */
    case 0xcc: case 0xd0: len = 1; break;
    case 0xcd: case 0xd1: len = 2; break;
    case 0xce: case 0xd2: len = 4; break;
    case 0xcf: case 0xd3: len = 8; break;
    case 0xd4: len = 2; break;                       /* fixext1..16: type + data */
    case 0xd5: len = 3; break;
    case 0xd6: len = 5; break;
    case 0xd7: len = 9; break;
    case 0xd8: len = 17; break;
    case 0xdc: hdr = 2; elems = 1; break;            /* array16 */
    case 0xdd: hdr = 4; elems = 1; break;            /* array32 */
    case 0xde: hdr = 2; elems = 2; break;            /* map16 */
    case 0xdf: hdr = 4; elems = 2; break;            /* map32 */
    default: return 0;                               /* 0xc1: never used */
  }
  if ((size_t)hdr > left) return 0;
  uint64_t v = cj_be(p + *pos, hdr);
  *pos += (size_t)hdr;
  left -= (size_t)hdr;
  if (elems) {
    if (hdr) count = v;
    if (count > left / (uint64_t)elems) return 0;
    for (uint64_t i = 0; i < count * (uint64_t)elems; i++)
      if (!cj_mp_scan(p, n, pos, depth + 1)) return 0;
    return 1;
  }
  len += v;
  if (len > left) return 0;
  *pos += (size_t)len;
  return 1;
}


static const msgpack_object *cj_mp_get(const msgpack_object *map, const char *key) {
  if (map->type != MSGPACK_OBJECT_MAP) return NULL;
  size_t klen = strlen(key);
  for (uint32_t i = 0; i < map->via.map.size; i++) {
    const msgpack_object *k = &map->via.map.ptr[i].key;
    if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == klen && memcmp(k->via.str.ptr, key, klen) == 0)
      return &map->via.map.ptr[i].val;
  }
  return NULL;
}

/* Unsigned 32-bit field; absent -> def if !required. */
static convjit_status cj_mp_u32(const msgpack_object *map, const char *key, int required, uint32_t def,
                                uint32_t *out, const char *where) {
  const msgpack_object *v = cj_mp_get(map, key);
  if (!v) {
    CJ_CHECK(!required, CONVJIT_ERR_INVALID_ARG, "code object metadata: %s has no %s", where, key);
    *out = def;
    return CONVJIT_OK;
  }
  CJ_CHECK(v->type == MSGPACK_OBJECT_POSITIVE_INTEGER && v->via.u64 <= UINT32_MAX, CONVJIT_ERR_INVALID_ARG,
           "code object metadata: %s %s is not an unsigned 32-bit integer", where, key);
  *out = (uint32_t)v->via.u64;
  return CONVJIT_OK;
}

/* String field copied into dst[cap]; absent -> "" if !required. */
static convjit_status cj_mp_str(const msgpack_object *map, const char *key, int required, char *dst,
                                size_t cap, const char *where) {
  const msgpack_object *v = cj_mp_get(map, key);
  dst[0] = 0;
  if (!v) {
    CJ_CHECK(!required, CONVJIT_ERR_INVALID_ARG, "code object metadata: %s has no %s", where, key);
    return CONVJIT_OK;
  }
  CJ_CHECK(v->type == MSGPACK_OBJECT_STR, CONVJIT_ERR_INVALID_ARG, "code object metadata: %s %s is not a string",
           where, key);
  CJ_CHECK(v->via.str.size < cap, CONVJIT_ERR_INVALID_ARG,
           "code object metadata: %s %s is %u bytes long, at most %zu supported", where, key,
           v->via.str.size, cap - 1);
  memcpy(dst, v->via.str.ptr, v->via.str.size);
  dst[v->via.str.size] = 0;
  return CONVJIT_OK;
}

static const struct { const char *text; cj_arg_kind kind; } cj_arg_kinds[] = {
  {"by_value", CJ_ARG_BY_VALUE},
  {"global_buffer", CJ_ARG_GLOBAL_BUFFER},
  {"hidden_block_count_x", CJ_ARG_HIDDEN_BLOCK_COUNT_X},
  {"hidden_block_count_y", CJ_ARG_HIDDEN_BLOCK_COUNT_Y},
  {"hidden_block_count_z", CJ_ARG_HIDDEN_BLOCK_COUNT_Z},
  {"hidden_group_size_x", CJ_ARG_HIDDEN_GROUP_SIZE_X},
  {"hidden_group_size_y", CJ_ARG_HIDDEN_GROUP_SIZE_Y},
  {"hidden_group_size_z", CJ_ARG_HIDDEN_GROUP_SIZE_Z},
  {"hidden_remainder_x", CJ_ARG_HIDDEN_REMAINDER_X},
  {"hidden_remainder_y", CJ_ARG_HIDDEN_REMAINDER_Y},
  {"hidden_remainder_z", CJ_ARG_HIDDEN_REMAINDER_Z},
  {"hidden_global_offset_x", CJ_ARG_HIDDEN_GLOBAL_OFFSET_X},
  {"hidden_global_offset_y", CJ_ARG_HIDDEN_GLOBAL_OFFSET_Y},
  {"hidden_global_offset_z", CJ_ARG_HIDDEN_GLOBAL_OFFSET_Z},
  {"hidden_grid_dims", CJ_ARG_HIDDEN_GRID_DIMS},
  {"hidden_dynamic_lds_size", CJ_ARG_HIDDEN_DYNAMIC_LDS_SIZE},
};

static cj_arg_kind cj_arg_kind_of(const char *vk) {
  for (size_t i = 0; i < sizeof cj_arg_kinds / sizeof cj_arg_kinds[0]; i++)
    if (strcmp(vk, cj_arg_kinds[i].text) == 0) return cj_arg_kinds[i].kind;
  return strncmp(vk, "hidden_", 7) == 0 ? CJ_ARG_HIDDEN_OTHER : CJ_ARG_OTHER;
}

int cj_kernel_arg_is_explicit(const cj_kernel_arg *a) {
  return a->kind == CJ_ARG_BY_VALUE || a->kind == CJ_ARG_GLOBAL_BUFFER || a->kind == CJ_ARG_OTHER;
}

static convjit_status cj_read_args(const msgpack_object *km, cj_kernel_info *k) {
  const msgpack_object *args = cj_mp_get(km, ".args");
  if (!args) return CONVJIT_OK; /* a kernel without arguments has no .args */
  CJ_CHECK(args->type == MSGPACK_OBJECT_ARRAY, CONVJIT_ERR_INVALID_ARG,
           "code object metadata: kernel %s .args is not an array", k->name);
  if (args->via.array.size == 0) return CONVJIT_OK;
  k->args = calloc(args->via.array.size, sizeof *k->args);
  CJ_ALLOC_CHECK(k->args);
  k->nargs = args->via.array.size;
  for (uint32_t i = 0; i < k->nargs; i++) {
    const msgpack_object *a = &args->via.array.ptr[i];
    cj_kernel_arg *o = &k->args[i];
    char where[192];
    snprintf(where, sizeof where, "kernel %s arg %u", k->name, i);
    CJ_CHECK(a->type == MSGPACK_OBJECT_MAP, CONVJIT_ERR_INVALID_ARG, "code object metadata: %s is not a map", where);
    CJ_TRY(cj_mp_u32(a, ".offset", 1, 0, &o->offset, where));
    CJ_TRY(cj_mp_u32(a, ".size", 1, 0, &o->size, where));
    CJ_TRY(cj_mp_str(a, ".value_kind", 1, o->value_kind, sizeof o->value_kind, where));
    CJ_TRY(cj_mp_str(a, ".name", 0, o->name, sizeof o->name, where));
    CJ_CHECK((uint64_t)o->offset + o->size <= k->kernarg_size, CONVJIT_ERR_INVALID_ARG,
             "code object metadata: %s (offset %u, size %u) lies outside kernarg_segment_size %u", where,
             o->offset, o->size, k->kernarg_size);
    o->kind = cj_arg_kind_of(o->value_kind);
  }
  return CONVJIT_OK;
}

static convjit_status cj_read_kernel(const msgpack_object *km, cj_kernel_info *k, uint32_t idx) {
  char where[192];
  snprintf(where, sizeof where, "kernel %u", idx);
  CJ_CHECK(km->type == MSGPACK_OBJECT_MAP, CONVJIT_ERR_INVALID_ARG, "code object metadata: %s is not a map", where);
  CJ_TRY(cj_mp_str(km, ".name", 1, k->name, sizeof k->name, where));
  snprintf(where, sizeof where, "kernel %s", k->name);
  CJ_TRY(cj_mp_str(km, ".symbol", 0, k->symbol, sizeof k->symbol, where));
  if (!k->symbol[0]) snprintf(k->symbol, sizeof k->symbol, "%s.kd", k->name);
  uint32_t dyn = 0;
  const msgpack_object *ds = cj_mp_get(km, ".uses_dynamic_stack");
  if (ds) {
    CJ_CHECK(ds->type == MSGPACK_OBJECT_BOOLEAN || ds->type == MSGPACK_OBJECT_POSITIVE_INTEGER,
             CONVJIT_ERR_INVALID_ARG, "code object metadata: %s .uses_dynamic_stack is not a boolean", where);
    dyn = ds->type == MSGPACK_OBJECT_BOOLEAN ? ds->via.boolean : ds->via.u64 != 0;
  }
  k->uses_dynamic_stack = (int)dyn;
  CJ_TRY(cj_mp_u32(km, ".kernarg_segment_size", 1, 0, &k->kernarg_size, where));
  CJ_TRY(cj_mp_u32(km, ".kernarg_segment_align", 0, 8, &k->kernarg_align, where));
  CJ_TRY(cj_mp_u32(km, ".group_segment_fixed_size", 1, 0, &k->group_segment_size, where));
  CJ_TRY(cj_mp_u32(km, ".private_segment_fixed_size", 1, 0, &k->private_segment_size, where));
  CJ_TRY(cj_mp_u32(km, ".wavefront_size", 1, 0, &k->wavefront_size, where));
  CJ_TRY(cj_mp_u32(km, ".sgpr_count", 1, 0, &k->sgpr_count, where));
  CJ_TRY(cj_mp_u32(km, ".vgpr_count", 1, 0, &k->vgpr_count, where));
  CJ_TRY(cj_mp_u32(km, ".agpr_count", 0, 0, &k->agpr_count, where));
  CJ_TRY(cj_mp_u32(km, ".vgpr_spill_count", 0, 0, &k->vgpr_spill_count, where));
  CJ_TRY(cj_mp_u32(km, ".sgpr_spill_count", 0, 0, &k->sgpr_spill_count, where));
  CJ_TRY(cj_mp_u32(km, ".max_flat_workgroup_size", 0, 0, &k->max_flat_workgroup_size, where));
  return cj_read_args(km, k);
}

static convjit_status cj_read_metadata(const uint8_t *desc, size_t n, cj_codeobj *co) {
  size_t scan = 0;
  CJ_CHECK(cj_mp_scan(desc, n, &scan, 0), CONVJIT_ERR_INVALID_ARG,
           "code object metadata: the note is not well-formed msgpack (bad byte, length or nesting near offset %zu of %zu)",
           scan, n);
  msgpack_unpacked u;
  msgpack_unpacked_init(&u);
  size_t off = 0;
  msgpack_unpack_return r = msgpack_unpack_next(&u, (const char *)desc, n, &off);
  convjit_status st = CONVJIT_OK;
  if (r != MSGPACK_UNPACK_SUCCESS || u.data.type != MSGPACK_OBJECT_MAP) {
    st = CJ_ERR(CONVJIT_ERR_INVALID_ARG, "code object metadata: the note is not a msgpack map (unpack status %d)",
                (int)r);
    goto done;
  }
  st = cj_mp_str(&u.data, "amdhsa.target", 0, co->target, sizeof co->target, "the code object");
  if (st) goto done;
  const msgpack_object *ks = cj_mp_get(&u.data, "amdhsa.kernels");
  if (!ks || ks->type != MSGPACK_OBJECT_ARRAY) {
    st = CJ_ERR(CONVJIT_ERR_INVALID_ARG, "code object metadata: amdhsa.kernels is missing or not an array");
    goto done;
  }
  if (ks->via.array.size) {
    co->kernels = calloc(ks->via.array.size, sizeof *co->kernels);
    if (!co->kernels) { st = CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "out of memory (%u kernels)", ks->via.array.size); goto done; }
  }
  for (uint32_t i = 0; i < ks->via.array.size && st == CONVJIT_OK; i++) {
    co->nkernels = i + 1; /* counted before reading so destroy frees partial args */
    st = cj_read_kernel(&ks->via.array.ptr[i], &co->kernels[i], i);
  }
done:
  msgpack_unpacked_destroy(&u);
  return st;
}

/* ---- symbols and kernel descriptors --------------------------------------- */

/* Finds symbol name in .symtab, else .dynsym; returns its value and section. */
static convjit_status cj_find_symbol(const cj_elf *e, const char *name, Elf64_Sym *out, int *found) {
  *found = 0;
  for (int pass = 0; pass < 2; pass++) {
    uint32_t want = pass == 0 ? SHT_SYMTAB : SHT_DYNSYM;
    for (uint32_t i = 0; i < e->eh.e_shnum; i++) {
      Elf64_Shdr sh, strsh;
      CJ_TRY(cj_shdr(e, i, &sh));
      if (sh.sh_type != want) continue;
      CJ_CHECK(sh.sh_entsize == sizeof(Elf64_Sym), CONVJIT_ERR_INVALID_ARG,
               "code object: symbol table %u has sh_entsize %llu", i, (unsigned long long)sh.sh_entsize);
      CJ_TRY(cj_shdr(e, sh.sh_link, &strsh));
      for (uint64_t j = 0; j < sh.sh_size / sizeof(Elf64_Sym); j++) {
        Elf64_Sym s;
        memcpy(&s, e->p + sh.sh_offset + j * sizeof s, sizeof s);
        const char *n = cj_str(e, &strsh, s.st_name);
        if (n && strcmp(n, name) == 0) {
          *out = s;
          *found = 1;
          return CONVJIT_OK;
        }
      }
    }
  }
  return CONVJIT_OK;
}

static convjit_status cj_read_kd(const cj_elf *e, cj_codeobj *co, cj_kernel_info *k) {
  Elf64_Sym s = {0};
  int found = 0;
  CJ_TRY(cj_find_symbol(e, k->symbol, &s, &found));
  CJ_CHECK(found, CONVJIT_ERR_INVALID_ARG, "code object: kernel %s: symbol %s not found", k->name, k->symbol);
  Elf64_Shdr sh;
  CJ_CHECK(s.st_shndx != SHN_UNDEF && s.st_shndx < e->eh.e_shnum, CONVJIT_ERR_INVALID_ARG,
           "code object: kernel %s: %s has section index %u", k->name, k->symbol, (unsigned)s.st_shndx);
  CJ_TRY(cj_shdr(e, s.st_shndx, &sh));
  CJ_CHECK(sh.sh_type != SHT_NOBITS && s.st_value >= sh.sh_addr && sh.sh_size >= CJ_KD_BYTES &&
               s.st_value - sh.sh_addr <= sh.sh_size - CJ_KD_BYTES,
           CONVJIT_ERR_INVALID_ARG, "code object: kernel %s: %s at 0x%llx is not 64 bytes inside its section",
           k->name, k->symbol, (unsigned long long)s.st_value);
  memcpy(k->kd, e->p + sh.sh_offset + (s.st_value - sh.sh_addr), CJ_KD_BYTES);
  k->kd_vaddr = s.st_value;
  int64_t rel;
  memcpy(&rel, k->kd + CJ_KD_ENTRY_OFFSET, sizeof rel);
  k->entry_vaddr = k->kd_vaddr + (uint64_t)rel;
  CJ_CHECK(k->entry_vaddr >= co->text_vaddr && k->entry_vaddr - co->text_vaddr < co->text.size,
           CONVJIT_ERR_INVALID_ARG,
           "code object: kernel %s: entry 0x%llx (kd 0x%llx + %lld) is outside .text [0x%llx, +%zu)", k->name,
           (unsigned long long)k->entry_vaddr, (unsigned long long)k->kd_vaddr, (long long)rel,
           (unsigned long long)co->text_vaddr, co->text.size);
  uint64_t to_end = co->text.size - (k->entry_vaddr - co->text_vaddr);
  k->code_size = to_end;
  Elf64_Sym fs = {0};
  CJ_TRY(cj_find_symbol(e, k->name, &fs, &found));
  if (found && ELF64_ST_TYPE(fs.st_info) == STT_FUNC && fs.st_value == k->entry_vaddr && fs.st_size > 0 &&
      fs.st_size <= to_end)
    k->code_size = fs.st_size;
  return CONVJIT_OK;
}

/* ---- the whole object ----------------------------------------------------- */

static convjit_status cj_read_text(const cj_elf *e, cj_codeobj *co) {
  Elf64_Shdr shstr;
  CJ_TRY(cj_shdr(e, e->eh.e_shstrndx, &shstr));
  for (uint32_t i = 0; i < e->eh.e_shnum; i++) {
    Elf64_Shdr sh;
    CJ_TRY(cj_shdr(e, i, &sh));
    const char *n = cj_str(e, &shstr, sh.sh_name);
    if (!n || strcmp(n, ".text") != 0) continue;
    CJ_CHECK(sh.sh_type == SHT_PROGBITS && sh.sh_size > 0, CONVJIT_ERR_INVALID_ARG,
             "code object: .text has type %u and size %llu", sh.sh_type, (unsigned long long)sh.sh_size);
    co->text_vaddr = sh.sh_addr;
    return cj_blob_set(&co->text, e->p + sh.sh_offset, sh.sh_size);
  }
  return CJ_ERR(CONVJIT_ERR_INVALID_ARG, "code object: no .text section");
}

static convjit_status cj_parse_into(const void *elf, size_t size, cj_codeobj *co) {
  cj_elf e;
  CJ_TRY(cj_elf_open(&e, elf, size));
  co->elf_mach = e.eh.e_flags & 0xff; /* EF_AMDGPU_MACH */
  CJ_TRY(cj_read_text(&e, co));
  const uint8_t *desc = NULL;
  size_t desc_size = 0;
  CJ_TRY(cj_find_metadata(&e, &desc, &desc_size));
  CJ_TRY(cj_read_metadata(desc, desc_size, co));
  for (uint32_t i = 0; i < co->nkernels; i++) CJ_TRY(cj_read_kd(&e, co, &co->kernels[i]));
  return CONVJIT_OK;
}

static _Atomic uint64_t g_parses;
uint64_t cj_codeobj_parse_count(void) { return atomic_load(&g_parses); }

convjit_status cj_codeobj_parse(const void *elf, size_t size, cj_codeobj **out) {
  CJ_CHECK(out != NULL, CONVJIT_ERR_INVALID_ARG, "cj_codeobj_parse: out is NULL");
  *out = NULL;
  atomic_fetch_add(&g_parses, 1);
  cj_codeobj *co = calloc(1, sizeof *co);
  CJ_ALLOC_CHECK(co);
  convjit_status st = cj_parse_into(elf, size, co);
  if (st != CONVJIT_OK) {
    cj_codeobj_destroy(co);
    return st;
  }
  *out = co;
  return CONVJIT_OK;
}

void cj_codeobj_destroy(cj_codeobj *co) {
  if (!co) return;
  for (uint32_t i = 0; i < co->nkernels; i++) free(co->kernels[i].args);
  free(co->kernels);
  cj_blob_free(&co->text);
  free(co);
}

const cj_kernel_info *cj_codeobj_find(const cj_codeobj *co, const char *name) {
  if (!co || !name) return NULL;
  for (uint32_t i = 0; i < co->nkernels; i++)
    if (strcmp(co->kernels[i].name, name) == 0) return &co->kernels[i];
  return NULL;
}

/* ---- the loaded image ------------------------------------------------------ */

#define CJ_R_AMDGPU_NONE 0        /* llvm/BinaryFormat/ELFRelocs/AMDGPU.def */
#define CJ_R_AMDGPU_ABS64 3
#define CJ_R_AMDGPU_RELATIVE64 13

static convjit_status cj_image_segments(const cj_elf *e, cj_image *im) {
  const Elf64_Ehdr *h = &e->eh;
  CJ_CHECK(h->e_phnum > 0 && h->e_phentsize == sizeof(Elf64_Phdr), CONVJIT_ERR_INVALID_ARG,
           "code object: e_phnum = %u, e_phentsize = %u: no usable program headers", (unsigned)h->e_phnum,
           (unsigned)h->e_phentsize);
  CJ_CHECK(cj_in(e, h->e_phoff, (uint64_t)h->e_phnum * sizeof(Elf64_Phdr)), CONVJIT_ERR_INVALID_ARG,
           "code object: program headers (e_phoff %llu, %u entries) lie outside the %zu-byte file",
           (unsigned long long)h->e_phoff, (unsigned)h->e_phnum, e->size);
  im->segs = calloc(h->e_phnum, sizeof *im->segs);
  CJ_ALLOC_CHECK(im->segs);
  for (uint32_t i = 0; i < h->e_phnum; i++) {
    Elf64_Phdr ph;
    memcpy(&ph, e->p + h->e_phoff + (uint64_t)i * sizeof ph, sizeof ph);
    if (ph.p_type != PT_LOAD) continue;
    CJ_CHECK(ph.p_filesz <= ph.p_memsz && cj_in(e, ph.p_offset, ph.p_filesz), CONVJIT_ERR_INVALID_ARG,
             "code object: PT_LOAD %u (offset %llu, filesz %llu, memsz %llu) lies outside the %zu-byte file", i,
             (unsigned long long)ph.p_offset, (unsigned long long)ph.p_filesz, (unsigned long long)ph.p_memsz,
             e->size);
    CJ_CHECK(ph.p_vaddr <= CJ_IMAGE_MAX_BYTES && ph.p_memsz <= CJ_IMAGE_MAX_BYTES - ph.p_vaddr,
             CONVJIT_ERR_INVALID_ARG,
             "code object: PT_LOAD %u (vaddr 0x%llx, memsz %llu) ends past the %llu bytes an image may take", i,
             (unsigned long long)ph.p_vaddr, (unsigned long long)ph.p_memsz, (unsigned long long)CJ_IMAGE_MAX_BYTES);
    cj_image_seg *s = &im->segs[im->nsegs++];
    s->vaddr = ph.p_vaddr;
    s->memsz = ph.p_memsz;
    s->filesz = ph.p_filesz;
    s->bytes = e->p + ph.p_offset;
    if (ph.p_vaddr + ph.p_memsz > im->size) im->size = ph.p_vaddr + ph.p_memsz;
  }
  CJ_CHECK(im->nsegs > 0, CONVJIT_ERR_INVALID_ARG, "code object: no PT_LOAD program header");
  return CONVJIT_OK;
}

/* The relocations of one SHF_ALLOC SHT_RELA section, with their symbols. */
static convjit_status cj_image_rela(const cj_elf *e, uint32_t idx, const Elf64_Shdr *sh, cj_image *im) {
  CJ_CHECK(sh->sh_entsize == sizeof(Elf64_Rela), CONVJIT_ERR_INVALID_ARG,
           "code object: relocation section %u has sh_entsize %llu", idx, (unsigned long long)sh->sh_entsize);
  uint64_t n = sh->sh_size / sizeof(Elf64_Rela);
  if (n == 0) return CONVJIT_OK;
  Elf64_Shdr symsh, strsh;
  CJ_TRY(cj_shdr(e, sh->sh_link, &symsh));
  CJ_CHECK((symsh.sh_type == SHT_DYNSYM || symsh.sh_type == SHT_SYMTAB) && symsh.sh_entsize == sizeof(Elf64_Sym),
           CONVJIT_ERR_INVALID_ARG, "code object: relocation section %u links section %u, not a symbol table", idx,
           sh->sh_link);
  CJ_TRY(cj_shdr(e, symsh.sh_link, &strsh));
  uint64_t nsyms = symsh.sh_size / sizeof(Elf64_Sym);
  CJ_CHECK(n <= UINT32_MAX - im->nrelocs, CONVJIT_ERR_INVALID_ARG, "code object: too many relocations");
  cj_reloc *r = realloc(im->relocs, (im->nrelocs + n) * sizeof *r);
  CJ_ALLOC_CHECK(r);
  im->relocs = r;
  for (uint64_t j = 0; j < n; j++) {
    Elf64_Rela ra;
    memcpy(&ra, e->p + sh->sh_offset + j * sizeof ra, sizeof ra);
    cj_reloc *o = &im->relocs[im->nrelocs];
    memset(o, 0, sizeof *o);
    o->offset = ra.r_offset;
    o->type = (uint32_t)ELF64_R_TYPE(ra.r_info);
    o->addend = ra.r_addend;
    o->sym_index = (uint32_t)ELF64_R_SYM(ra.r_info);
    if (o->sym_index) {
      CJ_CHECK(o->sym_index < nsyms, CONVJIT_ERR_INVALID_ARG,
               "code object: relocation %llu of section %u names symbol %u of %llu", (unsigned long long)j, idx,
               o->sym_index, (unsigned long long)nsyms);
      Elf64_Sym s;
      memcpy(&s, e->p + symsh.sh_offset + (uint64_t)o->sym_index * sizeof s, sizeof s);
      o->sym_value = s.st_value;
      o->sym_shndx = s.st_shndx;
      o->sym_bind = (uint8_t)ELF64_ST_BIND(s.st_info);
      const char *nm = cj_str(e, &strsh, s.st_name);
      snprintf(o->sym, sizeof o->sym, "%s", nm ? nm : "?");
    }
    im->nrelocs++;
  }
  return CONVJIT_OK;
}

static convjit_status cj_image_read_into(const void *elf, size_t size, cj_image *im) {
  cj_elf e;
  CJ_TRY(cj_elf_open(&e, elf, size));
  CJ_TRY(cj_image_segments(&e, im));
  for (uint32_t i = 0; i < e.eh.e_shnum; i++) {
    Elf64_Shdr sh;
    CJ_TRY(cj_shdr(&e, i, &sh));
    if (!(sh.sh_flags & SHF_ALLOC)) continue; /* static (link-time) relocations: already applied */
    CJ_CHECK(sh.sh_type != SHT_REL, CONVJIT_ERR_INVALID_ARG,
             "code object: section %u holds SHT_REL dynamic relocations: only SHT_RELA ones are read", i);
    if (sh.sh_type == SHT_RELA) CJ_TRY(cj_image_rela(&e, i, &sh, im));
  }
  return CONVJIT_OK;
}

convjit_status cj_image_read(const void *elf, size_t size, cj_image *out) {
  CJ_CHECK(out != NULL, CONVJIT_ERR_INVALID_ARG, "cj_image_read: out is NULL");
  memset(out, 0, sizeof *out);
  convjit_status st = cj_image_read_into(elf, size, out);
  if (st != CONVJIT_OK) cj_image_free(out);
  return st;
}

/* The 64-bit value relocation r stores for load address base. */
static convjit_status cj_reloc_value(const cj_reloc *r, uint64_t base, uint64_t *v) {
  switch (r->type) {
  case CJ_R_AMDGPU_RELATIVE64:
    *v = base + (uint64_t)r->addend;
    return CONVJIT_OK;
  case CJ_R_AMDGPU_ABS64:
    if (r->sym_index && r->sym_shndx == SHN_UNDEF) {
      CJ_CHECK(r->sym_bind == STB_WEAK, CONVJIT_ERR_INVALID_ARG,
               "code object: R_AMDGPU_ABS64 at 0x%llx refers to undefined symbol %s (the loader has nothing to bind "
               "it to)",
               (unsigned long long)r->offset, r->sym);
      *v = (uint64_t)r->addend; /* an undefined weak symbol is 0 */
      return CONVJIT_OK;
    }
    *v = (r->sym_index && r->sym_shndx == SHN_ABS ? 0 : base) + r->sym_value + (uint64_t)r->addend;
    return CONVJIT_OK;
  default:
    return CJ_ERR(CONVJIT_ERR_INVALID_ARG,
                  "code object: dynamic relocation type %u at 0x%llx (symbol %s): only R_AMDGPU_NONE (0), "
                  "R_AMDGPU_ABS64 (3) and R_AMDGPU_RELATIVE64 (13) are applied",
                  r->type, (unsigned long long)r->offset, r->sym[0] ? r->sym : "none");
  }
}

convjit_status cj_image_place(const cj_image *im, uint64_t base, uint8_t *dst) {
  CJ_CHECK(im && dst, CONVJIT_ERR_INVALID_ARG, "cj_image_place: NULL argument");
  memset(dst, 0, im->size);
  for (uint32_t i = 0; i < im->nsegs; i++) memcpy(dst + im->segs[i].vaddr, im->segs[i].bytes, im->segs[i].filesz);
  for (uint32_t i = 0; i < im->nrelocs; i++) {
    const cj_reloc *r = &im->relocs[i];
    if (r->type == CJ_R_AMDGPU_NONE) continue;
    uint64_t v = 0;
    CJ_TRY(cj_reloc_value(r, base, &v));
    CJ_CHECK(r->offset <= im->size && im->size - r->offset >= 8, CONVJIT_ERR_INVALID_ARG,
             "code object: relocation at 0x%llx (symbol %s) lies outside the %llu-byte image",
             (unsigned long long)r->offset, r->sym[0] ? r->sym : "none", (unsigned long long)im->size);
    memcpy(dst + r->offset, &v, 8); /* little-endian host */
  }
  return CONVJIT_OK;
}

void cj_image_free(cj_image *im) {
  if (!im) return;
  free(im->segs);
  free(im->relocs);
  memset(im, 0, sizeof *im);
}
