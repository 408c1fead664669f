/* spec_parse.c — reading a sweep spec (docs/SPEC.md) with libinih.
 *
 * libinih's handler gets no line numbers, so the text goes through our own
 * reader (spec_reader): it is called once per line, counts lines, strips
 * comments and indentation (so inih never sees a "continuation line" or a
 * line longer than its buffer because of a comment), and tracks section
 * headers itself (inih does not report empty sections). The handler then
 * knows the line of every key it is given.
 *
 * Errors, as
 *   FILE:LINE: [section] key: what is wrong; allowed: what is allowed
 * with "did you mean X?" before "allowed" when a name is close to a valid
 * one, and "--set section.key:" instead of FILE:LINE for a line written by an
 * override (spec_override.c). Every spec error is CS_ERR_INPUT. By default
 * the first error wins and is the only one reported (run, train, analyze);
 * with an on_error callback (`curvsweep check`) every error is reported and
 * reading goes on: a line with an error is skipped, and a bad section header
 * skips the keys under it (they would only repeat the one mistake). */
#include "spec_internal.h"

#include "curvsweep/error.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Error recording                                                            */

/* Where line `line` of the text came from: "line 12" or "--set sec.key". */
const char *spec_line_place(const parse_state *st, int line, char *buf, size_t len) {
  int o = st->origin && line >= 1 && line <= st->norigin ? st->origin[line - 1] : line;
  if (o < 0) snprintf(buf, len, "--set %s.%s", st->overrides[-o - 1].section, st->overrides[-o - 1].key);
  else snprintf(buf, len, "line %d", o);
  return buf;
}

/* Record an error: "SOURCE:LINE: " (or "--set section.key: ") + message.
 * Returns code. The first error stops the reading, unless errors are
 * collected (an input error then goes to on_error and reading goes on). */
int spec_fail_line(parse_state *st, int code, int line, const char *fmt, ...) {
  char msg[1800], place[160];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  spec_line_place(st, line, place, sizeof place);
  if (place[0] == '-') cs_error(code, "%s: %s", place, msg);
  else cs_error(code, "%s:%s: %s", st->source, place + 5, msg);
  if (!st->err_code) st->err_code = code;
  st->nerrors++;
  if (st->on_error && code == CS_ERR_INPUT) {
    st->on_error(st->on_error_ctx, cs_error_message());
    return code;
  }
  st->err_line = line > 0 ? line : 1;
  return code;
}

/* Same, for a key: "SOURCE:LINE: [section] key: " + message. Returns
 * CS_ERR_INPUT. */
int spec_fail_key(parse_state *st, int line, int section, const char *name, const char *fmt, ...) {
  char msg[1700];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  // the checks between keys skip a key with an error of its own
  int key = spec_find_key(section, name);
  if (key >= 0) st->bad_key[key] = 1;
  return spec_fail_line(st, CS_ERR_INPUT, line, "[%s] %s: %s", SPEC_SECTION_NAMES[section], name, msg);
}

/* Text for quoting in a message: at most 60 characters, "..." when cut. */
const char *spec_clip(const char *s, char buf[72]) {
  size_t n = strlen(s);
  if (n <= 60) return s;
  memcpy(buf, s, 57);
  memcpy(buf + 57, "...", 4);
  return buf;
}
/* ------------------------------------------------------------------------ */
/* Scalars                                                                    */

/* Strict decimal integer: optional sign, digits only. 0 ok, 1 not an
 * integer, 2 does not fit int64. */
static int parse_int64(const char *s, int64_t *out) {
  const char *p = s;
  if (*p == '+' || *p == '-') p++;
  if (!*p) return 1;
  for (const char *q = p; *q; q++)
    if (!isdigit((unsigned char)*q)) return 1;
  errno = 0;
  char *end;
  long long v = strtoll(s, &end, 10);
  if (errno == ERANGE) return 2;
  *out = (int64_t)v;
  return 0;
}

/* Strict decimal real: digits, sign, '.', exponent only (no inf, nan, hex);
 * 0 ok, 1 not a number, 2 not finite (overflow). */
