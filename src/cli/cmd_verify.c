/* cmd_verify.c — `curvsweep verify`: the theory checks as a table. */
#include "cli.h"

#include "curvsweep/verify.h"

#include <stdio.h>

static const char *VERIFY_HELP =
    "usage: curvsweep verify\n\n"
    "Run the theory checks of the geometry engine (docs/NUMERICS.md) and print one row per\n"
    "check: analytic surfaces (sphere, cylinder, saddle, torus), flatness of ungated\n"
    "attention in the affine regime at depths 1..8, curvature of the gated skeleton,\n"
    "a gated point of positive curvature, and the scale behaviour of K and K~.\n"
    "Exit status 0 only if every check passes.\n";

int cmd_verify(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    fputs(VERIFY_HELP, stdout);
    return EXIT_OK;
  }
  if (argc > 1) return cli_usage_error("verify", "unexpected argument '%s'", argv[1]);
  verify_table t = {0};
  int rc = verify_all(&t), failed = 0;
  if (!rc) {
    printf("%-60s %14s %14s %10s  %s\n", "check", "value", "expected", "tol", "result");
    for (int i = 0; i < t.n; i++) {
      const verify_check *r = &t.rows[i];
      printf("%-60s %14.6e %14.6e %10.1e  %s\n", r->check, r->value, r->expected, r->tol,
             r->pass ? "pass" : "FAIL");
      failed += !r->pass;
    }
    printf("\nverify: %d of %d checks passed\n", t.n - failed, t.n);
  }
  verify_table_free(&t);
  return rc ? cli_fail(rc) : failed ? EXIT_RUNTIME : EXIT_OK;
}
