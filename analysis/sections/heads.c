/* heads.c — does gating break the low-rank value→output map?
 * (analysis/VERDICTS.md, "Head dimension"). Qiu et al. argue that the gate's
 * non-linearity breaks the low-rank map from values to outputs, which
 * matters most when a head's dimension d/H is small. With a `heads` axis
 * at fixed width: per (gated arch, gate, task, depth, regime without heads)
 * and head count H, the gated − ungated differences of gap.csv (paired by
 * seed: accuracy, ECE) against the head dimension d/H, as a table
 * (heads.csv and index.md). Descriptive: no verdict. */
#include "heads.h"

#include "compute.h"
#include "output.h"

#include "curvsweep/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The gap entries of gated archs, ordered by (arch, gate, task, depth,
 * base regime, heads). */
typedef struct {
  const analysis_data *D;
  const analysis_gap *g;
  char base[ANALYSIS_NAME_LEN];
} analysis_heads_row;

static int analysis_heads_cmp(const void *pa, const void *pb) {
  const analysis_heads_row *a = pa, *b = pb;
  const cs_config *ca = &a->D->regime[a->g->regime].cfg, *cb = &b->D->regime[b->g->regime].cfg;
  if (a->g->arch != b->g->arch) return a->g->arch - b->g->arch;
  if (ca->gate != cb->gate) return (int)ca->gate - (int)cb->gate;
  if (a->g->task != b->g->task) return a->g->task - b->g->task;
  if (a->g->depth != b->g->depth) return a->g->depth - b->g->depth;
  int c = strcmp(a->base, b->base);
  return c ? c : ca->heads - cb->heads;
}

/* The rows (malloc'ed, *n of them) when the spec has a heads axis; NULL otherwise. */
static int analysis_heads_rows(const analysis_data *D, analysis_heads_row **out, int *n) {
  *out = NULL, *n = 0;
  int ax = spec_find_axis(D->spec, "heads");
  if (ax < 0 || D->n_gap == 0) return CS_OK;
  analysis_heads_row *R;
  CS_CHECK(CS_CALLOC(R, D->n_gap));
  for (int i = 0; i < D->n_gap; i++) {
    const analysis_gap *g = &D->gap[i];
    if (!config_arch_gated(D->arch[g->arch])) continue;
    analysis_heads_row *r = &R[(*n)++];
    r->D = D, r->g = g;
    char tag[ANALYSIS_NAME_LEN];
    analysis_regime_base(D, g->regime, ax, r->base, sizeof r->base, tag, sizeof tag);
  }
  qsort(R, (size_t)*n, sizeof *R, analysis_heads_cmp);
  *out = R;
  return CS_OK;
}

static const char *analysis_heads_gate(const analysis_data *D, const analysis_gap *g) {
  const cs_config *c = &D->regime[g->regime].cfg;
  return config_family_info(c->family)->gate_positions ? config_gate_name(c->gate) : "-";
}

int analysis_heads_write_tables(const analysis_data *D, const analysis_outdir *dir) {
  analysis_heads_row *R;
  int n;
  CS_CHECK(analysis_heads_rows(D, &R, &n));
  if (n == 0) {
    free(R);
    return CS_OK;
  }
  analysis_file o;
  int rc = analysis_file_open(&o, dir, "heads.csv");
  if (rc) {
    free(R);
    return rc;
  }
  fprintf(o.f, "arch,gate,task,depth,regime,heads,head_dim,n_pairs,dacc_mean,dacc_ci_low,dacc_ci_high,"
               "dece_mean,dece_ci_low,dece_ci_high\n");
  for (int i = 0; i < n; i++) {
    const analysis_gap *g = R[i].g;
    const cs_config *c = &D->regime[g->regime].cfg;
    fprintf(o.f, "%s,%s,%s,%d,%s,%d,%d,%d", config_arch_name(D->arch[g->arch]), analysis_heads_gate(D, g),
            config_task_name(D->task[g->task]), D->depth[g->depth], R[i].base, c->heads, c->width / c->heads,
            g->n_pairs);
    analysis_csv_ci(o.f, &g->d[MEASURE_ACC].ci);
    analysis_csv_ci(o.f, &g->d[MEASURE_TEST_ECE].ci);
    fprintf(o.f, "\n");
  }
  free(R);
  return analysis_file_commit(&o);
}