static int parse_real(const char *s, double *out) {
  if (!*s) return 1;
  for (const char *q = s; *q; q++)
    if (!isdigit((unsigned char)*q) && !strchr("+-.eE", *q)) return 1;
  char *end;
  double v = strtod(s, &end);
  if (end == s || *end) return 1;
  if (!isfinite(v)) return 2;
  *out = v;
  return 0;
}

/* Parse one value of key (a single element, trimmed) into v: CS_OK, or the
 * error recorded. */
static int parse_scalar(parse_state *st, int line, int section, int key, const char *text,
                        key_value *v) {
  const key_desc *k = &SPEC_KEYS[key];
  char allowed[256], q[72], dym[96];
  spec_key_allowed(key, allowed, sizeof allowed);
  v->i = 0;
  v->r = 0.0;
  if (k->kind == KIND_INT) {
    int rc = parse_int64(text, &v->i);
    if (rc == 1)
      return spec_fail_key(st, line, section, k->name, "'%s' is not an integer; allowed: %s",
                      spec_clip(text, q), allowed);
    if (rc == 2 || v->i < k->imin || v->i > k->imax)
      return spec_fail_key(st, line, section, k->name, "%s is out of range; allowed: %s",
                      spec_clip(text, q), allowed);
    return CS_OK;
  }
  if (k->kind == KIND_REAL) {
    int rc = parse_real(text, &v->r);
    if (rc == 1)
      return spec_fail_key(st, line, section, k->name, "'%s' is not a number; allowed: %s",
                      spec_clip(text, q), allowed);
    int below = k->rmin_open ? !(v->r > k->rmin) : !(v->r >= k->rmin);
    if (rc == 2 || below || v->r > k->rmax)
      return spec_fail_key(st, line, section, k->name, "%s is out of range; allowed: %s",
                      spec_clip(text, q), allowed);
    return CS_OK;
  }
  if (k->kind == KIND_ENUM) {
    const char *names[16];
    int n = spec_enum_count(k->table);
    for (int i = 0; i < n; i++) {
      names[i] = spec_enum_name(k->table, i);
      if (strcmp(names[i], text) == 0) {
        v->i = i;
        return CS_OK;
      }
    }
    return spec_fail_key(st, line, section, k->name, "unknown value '%s'%s allowed: %s", spec_clip(text, q),
                    *spec_did_you_mean(spec_suggest(text, names, n), dym, sizeof dym) ? dym : ";",
                    allowed);
  }
  return spec_fail_key(st, line, section, k->name, "internal: not a scalar key");
}

/* ------------------------------------------------------------------------ */
/* Reading lines                                                              */

/* The meaningful part [*b, *e) of a raw line (n bytes, no '\n'), as inih
 * would see it: without a UTF-8 BOM on line 1, surrounding whitespace, a
 * whole-line comment (';' or '#') or an inline comment (';' after a space). */
void spec_line_content(const char *s, size_t n, int first_line, const char **b,
                       const char **e) {
  const char *p = s, *end = s + n;
  if (first_line && n >= 3 && (unsigned char)p[0] == 0xEF && (unsigned char)p[1] == 0xBB &&
      (unsigned char)p[2] == 0xBF)
    p += 3;
  while (p < end && isspace((unsigned char)*p)) p++;
  if (p < end && (*p == ';' || *p == '#')) end = p;
  // inline comment: ';' preceded by whitespace
  for (const char *q = p + 1; q < end; q++)
    if (*q == ';' && isspace((unsigned char)q[-1])) {
      end = q;
      break;
    }
  while (end > p && isspace((unsigned char)end[-1])) end--;
  *b = p;
  *e = end;
}

/* Line `line` (1-based) of the text, as content, into buf (for messages). */
const char *spec_line_text(const parse_state *st, int line, char *buf, size_t len) {
  const char *s = st->text, *end = st->text + st->len;
  for (int i = 1; i < line && s < end; i++) {
    const char *nl = memchr(s, '\n', (size_t)(end - s));
    s = nl ? nl + 1 : end;
  }
  const char *nl = memchr(s, '\n', (size_t)(end - s));
  const char *b, *e;
  spec_line_content(s, nl ? (size_t)(nl - s) : (size_t)(end - s), line == 1, &b, &e);
  size_t n = (size_t)(e - b);
  if (n > 60) {
    snprintf(buf, len, "%.57s...", b);
  } else {
    snprintf(buf, len, "%.*s", (int)n, b);
  }
  return buf;
}

