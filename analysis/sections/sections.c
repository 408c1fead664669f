/* sections.c — the table of the report's sections (sections.h): claims
 * 1–4, then the optional sections; index.md prints them in this order, and
 * their claims come in this order (analysis_claim_rank). Above the
 * sections it lists; only the drivers above it (compute.c, csv.c, plots.c,
 * index.c, columns.c, load.c) read the table. */
#include "sections.h"

#include "calibration.h"
#include "claims.h"
#include "estimation.h"
#include "gates.h"
#include "gatescores.h"
#include "heads.h"
#include "learning.h"
#include "sinks.h"
#include "sinkuse.h"
#include "stability.h"

#include <string.h>

const analysis_section ANALYSIS_SECTIONS[] = {
    {.name = "claim 1", .about = &analysis_claim1_about, .verdicts = analysis_claim1_verdicts,
     .write_md = analysis_claim1_write_md},
    ANALYSIS_CLAIM_ROW("claim 2", claim2),
    ANALYSIS_CLAIM_ROW("claim 3", claim3),
    ANALYSIS_CLAIM_ROW("claim 4", claim4),
    ANALYSIS_SECTION_ROW(ANALYSIS_LEARNING_NAME, learning),
    ANALYSIS_SECTION_ROW(ANALYSIS_GATES_NAME, gates),
    ANALYSIS_SECTION_ROW(ANALYSIS_SINKS_NAME, sinks),
    {.name = ANALYSIS_SINKUSE_NAME, .about = &analysis_sinkuse_about,
     .write_md = analysis_sinkuse_write_md},
    ANALYSIS_SECTION_ROW(ANALYSIS_ESTIMATION_NAME, estimation),
    ANALYSIS_SECTION_ROW(ANALYSIS_GATESCORES_NAME, gatescores),
    {.name = ANALYSIS_CALIB_NAME, .about = &analysis_calibration_about,
     .compute = analysis_calibration_compute, .checks = analysis_calibration_checks,
     .verdicts = analysis_calibration_verdicts, .write_tables = analysis_calibration_write_tables,
     .write_md = analysis_calibration_write_md, .list_tables = analysis_calibration_list_tables,
     .free = analysis_calibration_free},
    {.name = ANALYSIS_STABILITY_NAME, .about = &analysis_stability_about,
     .compute = analysis_stability_compute, .checks = analysis_stability_checks,
     .verdicts = analysis_stability_verdicts, .write_tables = analysis_stability_write_tables,
     .write_md = analysis_stability_write_md, .list_tables = analysis_stability_list_tables,
     .free = analysis_stability_free},
    {.name = ANALYSIS_HEADS_NAME, .about = &analysis_heads_about,
     .write_tables = analysis_heads_write_tables, .write_md = analysis_heads_write_md,
     .list_tables = analysis_heads_list_tables},
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
  const analysis_claim_info *c = NULL;
  for (int s = 0; !c && s < ANALYSIS_N_SECTIONS; s++)
    c = analysis_claim_in(ANALYSIS_SECTIONS[s].about->claims, claim, &rank);
  if (info) *info = c;
  return c ? rank : 99;
}
