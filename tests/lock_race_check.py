#!/usr/bin/env python3
"""lock_race_check.py REF.h5 TRIALS.txt — the archive checks of
tests/sh_lock_race.sh, every trial in one process (h5py's start is most of
the cost of one check). Each line of TRIALS.txt is
"TRIAL.h5 RUNS_BEFORE PENDING_BEFORE WRITERS": TRIAL.h5 must equal REF.h5
(tests/archive_compare.py), and its /runs table must have gained exactly one
finished row per process that exited 0 (WRITERS), whose cells_run add up to
exactly the cells pending before (PENDING_BEFORE): had two processes
written at once, both would have run some cell (a larger sum) or one's rows
would have replaced the other's. Prints "TRIAL.h5: ok" or "TRIAL.h5: <the
problems>" per line; exit 0 when every trial holds, 1 otherwise.

lock_race_check.py --state A.h5 prints A's /runs rows and pending cells
(the "before" of a trial that starts from A)."""
import os
import sys

import h5py

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import archive_compare  # noqa: E402


def pending_cells(f):
    return int(sum(s == b"pending" for s in f["cells"]["status"]))


def trial_problems(ref, trial, runs_before, pending_before, writers):
    try:
        d = archive_compare.compare(ref, trial, False)
        if d:
            return [d]
        with h5py.File(trial, "r") as f:
            runs = f["runs"][:]
            pending = pending_cells(f)
    except Exception as e:  # an archive that cannot be read fails its trial
        return [f"cannot read: {e!r}"]
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
    return problems


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--state":
        with h5py.File(sys.argv[2], "r") as f:
            print(len(f["runs"]), pending_cells(f))
        return 0
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    status = 0
    with open(sys.argv[2]) as lines:
        for line in lines:
            trial, runs_before, pending_before, writers = line.split()
            problems = trial_problems(sys.argv[1], trial, int(runs_before), int(pending_before),
                                      int(writers))
            print(f"{trial}: " + ("; ".join(problems) if problems else "ok"))
            status |= bool(problems)
    return status


if __name__ == "__main__":
    sys.exit(main())