/* A "[name]" line: switch the current section; CS_OK or the error recorded.
 * A line without ']' is left to inih, which reports it as a syntax error. */
static int section_header(parse_state *st, const char *b, const char *e) {
  const char *close = memchr(b, ']', (size_t)(e - b));
  if (!close) return CS_OK;
  char name[72], q[72], dym[96];
  size_t n = (size_t)(close - b - 1);
  snprintf(name, sizeof name, "%.*s", (int)(n < 64 ? n : 64), b + 1);
  if (close + 1 != e) {
    char whole[80];
    return spec_fail_line(st, CS_ERR_INPUT, st->lineno,
                     "syntax error: text after ] in '%s'; allowed: " SYNTAX_ALLOWED,
                     spec_line_text(st, st->lineno, whole, sizeof whole));
  }
  int sec = -1;
  for (int s = 0; s < SEC_COUNT; s++)
    if (n == strlen(SPEC_SECTION_NAMES[s]) && memcmp(b + 1, SPEC_SECTION_NAMES[s], n) == 0) sec = s;
  if (sec < 0) {
    const char *best = spec_suggest(name, SPEC_SECTION_NAMES, SEC_COUNT);
    if (best) snprintf(dym, sizeof dym, "; did you mean [%s]?", best);
    return spec_fail_line(st, CS_ERR_INPUT, st->lineno, "unknown section [%s]%s allowed: " SECTIONS_ALLOWED,
                     spec_clip(name, q), best ? dym : ";");
  }
  if (st->section_line[sec]) {
    char first[160];
    return spec_fail_line(st, CS_ERR_INPUT, st->lineno,
                     "section [%s] appears twice (first at %s); allowed: each section once",
                     SPEC_SECTION_NAMES[sec],
                     spec_line_place(st, st->section_line[sec], first, sizeof first));
  }
  st->section = sec;
  st->section_line[sec] = st->lineno;
  return CS_OK;
}

/* A line inih cannot read (a header without ']', a line without '=' or
 * ':'): the error, recorded here so that it is reported in line order and,
 * when errors are collected, with every other one. */
static int line_syntax(parse_state *st, const char *b, const char *e) {
  char whole[80];
  if (*b == '[' && !memchr(b, ']', (size_t)(e - b)))
    return spec_fail_line(st, CS_ERR_INPUT, st->lineno,
                          "syntax error: '%s' has no closing ]; allowed: " SYNTAX_ALLOWED,
                          spec_line_text(st, st->lineno, whole, sizeof whole));
  if (*b != '[' && !memchr(b, '=', (size_t)(e - b)) && !memchr(b, ':', (size_t)(e - b)))
    return spec_fail_line(st, CS_ERR_INPUT, st->lineno,
                          "syntax error: '%s' is not key = value; allowed: " SYNTAX_ALLOWED,
                          spec_line_text(st, st->lineno, whole, sizeof whole));
  return CS_OK;
}

/* The ini_reader given to ini_parse_stream: hands inih the next line,
 * cleaned by spec_line_content, and counts lines. NULL ends the parse (at
 * the end of the text, or once an error stops it); a line with an error is
 * handed on as a blank line when errors are collected. */
char *spec_reader(char *str, int num, void *stream) {
  parse_state *st = stream;
  if (st->err_line || st->pos >= st->len) return NULL;
  const char *line = st->text + st->pos;
  const char *nl = memchr(line, '\n', st->len - st->pos);
  size_t n = nl ? (size_t)(nl - line) : st->len - st->pos;
  st->pos += n + (nl ? 1 : 0);
  st->lineno++;
  int rc = CS_OK;
  const char *b = line, *e = line;
  if (memchr(line, '\0', n)) {
    rc = spec_fail_line(st, CS_ERR_INPUT, st->lineno, "NUL byte in the line; allowed: text");
  } else {
    spec_line_content(line, n, st->lineno == 1, &b, &e);
    if ((size_t)(e - b) + 2 > (size_t)num)
      rc = spec_fail_line(st, CS_ERR_INPUT, st->lineno,
                          "line is %zu characters long (without comments); allowed: at most %d",
                          (size_t)(e - b), num - 2);
    else if (e > b && (rc = line_syntax(st, b, e)) == CS_OK && *b == '[')
      rc = section_header(st, b, e);
    if (rc != CS_OK && e > b && *b == '[') st->section = -2;  // a broken header: skip its keys
  }
  if (st->err_line) return NULL;
  if (rc != CS_OK) e = b;  // collecting: go on with a blank line
  size_t m = (size_t)(e - b);
  memcpy(str, b, m);
  str[m] = '\n';
  str[m + 1] = '\0';
  return str;
}

