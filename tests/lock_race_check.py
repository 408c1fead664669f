#!/usr/bin/env python3
"""lock_race_check.py REF.h5 TRIAL.h5 RUNS_BEFORE PENDING_BEFORE WRITERS — one trial of
tests/sh_lock_race.sh: TRIAL.h5 equals REF.h5 (tests/archive_compare.py), and
its /runs table gained exactly one finished row per process that exited 0
(WRITERS), whose cells_run add up to exactly the cells pending before
(PENDING_BEFORE): had two processes written at once, both would have run
some cell (a larger sum) or one's rows would have replaced the other's.
Exit 0 when all hold, 1 with the reason otherwise."""
import os
import sys

import h5py

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import archive_compare  # noqa: E402

ref, trial = sys.argv[1], sys.argv[2]
runs_before, pending_before, writers = (int(x) for x in sys.argv[3:6])
sys.argv = [sys.argv[0], ref, trial]
if archive_compare.main() != 0:
    sys.exit(1)
with h5py.File(trial, "r") as f:
    runs = f["runs"][:]
    pending = int(sum(s == b"pending" for s in f["cells"]["status"]))
new = runs[runs_before:]
problems = []
if len(new) != writers:
    problems.append(f"{len(new)} new /runs rows, {writers} processes exited 0")
if any(r["end"] == b"" for r in new):
    problems.append("a new /runs row was never ended")
ran = int(sum(int(r["cells_run"]) for r in new))
if ran != pending_before:
    problems.append(f"the writers ran {ran} cells in all; {pending_before} were pending")
if pending:
    problems.append(f"{pending} cells still pending")
if problems:
    print(f"{trial}: " + "; ".join(problems))
    sys.exit(1)
