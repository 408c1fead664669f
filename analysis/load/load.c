/* load.c — read one or more archives of one spec (through archive.h only),
 * merge their cells and arrange the done ones in the (arch, task, depth,
 * regime, seed) table of data.h. */
#include "sections.h"
#include "compute.h"
#include "data.h"

#include "curvsweep/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One result of one archive, for merging by cell id. */
typedef struct {
  const cs_cell_result *r;
  int path;
} analysis_entry;

/* Order by cell id; for the same cell a done result first, then the one
 * whose archive stores more statistics columns (a newer format_version:
 * its values of the columns the older lacks are kept), then the earlier
 * archive. */
static int analysis_cmp_entry(const void *pa, const void *pb) {
  const analysis_entry *a = pa, *b = pb;
  if (a->r->cell_id != b->r->cell_id) return a->r->cell_id < b->r->cell_id ? -1 : 1;
  int ra = archive_status_rank(a->r->status), rb = archive_status_rank(b->r->status);
  if (ra != rb) return rb - ra;
  int la = __builtin_popcountll(a->r->stats_absent), lb = __builtin_popcountll(b->r->stats_absent);
  if (la != lb) return la - lb;
  return a->path - b->path;
}

static int analysis_cmp_i64(const void *pa, const void *pb) {
  int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
  return (a > b) - (a < b);
}

static int analysis_cmp_int(const void *pa, const void *pb) {
  int a = *(const int *)pa, b = *(const int *)pb;
  return (a > b) - (a < b);
}

/* Sort v[0..n-1] and drop repeats; returns the distinct count. */
static int64_t analysis_unique_i64(int64_t *v, int64_t n) {
  if (n == 0) return 0;
  qsort(v, n, sizeof *v, analysis_cmp_i64);
  int64_t k = 1;
  for (int64_t i = 1; i < n; i++)
    if (v[i] != v[k - 1]) v[k++] = v[i];
  return k;
}

static int64_t analysis_find_i64(const int64_t *v, int64_t n, int64_t key) {
  const int64_t *p = bsearch(&key, v, n, sizeof *v, analysis_cmp_i64);
  return p ? p - v : -1;
}

static int analysis_find_task(const analysis_data *D, cs_task_kind task) {
  for (int t = 0; t < D->n_task; t++)
    if (D->task[t] == task) return t;
  return -1;
}

static int analysis_find_depth(const analysis_data *D, int depth) {
  const int *p = bsearch(&depth, D->depth, D->n_depth, sizeof *D->depth, analysis_cmp_int);
  return p ? (int)(p - D->depth) : -1;
}

/* Mixed-radix id of a cell's position along the regime axes. */
static int64_t analysis_regime_id(const analysis_data *D, int64_t cell_id) {
  int64_t id = 0;
  for (int k = 0; k < D->n_other; k++) {
    int ax = D->other_axis[k];
    id = id * spec_axis_length(D->spec, ax) + spec_axis_value_index(D->spec, ax, cell_id);
  }
  return id;
}

/* "name=value;name=value" over the regime axes, or "all". */
static void analysis_regime_name(const analysis_data *D, int64_t cell_id, analysis_regime *g) {
  size_t used = 0;
  g->name[0] = '\0';
  for (int k = 0; k < D->n_other; k++) {
    char val[128];
    int ax = D->other_axis[k];
    spec_axis_value_text(D->spec, ax, cell_id, val, sizeof val);
    int n = snprintf(g->name + used, sizeof g->name - used, "%s%s=%s", k ? ";" : "",
                     spec_axis_name(D->spec, ax), val);
    if (n > 0) used += (size_t)n;
    if (used >= sizeof g->name) used = sizeof g->name - 1;
  }
  if (D->n_other == 0) snprintf(g->name, sizeof g->name, "all");
  size_t i = 0;
  for (const char *c = g->name; *c && i + 1 < sizeof g->file_tag; c++) {
    char ch = *c;
    int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
             ch == '.' || ch == '-';
    g->file_tag[i++] = ok ? ch : '_';
  }
  g->file_tag[i] = '\0';
}