/* ------------------------------------------------------------------------ */
/* Keys in [sweep], [task], [model], [train], [curvature], [team]             */

/* A name that is not a key of section sec: the section's keys as allowed,
 * and why this one is not among them. */
static int fixed_unknown_key(parse_state *st, int line, int sec, const char *name) {
  char keys_allowed[256], q[72], dym[96];
  const char *names[K_COUNT];
  int n = spec_section_keys(sec, names);
  size_t used = 0;
  keys_allowed[0] = '\0';
  for (int i = 0; i < n; i++)
    used += (size_t)snprintf(keys_allowed + used, sizeof keys_allowed - used, "%s%s",
                             i ? ", " : "", names[i]);
  int other = spec_find_key_anywhere(name);
  if (other >= 0 && SPEC_KEYS[other].section == SEC_GRID)
    return spec_fail_key(st, line, sec, name,
                         "not a [%s] key (it is an axis: set it in [grid]); allowed: %s",
                         SPEC_SECTION_NAMES[sec], keys_allowed);
  if (other >= 0)
    return spec_fail_key(st, line, sec, name, "not a [%s] key (it belongs in [%s]); allowed: %s",
                         SPEC_SECTION_NAMES[sec], SPEC_SECTION_NAMES[SPEC_KEYS[other].section],
                         keys_allowed);
  const char *best = spec_suggest(name, names, n);
  return spec_fail_key(st, line, sec, spec_clip(name, q), "unknown key%s allowed: %s",
                       best ? spec_did_you_mean(best, dym, sizeof dym) : ";", keys_allowed);
}

/* The sweep's name or output path: free text of bounded length. */
static int fixed_string(parse_state *st, int line, int key, const char *value,
                        const char *allowed) {
  const key_desc *k = &SPEC_KEYS[key];
  size_t n = strlen(value);
  if (n >= k->maxlen)
    return spec_fail_key(st, line, k->section, k->name, "value is %zu characters long; allowed: %s",
                         n, allowed);
  // a control character would reach terminals and reports raw (ESC
  // sequences, CR, BEL: docs/SECURITY.md)
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)value[i];
    if (c < 0x20 || c == 0x7f)
      return spec_fail_key(st, line, k->section, k->name, "control character 0x%02X at position "
                           "%zu of the value; allowed: %s", c, i + 1, allowed);
  }
  cs_sweep_settings *sw = &st->spec->sweep;
  memcpy(key == K_NAME ? sw->name : sw->output, value, n + 1);
  return CS_OK;
}

/* The team grid "PxQ": P and Q digits only, on either side of one 'x'. */
static int fixed_team_grid(parse_state *st, int line, int key, const char *value,
                           const char *allowed) {
  const key_desc *k = &SPEC_KEYS[key];
  char q[72];
  const char *x = strchr(value, 'x');
  size_t np = x ? (size_t)(x - value) : 0, nq = x ? strlen(x + 1) : 0;
  int ok = np > 0 && nq > 0 && strspn(value, "0123456789") == np &&
           strspn(x + 1, "0123456789") == nq;
  if (!ok)
    return spec_fail_key(st, line, k->section, k->name, "'%s' is not PxQ; allowed: %s",
                         spec_clip(value, q), allowed);
  char p_text[32], q_text[32];
  snprintf(p_text, sizeof p_text, "%.*s", (int)(np < 31 ? np : 31), value);
  snprintf(q_text, sizeof q_text, "%s", x + 1);
  int64_t p = 0, qv = 0;
  if (np > 30 || nq > 30 || parse_int64(p_text, &p) || parse_int64(q_text, &qv) || p < 1 ||
      qv < 1 || p > INT_MAX / qv)
    return spec_fail_key(st, line, k->section, k->name, "%s is out of range; allowed: %s",
                         spec_clip(value, q), allowed);
  st->spec->base.team_p = (int)p;
  st->spec->base.team_q = (int)qv;
  return CS_OK;
}