void analysis_heads_list_tables(FILE *f, const analysis_data *D) {
  if (spec_find_axis(D->spec, "heads") >= 0 && D->n_gap > 0)
    fprintf(f, "- [heads.csv](heads.csv): per (gated arch, gate, task, depth, regime, heads): the head "
               "dimension and the accuracy and ECE differences gated − ungated paired by seed\n");
}

int analysis_heads_write_md(FILE *f, const analysis_data *D) {
  analysis_heads_row *R;
  int n;
  CS_CHECK(analysis_heads_rows(D, &R, &n));
  if (n == 0) {
    free(R);
    return CS_OK;
  }
  fprintf(f, "## Does the gate's gain grow as the head dimension shrinks?\n\n"
             "Qiu et al. argue that the gate breaks the low-rank map from values to outputs, which binds "
             "when a head's dimension d/H is small. With the `heads` axis at fixed width: the gated − "
             "ungated difference in test accuracy and in ECE, paired by seed, per head count (means with "
             "95%% t intervals; [heads.csv](heads.csv)). Descriptive: read whether the accuracy gain "
             "grows as d/H shrinks; no verdict.\n\n"
             "| arch | gate | task | depth | regime | heads | head dim | pairs | accuracy gated − ungated | "
             "ECE gated − ungated |\n|---|---|---|---|---|---|---|---|---|---|\n");
  for (int i = 0; i < n; i++) {
    const analysis_gap *g = R[i].g;
    const cs_config *c = &D->regime[g->regime].cfg;
    char b[2][96], nm[2 * ANALYSIS_NAME_LEN];
    analysis_md_text(R[i].base, nm, sizeof nm);
    fprintf(f, "| %s | %s | %s | %d | %s | %d | %d | %d | %s | %s |\n", config_arch_name(D->arch[g->arch]),
            analysis_heads_gate(D, g), config_task_name(D->task[g->task]), D->depth[g->depth], nm, c->heads,
            c->width / c->heads, g->n_pairs, analysis_ci_text(b[0], 96, &g->d[MEASURE_ACC].ci),
            analysis_ci_text(b[1], 96, &g->d[MEASURE_TEST_ECE].ci));
  }
  fprintf(f, "\n");
  free(R);
  return CS_OK;
}

static const analysis_table_info HEADS_TABLES[] = {
    {"heads.csv", "a heads axis",
     "per (gated arch, gate, task, depth, regime, heads): head dimension, accuracy and ECE gated − ungated"},
    {NULL, NULL, NULL},
};

static const analysis_column_rule HEADS_COLUMNS[] = {
    {"heads.csv", "gate", "the gate position g1 … g5, `-` for a family that places no gate"},
    {"heads.csv", "regime", "the regime without its heads component"},
    {"heads.csv", "heads", "the head count H (the heads axis)"},
    {"heads.csv", "head_dim", "the head dimension width / H"},
    {"heads.csv", "n_pairs", "seeds with the gated and the ungated cell done"},
    {"heads.csv", "dacc_*", "test accuracy gated − ungated paired by seed" ANALYSIS_COLUMN_CI},
    {"heads.csv", "dece_*", "test ECE gated − ungated paired by seed" ANALYSIS_COLUMN_CI},
    {NULL, NULL, NULL},
};

const analysis_section_about analysis_heads_about = {(const analysis_claim_info[]){{NULL, NULL, NULL}},
                                                     HEADS_TABLES, HEADS_COLUMNS};
