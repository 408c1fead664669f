/* cmd_check.c — `curvsweep check SPEC.ini [--set SECTION.KEY=VALUE]...`: every
 * error of a spec, or a one-line summary of a good one (docs/SPEC.md,
 * "curvsweep check"). */
#include "cli.h"

#include "curvsweep/error.h"
#include "curvsweep/model.h"
#include "curvsweep/sweep.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *CHECK_HELP =
    "usage: curvsweep check SPEC.ini [--set SECTION.KEY=VALUE]...\n\n"
    "Read SPEC.ini (with the overrides of --set, as 'curvsweep run' would) and list\n"
    "every error in it, one line each, naming the file and line (or '--set\n"
    "SECTION.KEY') and the key, and saying what is allowed; exit status 2 when there\n"
    "is any. 'run' and 'train' stop at the first error. A good spec gets one line:\n"
    "its cells and axes, its model families, the memory estimate of its largest cell\n"
    "(docs/SPEC.md, \"Sizes\") and the cost model's estimate of the whole grid ('run\n"
    "--dry-run' adds an archive's remaining cells and the wall time on N ranks).\n"
    "Nothing is written.\n\n"
    "  --set SECTION.KEY=VALUE  override one key of the spec (repeatable)\n";

/* on_error: print each message as it comes, and count them. */
static void check_error(void *ctx, const char *message) {
  (*(int *)ctx)++;
  cli_print(stderr, "%s\n", message);
}

/* The families the grid trains: the family axis's values, else the one. */
static void check_families(const cs_spec *spec, char *buf, size_t len) {
  int a = spec_find_axis(spec, "family");
  cs_config c;
  if (a < 0) {
    snprintf(buf, len, "%s", spec_cell_config(spec, 0, &c) ? "?" : config_family_name(c.family));
    return;
  }
  int64_t stride = 1;
  for (int b = a + 1; b < spec_axis_count(spec); b++) stride *= spec_axis_length(spec, b);
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < spec_axis_length(spec, a) && used < len; i++) {
    char v[64];
    spec_axis_value_text(spec, a, (int64_t)i * stride, v, sizeof v);
    used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", v);
  }
}

/* The one-line summary of a spec that loaded without errors; an exit status. */
static int check_report(const char *spec_path, const cs_spec *spec) {
  sweep_plan_summary p;
  int rc = sweep_plan(spec, NULL, NULL, 1, &p);
  if (rc) return cli_fail(rc);
  char axes[512] = "", families[256];
  size_t used = 0;
  for (int a = 0; a < spec_axis_count(spec) && used < sizeof axes; a++)
    used += (size_t)snprintf(axes + used, sizeof axes - used, "%s%s[%d]", a ? " x " : " = ",
                             spec_axis_name(spec, a), spec_axis_length(spec, a));
  check_families(spec, families, sizeof families);
  double mib = (double)spec_max_cell_bytes(spec) / (1024.0 * 1024.0);
  cli_print(stdout, "%s: ok: %lld cells%s; family %s; largest cell about %.3g MiB of memory; "
            "about %.3g GFLOP in all (run --dry-run for the wall time)\n",
            spec_path, (long long)spec_cell_count(spec), axes, families, mib, p.cost / 1e9);
  return EXIT_OK;
}

int cmd_check(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    fputs(CHECK_HELP, stdout);
    return EXIT_OK;
  }
  const char *spec_path = NULL;
  int nsets = 0, took, status = EXIT_OK;
  const char **sets = calloc((size_t)argc + 1, sizeof *sets);
  if (!sets) return cli_fail(cs_error(CS_ERR_NOMEM, "out of memory for the arguments"));
  for (int i = 1; i < argc && status == EXIT_OK; i++) {
    if ((took = cli_take_set("check", argc, argv, &i, sets, &nsets, 1)) != 0)
      status = took < 0 ? EXIT_USAGE : EXIT_OK;
    else if (argv[i][0] == '-')
      status = cli_usage_error("check", "unknown option '%s'", argv[i]);
    else if (!spec_path)
      spec_path = argv[i];
    else
      status = cli_usage_error("check", "unexpected argument '%s'", argv[i]);
  }
  if (status == EXIT_OK && !spec_path) status = cli_usage_error("check", "missing SPEC.ini");
  int errors = 0, rc = CS_OK;
  cs_spec *spec = NULL;
  spec_load_options lo = {sets, nsets, check_error, &errors, model_cell_memory};
  if (status == EXIT_OK) rc = spec_load_file_opts(spec_path, &lo, &spec);
  free(sets);
  if (rc && errors == 0) {
    status = cli_fail(rc);  // the file itself (missing, unreadable)
  } else if (rc) {
    cli_print(stderr, "curvsweep check: %d error%s in %s%s\n", errors, errors > 1 ? "s" : "",
              spec_path, nsets ? " with its --set overrides" : "");
    status = rc == CS_ERR_INPUT ? EXIT_USAGE : EXIT_RUNTIME;
  }
  if (status == EXIT_OK) status = check_report(spec_path, spec);
  spec_free(spec);
  return status;
}
