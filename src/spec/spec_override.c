/* spec_override.c — command-line overrides of a spec (`--set section.key=value`,
 * docs/SPEC.md, "Overrides"): the spec text with the overrides written into
 * it, which the ordinary parser then reads.
 *
 * An override of a key the file sets in that section replaces that line; any
 * other override becomes a new line at the end of its section (a new [grid]
 * axis is therefore the last, fastest-varying axis), or, for a section the
 * file lacks, a new section at the end of the text. A final comment lists
 * the overrides. The result is what the archive stores as /spec: it parses to
 * exactly the settings that ran, and the line map (origin) lets error
 * messages name `--set section.key` instead of a line of the rewritten text.
 * Without overrides the text is not touched (so existing archives resume).
 * spec_load_file and spec_load_file_opts live here: reading a spec file is
 * reading it with or without overrides. */
#include "spec_internal.h"

#include "curvsweep/error.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A growing text with its line map. */
typedef struct {
  char *buf;
  size_t len, cap;
  int *origin;
  int lines, lines_cap;
} out_text;

static int out_grow(out_text *o, size_t more) {
  if (o->len + more + 1 <= o->cap) return CS_OK;
  size_t cap = o->cap ? o->cap : 256;
  while (cap < o->len + more + 1) cap *= 2;
  char *b = realloc(o->buf, cap);
  if (!b) return cs_error(CS_ERR_NOMEM, "out of memory applying --set overrides");
  o->buf = b, o->cap = cap;
  return CS_OK;
}

/* Append one line (n bytes of s, then parts, then '\n') from origin. */
static int out_line(out_text *o, int origin, const char *s, size_t n, const char *tail) {
  size_t t = tail ? strlen(tail) : 0;
  CS_CHECK(out_grow(o, n + t + 1));
  memcpy(o->buf + o->len, s, n);
  if (t) memcpy(o->buf + o->len + n, tail, t);
  o->len += n + t;
  o->buf[o->len++] = '\n';
  o->buf[o->len] = '\0';
  if (o->lines == o->lines_cap) {
    int cap = o->lines_cap ? 2 * o->lines_cap : 64;
    int *m = realloc(o->origin, (size_t)cap * sizeof *m);
    if (!m) return cs_error(CS_ERR_NOMEM, "out of memory applying --set overrides");
    o->origin = m, o->lines_cap = cap;
  }
  o->origin[o->lines++] = origin;
  return CS_OK;
}

/* "key = value  ; --set section.key" as the line of override j. */
static int out_override(out_text *o, const spec_override *ov, int j, const char *was) {
  char *line = NULL;
  int n = was ? asprintf(&line, "%s = %s  ; --set %s.%s (the file had: %s)", ov[j].key,
                         ov[j].value, ov[j].section, ov[j].key, was)
              : asprintf(&line, "%s = %s  ; --set %s.%s", ov[j].key, ov[j].value,
                         ov[j].section, ov[j].key);
  if (n < 0) return cs_error(CS_ERR_NOMEM, "out of memory applying --set overrides");
  int rc = out_line(o, -(j + 1), line, (size_t)n, NULL);
  free(line);
  return rc;
}

/* A section or key name of an override: letters, digits, '_' and '-'. */
static int override_name_ok(const char *s, size_t n) {
  if (n == 0) return 0;
  for (size_t i = 0; i < n; i++)
    if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '-') return 0;
  return 1;
}

int spec_override_split(const char *arg, spec_override *ov) {
  memset(ov, 0, sizeof *ov);
  char q[72];
  const char *eq = strchr(arg, '='), *dot = eq ? memchr(arg, '.', (size_t)(eq - arg)) : NULL;
  if (!eq || !dot || !override_name_ok(arg, (size_t)(dot - arg)) ||
      !override_name_ok(dot + 1, (size_t)(eq - dot - 1)))
    return cs_error(CS_ERR_INPUT, "--set %s: not section.key=value; allowed: --set "
                    "section.key=value with a section and key of the spec (letters, digits, _), "
                    "e.g. --set train.epochs=5 or --set grid.seed=0..9",
                    spec_clip(arg, q));
  snprintf(ov->section, sizeof ov->section, "%.*s", (int)(dot - arg), arg);
  snprintf(ov->key, sizeof ov->key, "%.*s", (int)(eq - dot - 1), dot + 1);
  if (strlen(ov->section) != (size_t)(dot - arg) || strlen(ov->key) != (size_t)(eq - dot - 1))
    return cs_error(CS_ERR_INPUT, "--set %s: name too long; allowed: --set section.key=value "
                    "with a section and key of the spec", spec_clip(arg, q));
  ov->value = eq + 1;
  // the value becomes one line of the spec: a control character (a newline
  // above all) would change its structure
  for (const char *p = ov->value; *p; p++) {
    unsigned char c = (unsigned char)*p;
    if (c < 0x20 || c == 0x7f)
      return cs_error(CS_ERR_INPUT, "--set %s.%s: control character 0x%02X at position %zu of "
                      "the value; allowed: one line of text", ov->section, ov->key, c,
                      (size_t)(p - ov->value) + 1);
  }
  return CS_OK;
}

