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
};

const int ANALYSIS_N_SECTIONS = (int)(sizeof ANALYSIS_SECTIONS / sizeof *ANALYSIS_SECTIONS);
