#!/usr/bin/env bash
# Slurm end to end, on a real Slurm started here (scripts/slurm-local.sh) and
# stopped on any exit:
#  (a) jobs/sweep.sbatch with 2 tasks (srun --mpi=pmix) == a direct mpiexec run;
#  (b) jobs/submit-array.sh: 3 array tasks (--shard i/3) + the afterok merge
#      job; merged archive == the direct run;
#  (c) a running sweep interrupted twice: `scancel --signal=USR1` (to the
#      ranks; the job requeues itself) and then a real preemption by a job of
#      the higher-tier partition (Slurm requeues it); the final archive ==
#      an uninterrupted run, and /runs has a row for each of the 3 runs with
#      the same job id and restart counts 0, 1, 2;
#  (d) 2 array tasks, one interrupted with USR1: it requeues itself, the
#      afterok merge job waits for it; merged archive == the direct run.
# Slurm that is not installed or cannot start makes the test exit 77, which
# ctest reports as skipped (tests/tests.cmake); scripts/test.sh installs it.
export PATH=$PATH:/usr/sbin
# short path: the munge socket lives under it (unix socket paths are short)
tmp_template=/tmp/cs-slurm.XXXXXX
source "${CS_SOURCE_DIR:?}/tests/support/common.sh"
sl=$tmp/slurm
on_exit_extra() {
  "$src/scripts/slurm-local.sh" stop "$sl" >/dev/null 2>&1
  if [[ -n ${CS_KEEP_TMP:-} ]]; then echo "sh_slurm: kept $tmp.kept"; cp -a "$tmp" "$tmp.kept"; fi
}
trap 'echo "sh_slurm: interrupted"; exit 130' INT TERM HUP
PY=/usr/bin/python3
[[ -x $PY ]] || PY=python3
t_start=$SECONDS
deadline=$((SECONDS + 720)) # stay well inside ctest's 900 s, so cleanup runs
elapsed() { echo "$((SECONDS - t_start)) s"; }

daemon_logs() {
  local f
  for f in "$sl"/log/*.log; do
    [[ -f $f ]] && { echo "----- $f (last 30 lines)"; tail -n 30 "$f"; }
  done
}

# --- Slurm up ------------------------------------------------------------
for b in munged slurmctld slurmd sbatch scontrol; do
  if ! command -v "$b" >/dev/null; then
    echo "SKIP: $b is not installed: run CS_WITH_SLURM=1 scripts/install-deps.sh (scripts/test.sh does)"
    exit 77
  fi
done
if ! envs=$("$src/scripts/slurm-local.sh" start "$sl" 2>"$tmp/start.err"); then
  echo "SKIP: Slurm did not start on this machine:"
  cat "$tmp/start.err"
  daemon_logs
  exit 77
fi
eval "$envs"
cat "$tmp/start.err"
ok

work=$tmp/work
mkdir -p "$work" && cd "$work" || exit 1
export CS_BIN=$bin

job_field() { # job_field JOB FIELD: one field of `scontrol show job` (no slurmdbd here)
  scontrol show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n1
}
show_job() { # diagnostics for a job: its state and log
  echo "----- scontrol show job $1"
  scontrol show job "$1" 2>&1 | head -n 30
  local f
  for f in "${@:2}"; do [[ -f $f ]] && { echo "----- $f"; grep -v '^\[' "$f" | tail -n 40; }; done
}
# wait_job JOB TIMEOUT: until the job has finished; its final state in $state
wait_job() {
  local j=$1 until=$((SECONDS + $2))
  ((until > deadline)) && until=$deadline
  while ((SECONDS < until)); do
    state=$(job_field "$j" JobState)
    case $state in
      COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | BOOT_FAIL | DEADLINE | OUT_OF_MEMORY) return 0 ;;
    esac
    sleep 0.5
  done
  state="still ${state:-unknown} after $2 s"
  return 1
}
done_cells() { # cells done in an archive (0 while it does not exist yet)
  local d
  d=$("$bin" info "$1" 2>/dev/null | sed -n 's/^cells *[0-9]*: \([0-9]*\) done.*/\1/p')
  echo "${d:-0}"
}
# wait_until TIMEOUT CMD...: until CMD succeeds
wait_until() {
  local until=$((SECONDS + $1))
  shift
  ((until > deadline)) && until=$deadline
  while ((SECONDS < until)); do "$@" && return 0; sleep 0.3; done
  return 1
}
runs_field() { # runs_field ARCHIVE FIELD: the /runs column, one value a line
  "$PY" -c '
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    for v in f["runs"][:][sys.argv[2]]:
        print(v.decode() if isinstance(v, bytes) else v)' "$1" "$2"
}

