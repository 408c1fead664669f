/* values.c — the lookups every part of the report reads (compute.h; a
 * cell's measure at a prefix is measures.c's): paired-difference
 * statistics, a regime's name without one axis, an arch's index, a
 * section's state slot. The lowest
 * file of analysis/ that reads the loaded table (docs/ARCHITECTURE.md,
 * "Layering"): the sections and the core both build on it. */
#include "compute.h"
#include "sections.h"

#include "curvsweep/error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Differences b − a of paired values: mean and t interval, signs, sign test, d_z. */
void analysis_diff_stats(const double *diff, int n, analysis_diff *out) {
  analysis_mean_ci(diff, n, ANALYSIS_LEVEL, &out->ci);
  out->n = out->ci.n;
  out->n_pos = out->n_neg = 0;
  for (int i = 0; i < n; i++) {
    if (!isfinite(diff[i])) continue;
    if (diff[i] > 0) out->n_pos++;
    if (diff[i] < 0) out->n_neg++;
  }
  out->sign_p = analysis_sign_test(out->n_pos, out->n_neg);
  analysis_dz(diff, n, ANALYSIS_LEVEL, &out->dz);
}

/* The base regime of regime r: its name without the component of axis skip
 * (train_points in learning.c, gate in gates.c and sinks.c). */
void analysis_regime_base(const analysis_data *D, int r, int skip, char *name, size_t len, char *tag,
                          size_t tlen) {
  size_t used = 0;
  int k_out = 0;
  name[0] = '\0';
  for (int k = 0; k < D->n_other; k++) {
    int ax = D->other_axis[k];
    if (ax == skip) continue;
    char val[128];
    spec_axis_value_text(D->spec, ax, D->regime[r].cell_id, val, sizeof val);
    int w = snprintf(name + used, len - used, "%s%s=%s", k_out++ ? ";" : "", spec_axis_name(D->spec, ax), val);
    if (w > 0) used += (size_t)w;
    if (used >= len) used = len - 1;
  }
  if (k_out == 0) snprintf(name, len, "all");
  size_t i = 0;
  for (const char *c = name; *c && i + 1 < tlen; c++) {
    char ch = *c;
    int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
             ch == '.' || ch == '-';
    tag[i++] = ok ? ch : '_';
  }
  tag[i] = '\0';
}

int analysis_find_arch(const analysis_data *D, cs_arch arch) {
  for (int a = 0; a < D->n_arch; a++)
    if (D->arch[a] == arch) return a;
  return -1;
}

void **analysis_section_state(analysis_data *D, const char *name) {
  for (int k = 0; k < ANALYSIS_MAX_SECTIONS; k++) {
    analysis_section_slot *s = &D->section_state[k];
    if (!s->name) s->name = name; /* the first call of a section claims a free slot */
    if (!strcmp(s->name, name)) return &s->state;
  }
  return NULL;
}

const void *analysis_section_get(const analysis_data *D, const char *name) {
  for (int k = 0; k < ANALYSIS_MAX_SECTIONS && D->section_state[k].name; k++)
    if (!strcmp(D->section_state[k].name, name)) return D->section_state[k].state;
  return NULL;
}

void analysis_gate_group_add(const analysis_data *D, int r, int ax_gate, analysis_gate_group *g, int *n) {
  char name[ANALYSIS_NAME_LEN], tag[ANALYSIS_NAME_LEN];
  analysis_regime_base(D, r, ax_gate, name, sizeof name, tag, sizeof tag);
  int b = 0;
  while (b < *n && strcmp(g[b].name, name) != 0) b++;
  analysis_gate_group *B = &g[b];
  if (b == *n) {
    (*n)++;
    snprintf(B->name, sizeof B->name, "%s", name);
    snprintf(B->tag, sizeof B->tag, "%s", tag);
    B->cell_id = D->regime[r].cell_id;
    B->family = D->regime[r].cfg.family;
  }
  cs_gate_pos p = D->regime[r].cfg.gate;
  int k = B->n_pos;
  while (k > 0 && B->gate[k - 1] > p) {
    B->gate[k] = B->gate[k - 1], B->regime[k] = B->regime[k - 1];
    k--;
  }
  B->gate[k] = p, B->regime[k] = r;
  B->n_pos++;
}

int analysis_with_seed_scratch(analysis_data *D, int (*run)(analysis_data *D, double *v)) {
  double *v;
  CS_CHECK(CS_CALLOC(v, D->n_seed > 0 ? D->n_seed : 1));
  int rc = run(D, v);
  free(v);
  return rc;
}