/* The key of a content line "key = value" (or "key: value", as inih splits
 * it): [*b, *e). 0 when the line is not key = value. */
static int line_key(const char *b, const char *e, const char **kb, const char **ke) {
  const char *sep = b;
  while (sep < e && *sep != '=' && *sep != ':') sep++;
  if (sep == e) return 0;
  const char *k = sep;
  while (k > b && isspace((unsigned char)k[-1])) k--;
  *kb = b, *ke = k;
  return 1;
}

static int name_is(const char *b, const char *e, const char *name) {
  return (size_t)(e - b) == strlen(name) && memcmp(b, name, (size_t)(e - b)) == 0;
}

int spec_override_apply(const char *text, size_t len, const spec_override *ov, int n,
                        char **out, size_t *out_len, int **origin, int *lines) {
  *out = NULL, *origin = NULL, *lines = 0, *out_len = 0;
  int *placed = calloc((size_t)n + 1, sizeof *placed);  // 1 replaced, 2 inserted
  if (!placed) return cs_error(CS_ERR_NOMEM, "out of memory applying --set overrides");
  out_text o = {0};
  int rc = CS_OK;
  // pass 1: the raw lines, their sections, and the last line with content
  // of each section's first appearance (where new keys of it go)
  int nlines = 0;
  for (size_t p = 0; p < len;) {
    const char *nl = memchr(text + p, '\n', len - p);
    p = nl ? (size_t)(nl - text) + 1 : len;
    nlines++;
  }
  int *last = calloc((size_t)n + 1, sizeof *last);  // per override: line after which it goes
  if (!last) rc = cs_error(CS_ERR_NOMEM, "out of memory applying --set overrides");
  char section[72] = "";
  int first_of_section = 0;  // this section's header is its first appearance
  int *replace = calloc((size_t)nlines + 1, sizeof *replace);  // line -> override + 1
  if (!rc && !replace) rc = cs_error(CS_ERR_NOMEM, "out of memory applying --set overrides");
  size_t p = 0;
  for (int line = 1; !rc && line <= nlines; line++) {
    const char *s = text + p, *nl = memchr(s, '\n', len - p);
    size_t m = nl ? (size_t)(nl - s) : len - p;
    p += m + (nl ? 1 : 0);
    const char *b, *e;
    spec_line_content(s, m, line == 1, &b, &e);
    if (b == e) continue;
    const char *close = *b == '[' ? memchr(b, ']', (size_t)(e - b)) : NULL;
    if (close) {
      snprintf(section, sizeof section, "%.*s", (int)(close - b - 1), b + 1);
      first_of_section = 1;
      // a section seen before keeps its first appearance's place
      for (int j = 0; j < n; j++)
        if (!strcmp(ov[j].section, section) && last[j]) first_of_section = 0;
    }
    if (!first_of_section) continue;
    const char *kb, *ke;
    int is_key = !close && line_key(b, e, &kb, &ke);
    for (int j = 0; j < n; j++) {
      if (strcmp(ov[j].section, section) != 0) continue;
      last[j] = line;
      if (is_key && !placed[j] && !replace[line] && name_is(kb, ke, ov[j].key)) {
        placed[j] = 1;
        replace[line] = j + 1;
      }
    }
  }
  // pass 2: the text with replaced lines, and new keys after their
  // section's last line
  p = 0;
  for (int line = 1; !rc && line <= nlines; line++) {
    const char *s = text + p, *nl = memchr(s, '\n', len - p);
    size_t m = nl ? (size_t)(nl - s) : len - p;
    p += m + (nl ? 1 : 0);
    if (replace[line]) {
      const char *b, *e;
      spec_line_content(s, m, line == 1, &b, &e);
      char was[208];
      snprintf(was, sizeof was, "%.*s", (int)(e - b < 200 ? e - b : 200), b);
      rc = out_override(&o, ov, replace[line] - 1, was);
    } else {
      rc = out_line(&o, line, s, m, NULL);
    }
    for (int j = 0; !rc && j < n; j++)
      if (!placed[j] && last[j] == line) {
        placed[j] = 2;
        rc = out_override(&o, ov, j, NULL);
      }
  }
  // sections the file lacks, in the order the overrides name them
  for (int j = 0; !rc && j < n; j++) {
    if (placed[j]) continue;
    char head[96];
    int hn = snprintf(head, sizeof head, "[%s]", ov[j].section);
    rc = out_line(&o, -(j + 1), head, (size_t)hn, NULL);
    for (int k = j; !rc && k < n; k++)
      if (!placed[k] && !strcmp(ov[k].section, ov[j].section)) {
        placed[k] = 2;
        rc = out_override(&o, ov, k, NULL);
      }
  }
  // the record of what was given
  const char *note = "; curvsweep --set overrides, applied above (docs/SPEC.md, \"Overrides\"):";
  if (!rc) rc = out_line(&o, 0, note, strlen(note), NULL);
  for (int j = 0; !rc && j < n; j++) {
    char *line = NULL;
    int ln = asprintf(&line, ";   --set %s.%s=%s", ov[j].section, ov[j].key, ov[j].value);
    rc = ln < 0 ? cs_error(CS_ERR_NOMEM, "out of memory applying --set overrides")
                : out_line(&o, 0, line, (size_t)ln, NULL);
    free(line);
  }
  free(placed), free(last), free(replace);
  if (rc) free(o.buf), free(o.origin), o = (out_text){0};
  *out = o.buf, *out_len = o.len, *origin = o.origin, *lines = o.lines;
  return rc;
}

