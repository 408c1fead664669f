/* compute.h — the numbers of the report (compute.c, internal to analysis/):
 * per-group means and t intervals over seeds, amplification slopes with
 * paired bootstrap intervals, gated − ungated gaps. */
#ifndef CURVSWEEP_ANALYSIS_COMPUTE_H
#define CURVSWEEP_ANALYSIS_COMPUTE_H

#include "data.h"

/* Fill D->group, D->prefix, D->amp and D->gap from the loaded table. */
int analysis_compute(analysis_data *D);
/* 1 when a prefix row carries the point classification: its four fractions
 * are finite and add up to 1 (geom_stats_compute, format_version 2 archives). */
int analysis_stats_classified(const geom_stats *g);
/* Value `which` of prefix l of a result (l = 1..L; 0: the deepest, l = L);
 * NaN if missing, and for the classified values of an unclassified row. */
double analysis_cell_value(const cs_cell_result *r, int prefix, analysis_value which);
/* The CSV name of an amplification quantity: "K", "Kt", "Kh", "intabsK", "logdet", "aniso". */
const char *analysis_amp_q_name(int q);

#endif
