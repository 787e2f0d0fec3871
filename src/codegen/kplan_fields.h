/* Plan field tables: how a table row becomes a struct member, a key part
 * and a printed line. A plan's fields are listed once, as
 *   X(type, name, in_key, "reason")          (scalars and sub-structs)
 *   A(type, name, count, in_key, "reason")   (arrays, where a table has them)
 * and the struct, cj_kplan_key and cj_kplan_print all expand that list, so
 * a field cannot be in the struct but missing from the key. Keys are text
 * "name=value;" (never a memcmp of a padded struct). Field types are
 * integers, or a type with its own key/print pair below. */
#ifndef CJ_CODEGEN_KPLAN_FIELDS_H
#define CJ_CODEGEN_KPLAN_FIELDS_H

#define CJ_FIELD_MEMBER(type, name, in_key, reason) type name;
#define CJ_FIELD_ARRAY_MEMBER(type, name, count, in_key, reason) type name[count];

/* Expanded in the plan files, where every field type is complete. */
#define CJ_FIELD_KEY(sb, field, v)                                                                         \
  _Generic((v), cj_epilogue: cj_epi_key, cj_conv_geom: cj_conv_geom_key, cj_wgrad_grid: cj_wgrad_grid_key,      \
           default: cj_kplan_key_u64)(sb, field, v)
#define CJ_FIELD_PRINT(sb, field, v, reason)                                                                 \
  _Generic((v), cj_epilogue: cj_epi_print, cj_conv_geom: cj_conv_geom_print, cj_wgrad_grid: cj_wgrad_grid_print, \
           default: cj_kplan_print_u64)(sb, field, v, reason)

/* A table's key and print hooks: expand the table with these inside a
 * function whose strbuf is `fsb_` and whose plan struct pointer is `fpl_`:
 *   void key(const cj_kplan *p, cj_strbuf *fsb_) {
 *     const cj_x_plan *fpl_ = &p->u.x; CJ_X_PLAN_FIELDS(CJ_FIELD_KEY_ROW) } */
#define CJ_FIELD_KEY_ROW(type, name, in_key, reason)                                   \
  if (in_key == 1 || (in_key == 2 && cj_field_nz_##type(fpl_->name))) CJ_FIELD_KEY(fsb_, #name, fpl_->name);
/* in_key 2: keyed only when nonzero, so the kernels that existed before a
 * field was added keep their keys (integer fields only). */
#define cj_field_nz_uint32_t(v) ((v) != 0)
#define cj_field_nz_uint64_t(v) ((v) != 0)
#define cj_field_nz_int(v) ((v) != 0)
#define cj_field_nz_cj_epilogue(v) 1
#define cj_field_nz_cj_conv_geom(v) 1
#define cj_field_nz_cj_wgrad_grid(v) 1
#define CJ_FIELD_PRINT_ROW(type, name, in_key, reason) CJ_FIELD_PRINT(fsb_, #name, fpl_->name, reason);

#endif