small=$src/tests/specs/sweep-small.ini
mpi 2 "$bin" run "$small" -o ref-small.h5 2>ref-small.err && ok || { bad "direct run of sweep-small"; cat ref-small.err; }

# --- (a) one MPI job ------------------------------------------------------
t0=$SECONDS
j=$(sbatch --parsable -n 2 -o a-%j.out "$src/jobs/sweep.sbatch" "$small" a.h5) || bad "sbatch jobs/sweep.sbatch"
j=${j%%;*}
if wait_job "$j" 180 && [[ $state == COMPLETED ]]; then ok; else
  bad "(a) sweep job $j: $state"; show_job "$j" "a-$j.out"; daemon_logs
fi
cmp_archives ref-small.h5 a.h5 && ok || bad "(a) archive of the Slurm job differs from the direct run"
[[ $(runs_field a.h5 slurm_job 2>/dev/null) == "$j" ]] && ok || bad "(a) /runs does not name job $j: $(runs_field a.h5 slurm_job 2>&1)"
[[ $(runs_field a.h5 ranks 2>/dev/null) == 2 ]] && ok || bad "(a) /runs ranks is not 2: $(runs_field a.h5 ranks 2>&1)"
echo "(a) sweep job: $((SECONDS - t0)) s"

# --- (b) job array of 3 shards + merge job ---------------------------------
t0=$SECONDS
if read -r aj mj < <("$src/jobs/submit-array.sh" --parsable "$small" 3 shard -- -o 'b-%A_%a.out' 2>&1) &&
  [[ $aj =~ ^[0-9]+$ && $mj =~ ^[0-9]+$ ]]; then
  ok
  [[ $(job_field "$mj" Dependency) == *afterok:$aj* ]] && ok || bad "(b) merge job $mj does not depend on afterok:$aj: $(job_field "$mj" Dependency)"
  if wait_job "$mj" 240 && [[ $state == COMPLETED ]]; then ok; else
    bad "(b) merge job $mj: $state"
    show_job "$mj" curvsweep-merge-"$mj".out
    for i in 0 1 2; do show_job "${aj}_$i" "b-${aj}_$i.out"; done
    daemon_logs
  fi
  for i in 0 1 2; do
    [[ $(job_field "${aj}_$i" JobState) == COMPLETED ]] && ok || bad "(b) array task ${aj}_$i: $(job_field "${aj}_$i" JobState)"
  done
  cmp_archives ref-small.h5 shard.h5 && ok || bad "(b) merged shards differ from the direct run"
  [[ $(runs_field shard.h5 slurm_job 2>/dev/null | sort | tr '\n' ' ') == "${aj}_0 ${aj}_1 ${aj}_2 " ]] && ok ||
    bad "(b) /runs of the merged archive: $(runs_field shard.h5 slurm_job 2>&1 | tr '\n' ' ')"
  if "$bin" analyze --help >/dev/null 2>&1; then
    [[ -f shard-report/index.md ]] && ok || { bad "(b) the merge job wrote no report"; show_job "$mj" curvsweep-merge-"$mj".out; }
  else
    grep -q "report skipped" curvsweep-merge-"$mj".out && ok || bad "(b) merge job log says nothing about the report"
  fi
else
  bad "(b) jobs/submit-array.sh: $aj $mj"
fi
echo "(b) array + merge: $((SECONDS - t0)) s"

