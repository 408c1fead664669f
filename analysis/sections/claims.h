/* claims.h — claims 1–4 of docs/MODELS.md, each a section of the report
 * in a file of its own (claim1.c … claim4.c) and a row of the section
 * table (sections.c, the only other file that includes this header), and
 * claim 1's rule, which claim 4 reads to leave out the rows claim 1 finds
 * flat. Internal to analysis/; rules in analysis/README.md. */
#ifndef CURVSWEEP_ANALYSIS_CLAIMS_H
#define CURVSWEEP_ANALYSIS_CLAIMS_H

#include "data.h"
#include "sections.h"

#include <stdio.h>

/* Claim 1 has no test, so no checks: its verdict row and its part of index.md. */
int analysis_claim1_verdicts(analysis_data *D);
int analysis_claim1_write_md(FILE *f, const analysis_data *D);
extern const analysis_section_about analysis_claim1_about;
/* 1 when the ungated skeleton cells of (t, r) are flat by claim 1's rule. */
int analysis_ungated_flat(const analysis_data *D, int t, int r);

ANALYSIS_CLAIM_DECLARE(claim2);
ANALYSIS_CLAIM_DECLARE(claim3);
ANALYSIS_CLAIM_DECLARE(claim4);

#endif