/* One number or name (lists and ranges belong in [grid]), into the base
 * config or the sweep settings. */
static int fixed_scalar(parse_state *st, int line, int key, const char *value,
                        const char *allowed) {
  const key_desc *k = &SPEC_KEYS[key];
  char q[72];
  if (strchr(value, ','))
    return spec_fail_key(st, line, k->section, k->name,
                         "'%s' is a list; allowed: one value, %s (lists belong in [grid])",
                         spec_clip(value, q), allowed);
  if (strstr(value, "..") && k->kind == KIND_INT)
    return spec_fail_key(st, line, k->section, k->name,
                         "'%s' is a range; allowed: one value, %s (ranges belong in [grid])",
                         spec_clip(value, q), allowed);
  key_value v;
  CS_CHECK(parse_scalar(st, line, k->section, key, value, &v));
  spec_apply_value(&st->spec->base, &st->spec->sweep, key, v);
  return CS_OK;
}

/* A key written at line of section sec ([grid]: an axis) is set once per
 * section, and either as an axis in [grid] or as a fixed value in its own
 * section, not both. */
static int key_not_yet_set(parse_state *st, int line, int sec, const char *name, int key) {
  int axis = sec == SEC_GRID;
  int first_line = axis ? st->axis_line[key] : st->fixed_line[key];
  int other_line = axis ? st->fixed_line[key] : st->axis_line[key];
  char place[160];
  if (first_line)
    return spec_fail_key(st, line, sec, name,
                         "set twice (first at %s); allowed: each key once per section",
                         spec_line_place(st, first_line, place, sizeof place));
  if (!other_line) return CS_OK;
  spec_line_place(st, other_line, place, sizeof place);
  const char *own = SPEC_SECTION_NAMES[SPEC_KEYS[key].section];
  if (axis)
    return spec_fail_key(st, line, sec, name,
                         "also set in [%s] at %s; allowed: an axis here or a fixed value "
                         "in [%s], not both",
                         own, place, own);
  return spec_fail_key(st, line, sec, name,
                       "also an axis in [grid] at %s; allowed: a fixed value here or an "
                       "axis in [grid], not both",
                       place);
}

/* name = value in the current section (not [grid]); CS_OK or the error recorded. */
static int parse_fixed(parse_state *st, const char *name, const char *value) {
  int sec = st->section, line = st->lineno;
  int key = spec_find_key(sec, name);
  if (key < 0) return fixed_unknown_key(st, line, sec, name);
  CS_CHECK(key_not_yet_set(st, line, sec, name, key));
  char allowed[256];
  spec_key_allowed(key, allowed, sizeof allowed);
  if (!*value) return spec_fail_key(st, line, sec, name, "empty value; allowed: %s", allowed);
  switch (SPEC_KEYS[key].kind) {
    case KIND_STRING: CS_CHECK(fixed_string(st, line, key, value, allowed)); break;
    case KIND_TEAM: CS_CHECK(fixed_team_grid(st, line, key, value, allowed)); break;
    default: CS_CHECK(fixed_scalar(st, line, key, value, allowed)); break;
  }
  st->fixed_line[key] = line;
  return CS_OK;
}

/* ------------------------------------------------------------------------ */
/* Axes in [grid]                                                             */

/* Trim an element in place. */
static char *trim(char *s) {
  while (isspace((unsigned char)*s)) s++;
  char *e = s + strlen(s);
  while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
  return s;
}

/* The allowed text of one axis element: "a comma list of values[ or integer
 * ranges a..b], each " + allowed. */
static const char *axis_list_allowed(const key_desc *k, const char *allowed, char *buf,
                                     size_t len) {
  snprintf(buf, len, "a comma list of values%s, each %s",
           k->kind == KIND_INT ? " or integer ranges a..b" : "", allowed);
  return buf;
}

/* An integer range "a..b" (dots at the "..", element e): its ends into *a
 * and *b. check: validate first (the values are already known good when
 * filling). */