/* The spec of archive path, with the file name in any error message. */
static int analysis_read_spec(const char *path, cs_spec **spec) {
  char *text = NULL;
  int rc = archive_read_spec(path, &text);
  if (!rc) rc = spec_load_string(text, path, spec);
  free(text);
  if (rc && !strstr(cs_error_message(), path)) cs_error_context(rc, "%s: ", path);
  return rc;
}

/* The sweep of the archives (D->spec): their spec when they have one
 * identity, the canonical resolved spec (docs/SPEC.md, "Identity"), so
 * archives of one spec written with other comments or spellings go
 * together; the union of their grids when their specs differ only in
 * [grid] values (spec_union_text, as merge); else CS_ERR_INPUT. specs[p]:
 * each archive's own spec. */
static int analysis_sweep_spec(analysis_data *D, cs_spec **specs) {
  for (int p = 0; p < D->n_paths; p++) CS_CHECK(analysis_read_spec(D->paths[p], &specs[p]));
  CS_CHECK(analysis_read_spec(D->paths[0], &D->spec));
  for (int p = 1; p < D->n_paths; p++) {
    if (!strcmp(spec_canonical_sha256(D->spec), spec_canonical_sha256(specs[p]))) continue;
    char *text = NULL;
    cs_spec *u = NULL;
    if (spec_union_text(D->spec, specs[p], &text) != CS_OK) {
      char why[512];
      snprintf(why, sizeof why, "%s", cs_error_message());
      free(text);
      return cs_error(CS_ERR_INPUT,
                      "%s and %s are archives of different sweeps (identity %.12s… vs %.12s…): "
                      "analyse them separately (several archives must be shards or copies of one "
                      "sweep, or of specs that differ only in [grid] values): %s",
                      D->paths[0], D->paths[p], spec_canonical_sha256(specs[0]),
                      spec_canonical_sha256(specs[p]), why);
    }
    int rc = spec_load_string(text, D->paths[0], &u);
    free(text);
    CS_CHECK(rc);
    spec_free(D->spec);
    D->spec = u;
  }
  return CS_OK;
}

/* Archive p's results as cells of D->spec (when its spec is not D->spec's
 * grid), their own ids kept in D->archive_ids[p]. */
static int analysis_map_results(analysis_data *D, int p, const cs_spec *spec) {
  if (!strcmp(spec_canonical_sha256(spec), spec_canonical_sha256(D->spec))) return CS_OK;
  spec_cell_map *m = NULL;
  CS_CHECK(spec_map_begin(spec, D->spec, &m));
  int rc = CS_CALLOC(D->archive_ids[p], D->n_per_path[p] + 1);
  for (int64_t i = 0; !rc && i < D->n_per_path[p]; i++) {
    cs_cell_result *r = &D->results_per_path[p][i];
    D->archive_ids[p][i] = r->cell_id;
    r->cell_id = spec_map_cell(m, r->cell_id);
  }
  spec_map_free(m);
  return rc;
}

/* Archive p's results under the ids its archive numbers them by, and back
 * (the per-point and field reads name cells as the archive does). */
static void analysis_swap_ids(analysis_data *D, int p) {
  if (!D->archive_ids || !D->archive_ids[p]) return;
  for (int64_t i = 0; i < D->n_per_path[p]; i++) {
    int64_t t = D->results_per_path[p][i].cell_id;
    D->results_per_path[p][i].cell_id = D->archive_ids[p][i];
    D->archive_ids[p][i] = t;
  }
}

/* Read every archive's spec, the sweep they form, then the results
 * (D->paths set; what is read is D's, freed by analysis_data_free). */
static int analysis_read_inputs(analysis_data *D) {
  CS_CHECK(CS_CALLOC(D->results_per_path, D->n_paths));
  CS_CHECK(CS_CALLOC(D->n_per_path, D->n_paths));
  CS_CHECK(CS_CALLOC(D->archive_ids, D->n_paths));
  cs_spec **specs = NULL;
  CS_CHECK(CS_CALLOC(specs, D->n_paths));
  int rc = analysis_sweep_spec(D, specs);
  for (int p = 0; !rc && p < D->n_paths; p++) {
    rc = archive_read_results_tables(D->paths[p], &D->results_per_path[p], &D->n_per_path[p]);
    if (rc && !strstr(cs_error_message(), D->paths[p])) cs_error_context(rc, "%s: ", D->paths[p]);
    if (!rc) rc = analysis_map_results(D, p, specs[p]);
  }
  for (int p = 0; p < D->n_paths; p++) spec_free(specs[p]);
  free(specs);
  return rc;
}

