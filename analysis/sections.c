/* sections.c — the table of the report's optional sections (sections.h):
 * index.md prints them in this order after the four claims. */
#include "sections.h"

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

#include <string.h>

void **analysis_section_state(analysis_data *D, const char *name) {
  for (int s = 0; s < ANALYSIS_N_SECTIONS; s++)
    if (!strcmp(ANALYSIS_SECTIONS[s].name, name)) return &D->section_state[s];
  return NULL;
}
