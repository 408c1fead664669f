/* sinkuse.h — what does a sink do? (analysis/VERDICTS.md, "What a sink
 * does"): the lm family's ablation deltas read beside the first-token
 * share and the gate value of the attention-sink section's rows
 * (sinkuse.c; the numbers are columns of sinks.csv). Internal to
 * analysis/; a row of the section table (sections.c) with its part of
 * index.md only. */
#ifndef CURVSWEEP_ANALYSIS_SINKUSE_H
#define CURVSWEEP_ANALYSIS_SINKUSE_H

#include "data.h"
#include "sections.h"

#include <stdio.h>

#define ANALYSIS_SINKUSE_NAME "what a sink does"
/* A first-token share from which a block has a sink (3× the uniform causal
 * share for T = 32, docs/MODELS.md). */
#define ANALYSIS_USE_SINK 0.3
/* A change in test loss below this (nats) costs nothing (1% of a nat: a
 * tenth of the smallest gap between the shipped sink run's archs). */
#define ANALYSIS_USE_EPS 0.01

int analysis_sinkuse_write_md(FILE *f, const analysis_data *D);
extern const analysis_section_about analysis_sinkuse_about;

#endif
