/* result.c — freeing and flat (de)serialisation of cs_cell_result.
 *
 * Wire format: a fixed header struct copy followed by each variable-length
 * array in a fixed order, each preceded by its element count. Both ends are
 * the same build on the same kind of machine (one MPI job), so native byte
 * order and struct layout are used. */
#include "curvsweep/result.h"

#include "curvsweep/error.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *result_status_name(cs_cell_status s) {
  switch (s) {
    case CELL_PENDING: return "pending";
    case CELL_DONE: return "done";
    case CELL_FAILED: return "failed";
    case CELL_DIVERGED: return "diverged";
  }
  return "?";
}

const char *const RESULT_POINT_NAMES[RESULT_N_POINT_ARRAYS] = {"S", "S_err", "S_tilde",
                                                                "tr_g", "logdet_g", "H_norm"};

void result_point_arrays(cs_cell_result *r, double **out[RESULT_N_POINT_ARRAYS]) {
  out[0] = &r->pt_S, out[1] = &r->pt_S_err, out[2] = &r->pt_S_tilde;
  out[3] = &r->pt_tr_g, out[4] = &r->pt_logdet_g, out[5] = &r->pt_H_norm;
}

const char *const RESULT_FIELD_NAMES[RESULT_N_FIELD_ARRAYS] = {"K", "K_tilde", "K_hat",
                                                                "logdet_g", "aniso", "S_err"};

void result_field_arrays(cs_cell_result *r, double **out[RESULT_N_FIELD_ARRAYS]) {
  out[0] = &r->fd_K, out[1] = &r->fd_K_tilde, out[2] = &r->fd_K_hat;
  out[3] = &r->fd_logdet_g, out[4] = &r->fd_aniso, out[5] = &r->fd_S_err;
}

double result_field_coord(const cs_cell_result *r, int k) {
  double h = (r->field_hi - r->field_lo) / r->field_n; /* the cell width, then its centre */
  return r->field_lo + (k + 0.5) * h;
}

/* Drop every per-point pointer (after a raw struct copy or a free). */
static void result_forget_points(cs_cell_result *r) {
  double **arr[RESULT_N_POINT_ARRAYS];
  result_point_arrays(r, arr);
  for (int i = 0; i < RESULT_N_POINT_ARRAYS; i++) *arr[i] = NULL;
  r->pt_x = NULL;
  r->pt_class = NULL;
  double **fd[RESULT_N_FIELD_ARRAYS];
  result_field_arrays(r, fd);
  for (int i = 0; i < RESULT_N_FIELD_ARRAYS; i++) *fd[i] = NULL;
  r->fd_class = NULL;
  r->fd_pred = NULL;
}

void result_free(cs_cell_result *r) {
  double **arr[RESULT_N_POINT_ARRAYS];
  result_point_arrays(r, arr);
  for (int i = 0; i < RESULT_N_POINT_ARRAYS; i++) free(*arr[i]);
  double **fd[RESULT_N_FIELD_ARRAYS];
  result_field_arrays(r, fd);
  for (int i = 0; i < RESULT_N_FIELD_ARRAYS; i++) free(*fd[i]);
  free(r->fd_class), free(r->fd_pred);
  free(r->curve), free(r->curv), free(r->pt_x), free(r->pt_class), free(r->gates);
  result_free_tensors(r);
  result_forget_points(r);
  r->curve = NULL, r->curv = NULL, r->gates = NULL;
  r->n_curve = r->depth = r->n_points = r->field_n = r->n_gates = 0;
}

void result_free_tensors(cs_cell_result *r) {
  for (int i = 0; i < r->n_tensors; i++) free(r->tensors[i].v);
  free(r->tensors);
  r->tensors = NULL, r->n_tensors = 0;
}

typedef struct {
  unsigned char *buf;
  size_t len, cap;
} writer;

static int put(writer *w, const void *p, size_t n) {
  if (w->len + n > w->cap) {
    size_t cap = w->cap ? w->cap : 4096;
    while (cap < w->len + n) cap *= 2;
    unsigned char *b = realloc(w->buf, cap);
    if (!b) return cs_error(CS_ERR_NOMEM, "out of memory packing a result");
    w->buf = b, w->cap = cap;
  }
  if (n) memcpy(w->buf + w->len, p, n);
  w->len += n;
  return CS_OK;
}

