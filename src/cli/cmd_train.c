/* cmd_train.c — `curvsweep train SPEC.ini --cell ID`: one cell, metrics to stdout. */
#include "cli.h"

#include "curvsweep/error.h"
#include "curvsweep/model.h"
#include "curvsweep/result.h"
#include "curvsweep/cell.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *TRAIN_HELP =
    "usage: curvsweep train SPEC.ini --cell ID [--set SECTION.KEY=VALUE]... [--save-points]\n\n"
    "Train one cell of the sweep spec (cells are numbered 0 .. N-1 in the order of\n"
    "'curvsweep run --dry-run') and print its axis values, final train loss and\n"
    "accuracy, test accuracy, wall time and the curvature of the representation\n"
    "after every layer. Nothing is written to disk.\n\n"
    "  --cell ID       the cell to train\n"
    "  --set SECTION.KEY=VALUE  override one key of the spec, as in 'curvsweep run'\n"
    "  --save-points   also print the per-point values behind the curvature table\n"
    "                  (what [sweep] save_points = yes stores in /points for the cell):\n"
    "                  one line per layer l and evaluation point i with the input\n"
    "                  x, S, S_err, S_tilde, tr_g, logdet_g, H_norm (every number\n"
    "                  %.17g) and the class (0 degenerate, 1 flat, 2 curved,\n"
    "                  3 unresolved; docs/NUMERICS.md)\n";

/* [curvature] field = N: per prefix, the shares of the grid's classes, the
 * largest resolved |K̂|, and the grid's share predicted class 1. */
static void print_field(const cs_cell_result *r) {
  int64_t ng = (int64_t)r->field_n * r->field_n, ones = 0;
  for (int64_t g = 0; g < ng; g++) ones += r->fd_pred[g];
  printf("\ncurvature field: %dx%d grid over [%g, %g]^2, %.3f of it predicted class 1 "
         "(/fields, docs/ARCHIVE.md)\n", r->field_n, r->field_n, r->field_lo, r->field_hi,
         (double)ones / (double)ng);
  printf("prefix  curved    flat  unresolved  degenerate   max|Kh| (resolved)\n");
  for (int l = 0; l < r->depth; l++) {
    int64_t count[4] = {0, 0, 0, 0};
    double kmax = 0.0;
    for (int64_t g = 0; g < ng; g++) {
      int64_t i = (int64_t)l * ng + g;
      int c = r->fd_class[i];
      if (c >= 0 && c < 4) count[c]++;
      if ((c == GEOM_FLAT || c == GEOM_CURVED) && fabs(r->fd_K_hat[i]) > kmax) kmax = fabs(r->fd_K_hat[i]);
    }
    printf("%-6d  %6.3f  %6.3f  %10.3f  %10.3f   %.4e\n", l + 1, (double)count[GEOM_CURVED] / ng,
           (double)count[GEOM_FLAT] / ng, (double)count[GEOM_UNRESOLVED] / ng,
           (double)count[GEOM_DEGENERATE] / ng, kmax);
  }
}

/* --save-points: every /points value of the cell, one line per (layer, point). */
static void print_points(const cs_cell_result *r) {
  double **fields[RESULT_N_POINT_ARRAYS];
  result_point_arrays((cs_cell_result *)r, fields);
  printf("\nper-point values (%d points, m = %d):\nlayer point", r->n_points, r->m);
  for (int j = 0; j < r->m; j++) printf(" x%d", j + 1);
  for (int f = 0; f < RESULT_N_POINT_ARRAYS; f++) printf(" %s", RESULT_POINT_NAMES[f]);
  printf(" class\n");
  for (int l = 0; l < r->depth; l++)
    for (int i = 0; i < r->n_points; i++) {
      size_t k = (size_t)l * (size_t)r->n_points + (size_t)i;
      printf("%d %d", l + 1, i);
      for (int j = 0; j < r->m; j++) printf(" %.17g", r->pt_x[(size_t)i * (size_t)r->m + (size_t)j]);
      for (int f = 0; f < RESULT_N_POINT_ARRAYS; f++) printf(" %.17g", (*fields[f])[k]);
      printf(" %d\n", r->pt_class[k]);
    }
}

/* The spec's cell (its id checked against the spec's count) into *cfg, and the
 * header line naming its axis values; an exit status. */
static int train_cell_config(const char *spec_path, const char **sets, int nsets, long long cell,
                             cs_config *cfg) {
  cs_spec *spec;
  spec_load_options lo = {sets, nsets, NULL, NULL, model_cell_memory};
  int rc = spec_load_file_opts(spec_path, &lo, &spec);
  if (rc) return cli_fail(rc);
  int64_t count = spec_cell_count(spec);
  int status = EXIT_OK;
  if (cell >= count)
    status = cli_usage_error("train", "--cell %lld is out of range: %s has %lld cells (0 .. %lld)",
                             cell, spec_path, (long long)count, (long long)count - 1);
  if (status == EXIT_OK && (rc = spec_cell_config(spec, cell, cfg))) status = cli_fail(rc);
  if (status == EXIT_OK) {
    printf("cell %lld of %lld:", cell, (long long)count);
    printf(" arch=%s depth=%d task=%s seed=%lld", config_arch_name(cfg->arch), cfg->depth,
           config_task_name(cfg->task), (long long)cfg->seed);
    for (int a = 0; a < spec_axis_count(spec); a++) {
      const char *name = spec_axis_name(spec, a);
      if (!strcmp(name, "arch") || !strcmp(name, "depth") || !strcmp(name, "task") ||
          !strcmp(name, "seed"))
        continue;
      char buf[128];
      spec_axis_value_text(spec, a, cell, buf, sizeof buf);
      printf(" %s=%s", name, buf);
    }
    printf("\n");
  }
  spec_free(spec);
  return status;
}

