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
 * the same bits), the statistics columns one side's archive does not store
 * (stats_absent: an older format_version) left out. wall_s, rank and attempts describe the run and may
 * differ between two runs of one deterministic cell. Also the read-back
 * comparison of a verified close (archive_journal_verify). */
int archive_same_values(const cs_cell_result *x, const cs_cell_result *y) {
  if (x->status != y->status || x->n_params != y->n_params || x->n_curve != y->n_curve ||
      x->depth != y->depth || x->n_points != y->n_points || x->m != y->m ||
      x->n_tensors != y->n_tensors || !x->pt_x != !y->pt_x || !archive_same_fields(x, y))
    return 0;
  double mx[3] = {x->train_loss, x->train_acc, x->test_acc}, my[3] = {y->train_loss, y->train_acc, y->test_acc};
  if (!archive_same_doubles(mx, my, 3)) return 0;
  for (int e = 0; e < x->n_curve; e++) {
    const cs_curve_point *p = &x->curve[e], *q = &y->curve[e];
    double a3[3] = {p->train_loss, p->train_acc, p->test_acc}, b3[3] = {q->train_loss, q->train_acc, q->test_acc};
    if (p->epoch != q->epoch || !archive_same_doubles(a3, b3, 3)) return 0;
  }
  uint64_t absent = x->stats_absent | y->stats_absent; /* columns one side's archive lacks */
  for (int l = 0; l < x->depth; l++) {
    if (x->curv[l].n_points != y->curv[l].n_points) return 0;
    for (size_t k = 0; k < ARCHIVE_N_STATS_FIELDS; k++)
      if (!(absent >> k & 1) && memcmp((const char *)&x->curv[l] + ARCHIVE_STATS_FIELDS[k].offset,
                 (const char *)&y->curv[l] + ARCHIVE_STATS_FIELDS[k].offset, sizeof(double)))
        return 0;
  }
  if (x->pt_x) {
    size_t np = (size_t)x->depth * x->n_points;
    double **fx[RESULT_N_POINT_ARRAYS], **fy[RESULT_N_POINT_ARRAYS];
    result_point_arrays((cs_cell_result *)x, fx);
    result_point_arrays((cs_cell_result *)y, fy);
    if (!archive_same_doubles(x->pt_x, y->pt_x, (size_t)x->n_points * x->m) ||
        memcmp(x->pt_class, y->pt_class, np))
      return 0;
    for (int k = 0; k < RESULT_N_POINT_ARRAYS; k++)
      if (!archive_same_doubles(*fx[k], *fy[k], np)) return 0;
  }
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