typedef struct {
  const unsigned char *buf;
  size_t len, pos;
} reader;

static int get(reader *r, void *p, size_t n) {
  if (r->pos + n > r->len) return cs_error(CS_ERR_INTERNAL, "truncated result message");
  if (n) memcpy(p, r->buf + r->pos, n);
  r->pos += n;
  return CS_OK;
}

/* read count elements of size into a fresh allocation; a count the rest of
 * the message cannot hold (a damaged journal record, tests/fuzz) is refused
 * before anything is allocated */
static int get_array(reader *r, void **p, size_t count, size_t size) {
  *p = NULL;
  if (count == 0) return CS_OK;
  if (count > (r->len - r->pos) / size)
    return cs_error(CS_ERR_INTERNAL, "truncated result message (%zu elements of %zu bytes "
                    "announced, %zu bytes left)", count, size, r->len - r->pos);
  CS_CHECK(cs_calloc_bytes(p, count, size));
  return get(r, *p, count * size);
}

int result_pack(const cs_cell_result *res, unsigned char **buf, size_t *len) {
  writer w = {0};
  int rc = put(&w, res, sizeof *res);
  size_t L = (size_t)res->depth, np = (size_t)res->n_points * L;
  for (int e = 0; !rc && e < res->n_curve; e++) {
    /* field by field: the padding after `epoch` holds garbage that would
     * make equal results pack to different bytes */
    cs_curve_point cp;
    memset(&cp, 0, sizeof cp);
    cp.epoch = res->curve[e].epoch;
    cp.train_loss = res->curve[e].train_loss;
    cp.train_acc = res->curve[e].train_acc;
    cp.test_acc = res->curve[e].test_acc;
    rc = put(&w, &cp, sizeof cp);
  }
  for (size_t l = 0; !rc && l < L; l++) {
    /* copy the numbers only: struct padding holds garbage that would make
     * equal results pack to different bytes */
    geom_stats st;
    memset(&st, 0, sizeof st);
    st.n_points = res->curv[l].n_points;
    memcpy(&st.degenerate_frac, &res->curv[l].degenerate_frac,
           sizeof st - offsetof(geom_stats, degenerate_frac));
    rc = put(&w, &st, sizeof st);
  }
  for (int g = 0; !rc && g < res->n_gates; g++) {
    /* field by field: no padding garbage (as above) */
    cs_gate_scores gs;
    memset(&gs, 0, sizeof gs);
    gs.prefix = res->gates[g].prefix;
    memcpy(&gs.n_scores, &res->gates[g].n_scores, sizeof gs - offsetof(cs_gate_scores, n_scores));
    rc = put(&w, &gs, sizeof gs);
  }
  if (!rc && res->pt_x) {
    double **arr[RESULT_N_POINT_ARRAYS];
    result_point_arrays((cs_cell_result *)res, arr);
    rc = put(&w, res->pt_x, sizeof(double) * (size_t)res->n_points * res->m);
    for (int i = 0; !rc && i < RESULT_N_POINT_ARRAYS; i++) rc = put(&w, *arr[i], sizeof(double) * np);
    if (!rc) rc = put(&w, res->pt_class, sizeof(int8_t) * np);
  }
  if (!rc && res->fd_pred) {
    size_t ng = (size_t)res->field_n * res->field_n;
    double **fd[RESULT_N_FIELD_ARRAYS];
    result_field_arrays((cs_cell_result *)res, fd);
    for (int i = 0; !rc && i < RESULT_N_FIELD_ARRAYS; i++) rc = put(&w, *fd[i], sizeof(double) * L * ng);
    if (!rc) rc = put(&w, res->fd_class, sizeof(int8_t) * L * ng);
    if (!rc) rc = put(&w, res->fd_pred, sizeof(int8_t) * ng);
  }
  for (int i = 0; !rc && i < res->n_tensors; i++) {
    cs_tensor head;
    memset(&head, 0, sizeof head); /* no garbage after the name, no pointer */
    snprintf(head.name, sizeof head.name, "%s", res->tensors[i].name);
    head.rows = res->tensors[i].rows;
    head.cols = res->tensors[i].cols;
    rc = put(&w, &head, sizeof head);
    if (!rc) rc = put(&w, res->tensors[i].v, sizeof(double) * res->tensors[i].rows * res->tensors[i].cols);
  }
  if (rc) {
    free(w.buf);
  } else {
    *buf = w.buf;
    *len = w.len;
  }
  return rc;
}

