/* spec_canon.c — the canonical resolved spec (docs/SPEC.md, "Identity"): a
 * text of every key with its resolved value in a fixed order and spelling,
 * whose SHA-256 is an archive's identity; the comparison of two specs key by
 * key (same, grows: every value of the old spec is a value of the new one,
 * or differs, naming the keys); the map of one spec's cells onto another's
 * by their resolved config; and the union of two specs' grids (merge).
 *
 * A key's values: the values of its [grid] axis in the order written, or its
 * one fixed value (the default when the spec does not name it). An axis of
 * one value is the same key as that fixed value (same cells, same config). */
#include "spec_internal.h"

#include "curvsweep/error.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The first line of every canonical text: bumped when its grammar changes. */
#define CANON_HEADER "# curvsweep canonical spec 1 (docs/SPEC.md, \"Identity\")\n"

/* Keys that are not part of a sweep's identity (docs/SPEC.md, "Identity"):
 * where the archive goes (-o overrides it) and how often a failed cell is
 * retried (every resume runs failed cells again). */
static int canon_excluded(int key) { return key == K_OUTPUT || key == K_MAX_RETRIES; }

/* ------------------------------------------------------------------------ */
/* One key's values                                                           */

typedef struct {
  int64_t n;        /* values */
  key_value *v;     /* in order (owned) */
  int axis;         /* written as a [grid] axis (of any length) */
} canon_key;

/* A spec's keys as value lists; string keys come from sweep. */
typedef struct {
  canon_key k[K_COUNT];
  int order[K_COUNT];  /* keys of the axes, in [grid] order */
  int n_order;
  const cs_sweep_settings *sweep;
} canon_spec;

/* The value of a fixed key in the base config or sweep settings (the
 * inverse of spec_apply_value; team grid: i = P, r = Q). */
static key_value canon_fixed_value(const cs_config *c, const cs_sweep_settings *sw, int key) {
  key_value v = {0, 0.0};
  switch (key) {
    case K_SAVE_PARAMS: v.i = sw->save_params; break;
    case K_SAVE_POINTS: v.i = sw->save_points; break;
    case K_MAX_RETRIES: v.i = sw->max_retries; break;
    case K_ARCH: v.i = c->arch; break;
    case K_DEPTH: v.i = c->depth; break;
    case K_TASK: v.i = c->task; break;
    case K_SEED: v.i = c->seed; break;
    case K_INPUT_DIM: v.i = c->input_dim; break;
    case K_TRAIN_POINTS: v.i = c->train_points; break;
    case K_TEST_POINTS: v.i = c->test_points; break;
    case K_LABEL_NOISE: v.r = c->label_noise; break;
    case K_VOCAB: v.i = c->vocab; break;
    case K_SEQ_LEN: v.i = c->seq_len; break;
    case K_FAMILY: v.i = c->family; break;
    case K_GATE: v.i = c->gate; break;
    case K_WIDTH: v.i = c->width; break;
    case K_SLOTS: v.i = c->slots; break;
    case K_HEADS: v.i = c->heads; break;
    case K_RESIDUAL: v.i = c->residual; break;
    case K_NORM: v.i = c->norm; break;
    case K_MLP_RATIO: v.i = c->mlp_ratio; break;
    case K_EPOCHS: v.i = c->epochs; break;
    case K_BATCH: v.i = c->batch; break;
    case K_LR: v.r = c->lr; break;
    case K_SCHEDULE: v.i = c->schedule; break;
    case K_WEIGHT_DECAY: v.r = c->weight_decay; break;
    case K_EVAL_EVERY: v.i = c->eval_every; break;
    case K_POINTS: v.i = c->points; break;
    case K_SIGMA: v.r = c->sigma; break;
    case K_EXACT_DIM_MAX: v.i = c->exact_dim_max; break;
    case K_FIELD: v.i = c->field; break;
    case K_TEAM_GRID: v.i = c->team_p, v.r = c->team_q; break;
    case K_TEAM_BLOCK: v.i = c->team_block; break;
    default: break;  /* name, output: strings, compared as such */
  }
  return v;
}

static void canon_spec_free(canon_spec *c) {
  for (int k = 0; k < K_COUNT; k++) free(c->k[k].v);
  memset(c, 0, sizeof *c);
}