/* The working arrays of analysis_arrange, all freed by it in one place. */
typedef struct {
  analysis_entry *all;  /* (n_all) every result; after the merge, [0..n_cells-1] one per cell */
  int64_t n_cells;
  cs_config *cfg;       /* (n_cells) each cell's settings */
  int64_t *seeds, *depths, *regimes; /* (n_cells) values; sorted and unique after collecting */
  int64_t *ids;         /* (n_cells) each cell's regime id */
} analysis_arrange_work;

/* One entry per cell id by the archives' combining rule (archive.h:
 * archive_status_rank, the first archive on a tie; two done results of one
 * cell must agree); the status counts. */
static int analysis_merge(analysis_data *D, analysis_arrange_work *W) {
  int64_t n_all = 0;
  for (int p = 0; p < D->n_paths; p++) n_all += D->n_per_path[p];
  CS_CHECK(CS_CALLOC(W->all, n_all));
  int64_t k = 0;
  for (int p = 0; p < D->n_paths; p++)
    for (int64_t i = 0; i < D->n_per_path[p]; i++)
      W->all[k++] = (analysis_entry){&D->results_per_path[p][i], p};
  qsort(W->all, n_all, sizeof *W->all, analysis_cmp_entry);
  for (int64_t i = 0; i < n_all; i++) {
    const analysis_entry *e = &W->all[i];
    if (W->n_cells > 0 && e->r->cell_id == W->all[W->n_cells - 1].r->cell_id) {
      const analysis_entry *kept = &W->all[W->n_cells - 1];
      if (e->r->status == CELL_DONE && !archive_same_values(kept->r, e->r))
        return cs_error(CS_ERR_INPUT, "cell %lld is done in both %s and %s with different values: "
                        "these are not shards of one deterministic sweep; analyse one of them",
                        (long long)e->r->cell_id, D->paths[kept->path], D->paths[e->path]);
      continue;
    }
    W->all[W->n_cells++] = *e;
  }
  D->cells_selected = W->n_cells;
  for (int64_t i = 0; i < W->n_cells; i++) {
    const cs_cell_result *r = W->all[i].r;
    switch (r->status) {
      case CELL_DONE: D->done++; break;
      case CELL_FAILED: D->failed++; break;
      case CELL_DIVERGED: D->diverged++; break;
      default: D->pending++; break;
    }
    if (r->cell_id < 0 || r->cell_id >= D->cells_total)
      return cs_error(CS_ERR_INPUT, "%s: cell %lld is outside the spec's grid of %lld cells",
                      D->paths[0], (long long)r->cell_id, (long long)D->cells_total);
  }
  if (D->done == 0)
    return cs_error(CS_ERR_INPUT,
                    "%s%s: no finished cells yet (%lld of %lld cells pending, %lld failed, "
                    "%lld diverged): run or resume the sweep first",
                    D->paths[0], D->n_paths > 1 ? " and the other archives" : "", (long long)D->pending,
                    (long long)D->cells_total, (long long)D->failed, (long long)D->diverged);
  return CS_OK;
}

/* The arch, task, depth and seed axes; every other axis is a regime axis. */
static int analysis_find_axes(analysis_data *D) {
  D->ax_arch = spec_find_axis(D->spec, "arch");
  D->ax_task = spec_find_axis(D->spec, "task");
  D->ax_depth = spec_find_axis(D->spec, "depth");
  D->ax_seed = spec_find_axis(D->spec, "seed");
  int n_axes = spec_axis_count(D->spec);
  CS_CHECK(CS_CALLOC(D->other_axis, n_axes));
  for (int ax = 0; ax < n_axes; ax++)
    if (ax != D->ax_arch && ax != D->ax_task && ax != D->ax_depth && ax != D->ax_seed)
      D->other_axis[D->n_other++] = ax;
  return CS_OK;
}

/* The distinct archs, tasks, depths, seeds and regimes over the cells, and
 * the (zeroed) table and group arrays they size. */
