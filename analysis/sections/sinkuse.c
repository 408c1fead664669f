/* sinkuse.c — what does a sink do? (analysis/VERDICTS.md, "What a sink does").
 * For the lm family's rows of the attention-sink section (sinks.c, whose
 * state this reads: per (task, depth, base regime, arch, gate) and block,
 * over seeds), the change in test loss when the block's first-token
 * attention is removed and when its attention output is removed
 * (docs/MODELS.md, "What a sink does"; /curvature ablate_first,
 * ablate_attn), beside the first-token share and the gate value, and a
 * reading of each block: a no-op sink, a used sink, a dormant block, a
 * block that works without a sink, or undetermined. Descriptive: no
 * verdict. Its part of index.md only (the numbers are columns of
 * sinks.csv). */
#include "sinkuse.h"

#include "output.h"
#include "sinks.h"

#include "curvsweep/error.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef enum {
  USE_NOOP = 0,   /* a sink whose first-token attention costs nothing to remove */
  USE_USED,       /* a sink whose first-token attention costs loss to remove */
  USE_DORMANT,    /* no sink, and the attention output costs nothing to remove */
  USE_WORKS,      /* no sink, and the attention output costs loss to remove */
  USE_UNDECIDED,
  USE_COUNT
} analysis_use_reading;

static const char *const USE_TEXT[USE_COUNT] = {"no-op sink", "sink in use", "dormant block",
                                                "works without a sink", "undetermined"};

/* A change in loss costs nothing (-1: the interval's upper end below
 * ANALYSIS_USE_EPS), costs loss (1: its lower end above), or neither (0);
 * with one seed the mean decides. */
static int analysis_use_cost(const analysis_ci *c) {
  double lo = c->n >= 2 ? c->lo : c->mean, hi = c->n >= 2 ? c->hi : c->mean;
  if (!isfinite(c->mean)) return 0;
  return hi < ANALYSIS_USE_EPS ? -1 : lo > ANALYSIS_USE_EPS ? 1 : 0;
}

static analysis_use_reading analysis_use_read(const analysis_sink_row *R, int l) {
  const analysis_ci *share = &R->q[analysis_sink_q(l, MEASURE_SINK_MASS)];
  const analysis_ci *first = &R->q[analysis_sink_q(l, MEASURE_ABLATE_FIRST)];
  const analysis_ci *attn = &R->q[analysis_sink_q(l, MEASURE_ABLATE_ATTN)];
  if (!isfinite(share->mean) || !isfinite(first->mean) || !isfinite(attn->mean)) return USE_UNDECIDED;
  if (share->mean >= ANALYSIS_USE_SINK) {
    int c = analysis_use_cost(first);
    return c < 0 ? USE_NOOP : c > 0 ? USE_USED : USE_UNDECIDED;
  }
  int c = analysis_use_cost(attn);
  return c < 0 ? USE_DORMANT : c > 0 ? USE_WORKS : USE_UNDECIDED;
}

/* The blocks with both deltas measured (any seed). */
static int analysis_use_measured(const analysis_sinks *S) {
  int n = 0;
  for (int i = 0; i < S->n_row; i++)
    for (int l = 0; l < S->row[i].L; l++)
      n += S->row[i].q[analysis_sink_q(l, MEASURE_ABLATE_ATTN)].n > 0;
  return n;
}

static void analysis_use_table(FILE *f, const analysis_data *D, const analysis_sinks *S, int counts[2][USE_COUNT]) {
  fprintf(f, "| task | depth | regime | arch | gate | block | seeds | first-token share | gate value t ≥ 1 | "
             "Δloss without first-token attention | Δloss without attention output | reading |\n"
             "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (int i = 0; i < S->n_row; i++) {
    const analysis_sink_row *R = &S->row[i];
    const analysis_sink_unit *U = &S->unit[R->unit];
    const analysis_sink_base *B = &S->base[U->base];
    char nm[2 * ANALYSIS_NAME_LEN];
    analysis_md_text(B->name, nm, sizeof nm);
    for (int l = 0; l < R->L; l++) {
      char b[4][96];
      analysis_use_reading u = analysis_use_read(R, l);
      int g1 = R->pos >= 0 && B->gate[R->pos] == GATE_G1;
      if (R->pos < 0) counts[0][u]++;
      if (g1) counts[1][u]++;
      fprintf(f, "| %s | %d | %s | %s | %s | %d | %d | %s | %s | %s | %s | %s |\n", config_task_name(D->task[U->t]),
              D->depth[U->d], nm, config_arch_name(D->arch[R->a]), R->pos < 0 ? "–" : config_gate_name(B->gate[R->pos]),
              l + 1, R->n_seeds, analysis_ci_text(b[0], 96, &R->q[analysis_sink_q(l, MEASURE_SINK_MASS)]),
              R->pos < 0 || !R->gate || R->n_gate == 0 ? "–" : analysis_ci_text(b[1], 96, &R->gate[2 * l]),
              analysis_ci_text(b[2], 96, &R->q[analysis_sink_q(l, MEASURE_ABLATE_FIRST)]),
              analysis_ci_text(b[3], 96, &R->q[analysis_sink_q(l, MEASURE_ABLATE_ATTN)]), USE_TEXT[u]);
    }
  }
  fprintf(f, "\n");
}