# --- (c) interrupt, requeue, preempt, resume -------------------------------
# sweep-kill with longer training: 24 cells, about ten seconds at 2 ranks
# (each interruption below lands with 18 or more cells to go)
sed 's/^epochs .*/epochs     = 500/' "$src/tests/specs/sweep-kill.ini" >slow.ini
total=$("$bin" check slow.ini | sed -n 's/.*: ok: \([0-9]*\) cells.*/\1/p')
[[ $total -eq 24 ]] && ok || bad "curvsweep check slow.ini: ${total:-no} cells (wanted 24)"
# The uninterrupted reference runs while the job waits for its first
# requeue (~10 s: slurm-local.sh, cred_expire), a wait it fills; it is
# waited for before the first comparison.
ref_pid="" ref_started=""
ref_start() { # the direct run in the background, once
  [[ -n $ref_started ]] && return
  ref_started=$SECONDS
  # paths under $tmp: the exit trap ends it
  mpi 2 "$bin" run "$work/slow.ini" -o "$work/ref-slow.h5" >/dev/null 2>ref-slow.err &
  ref_pid=$!
}
ref_done() { # the direct run finished and checked, once
  ref_start
  [[ -z $ref_pid ]] && return
  wait "$ref_pid" && ok || { bad "direct run of slow.ini"; cat ref-slow.err; }
  ref_pid=""
  echo "(c) uninterrupted direct run: done $((SECONDS - ref_started)) s after its start"
  [[ $(done_cells ref-slow.h5) -eq $total ]] && ok || bad "the direct run of slow.ini did not finish all $total cells"
}

t0=$SECONDS
j=$(sbatch --parsable -n 2 -o c-%j.out "$src/jobs/sweep.sbatch" slow.ini c.h5)
j=${j%%;*}
at_least() { (($(done_cells c.h5) >= $1)); }
running_restart() { [[ $(job_field "$j" JobState) == RUNNING && $(job_field "$j" Restarts) == "$1" ]]; }

# 1. USR1 to the job's steps (what `scancel --signal=USR1` does by default):
#    the ranks stop, the batch script sees "resume with the same command"
#    and requeues the job.
if wait_until 120 at_least 2; then
  n1=$(done_cells c.h5)
  if ((n1 < total)); then ok; else bad "(c) the sweep ended before it could be interrupted ($n1 of $total)"; fi
  scancel --signal=USR1 "$j" && ok || bad "(c) scancel --signal=USR1 $j"
  ref_start
  echo "(c) USR1 after $((SECONDS - t0)) s at $n1/$total cells"
  if wait_until 120 running_restart 1; then ok; else
    bad "(c) job $j was not requeued and restarted after USR1 ($(job_field "$j" JobState), restarts $(job_field "$j" Restarts))"
    show_job "$j" "c-$j.out"
  fi
  echo "(c) running again (restart 1) after $((SECONDS - t0)) s"
  # 2. a real preemption: a job of partition 'urgent' (PriorityTier=2) needs
  #    the CPUs; Slurm signals the job (the script forwards to the ranks) and
  #    requeues it (PreemptMode=REQUEUE).
  if wait_until 120 at_least $((n1 + 2)); then
    n2=$(done_cells c.h5)
    if ((n2 < total)); then ok; else bad "(c) the sweep ended before the preemption ($n2 of $total)"; fi
    u=$(sbatch --parsable -p urgent -n 2 -o urgent-%j.out --wrap 'echo urgent job ran')
    echo "(c) preempted by job $u after $((SECONDS - t0)) s at $n2/$total cells"
    if wait_until 120 running_restart 2; then ok; else
      bad "(c) job $j was not preempted, requeued and restarted ($(job_field "$j" JobState), restarts $(job_field "$j" Restarts))"
      show_job "$j" "c-$j.out"; show_job "$u" "urgent-$u.out"
    fi
  else
    bad "(c) no progress after the requeue"; show_job "$j" "c-$j.out"
  fi
else
  bad "(c) the sweep job made no progress"; show_job "$j" "c-$j.out"; daemon_logs