static int canon_spec_of(const cs_spec *spec, canon_spec *c) {
  memset(c, 0, sizeof *c);
  c->sweep = &spec->sweep;
  for (int a = 0; a < spec->naxes; a++) {
    const spec_axis *ax = &spec->axes[a];
    canon_key *k = &c->k[ax->key];
    CS_CHECK(CS_CALLOC(k->v, ax->length));
    k->n = ax->length, k->axis = 1;
    for (int64_t i = 0; i < ax->length; i++) {
      if (ax->rvals) k->v[i].r = ax->rvals[i];
      else k->v[i].i = ax->ivals[i];
    }
    c->order[c->n_order++] = ax->key;
  }
  for (int key = 0; key < K_COUNT; key++) {
    if (c->k[key].v) continue;
    CS_CHECK(CS_CALLOC(c->k[key].v, 1));
    c->k[key].n = 1;
    c->k[key].v[0] = canon_fixed_value(&spec->base, &spec->sweep, key);
  }
  return CS_OK;
}

/* ------------------------------------------------------------------------ */
/* Sets: a key's values sorted, for membership                                */

typedef struct {
  int key;
  key_value v;
  int64_t pos;
} canon_entry;

static int canon_cmp(const void *pa, const void *pb) {
  const canon_entry *a = pa, *b = pb;
  int real = SPEC_KEYS[a->key].kind == KIND_REAL, team = SPEC_KEYS[a->key].kind == KIND_TEAM;
  if (real && a->v.r != b->v.r) return a->v.r < b->v.r ? -1 : 1;
  if (!real && a->v.i != b->v.i) return a->v.i < b->v.i ? -1 : 1;
  if (team && a->v.r != b->v.r) return a->v.r < b->v.r ? -1 : 1;
  return 0;
}

typedef struct {
  canon_entry *e;
  int64_t n;
} canon_set;

static int canon_set_of(int key, const canon_key *k, canon_set *s) {
  s->n = k->n;
  CS_CHECK(CS_CALLOC(s->e, k->n ? k->n : 1));
  for (int64_t i = 0; i < k->n; i++) s->e[i] = (canon_entry){key, k->v[i], i};
  qsort(s->e, (size_t)k->n, sizeof *s->e, canon_cmp);
  return CS_OK;
}

/* Position of v in the set's key (as written), -1 when absent. */
static int64_t canon_set_find(const canon_set *s, int key, key_value v) {
  canon_entry want = {key, v, 0};
  const canon_entry *hit = bsearch(&want, s->e, (size_t)s->n, sizeof *s->e, canon_cmp);
  return hit ? hit->pos : -1;
}

/* ------------------------------------------------------------------------ */
/* Text                                                                       */

typedef struct {
  char *s;
  size_t len, cap;
  int rc;
} canon_buf;

__attribute__((format(printf, 2, 3)))
static void canon_put(canon_buf *b, const char *fmt, ...) {
  if (b->rc) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
      b->rc = cs_error(CS_ERR_INTERNAL, "canonical spec: formatting failed");
      return;
    }
    if (b->s && b->len + (size_t)n < b->cap) {
      b->len += (size_t)n;
      return;
    }
    size_t cap = b->cap ? b->cap : 1024;
    while (cap <= b->len + (size_t)n) cap *= 2;
    char *p = realloc(b->s, cap);
    if (!p) {
      b->rc = cs_error(CS_ERR_NOMEM, "out of memory writing the canonical spec");
      return;
    }
    b->s = p, b->cap = cap;
  }
}

/* One value of key, canonically spelled: integers in decimal, reals the
 * shortest %.Ng that reads back as the same double, enums by name, the team
 * grid as PxQ. */
static void canon_put_value(canon_buf *b, int key, key_value v) {
  const key_desc *k = &SPEC_KEYS[key];
  spec_axis one = {.key = key, .length = 1, .ivals = &v.i, .rvals = &v.r};
  char text[64];
  switch (k->kind) {
    case KIND_TEAM: canon_put(b, "%" PRId64 "x%.0f", v.i, v.r); break;
    case KIND_INT: canon_put(b, "%" PRId64, v.i); break;
    default:
      if (k->kind != KIND_REAL) one.rvals = NULL;
      spec_axis_value_format(&one, 0, text, sizeof text);
      canon_put(b, "%s", text);
  }
}

/* A key's values: a comma list in order, integers ascending by one written
 * as ranges a..b. */
