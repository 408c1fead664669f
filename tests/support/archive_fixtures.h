/* archive_fixtures.h — what the archive tests share (test_archive*.c;
 * tests/support/archive_fixtures.c). Include after <cmocka.h>. */
#ifndef CURVSWEEP_TEST_ARCHIVE_FIXTURES_H
#define CURVSWEEP_TEST_ARCHIVE_FIXTURES_H

#include "curvsweep/archive.h"
#include "curvsweep/geom.h"
#include "curvsweep/result.h"
#include "curvsweep/spec.h"

#include <stddef.h>
#include <stdint.h>

/* The /curvature float64 columns in file order (the contract's names), and
 * the field of s each names. */
#define N_STATS 40
extern const char *const STATS_NAMES[N_STATS];
double *stats_field(geom_stats *s, int k);

/* A spec of 4 cells that is not demo-small (a different sha256). */
extern const char *const OTHER_SPEC;

long file_size(const char *path);                          /* stat's size; fails the test if absent */
void file_hash(const char *path, char out[65]);            /* SHA-256 hex, "absent" when missing */
void write_bytes(const char *path, const void *data, size_t n); /* the file is exactly these bytes */
/* Number of entries in dir whose name starts with prefix (the first one's
 * path into first when not NULL). */
int count_prefixed(const char *dir, const char *prefix, char *first, size_t len);

/* known_result's optional parts. */
enum { WITH_POINTS = 1, WITH_PARAMS = 2 };
/* A result with known numbers (the formulas are in archive_fixtures.c and
 * tests/archive_h5py_check.py); salt shifts train_loss (merge conflicts). */
cs_cell_result known_result(int64_t cell, int depth, cs_cell_status status, int flags, double salt);

/* The depth the spec gives a cell: a done result of the cell has exactly
 * that many prefixes, as every reader, salvage and the journal check
 * require (docs/SECURITY.md, "Hostile archives: second audit"). */
int spec_depth(const cs_spec *spec, int64_t cell);

/* Bitwise equality of doubles (NaN equals NaN), of every field of two
 * results, and the shape of a pending cell. */
void assert_same_doubles(const double *a, const double *b, size_t n, const char *what);
void assert_same_result(const cs_cell_result *a, const cs_cell_result *b);
void assert_pending(const cs_cell_result *r, int64_t cell);

/* Archive calls that must succeed (the error message otherwise). */
cs_archive *open_ok(const char *path, const cs_spec *spec, cs_archive_mode mode,
                    const unsigned char *mask);
void write_ok(cs_archive *a, const cs_cell_result *r);
void close_ok(cs_archive *a);
cs_cell_result *read_ok(const char *path, int64_t *n);
/* A /runs row started at start on ranks ranks (hosts, team, Slurm job set). */
cs_run_info make_run(const char *start, int ranks);

#endif