fi
if wait_job "$j" 300 && [[ $state == COMPLETED ]]; then ok; else
  bad "(c) sweep job $j: $state"; show_job "$j" "c-$j.out"; daemon_logs
fi
echo "(c) interrupted + preempted job done after $((SECONDS - t0)) s"
ref_done
cmp_archives ref-slow.h5 c.h5 && ok || bad "(c) the requeued job's archive differs from the uninterrupted run"
jobs_col=$(runs_field c.h5 slurm_job 2>/dev/null | tr '\n' ' ')
restarts_col=$(runs_field c.h5 requeue_count 2>/dev/null | tr '\n' ' ')
[[ $jobs_col == "$j $j $j " ]] && ok || bad "(c) /runs slurm_job: '$jobs_col' (wanted 3 rows of $j)"
[[ $restarts_col == "0 1 2 " ]] && ok || bad "(c) /runs requeue_count: '$restarts_col' (wanted 0 1 2)"
grep -q "requeueing job $j" "c-$j.out" && ok || bad "(c) the job log does not show the self-requeue"
grep -q "DUE TO PREEMPTION" "c-$j.out" && ok || bad "(c) the job log does not show the preemption"
[[ $(grep -c "resume with the same command" "c-$j.out") -ge 2 ]] && ok ||
  bad "(c) curvsweep did not report both interruptions"
[[ -f urgent-${u:-x}.out ]] && grep -q "urgent job ran" "urgent-$u.out" && ok || bad "(c) the preempting job did not run"
if ((fails)); then show_job "$j" "c-$j.out"; fi

# --- (d) an interrupted array task requeues itself; the merge job waits ----
t0=$SECONDS
if read -r aj mj < <("$src/jobs/submit-array.sh" --parsable slow.ini 2 dshard -- -o 'd-%A_%a.out' 2>&1) &&
  [[ $aj =~ ^[0-9]+$ && $mj =~ ^[0-9]+$ ]]; then
  ok
  # shellcheck disable=SC2016 # expanded by eval, at every poll
  if wait_until 120 eval '(($(done_cells dshard-1.h5) >= 1))'; then
    scancel --signal=USR1 "${aj}_1" && ok || bad "(d) scancel --signal=USR1 ${aj}_1"
  else
    bad "(d) array task ${aj}_1 made no progress"; show_job "${aj}_1" "d-${aj}_1.out"
  fi
  if wait_job "$mj" 300 && [[ $state == COMPLETED ]]; then ok; else
    bad "(d) merge job $mj: $state"; show_job "$mj" curvsweep-merge-"$mj".out
    for i in 0 1; do show_job "${aj}_$i" "d-${aj}_$i.out"; done
  fi
  [[ $(job_field "${aj}_1" Restarts) == 1 ]] && ok || bad "(d) array task ${aj}_1 restarts: $(job_field "${aj}_1" Restarts) (wanted 1)"
  cmp_archives ref-slow.h5 dshard.h5 && ok || bad "(d) merged shards with a requeued task differ from the direct run"
  [[ $(runs_field dshard.h5 slurm_job 2>/dev/null | sort | tr '\n' ' ') == "${aj}_0 ${aj}_1 ${aj}_1 " ]] && ok ||
    bad "(d) /runs of the merged archive: $(runs_field dshard.h5 slurm_job 2>&1 | tr '\n' ' ')"
else
  bad "(d) jobs/submit-array.sh: $aj $mj"
fi
echo "(d) array with a requeued task + merge: $((SECONDS - t0)) s"

# --- Slurm down -------------------------------------------------------------
"$src/scripts/slurm-local.sh" stop "$sl" && ok || bad "slurm-local.sh stop"
left=$(for e in /proc/[0-9]*/environ; do tr '\0' '\n' 2>/dev/null <"$e" | grep -qxF "CS_SLURM_INSTANCE=$sl" && echo "${e//[^0-9]/}"; done)
[[ -z $left ]] && ok || bad "processes left after stop: $left"

echo "sh_slurm: $(elapsed) in all"
finish
