/* csv.h — numbers and text in CSV fields, one spelling for every writer
 * (export's tables, analysis/README.md "Export"). */
#ifndef CURVSWEEP_CSV_H
#define CURVSWEEP_CSV_H

#include <stdio.h>

/* ",v": a double that reads back as exactly the same value (%.17g); NaN
 * and ±inf spelled "nan", "inf", "-inf" as pandas and R read them. */
void cs_csv_double(FILE *f, double v);

#endif