static int axis_range(parse_state *st, int key, int line, char *e, char *dots, int check,
                      const char *allowed, int64_t *a, int64_t *b) {
  const key_desc *k = &SPEC_KEYS[key];
  char list_allowed[400], q[72], q2[72];
  if (k->kind != KIND_INT)
    return spec_fail_key(st, line, SEC_GRID, k->name,
                         "range '%s' on a non-integer key; allowed: a comma list of values, "
                         "each %s",
                         spec_clip(e, q), allowed);
  *dots = '\0';
  char *a_text = trim(e), *b_text = trim(dots + 2);
  *a = *b = 0;
  int ra = parse_int64(a_text, a), rb = parse_int64(b_text, b);
  if (!check) return CS_OK;
  if (ra == 1 || rb == 1)
    return spec_fail_key(st, line, SEC_GRID, k->name,
                         "'%s..%s' is not an integer range a..b; allowed: %s",
                         spec_clip(a_text, q), spec_clip(b_text, q2),
                         axis_list_allowed(k, allowed, list_allowed, sizeof list_allowed));
  if (ra == 2 || *a < k->imin || *a > k->imax)
    return spec_fail_key(st, line, SEC_GRID, k->name, "%s is out of range; allowed: %s",
                         spec_clip(a_text, q), allowed);
  if (rb == 2 || *b < k->imin || *b > k->imax)
    return spec_fail_key(st, line, SEC_GRID, k->name, "%s is out of range; allowed: %s",
                         spec_clip(b_text, q), allowed);
  if (*a > *b)
    return spec_fail_key(st, line, SEC_GRID, k->name,
                         "range %s..%s is empty (%" PRId64 " > %" PRId64
                         "); allowed: a..b with a <= b",
                         spec_clip(a_text, q), spec_clip(b_text, q2), *a, *b);
  return CS_OK;
}

/* Walk the comma list of an axis (list: a writable copy of the value, text:
 * the value as written). Count mode (ivals = rvals = NULL): validate every
 * element and count values into *count. Fill mode: write the values. */
static int axis_elements(parse_state *st, int key, int line, char *list, const char *text,
                         int64_t *ivals, double *rvals, uint64_t *count) {
  const key_desc *k = &SPEC_KEYS[key];
  int fill = ivals || rvals;
  char allowed[256], list_allowed[400], q[72];
  spec_key_allowed(key, allowed, sizeof allowed);
  uint64_t n = 0;
  int position = 0;
  char *save = NULL;
  // strtok_r would merge ",," so split by hand
  for (char *elem = list; elem; elem = save) {
    char *comma = strchr(elem, ',');
    save = comma ? comma + 1 : NULL;
    if (comma) *comma = '\0';
    position++;
    char *e = trim(elem);
    if (!*e)
      return spec_fail_key(st, line, SEC_GRID, k->name, "empty element %d in '%s'; allowed: %s",
                           position, spec_clip(text, q),
                           axis_list_allowed(k, allowed, list_allowed, sizeof list_allowed));
    char *dots = strstr(e, "..");
    if (dots) {
      // integer range a..b, inclusive
      int64_t a = 0, b = 0;
      CS_CHECK(axis_range(st, key, line, e, dots, !fill, allowed, &a, &b));
      // length b - a + 1 in unsigned arithmetic (seed ranges may span 2^63)
      uint64_t len = (uint64_t)b - (uint64_t)a + 1u;
      if (fill) {
        for (uint64_t i = 0; i < len; i++) ivals[n + i] = a + (int64_t)i;
      }
      n = (len == 0 || n + len < n) ? UINT64_MAX : n + len;  // saturate; the size check refuses it
      continue;
    }
    // a single value (already validated when filling)
    key_value v;
    CS_CHECK(parse_scalar(st, line, SEC_GRID, key, e, &v));
    if (fill) {
      if (k->kind == KIND_REAL) rvals[n] = v.r;
      else ivals[n] = v.i;
    }
    if (n != UINT64_MAX) n++;
  }
  *count = n;
  return CS_OK;
}

typedef struct {
  int64_t i;
  double r;
  int64_t pos;  /* position in the axis as written */
} axis_entry;