static void canon_put_values(canon_buf *b, int key, const canon_key *k) {
  for (int64_t i = 0; i < k->n; i++) {
    if (i) canon_put(b, ", ");
    int64_t j = i;
    if (SPEC_KEYS[key].kind == KIND_INT)
      while (j + 1 < k->n && k->v[j].i < INT64_MAX && k->v[j + 1].i == k->v[j].i + 1) j++;
    canon_put_value(b, key, k->v[i]);
    if (j > i) {
      canon_put(b, "..");
      canon_put_value(b, key, k->v[j]);
      i = j;
    }
  }
}

static void canon_put_key(canon_buf *b, const canon_spec *c, int key) {
  canon_put(b, "%s = ", SPEC_KEYS[key].name);
  if (key == K_NAME) canon_put(b, "%s", c->sweep->name);
  else if (key == K_OUTPUT) canon_put(b, "%s", c->sweep->output);
  else canon_put_values(b, key, &c->k[key]);
  canon_put(b, "\n");
}

/* The text: [sweep]; [grid] with the axes of two or more values in [grid]
 * order (the order numbers the cells), then the keys that exist only as axes
 * (arch, depth, task, seed) with one value; then every other section's keys
 * in the key table's order. all: also the keys outside the identity. */
static int canon_text(const canon_spec *c, int all, char **out) {
  canon_buf b = {0};
  canon_put(&b, CANON_HEADER);
  for (int sec = 0; sec < SEC_COUNT; sec++) {
    canon_put(&b, "[%s]\n", SPEC_SECTION_NAMES[sec]);
    if (sec == SEC_GRID) {
      for (int i = 0; i < c->n_order; i++)
        if (c->k[c->order[i]].n > 1) canon_put_key(&b, c, c->order[i]);
      for (int key = 0; key < K_COUNT; key++)
        if (SPEC_KEYS[key].section == SEC_GRID && c->k[key].n == 1) canon_put_key(&b, c, key);
      continue;
    }
    for (int key = 0; key < K_COUNT; key++)
      if (SPEC_KEYS[key].section == sec && c->k[key].n == 1 && (all || !canon_excluded(key)))
        canon_put_key(&b, c, key);
  }
  if (b.rc) free(b.s), b.s = NULL;
  *out = b.s;
  return b.rc;
}

int spec_canon_compute(cs_spec *spec) {
  canon_spec c;
  int rc = canon_spec_of(spec, &c);
  if (!rc) rc = canon_text(&c, 0, &spec->canon_text);
  canon_spec_free(&c);
  if (!rc) spec_sha256_hex(spec->canon_text, strlen(spec->canon_text), spec->canon_sha256);
  return rc;
}

const char *spec_canonical_text(const cs_spec *spec) { return spec->canon_text; }
const char *spec_canonical_sha256(const cs_spec *spec) { return spec->canon_sha256; }

/* ------------------------------------------------------------------------ */
/* Comparison                                                                 */

/* The values of a key as spec c holds it, as text. */
static int canon_describe(const canon_spec *c, int key, char **text) {
  canon_buf b = {0};
  if (key == K_NAME) canon_put(&b, "%s", c->sweep->name);
  else canon_put_values(&b, key, &c->k[key]);
  if (b.rc) free(b.s), b.s = NULL;
  *text = b.s;
  return b.rc;
}

static int canon_report(const canon_spec *o, const canon_spec *n, int key, int grows,
                        spec_diff_fn fn, void *ctx) {
  if (!fn) return CS_OK;
  char *ot = NULL, *nt = NULL;
  int rc = canon_describe(o, key, &ot);
  if (!rc) rc = canon_describe(n, key, &nt);
  int os = o->k[key].axis ? SEC_GRID : SPEC_KEYS[key].section;
  int ns = n->k[key].axis ? SEC_GRID : SPEC_KEYS[key].section;
  if (!rc) fn(SPEC_KEYS[key].name, SPEC_SECTION_NAMES[os], ot, SPEC_SECTION_NAMES[ns], nt, grows, ctx);
  free(ot), free(nt);
  return rc;
}

/* Every value of key in o is one in n (*subset), and the two sets are equal
 * (*same). */
static int canon_key_subset(const canon_spec *o, const canon_spec *n, int key, int *subset,
                            int *same) {
  if (key == K_NAME) {
    *subset = *same = !strcmp(o->sweep->name, n->sweep->name);
    return CS_OK;
  }
  canon_set s;
  CS_CHECK(canon_set_of(key, &n->k[key], &s));
  *subset = 1;
  for (int64_t i = 0; i < o->k[key].n && *subset; i++)
    *subset = canon_set_find(&s, key, o->k[key].v[i]) >= 0;
  free(s.e);
  *same = *subset && o->k[key].n == n->k[key].n;
  return CS_OK;
}

