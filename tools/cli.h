/* Strict command-line values for every tool in tools/ (one parser, linked
 * into each tool as the cj_cli library; CMakeLists.txt).
 *
 * Numbers are unsigned decimal integers: digits only (no sign, no space, no
 * 0x), nothing after them, within the range the caller gives. Lists are
 * values separated by ',' with no empty value (so no trailing ','); pairs
 * are "AxB" (or "A,B"). A bad value prints, on stderr,
 *   <tool>: <option> '<text>': <what was expected>
 * and the function returns -1; the tool then prints its usage and exits 2.
 * Whether a well-formed value is legal for a problem stays the public API's
 * decision (its messages name the descriptor field). */
#ifndef CJ_TOOLS_CLI_H
#define CJ_TOOLS_CLI_H

#include <stdint.h>
#include "codegen/kplan_knobs.h"
#include "util/cj.h"

/* The largest value a list option (--shape, --stride, --pad, --dilation)
 * takes: what a descriptor's int64 field holds. The public API then applies
 * its own limits (1..2^31-1 for extents) and names the field. */
#define CLI_MAX_EXTENT INT64_MAX

/* The tool's name for the messages ("convjit-run"). */
void cli_set_tool(const char *name);

/* Prints "<tool>: <opt> '<text>': <why>"; returns -1. */
int cli_fail(const char *opt, const char *text, const char *why);
/* One integer in lo..hi: 0, or -1 with the message. */
int cli_u64(const char *opt, const char *text, uint64_t lo, uint64_t hi, uint64_t *out);
/* A finite decimal number in (lo, hi]. */
int cli_double(const char *opt, const char *text, double lo_excl, double hi, double *out);
/* "a,b,c": between min and max values, each in lo..hi; the count, or -1. */
int cli_list(const char *opt, const char *text, int64_t *out, int min, int max, int64_t lo, int64_t hi);
/* A conv knob (kplan_knobs.h) given as --<name> [text]: a flag takes no text,
 * ONE an integer < 2^32, PAIR "AxB"/"A,B" of them; a 0 where the knob's
 * domain starts above 0 is refused ("--tile 0x128" is no half-auto tile:
 * leaving the option out lets convjit choose). 0, or -1. */
int cli_knob(cj_conv_opts *o, const cj_knob *k, const char *opt, const char *text);
/* A conv --layout: "ncdhw" | "ndhwc" (x and y) or "X,Y" of those (mixed);
 * *x_ndhwc, *y_ndhwc = 1 for channels-last. 0, or -1 with the message. */
int cli_layout(const char *opt, const char *text, int *x_ndhwc, int *y_ndhwc);
/* An --act: one of the epilogue's activation names (cj_epi_act_name);
 * *act = its index. 0, or -1 with the message. */
int cli_act(const char *opt, const char *text, int *act);

/* s as a JSON string value, quoted, with quotes, backslashes and control
 * bytes escaped: every tool's --json uses it. */
void cli_json_str(cj_strbuf *sb, const char *s);

#endif
