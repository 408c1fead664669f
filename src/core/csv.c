/* csv.c — CSV number fields (csv.h). */
#include "curvsweep/csv.h"

#include <math.h>

void cs_csv_double(FILE *f, double v) {
  if (isnan(v))
    fputs(",nan", f);
  else if (isinf(v))
    fputs(v > 0 ? ",inf" : ",-inf", f);
  else
    fprintf(f, ",%.17g", v);
}