int spec_compare(const cs_spec *old_spec, const cs_spec *new_spec, spec_diff_fn fn, void *ctx,
                 cs_spec_relation *rel) {
  *rel = SPEC_DIFFERS;
  if (!strcmp(old_spec->canon_sha256, new_spec->canon_sha256)) {
    *rel = SPEC_SAME;
    return CS_OK;
  }
  canon_spec o, n;
  int rc = canon_spec_of(old_spec, &o);
  if (!rc) rc = canon_spec_of(new_spec, &n);
  else memset(&n, 0, sizeof n);
  int all_subset = 1;
  // the refused keys first, then (with grows set) the keys that grow
  for (int pass = 0; pass < 2 && !rc; pass++)
    for (int key = 0; key < K_COUNT && !rc; key++) {
      if (canon_excluded(key)) continue;
      int subset = 0, same = 0;
      rc = canon_key_subset(&o, &n, key, &subset, &same);
      if (rc || same) continue;
      if (pass == 0 && !subset) all_subset = 0, rc = canon_report(&o, &n, key, 0, fn, ctx);
      if (pass == 1 && subset) rc = canon_report(&o, &n, key, 1, fn, ctx);
    }
  canon_spec_free(&o), canon_spec_free(&n);
  CS_CHECK(rc);
  *rel = all_subset ? SPEC_GROWS : SPEC_DIFFERS;
  return CS_OK;
}

/* ------------------------------------------------------------------------ */
/* The map of one spec's cells onto another's                                 */

struct spec_cell_map {
  const cs_spec *from, *to;
  int64_t base;        /* to's cell id of from's cell 0 less the axes' parts */
  int64_t *part[K_COUNT]; /* per axis a of from: to's id part of each value */
};

void spec_map_free(spec_cell_map *m) {
  if (!m) return;
  for (int a = 0; a < K_COUNT; a++) free(m->part[a]);
  free(m);
}

/* Axis of key in spec, -1 when none. */
static int canon_axis_of(const cs_spec *spec, int key) {
  for (int a = 0; a < spec->naxes; a++)
    if (spec->axes[a].key == key) return a;
  return -1;
}

static int canon_map_build(spec_cell_map *m, const canon_spec *f, const canon_spec *t) {
  const cs_spec *to = m->to, *from = m->from;
  for (int key = 0; key < K_COUNT; key++) {
    if (key == K_NAME || key == K_OUTPUT) continue;
    int ta = canon_axis_of(to, key), fa = canon_axis_of(from, key);
    canon_set s;
    CS_CHECK(canon_set_of(key, &t->k[key], &s));
    int rc = fa >= 0 ? CS_CALLOC(m->part[fa], f->k[key].n) : CS_OK;
    for (int64_t i = 0; !rc && i < f->k[key].n; i++) {
      int64_t pos = canon_set_find(&s, key, f->k[key].v[i]);
      if (pos < 0 && !canon_excluded(key)) {
        rc = cs_error(CS_ERR_INPUT, "%s: [%s] %s has a value %s does not have: its cells are not "
                      "all cells of %s", from->source, SPEC_SECTION_NAMES[SPEC_KEYS[key].section],
                      SPEC_KEYS[key].name, to->source, to->source);
        break;
      }
      int64_t at = pos >= 0 && ta >= 0 ? pos * to->stride[ta] : 0;
      if (fa >= 0) m->part[fa][i] = at;
      else m->base += at;
    }
    free(s.e);
    CS_CHECK(rc);
  }
  return CS_OK;
}

int spec_map_begin(const cs_spec *from, const cs_spec *to, spec_cell_map **out) {
  *out = NULL;
  spec_cell_map *m;
  CS_CHECK(CS_CALLOC(m, 1));
  m->from = from, m->to = to;
  canon_spec f, t;
  int rc = canon_spec_of(from, &f);
  if (!rc) rc = canon_spec_of(to, &t);
  else memset(&t, 0, sizeof t);
  if (!rc) rc = canon_map_build(m, &f, &t);
  canon_spec_free(&f), canon_spec_free(&t);
  if (rc) spec_map_free(m);
  else *out = m;
  return rc;
}