/* The measures besides curvature (docs/MODELS.md): calibration and
 * stability, per block the attention entropy and (lm) the ablation deltas,
 * per gated block its gate scores. */
static void print_cell_stats(const cs_cell_result *r) {
  const cs_cell_stats *c = &r->cstats;
  if (c->present)
    printf("\ntest_nll %.6g  test_brier %.6g  test_ece %.6g  loss spikes %d  largest loss ratio "
           "%.4g\n", c->test_nll, c->test_brier, c->test_ece, c->spikes, c->loss_ratio_max);
  if (r->depth > 0 && (isfinite(r->curv[0].attn_entropy) || isfinite(r->curv[0].ablate_attn))) {
    printf("%-6s %12s %12s %12s\n", "prefix", "attn_entropy", "ablate_first", "ablate_attn");
    for (int l = 0; l < r->depth; l++)
      printf("%-6d %12.4f %12.4g %12.4g\n", l + 1, r->curv[l].attn_entropy,
             r->curv[l].ablate_first, r->curv[l].ablate_attn);
  }
  if (r->n_gates > 0) {
    printf("gate scores: %-6s %8s %8s %8s %8s %8s %9s %11s\n", "prefix", "mean", "median", "q10",
           "q90", "<0.1", "var_query", "var_channel");
    for (int g = 0; g < r->n_gates; g++) {
      const cs_gate_scores *s = &r->gates[g];
      printf("             %-6d %8.4f %8.4f %8.4f %8.4f %8.4f %9.4f %11.4f\n", s->prefix, s->mean,
             s->median, s->q10, s->q90, s->frac_low, s->var_query, s->var_channel);
    }
  }
}

/* Train the cell and print its outcome; an exit status. */
static int train_run_print(const cs_config *cfg, long long cell, int save_points) {
  cs_cell_result res;
  cell_options opt = {save_points, 0};
  int rc = cell_run(cfg, cell, &opt, NULL, NULL, &res);
  if (!rc) {
    printf("status %s%s%s\n", result_status_name(res.status), res.message[0] ? ": " : "",
           res.message);
    printf("train_loss %.6f  train_acc %.4f  test_acc %.4f  params %lld  wall %.3f s\n",
           res.train_loss, res.train_acc, res.test_acc, (long long)res.n_params, res.wall_s);
  }
  if (!rc && res.est.present) {
    const cs_estimation *e = &res.est;
    printf("\nestimation (docs/MODELS.md, \"Estimation\"): restart %d of %d kept, %lld steps "
           "(%lld in all), %s\n", e->kept, e->restarts, (long long)e->steps,
           (long long)e->steps_total, e->converged ? "converged" : "stopped at the step cap");
    printf("train_mse %.6g  teacher_mse %.6g  grad_norm %.3g  fn_error %.6g  param_error %.6g%s\n",
           e->train_mse, e->teacher_mse, e->grad_norm, e->fn_error, e->param_error,
           e->misspecified ? "  (misspecified: fewer heads than the teacher)" : "");
    printf("no curvature: the mha family has no input-coordinate surface\n");
  } else if (!rc && res.status == CELL_DONE) {
    printf("\ncurvature of the representation after each layer (%d points, sigma %g):\n",
           cfg->points, cfg->sigma);
    cli_print_curvature_table(res.depth, res.curv);
    print_cell_stats(&res);
    if (res.fd_pred) print_field(&res);
    if (save_points) print_points(&res);
  }
  result_free(&res);
  return rc ? cli_fail(rc) : EXIT_OK;
}

int cmd_train(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    fputs(TRAIN_HELP, stdout);
    return EXIT_OK;
  }
  const char *spec_path = NULL;
  long long cell = -1;
  int save_points = 0, nsets = 0, took, status = EXIT_OK;
  const char **sets = calloc((size_t)argc + 1, sizeof *sets);
  if (!sets) return cli_fail(cs_error(CS_ERR_NOMEM, "out of memory for the arguments"));
  for (int i = 1; i < argc && status == EXIT_OK; i++) {
    if ((took = cli_take_set("train", argc, argv, &i, sets, &nsets, 1)) != 0) {
      if (took < 0) status = EXIT_USAGE;
    } else if (strcmp(argv[i], "--cell") == 0) {
      if (i + 1 >= argc)
        status = cli_usage_error("train", "--cell needs a cell number");
      else if ((cell = cli_parse_count(argv[++i])) < 0)
        status = cli_usage_error("train", "--cell '%s' is not a cell number (0, 1, 2, ...)",
                                 argv[i]);
    } else if (strcmp(argv[i], "--save-points") == 0) {
      save_points = 1;
    } else if (argv[i][0] == '-') {
      status = cli_usage_error("train", "unknown option '%s'", argv[i]);
    } else if (!spec_path) {
      spec_path = argv[i];
    } else {
      status = cli_usage_error("train", "unexpected argument '%s'", argv[i]);
    }
  }
  if (status == EXIT_OK && !spec_path) status = cli_usage_error("train", "missing SPEC.ini");
  if (status == EXIT_OK && cell < 0) status = cli_usage_error("train", "missing --cell ID");
  cs_config cfg;
  if (status == EXIT_OK) status = train_cell_config(spec_path, sets, nsets, cell, &cfg);
  free(sets);
  if (status == EXIT_OK) status = train_run_print(&cfg, cell, save_points);
  return status;
}