/* "3 no-op sinks, 1 sink in use" over the readings counted. */
static void analysis_use_counts(FILE *f, const int *c) {
  const char *sep = "";
  int any = 0;
  for (int u = 0; u < USE_COUNT; u++)
    if (c[u]) fprintf(f, "%s%d %s", sep, c[u], USE_TEXT[u]), sep = ", ", any = 1;
  if (!any) fprintf(f, "no block");
}

int analysis_sinkuse_write_md(FILE *f, const analysis_data *D) {
  const analysis_sinks *S = analysis_section_get(D, ANALYSIS_SINKS_NAME);
  if (!S) return CS_OK;
  fprintf(f, "## What does a sink do?\n\n");
  if (analysis_use_measured(S) == 0) {
    fprintf(f, "The archives store no ablations: the lm cells have no ablate_first and ablate_attn "
               "(format_version 5 or older, or merged from one; docs/ARCHIVE.md, \"Versions\"), so the "
               "first-token shares above cannot be read as a no-op sink or a dormant block.\n\n");
    return CS_OK;
  }
  fprintf(f, "Per block of the lm cells (docs/MODELS.md, \"What a sink does\"): the change in test loss "
             "(nats, over the test split's scored targets) when the block's first-token attention is "
             "removed (every query t ≥ 1 renormalised over its other keys) and when its attention output "
             "is removed, each block alone, beside its first-token share and gate value (means over seeds "
             "with 95%% t intervals; every interval and the differences from ungated in "
             "[sinks.csv](sinks.csv), columns ablfirst and ablattn). Reading (a change costs nothing when "
             "its interval lies below %g nats, costs loss when it lies above; one seed: its value): a "
             "block with a sink (share ≥ %g) is a **no-op sink** when removing the first-token attention "
             "costs nothing and a **sink in use** when it costs loss; a block without a sink is "
             "**dormant** when removing its whole attention output costs nothing (its gate closed: the "
             "missing sink says nothing about the gate) and **works without a sink** when that costs "
             "loss; otherwise undetermined.\n\n",
          ANALYSIS_USE_EPS, ANALYSIS_USE_SINK);
  int counts[2][USE_COUNT] = {{0}};
  analysis_use_table(f, D, S, counts);
  fprintf(f, "- Ungated blocks: ");
  analysis_use_counts(f, counts[0]);
  fprintf(f, ".\n- G1 blocks (gated and gated-headwise): ");
  analysis_use_counts(f, counts[1]);
  fprintf(f, ".\n");
  int g1 = 0;
  for (int u = 0; u < USE_COUNT; u++) g1 += counts[1][u];
  int works = counts[1][USE_WORKS], dormant = counts[1][USE_DORMANT];
  if (g1 && works + dormant == 0)
    fprintf(f, "- No G1 block without a sink reads either way: nothing here separates \"the gate removed "
               "the sink\" from \"the block went dormant\".\n");
  else if (g1)
    fprintf(f, "- Where G1 leaves no sink, the data read as %s.\n",
            works > dormant ? "blocks that work without a sink (the gate removed the sink, not the block)"
            : dormant > works ? "dormant blocks (the gate closed; no evidence that it removed a sink the block needed)"
            : "as many dormant blocks as blocks that work without a sink");
  fprintf(f, "\n");
  return CS_OK;
}

/* ---- its row's claims, tables and columns (sections.h): none ---- */

const analysis_section_about analysis_sinkuse_about = {
    (const analysis_claim_info[]){{NULL, NULL, NULL}}, ANALYSIS_NO_TABLES, ANALYSIS_NO_COLUMNS};