static int analysis_collect_values(analysis_data *D, analysis_arrange_work *W) {
  int64_t n = W->n_cells;
  CS_CHECK(CS_CALLOC(W->cfg, n));
  CS_CHECK(CS_CALLOC(W->seeds, n));
  CS_CHECK(CS_CALLOC(W->depths, n));
  CS_CHECK(CS_CALLOC(W->regimes, n));
  CS_CHECK(CS_CALLOC(W->ids, n));
  int has_arch[ARCH_COUNT] = {0}, has_task[TASK_COUNT] = {0};
  for (int64_t i = 0; i < n; i++) {
    CS_CHECK(spec_cell_config(D->spec, W->all[i].r->cell_id, &W->cfg[i]));
    has_arch[W->cfg[i].arch] = 1;
    has_task[W->cfg[i].task] = 1;
    W->seeds[i] = W->cfg[i].seed;
    W->depths[i] = W->cfg[i].depth;
    W->regimes[i] = W->ids[i] = analysis_regime_id(D, W->all[i].r->cell_id);
  }
  for (int a = 0; a < ARCH_COUNT; a++)
    if (has_arch[a]) D->arch[D->n_arch++] = (cs_arch)a;
  for (int t = 0; t < TASK_COUNT; t++)
    if (has_task[t]) D->task[D->n_task++] = (cs_task_kind)t;
  D->n_seed = (int)analysis_unique_i64(W->seeds, n);
  D->n_depth = (int)analysis_unique_i64(W->depths, n);
  D->n_regime = (int)analysis_unique_i64(W->regimes, n);
  CS_CHECK(CS_CALLOC(D->seed, D->n_seed));
  CS_CHECK(CS_CALLOC(D->depth, D->n_depth));
  CS_CHECK(CS_CALLOC(D->regime, D->n_regime));
  memcpy(D->seed, W->seeds, sizeof *D->seed * D->n_seed);
  for (int d = 0; d < D->n_depth; d++) D->depth[d] = (int)W->depths[d];
  for (int r = 0; r < D->n_regime; r++) D->regime[r].cell_id = -1;
  size_t n_groups = (size_t)D->n_arch * D->n_task * D->n_depth * D->n_regime;
  CS_CHECK(CS_CALLOC(D->cell, n_groups * D->n_seed));
  CS_CHECK(CS_CALLOC(D->ended, n_groups * D->n_seed));
  CS_CHECK(CS_CALLOC(D->group, n_groups));
  CS_CHECK(CS_CALLOC(D->prefix, n_groups));
  return CS_OK;
}

/* Each cell into its group's counts, a done one into the table; each
 * regime described by its first cell. */
static void analysis_fill_table(analysis_data *D, const analysis_arrange_work *W) {
  for (int64_t i = 0; i < W->n_cells; i++) {
    const cs_cell_result *r = W->all[i].r;
    const cs_config *cfg = &W->cfg[i];
    int a = analysis_find_arch(D, cfg->arch), t = analysis_find_task(D, cfg->task);
    int d = analysis_find_depth(D, cfg->depth);
    int rg = (int)analysis_find_i64(W->regimes, D->n_regime, W->ids[i]);
    int s = (int)analysis_find_i64(D->seed, D->n_seed, cfg->seed);
    analysis_regime *g = &D->regime[rg];
    if (g->cell_id < 0) {
      g->cell_id = r->cell_id;
      g->cfg = *cfg;
      g->skeleton = config_affine_skeleton(cfg);
      analysis_regime_name(D, r->cell_id, g);
    }
    analysis_group *grp = &D->group[analysis_gidx(D, a, t, d, rg)];
    grp->n_cells++;
    if (r->status == CELL_FAILED) grp->n_failed++;
    if (r->status == CELL_DIVERGED) grp->n_diverged++;
    if (r->status == CELL_DONE || r->status == CELL_DIVERGED) D->ended[analysis_cidx(D, a, t, d, rg, s)] = r;
    if (r->status == CELL_DONE) {
      grp->n_done++;
      D->cell[analysis_cidx(D, a, t, d, rg, s)] = r;
      if (r->n_points > 0 && r->pt_x && r->pt_S_tilde) D->has_points = 1;
      if (r->n_points > 0 && r->pt_x && r->pt_class) D->has_point_class = 1;
    }
  }
}

