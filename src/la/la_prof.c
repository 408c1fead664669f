/* la_prof.c — the time breakdown of bench/train_cell (la.h, LA_PROF_*).
 * The counters exist in every build; only the CS_PROFILE build adds to
 * them. */
#include "curvsweep/la.h"

_Thread_local int la_prof_on;
static _Thread_local double la_prof_acc[LA_PROF_KINDS];

void la_prof_enable(int on) { la_prof_on = on; }

void la_prof_reset(void) {
  for (int k = 0; k < LA_PROF_KINDS; k++) la_prof_acc[k] = 0.0;
}

void la_prof_seconds(double seconds[LA_PROF_KINDS]) {
  for (int k = 0; k < LA_PROF_KINDS; k++) seconds[k] = la_prof_acc[k];
}

int la_prof_compiled(void) {
#ifdef CS_PROFILE
  return 1;
#else
  return 0;
#endif
}

void la_prof_add(la_prof_kind kind, double seconds) { la_prof_acc[kind] += seconds; }