static int compare_entries_int(const void *a, const void *b) {
  const axis_entry *x = a, *y = b;
  if (x->i != y->i) return x->i < y->i ? -1 : 1;
  return x->pos < y->pos ? -1 : (x->pos > y->pos);
}

static int compare_entries_real(const void *a, const void *b) {
  const axis_entry *x = a, *y = b;
  if (x->r != y->r) return x->r < y->r ? -1 : 1;
  return x->pos < y->pos ? -1 : (x->pos > y->pos);
}

/* Refuse an axis that holds a value twice; names the first repeat in
 * written order. */
static int axis_check_duplicates(parse_state *st, const spec_axis *ax) {
  const key_desc *k = &SPEC_KEYS[ax->key];
  axis_entry *e;
  if (CS_CALLOC(e, ax->length) != CS_OK)
    return spec_fail_line(st, CS_ERR_NOMEM, ax->line, "out of memory checking an axis");
  // sort (value, position); equal neighbours are repeats, and the repeat
  // with the smallest later position is the first one a reader meets
  for (int64_t i = 0; i < ax->length; i++) {
    e[i].pos = i;
    if (k->kind == KIND_REAL) e[i].r = ax->rvals[i];
    else e[i].i = ax->ivals[i];
  }
  qsort(e, (size_t)ax->length, sizeof *e,
        k->kind == KIND_REAL ? compare_entries_real : compare_entries_int);
  int64_t first_repeat = -1;
  for (int64_t i = 1; i < ax->length; i++) {
    int same = k->kind == KIND_REAL ? e[i].r == e[i - 1].r : e[i].i == e[i - 1].i;
    if (same && (first_repeat < 0 || e[i].pos < first_repeat)) first_repeat = e[i].pos;
  }
  free(e);
  if (first_repeat < 0) return CS_OK;
  char value[64];
  spec_axis_value_format(ax, first_repeat, value, sizeof value);
  return spec_fail_key(st, ax->line, SEC_GRID, k->name,
                       "%s appears twice; allowed: each value once per axis", value);
}

/* A name that may not be an axis: why, and what may. */
static int axis_unknown_key(parse_state *st, int line, const char *name) {
  char q[72], dym[96];
  int other = spec_find_key_anywhere(name);
  if (other >= 0)
    return spec_fail_key(st, line, SEC_GRID, name,
                         "a [%s] key cannot be an axis; allowed: " AXES_ALLOWED,
                         SPEC_SECTION_NAMES[SPEC_KEYS[other].section]);
  const char *names[K_COUNT];
  int n = spec_section_keys(SEC_GRID, names);
  const char *best = spec_suggest(name, names, n);
  return spec_fail_key(st, line, SEC_GRID, spec_clip(name, q),
                       "unknown axis%s allowed: " AXES_ALLOWED,
                       best ? spec_did_you_mean(best, dym, sizeof dym) : ";");
}

/* Pass over the values of an axis on a writable copy of value: count mode
 * (ivals = rvals = NULL) or fill mode, as axis_elements. */
static int axis_pass(parse_state *st, int key, int line, const char *value, int64_t *ivals,
                     double *rvals, uint64_t *count) {
  size_t vlen = strlen(value);
  char *list;
  if (CS_CALLOC(list, vlen + 1) != CS_OK)
    return spec_fail_line(st, CS_ERR_NOMEM, line,
                          ivals || rvals ? "out of memory storing an axis"
                                         : "out of memory reading an axis");
  memcpy(list, value, vlen + 1);
  int rc = axis_elements(st, key, line, list, value, ivals, rvals, count);
  free(list);
  return rc;
}

/* The grid size with a new axis of count values, into *cells: refuse more
 * than SPEC_MAX_CELLS cells (and products that do not even fit int64) before
 * allocating anything. */