int64_t spec_map_cell(const spec_cell_map *m, int64_t id) {
  if (id < 0 || id >= m->from->ncells) return -1;
  int64_t to_id = m->base;
  for (int a = 0; a < m->from->naxes; a++)
    to_id += m->part[a][(id / m->from->stride[a]) % m->from->axes[a].length];
  return to_id;
}

/* ------------------------------------------------------------------------ */
/* The union of two grids (merge)                                             */

/* Key key of u: a's values, then b's values a does not have. */
static int canon_union_key(canon_spec *u, const canon_spec *a, const canon_spec *b, int key) {
  canon_set s;
  CS_CHECK(canon_set_of(key, &a->k[key], &s));
  canon_key *k = &u->k[key];
  int rc = CS_CALLOC(k->v, a->k[key].n + b->k[key].n);
  if (!rc) {
    memcpy(k->v, a->k[key].v, (size_t)a->k[key].n * sizeof *k->v);
    k->n = a->k[key].n;
    for (int64_t i = 0; i < b->k[key].n; i++)
      if (canon_set_find(&s, key, b->k[key].v[i]) < 0) k->v[k->n++] = b->k[key].v[i];
  }
  free(s.e);
  return rc;
}

/* The refusal of a merge of specs a and b (files sa, sb) that differ in
 * key outside [grid]: each side's values, at most 63 characters. */
static int canon_differs(const canon_spec *a, const canon_spec *b, int key, const char *sa,
                         const char *sb) {
  canon_buf x = {0}, y = {0};
  canon_put_values(&x, key, &a->k[key]);
  canon_put_values(&y, key, &b->k[key]);
  int rc = cs_error(CS_ERR_INPUT, "%s and %s were written by different specs ([%s] %s %.63s and "
                    "%.63s), not only in [grid] values: merge only parts of one sweep", sa, sb,
                    SPEC_SECTION_NAMES[SPEC_KEYS[key].section], SPEC_KEYS[key].name,
                    x.s ? x.s : "?", y.s ? y.s : "?");
  free(x.s), free(y.s);
  return rc;
}

static int canon_union(canon_spec *u, const canon_spec *a, const canon_spec *b, const char *sa,
                       const char *sb) {
  memset(u, 0, sizeof *u);
  u->sweep = a->sweep;
  if (strcmp(a->sweep->name, b->sweep->name))
    return cs_error(CS_ERR_INPUT, "%s and %s were written by different specs ([sweep] name %s "
                    "and %s): merge only parts of one sweep", sa, sb, a->sweep->name, b->sweep->name);
  for (int key = 0; key < K_COUNT; key++) {
    if (key == K_NAME || key == K_OUTPUT) {  // the first spec's
      CS_CHECK(canon_union_key(u, a, a, key));
      continue;
    }
    int grid = a->k[key].axis || b->k[key].axis || SPEC_KEYS[key].section == SEC_GRID;
    int subset = 0, same = 0;
    CS_CHECK(canon_key_subset(a, b, key, &subset, &same));
    if (!grid && !same && !canon_excluded(key)) return canon_differs(a, b, key, sa, sb);
    CS_CHECK(canon_union_key(u, a, b, key));
    u->k[key].axis = u->k[key].n > 1;
  }
  // axis order: a's, then b's axes a lacks, then keys that became axes
  for (int i = 0; i < a->n_order; i++) u->order[u->n_order++] = a->order[i];
  for (int i = 0; i < b->n_order; i++)
    if (!a->k[b->order[i]].axis) u->order[u->n_order++] = b->order[i];
  for (int key = 0; key < K_COUNT; key++)
    if (u->k[key].axis && !a->k[key].axis && !b->k[key].axis) u->order[u->n_order++] = key;
  return CS_OK;
}

int spec_union_text(const cs_spec *a, const cs_spec *b, char **text) {
  *text = NULL;
  canon_spec ca, cb, u;
  memset(&cb, 0, sizeof cb), memset(&u, 0, sizeof u);
  int rc = canon_spec_of(a, &ca);
  if (!rc) rc = canon_spec_of(b, &cb);
  if (!rc) rc = canon_union(&u, &ca, &cb, a->source, b->source);
  if (!rc) rc = canon_text(&u, 1, text);
  canon_spec_free(&ca), canon_spec_free(&cb), canon_spec_free(&u);
  return rc;
}
