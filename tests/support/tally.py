"""tally.py — the pass/fail count the Python checkers share
(tests/export_check.py, tests/python_module_check.py,
tests/archive_h5py_check.py): check(cond, what) counts a pass or keeps
what failed; finish() prints each failure and the counts, and exits 1 on
any failure (0 otherwise)."""
import sys

failures = []
passes = 0


def check(cond, what):
    global passes
    if cond:
        passes += 1
    else:
        failures.append(what)


def finish():
    for msg in failures:
        print("FAIL:", msg)
    print("%d passed, %d failed" % (passes, len(failures)))
    sys.exit(1 if failures else 0)
