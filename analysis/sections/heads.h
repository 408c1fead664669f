/* heads.h — does the gate's gain grow as the head dimension shrinks?
 * (analysis/VERDICTS.md, "Head dimension"): with a heads axis, gap.csv's
 * gated − ungated differences against d/H as a table (heads.c).
 * Internal to analysis/; a row of the section table (sections.c) with a
 * table and its part of index.md, no state and no verdict. */
#ifndef CURVSWEEP_ANALYSIS_HEADS_H
#define CURVSWEEP_ANALYSIS_HEADS_H

#include "data.h"
#include "sections.h"

#include <stdio.h>

#define ANALYSIS_HEADS_NAME "head dimension"

int analysis_heads_write_tables(const analysis_data *D, const analysis_outdir *dir);
void analysis_heads_list_tables(FILE *f, const analysis_data *D);
int analysis_heads_write_md(FILE *f, const analysis_data *D);
extern const analysis_section_about analysis_heads_about;

#endif