static int axis_grid_size(parse_state *st, int line, const char *name, uint64_t count,
                          uint64_t *cells) {
  const cs_spec *spec = st->spec;
  *cells = (uint64_t)spec->ncells;
  int overflow = count > (uint64_t)INT64_MAX || __builtin_mul_overflow(*cells, count, cells) ||
                 *cells > (uint64_t)INT64_MAX;
  if (!overflow && *cells <= SPEC_MAX_CELLS) return CS_OK;
  // the axis lengths so far, "a x b x count"
  char factors[512];
  size_t used = 0;
  for (int a = 0; a < spec->naxes && used < sizeof factors; a++)
    used += (size_t)snprintf(factors + used, sizeof factors - used, "%" PRId64 " x ",
                             spec->axes[a].length);
  if (used < sizeof factors) snprintf(factors + used, sizeof factors - used, "%" PRIu64, count);
  if (overflow)
    return spec_fail_key(st, line, SEC_GRID, name,
                         "the grid would have more than %" PRId64 " cells (%s overflows int64); "
                         "allowed: at most %d cells",
                         INT64_MAX, factors, SPEC_MAX_CELLS);
  if (spec->naxes == 0)
    return spec_fail_key(st, line, SEC_GRID, name,
                         "the grid would have %" PRIu64 " cells; allowed: at most %d cells",
                         *cells, SPEC_MAX_CELLS);
  return spec_fail_key(st, line, SEC_GRID, name,
                       "the grid would have %" PRIu64 " cells (%s); allowed: at most %d cells",
                       *cells, factors, SPEC_MAX_CELLS);
}

/* name = value in [grid]: a new axis; CS_OK or the error recorded. */
static int parse_axis(parse_state *st, const char *name, const char *value) {
  int line = st->lineno;
  int key = spec_find_key(SEC_GRID, name);
  if (key < 0) return axis_unknown_key(st, line, name);
  const key_desc *k = &SPEC_KEYS[key];
  CS_CHECK(key_not_yet_set(st, line, SEC_GRID, name, key));
  if (!*value) {
    char allowed[256], list_allowed[400];
    spec_key_allowed(key, allowed, sizeof allowed);
    return spec_fail_key(st, line, SEC_GRID, name, "empty axis; allowed: %s",
                         axis_list_allowed(k, allowed, list_allowed, sizeof list_allowed));
  }
  // pass 1: validate the elements and count the values; then the grid size
  uint64_t count = 0, cells = 0;
  CS_CHECK(axis_pass(st, key, line, value, NULL, NULL, &count));
  CS_CHECK(axis_grid_size(st, line, name, count, &cells));
  // pass 2: store the values
  cs_spec *spec = st->spec;
  spec_axis *ax = &spec->axes[spec->naxes];
  ax->key = key;
  ax->line = line;
  ax->length = (int64_t)count;
  int rc = k->kind == KIND_REAL ? CS_CALLOC(ax->rvals, count) : CS_CALLOC(ax->ivals, count);
  spec->naxes++;  // owned by spec from here (freed by spec_free)
  if (rc != CS_OK) return spec_fail_line(st, CS_ERR_NOMEM, line, "out of memory storing an axis");
  CS_CHECK(axis_pass(st, key, line, value, ax->ivals, ax->rvals, &count));
  // the axis is in the spec even with a repeated value (so that errors
  // collected after this one see it)
  spec->ncells = (int64_t)cells;
  st->axis_line[key] = line;
  return axis_check_duplicates(st, ax);
}

/* The libinih handler: one call per key = value line. Always returns
 * inih's success (nonzero): an error is recorded in st. */
int spec_handler(void *user, const char *section, const char *name, const char *value) {
  parse_state *st = user;
  (void)section;  // the reader tracks sections (with their lines) itself
  // errors are recorded in st, never reported to inih (its error line is
  // for lines it cannot read, which spec_reader does not hand it)
  if (st->err_line || st->section == -2) return 1;
  if (!*name) {
    char whole[80];
    spec_fail_line(st, CS_ERR_INPUT, st->lineno,
                   "syntax error: '%s' has no key before '='; allowed: " SYNTAX_ALLOWED,
                   spec_line_text(st, st->lineno, whole, sizeof whole));
    return 1;
  }
  if (st->section < 0) {
    char q[72];
    spec_fail_line(st, CS_ERR_INPUT, st->lineno,
                   "%s: key outside any section; allowed: keys inside [sweep], [grid], "
                   "[task], [model], [train], [curvature] or [team]",
                   spec_clip(name, q));
    return 1;
  }
  if (st->section == SEC_GRID) parse_axis(st, name, value);
  else parse_fixed(st, name, value);
  return 1;
}
