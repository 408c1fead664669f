/* archive_compare.c — values compared bitwise: two results' science values
 * (a merge's check of a cell done in several inputs, the verified close's
 * read-back, analyze's merge of archives), their curvature fields, two /runs
 * rows (journal replay), and the rank of a status when results of one cell
 * compete (docs/ARCHIVE.md, "Merge"). */
#include "archive_internal.h"

#include <string.h>

static int archive_same_doubles(const double *x, const double *y, size_t n) {
  if (n == 0) return 1;
  if (!x || !y) return x == y;
  return memcmp(x, y, n * sizeof *x) == 0;
}

int archive_status_rank(cs_cell_status s) {
  switch (s) {
    case CELL_DONE: return 3;
    case CELL_DIVERGED: return 2;
    case CELL_FAILED: return 1;
    default: return 0;
  }
}

/* The science values of two results agree bitwise (NaN equal to NaN of
 * the same bits): the /cells metrics, the fields, every per-cell table's
 * values (ARCHIVE_CELL_TABLES: /curvature without the statistics columns
 * one side's archive does not store, stats_absent) and the parameters. wall_s, rank and attempts describe the run and may
 * differ between two runs of one deterministic cell. Also the read-back
 * comparison of a verified close (archive_journal_verify). */
int archive_same_values(const cs_cell_result *x, const cs_cell_result *y) {
  if (x->status != y->status || x->n_params != y->n_params || x->n_tensors != y->n_tensors ||
      !archive_same_fields(x, y))
    return 0;
  double mx[3] = {x->train_loss, x->train_acc, x->test_acc}, my[3] = {y->train_loss, y->train_acc, y->test_acc};
  if (!archive_same_doubles(mx, my, 3)) return 0;
  for (int t = 0; t < ARCHIVE_N_CELL_TABLES; t++)
    if (!ARCHIVE_CELL_TABLES[t].same(x, y)) return 0;
  for (int i = 0; i < x->n_tensors; i++) {
    const cs_tensor *s = &x->tensors[i], *t = &y->tensors[i];
    if (strcmp(s->name, t->name) || s->rows != t->rows || s->cols != t->cols ||
        !archive_same_doubles(s->v, t->v, (size_t)s->rows * s->cols))
      return 0;
  }
  return 1;
}

int archive_same_fields(const cs_cell_result *x, const cs_cell_result *y) {
  if (!x->fd_pred != !y->fd_pred || x->field_n != y->field_n || x->depth != y->depth) return 0;
  if (!x->fd_pred) return 1;
  if (memcmp(&x->field_lo, &y->field_lo, sizeof x->field_lo) ||
      memcmp(&x->field_hi, &y->field_hi, sizeof x->field_hi))
    return 0;
  size_t ng = (size_t)x->field_n * x->field_n, nl = (size_t)x->depth * ng;
  double **fx[RESULT_N_FIELD_ARRAYS], **fy[RESULT_N_FIELD_ARRAYS];
  result_field_arrays((cs_cell_result *)x, fx);
  result_field_arrays((cs_cell_result *)y, fy);
  for (int k = 0; k < RESULT_N_FIELD_ARRAYS; k++)
    if (nl && memcmp(*fx[k], *fy[k], nl * sizeof(double))) return 0;
  return (!nl || !memcmp(x->fd_class, y->fd_class, nl)) && !memcmp(x->fd_pred, y->fd_pred, ng);
}

/* Two /runs rows agree in every column. */
int archive_same_run(const cs_run_info *x, const cs_run_info *y) {
  return !strcmp(x->start, y->start) && !strcmp(x->end, y->end) && !strcmp(x->hosts, y->hosts) &&
         x->ranks == y->ranks && !strcmp(x->team, y->team) && !strcmp(x->shard, y->shard) &&
         !strcmp(x->slurm_job, y->slurm_job) && !strcmp(x->nodelist, y->nodelist) &&
         x->requeue_count == y->requeue_count && x->cells_run == y->cells_run;
}
