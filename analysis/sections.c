/* sections.c — the table of the report's optional sections (sections.h):
 * index.md prints them in this order after the four claims. */
#include "sections.h"

#include <string.h>

const analysis_section ANALYSIS_SECTIONS[] = {
    {"sample efficiency", analysis_compute_learning, analysis_lc_checks, analysis_lc_verdicts,
     analysis_write_learning_tables, analysis_md_learning, analysis_list_learning_tables,
     analysis_plot_learning, analysis_learning_free},
    {"gate positions", analysis_compute_gates, analysis_gate_checks, analysis_gate_verdicts,
     analysis_write_gates_table, analysis_md_gates, analysis_list_gates_tables, analysis_plot_gates,
     analysis_gates_free},
    {ANALYSIS_SINKS_NAME, analysis_compute_sinks, analysis_sink_checks, analysis_sink_verdicts,
     analysis_write_sinks_table, analysis_md_sinks, analysis_list_sinks_tables, analysis_plot_sinks,
     analysis_sinks_free},
};

const int ANALYSIS_N_SECTIONS = (int)(sizeof ANALYSIS_SECTIONS / sizeof *ANALYSIS_SECTIONS);
_Static_assert(sizeof ANALYSIS_SECTIONS / sizeof *ANALYSIS_SECTIONS <= ANALYSIS_MAX_SECTIONS,
               "a row of the section table without a state slot (data.h)");

/* The claims in the order of index.md. */
int analysis_claim_rank(const char *claim) {
  static const char *const ORDER[] = {"1", "2", "3", "4", "sample-efficiency", "gate-g1-best",
                                      "gate-sink", "gate-ov-qk", "sink-g1"};
  for (int i = 0; i < (int)(sizeof ORDER / sizeof *ORDER); i++)
    if (strcmp(claim, ORDER[i]) == 0) return i;
  return 99;
}