/* spec_load_bytes of the text with opt's overrides applied and its errors
 * collected (opt may be NULL). */
static int spec_load_overridden(const char *text, size_t len, const char *source,
                                const spec_load_options *opt, cs_spec **out) {
  spec_parse_extras x = {opt ? opt->on_error : NULL, opt ? opt->ctx : NULL, NULL, 0, NULL,
                         opt ? opt->cell_memory : NULL};
  int n = opt ? opt->nsets : 0;
  if (n <= 0) return spec_load_bytes(text, len, source, &x, out);
  spec_override *ov = calloc((size_t)n, sizeof *ov);
  if (!ov) return cs_error(CS_ERR_NOMEM, "out of memory for %d --set overrides", n);
  // a malformed override is an error of its own; when errors are collected
  // the others are still applied and checked
  int kept = 0, first = CS_OK, rc = CS_OK;
  for (int j = 0; j < n && !rc; j++) {
    int orc = spec_override_split(opt->sets[j], &ov[kept]);
    if (orc == CS_OK) {
      kept++;
      continue;
    }
    if (!first) first = orc;
    if (x.on_error) x.on_error(x.ctx, cs_error_message());
    else rc = orc;
  }
  char *t = NULL;
  size_t tlen = 0;
  int *origin = NULL, lines = 0;
  if (!rc) rc = spec_override_apply(text, len, ov, kept, &t, &tlen, &origin, &lines);
  if (!rc) {
    x.origin = origin, x.norigin = lines, x.overrides = ov;
    rc = spec_load_bytes(t, tlen, source, &x, out);
  }
  free(t), free(origin), free(ov);
  if (!rc && first) {
    // only malformed overrides: the rest of the spec is fine, the load not
    spec_free(*out);
    *out = NULL;
    rc = first;
  }
  return rc;
}

/* A spec file, with or without options (spec_read_file in spec.c reads it). */
int spec_load_file(const char *path, cs_spec **out) { return spec_load_file_opts(path, NULL, out); }

int spec_load_file_opts(const char *path, const spec_load_options *opt, cs_spec **out) {
  if (!out) return cs_error(CS_ERR_INTERNAL, "spec_load_file: out is NULL");
  *out = NULL;
  char *text;
  size_t len;
  CS_CHECK(spec_read_file(path, &text, &len));
  int rc = spec_load_overridden(text, len, path, opt, out);
  free(text);
  return rc;
}

/* A spec in a string (source names it in messages; NULL: "<string>"), with
 * or without options. */
int spec_load_string(const char *text, const char *source, cs_spec **out) {
  return spec_load_string_opts(text, source, NULL, out);
}

int spec_load_string_opts(const char *text, const char *source, const spec_load_options *opt,
                          cs_spec **out) {
  if (!out) return cs_error(CS_ERR_INTERNAL, "spec_load_string: out is NULL");
  *out = NULL;
  if (!text) return cs_error(CS_ERR_INTERNAL, "spec_load_string: text is NULL");
  return spec_load_overridden(text, strlen(text), source ? source : "<string>", opt, out);
}
