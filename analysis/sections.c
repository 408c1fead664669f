/* sections.c — the table of the report's optional sections (sections.h):
 * index.md prints them in this order after the four claims, and their
 * claims come in this order after claims 1–4 (analysis_claim_rank). Above
 * the sections it lists; only the drivers above it (compute.c, csv.c,
 * plots.c, index.c, columns.c, load.c) read the table. */
#include "sections.h"

#include "estimation.h"
#include "gates.h"
#include "learning.h"
#include "sinks.h"

#include <string.h>

const analysis_section ANALYSIS_SECTIONS[] = {
    ANALYSIS_SECTION_ROW(ANALYSIS_LEARNING_NAME, learning),
    ANALYSIS_SECTION_ROW(ANALYSIS_GATES_NAME, gates),
    ANALYSIS_SECTION_ROW(ANALYSIS_SINKS_NAME, sinks),
    ANALYSIS_SECTION_ROW(ANALYSIS_ESTIMATION_NAME, estimation),
};

const int ANALYSIS_N_SECTIONS = (int)(sizeof ANALYSIS_SECTIONS / sizeof *ANALYSIS_SECTIONS);
_Static_assert(sizeof ANALYSIS_SECTIONS / sizeof *ANALYSIS_SECTIONS <= ANALYSIS_MAX_SECTIONS,
               "a row of the section table without a state slot (data.h)");

/* The entry of claim in list (ended by {NULL}), or NULL; *rank counts the
 * entries passed. */
static const analysis_claim_info *analysis_claim_in(const analysis_claim_info *list, const char *claim,
                                                    int *rank) {
  for (const analysis_claim_info *c = list; c->claim; c++, (*rank)++)
    if (!strcmp(claim, c->claim)) return c;
  return NULL;
}

int analysis_claim_rank(const char *claim, const analysis_claim_info **info) {
  int rank = 0;
  const analysis_claim_info *c = analysis_claim_in(ANALYSIS_CORE_CLAIMS, claim, &rank);
  for (int s = 0; !c && s < ANALYSIS_N_SECTIONS; s++)
    c = analysis_claim_in(ANALYSIS_SECTIONS[s].about->claims, claim, &rank);
  if (info) *info = c;
  return c ? rank : 99;
}