static int analysis_arrange_pipeline(analysis_data *D, analysis_arrange_work *W) {
  D->cells_total = spec_cell_count(D->spec);
  CS_CHECK(analysis_merge(D, W));
  CS_CHECK(analysis_find_axes(D));
  CS_CHECK(analysis_collect_values(D, W));
  analysis_fill_table(D, W);
  return CS_OK;
}

/* Merge the results of D->results_per_path (D->spec set) and arrange the
 * done ones in the (arch, task, depth, regime, seed) table. */
static int analysis_arrange(analysis_data *D) {
  analysis_arrange_work W = {0};
  int rc = analysis_arrange_pipeline(D, &W);
  free(W.all), free(W.cfg), free(W.seeds), free(W.depths), free(W.regimes), free(W.ids);
  return rc;
}

/* The per-point arrays the figures draw (plots.c), as archive.h's mask. */
static unsigned analysis_drawn_arrays(void) {
  unsigned keep = ARCHIVE_POINTS_CLASS;
  for (int k = 0; k < RESULT_N_POINT_ARRAYS; k++)
    if (!strcmp(RESULT_POINT_NAMES[k], "S") || !strcmp(RESULT_POINT_NAMES[k], "S_tilde") ||
        !strcmp(RESULT_POINT_NAMES[k], "logdet_g"))
      keep |= 1u << k;
  return keep;
}

/* Mark the done cells of the table at the deepest depth of each (arch,
 * task, regime) in want[p][i] for result i of archive p: the cells whose
 * per-point values the figures draw (plots.c, "per-point K̃"), or with
 * fields_only the deepest cells whose spec asks for a curvature field, the
 * ones field_Kh_* draws (plots_fields.c). 1 when any cell is marked. */
static int analysis_cells_wanted(const analysis_data *D, unsigned char **want, int fields_only) {
  int found = 0;
  for (int a = 0; a < D->n_arch; a++)
    for (int t = 0; t < D->n_task; t++)
      for (int r = 0; r < D->n_regime; r++)
        for (int d = D->n_depth - 1; d >= 0; d--) {
          int any = 0;
          for (int s = 0; s < D->n_seed; s++) {
            const cs_cell_result *c = D->cell[analysis_cidx(D, a, t, d, r, s)];
            cs_config cfg;
            if (c && fields_only &&
                (spec_cell_config(D->spec, c->cell_id, &cfg) != CS_OK || cfg.field <= 0)) {
              cs_error_clear();
              continue;
            }
            for (int p = 0; c && p < D->n_paths; p++)
              if (c >= D->results_per_path[p] && c < D->results_per_path[p] + D->n_per_path[p])
                want[p][c - D->results_per_path[p]] = 1, any = 1;
          }
          if (any) {
            found = 1;
            break;
          }
        }
  return found;
}

/* 1 when some cell of the spec may carry a curvature field: a field axis,
 * or a fixed field > 0 (every cell has it then). Spares the per-cell walk
 * for the (usual) sweeps without fields. */
static int analysis_spec_has_field(const analysis_data *D) {
  cs_config cfg;
  if (spec_find_axis(D->spec, "field") >= 0) return 1;
  if (spec_cell_count(D->spec) < 1 || spec_cell_config(D->spec, 0, &cfg) != CS_OK) {
    cs_error_clear();
    return 1; /* undecided: let the walk ask each cell */
  }
  return cfg.field > 0;
}

/* The curvature fields field_Kh_* draws, read one cell's /fields group at a
 * time for the cells analysis_cells_wanted marks (never all of /fields). */
static int analysis_load_fields(analysis_data *D) {
  if (!analysis_spec_has_field(D)) return CS_OK;
  unsigned char **want = NULL;
  int rc = CS_CALLOC(want, D->n_paths), any = 0;
  for (int p = 0; !rc && p < D->n_paths; p++) rc = CS_CALLOC(want[p], D->n_per_path[p] + 1);
  if (!rc) any = analysis_cells_wanted(D, want, 1);
  for (int p = 0; !rc && any && p < D->n_paths; p++) {
    analysis_swap_ids(D, p);
    rc = archive_read_fields_of(D->paths[p], D->results_per_path[p], D->n_per_path[p], want[p]);
    analysis_swap_ids(D, p);
  }
  for (int p = 0; want && p < D->n_paths; p++) free(want[p]);
  free(want);
  return rc;
}