static int unpack(reader *r, cs_cell_result *res) {
  CS_CHECK(get(r, res, sizeof *res));
  int has_points = res->pt_x != NULL, has_field = res->fd_pred != NULL;
  res->curve = NULL, res->curv = NULL, res->gates = NULL;
  result_forget_points(res);
  int nt = res->n_tensors;
  res->tensors = NULL, res->n_tensors = 0;
  int ngs = res->n_gates;
  res->n_gates = 0;
  if (res->n_curve < 0 || res->depth < 0 || res->n_points < 0 || res->m < 0 || nt < 0 || ngs < 0)
    return cs_error(CS_ERR_INTERNAL, "malformed result message: a negative count (curve %d, "
                    "depth %d, points %d x %d, tensors %d, gated blocks %d)", res->n_curve,
                    res->depth, res->n_points, res->m, nt, ngs);
  if (res->field_n < 0 || res->field_n > RESULT_FIELD_MAX || has_field != (res->field_n > 0))
    return cs_error(CS_ERR_INTERNAL, "malformed result message: a field of %d x %d points "
                    "(allowed: 0..%d, announced %s)", res->field_n, res->field_n,
                    RESULT_FIELD_MAX, has_field ? "present" : "absent");
  size_t L = (size_t)res->depth, np = (size_t)res->n_points * L;
  CS_CHECK(get_array(r, (void **)&res->curve, (size_t)res->n_curve, sizeof *res->curve));
  CS_CHECK(get_array(r, (void **)&res->curv, L, sizeof *res->curv));
  CS_CHECK(get_array(r, (void **)&res->gates, (size_t)ngs, sizeof *res->gates));
  res->n_gates = ngs;
  if (has_points) {
    CS_CHECK(get_array(r, (void **)&res->pt_x, (size_t)res->n_points * res->m, sizeof(double)));
    double **arr[RESULT_N_POINT_ARRAYS];
    result_point_arrays(res, arr);
    for (int i = 0; i < RESULT_N_POINT_ARRAYS; i++)
      CS_CHECK(get_array(r, (void **)arr[i], np, sizeof(double)));
    CS_CHECK(get_array(r, (void **)&res->pt_class, np, sizeof(int8_t)));
  }
  if (has_field) {
    size_t ng = (size_t)res->field_n * res->field_n;
    double **fd[RESULT_N_FIELD_ARRAYS];
    result_field_arrays(res, fd);
    for (int i = 0; i < RESULT_N_FIELD_ARRAYS; i++)
      CS_CHECK(get_array(r, (void **)fd[i], L * ng, sizeof(double)));
    CS_CHECK(get_array(r, (void **)&res->fd_class, L * ng, sizeof(int8_t)));
    CS_CHECK(get_array(r, (void **)&res->fd_pred, ng, sizeof(int8_t)));
  }
  if (nt) {
    if ((size_t)nt > (r->len - r->pos) / sizeof *res->tensors)
      return cs_error(CS_ERR_INTERNAL, "truncated result message (%d tensors announced)", nt);
    CS_CHECK(CS_CALLOC(res->tensors, nt));
    for (int i = 0; i < nt; i++) {
      CS_CHECK(get(r, &res->tensors[i], sizeof res->tensors[i]));
      res->tensors[i].v = NULL;
      res->n_tensors = i + 1;
      cs_tensor *T = &res->tensors[i];
      if (T->rows < 0 || T->cols < 0)
        return cs_error(CS_ERR_INTERNAL, "malformed result message: tensor %d is %d x %d", i,
                        T->rows, T->cols);
      CS_CHECK(get_array(r, (void **)&T->v, (size_t)T->rows * (size_t)T->cols, sizeof(double)));
    }
  }
  return CS_OK;
}

int result_unpack(const unsigned char *buf, size_t len, cs_cell_result *res) {
  reader r = {buf, len, 0};
  int rc = unpack(&r, res);
  if (rc) result_free(res);
  return rc;
}