/* The per-point values the figures use, streamed from the archives (never
 * all of /points in memory): the wanted cells' x, S, S_tilde, logdet_g and
 * class (S_err, tr_g and H_norm are not drawn; older archives give them
 * too, dropped here). */
static int analysis_load_points(analysis_data *D) {
  if (!spec_sweep(D->spec)->save_points) return CS_OK;
  unsigned char **want = NULL;
  int rc = CS_CALLOC(want, D->n_paths);
  for (int p = 0; !rc && p < D->n_paths; p++) rc = CS_CALLOC(want[p], D->n_per_path[p] + 1);
  if (!rc) analysis_cells_wanted(D, want, 0);
  for (int p = 0; !rc && p < D->n_paths; p++) {
    analysis_swap_ids(D, p);
    rc = archive_read_points_of(D->paths[p], D->results_per_path[p], D->n_per_path[p], want[p],
                                analysis_drawn_arrays());
    analysis_swap_ids(D, p);
  }
  for (int p = 0; !rc && p < D->n_paths; p++)
    for (int64_t i = 0; i < D->n_per_path[p]; i++) {
      cs_cell_result *r = &D->results_per_path[p][i];
      free(r->pt_S_err), free(r->pt_tr_g), free(r->pt_H_norm);
      r->pt_S_err = r->pt_tr_g = r->pt_H_norm = NULL;
      if (r->n_points > 0 && r->pt_x && r->pt_S_tilde) D->has_points = 1;
      if (r->n_points > 0 && r->pt_x && r->pt_class) D->has_point_class = 1;
    }
  for (int p = 0; want && p < D->n_paths; p++) free(want[p]);
  free(want);
  return rc;
}

int analysis_load(const char *const *paths, int n_paths, analysis_data *D) {
  if (n_paths < 1) return cs_error(CS_ERR_INPUT, "analyze: no archive given");
  D->paths = paths;
  D->n_paths = n_paths;
  CS_CHECK(analysis_read_inputs(D));
  CS_CHECK(analysis_arrange(D));
  CS_CHECK(analysis_load_fields(D));
  return analysis_load_points(D);
}

int analysis_load_results(const char *spec_text, const cs_cell_result *results, int64_t n,
                          const char *const *label, analysis_data *D) {
  D->paths = label;
  D->n_paths = 1;
  D->borrowed = 1;
  CS_CHECK(spec_load_string(spec_text, label[0], &D->spec));
  CS_CHECK(CS_CALLOC(D->results_per_path, 1));
  CS_CHECK(CS_CALLOC(D->n_per_path, 1));
  D->results_per_path[0] = (cs_cell_result *)results; /* borrowed: never written or freed */
  D->n_per_path[0] = n;
  return analysis_arrange(D);
}

void analysis_data_free(analysis_data *D) {
  for (int s = 0; s < ANALYSIS_N_SECTIONS; s++)
    if (ANALYSIS_SECTIONS[s].free) ANALYSIS_SECTIONS[s].free(D);
  analysis_checks_free(&D->checks);
  if (D->prefix) {
    size_t n_groups = (size_t)D->n_arch * D->n_task * D->n_depth * D->n_regime;
    for (size_t i = 0; i < n_groups; i++) free(D->prefix[i]);
  }
  free(D->prefix), free(D->group), free(D->cell), free(D->ended), free(D->amp), free(D->gap);
  free(D->seed), free(D->depth), free(D->regime), free(D->other_axis);
  for (int p = 0; p < D->n_paths && !D->borrowed; p++) {
    if (!D->results_per_path || !D->results_per_path[p]) continue;
    for (int64_t i = 0; i < D->n_per_path[p]; i++) result_free(&D->results_per_path[p][i]);
    free(D->results_per_path[p]);
  }
  for (int p = 0; D->archive_ids && p < D->n_paths; p++) free(D->archive_ids[p]);
  free(D->results_per_path), free(D->n_per_path), free(D->archive_ids);
  spec_free(D->spec);
  memset(D, 0, sizeof *D);
}
