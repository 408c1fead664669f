#!/usr/bin/env bash
# A real, single-node Slurm on localhost for tests and demos: munged, slurmctld
# and slurmd, all run by the caller (root), with every file in one directory.
#
#   scripts/slurm-local.sh start  [DIR]   start (or find running) and print the exports
#   scripts/slurm-local.sh stop   [DIR]   cancel jobs, stop every daemon it started
#   scripts/slurm-local.sh status [DIR]   exit 0 when the node answers and is usable
#   scripts/slurm-local.sh env    [DIR]   print the exports only
#
# DIR defaults to $CS_SLURM_DIR; without either, start makes a private one
# (mktemp -d: mode 0700, this user's) and prints it as CS_SLURM_DIR. After start:
#   eval "$(scripts/slurm-local.sh start)"     # sets SLURM_CONF and CS_SLURM_DIR
#   sbatch jobs/sweep.sbatch ...
#   scripts/slurm-local.sh stop                # finds DIR in CS_SLURM_DIR
# A DIR that exists must be a directory (not a symbolic link) of this user
# that no one else may write to; anything else is refused (docs/SECURITY.md:
# the daemons read their configuration and key from it, and stop kills the
# processes its pid files name).
#
# Nothing outside DIR is written: munge has its own key, socket, pid and log;
# slurm.conf points at it (AuthInfo=socket=...). Ports are picked free on
# 127.0.0.1, so a system Slurm on the default ports is not disturbed.
# Needs: slurm-wlm munge slurm-wlm-basic-plugins (CS_WITH_SLURM=1 scripts/install-deps.sh).
# Options (environment): CS_SLURM_CPUS (default: nproc), CS_SLURM_TIMEOUT (s to
# wait for the node, default 60), CS_SLURM_CRED_EXPIRE (s a requeued job waits
# before it may start again, default 10; Slurm's own default is 120).
set -uo pipefail

cmd=${1:-}
dir=${2:-${CS_SLURM_DIR:-}}
cpus=${CS_SLURM_CPUS:-$(nproc)}
wait_s=${CS_SLURM_TIMEOUT:-60}
# Every daemon (and so every slurmstepd) carries this marker in its environment,
# which is how stop finds what this instance started and nothing else (set
# with conf once DIR is known, at the end).
marker="" conf=""

usage() { sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
say() { echo "slurm-local: $*" >&2; }

# DIR is ours alone: a real directory of this user, writable by no one else
# (checked before anything in it is read, written or believed).
dir_is_private() {
  local d=$1 owner mode
  if [[ -L $d || ! -d $d ]]; then
    say "$d is not a directory (or is a symbolic link): refused; use another DIR"; return 1
  fi
  owner=$(stat -c %u "$d") mode=$(stat -c %a "$d")
  if [[ $owner != "$(id -u)" ]]; then
    say "$d belongs to uid $owner, not to you: refused; use another DIR"; return 1
  fi
  if (( (8#$mode & 8#022) != 0 )); then
    say "$d (mode $mode) is writable by others: refused; use another DIR"; return 1
  fi
  chmod 700 "$d"
}

# The DIR of this command: the one given (made private when new), else a
# fresh mktemp -d for start; the other commands need one.
pick_dir() {
  if [[ -z $dir ]]; then
    [[ $cmd == start ]] || { say "no DIR given and CS_SLURM_DIR is not set (start prints it)"; return 1; }
    dir=$(mktemp -d "${TMPDIR:-/tmp}/curvsweep-slurm.XXXXXX") || return 1
  elif [[ ! -e $dir && ! -L $dir && $cmd == start ]]; then
    mkdir -p "$(dirname "$dir")" && mkdir -m 700 "$dir" || return 1
  elif [[ ! -e $dir && ! -L $dir ]]; then
    return 0 # nothing there: nothing to stop or report
  fi
  dir_is_private "$dir"
}

print_env() {
  printf 'export SLURM_CONF=%q\n' "$conf"
  printf 'export CS_SLURM_DIR=%q\n' "$dir"
}

pid_of() { # pid from a pid file, if that process is alive
  local f=$1 p
  [[ -s $f ]] || return 1
  p=$(cat "$f" 2>/dev/null) || return 1
  [[ $p =~ ^[0-9]+$ ]] && kill -0 "$p" 2>/dev/null && echo "$p"
}

marked_pids() { # processes whose environment carries our marker
  local e p
  for e in /proc/[0-9]*/environ; do
    p=${e#/proc/}; p=${p%/environ}
    [[ $p == "$$" || $p == "$BASHPID" ]] && continue
    if tr '\0' '\n' 2>/dev/null <"$e" | grep -qxF "$marker"; then echo "$p"; fi
  done
}

descendants() { # every descendant of the given pids
  local -A kids=()
  local pid ppid
  while read -r pid ppid; do kids[$ppid]+=" $pid"; done < <(ps -e -o pid=,ppid=)
  local queue=("$@") out=() p c
  while ((${#queue[@]})); do
    p=${queue[0]}; queue=("${queue[@]:1}")
    for c in ${kids[$p]:-}; do out+=("$c"); queue+=("$c"); done
  done
  echo "${out[@]:-}"
}

show_logs() {
  local f
  for f in "$dir"/log/*.log; do
    [[ -f $f ]] || continue
    echo "----- $f (last 40 lines) -----" >&2
    tail -n 40 "$f" >&2
  done
}

node_state() { SLURM_CONF=$conf sinfo -h -N -o '%T' 2>/dev/null | head -n1; }

status() {
  [[ -f $conf ]] || return 1
  pid_of "$dir/run/munged.pid" >/dev/null || return 1
  pid_of "$dir/run/slurmctld.pid" >/dev/null || return 1
  pid_of "$dir/run/slurmd.pid" >/dev/null || return 1
  local s; s=$(node_state)
  [[ $s == idle* || $s == mix* || $s == alloc* || $s == completing* ]]
}

free_port() { # first port from $1 upward with nobody listening on 127.0.0.1
  local p=$1
  while (: </dev/tcp/127.0.0.1/"$p") 2>/dev/null; do p=$((p + 1)); done
  echo "$p"
}

write_conf() {
  local host=$1 ctld_port=$2 slurmd_port=$3 mpi=none
  [[ -e $plugdir/mpi_pmix.so ]] && mpi=pmix
  cat >"$conf" <<EOF
# Written by scripts/slurm-local.sh: a one-node Slurm on localhost for tests.
ClusterName=curvsweep
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
# munge with our own key and socket (the system munged, if any, is not used)
AuthType=auth/munge
CredType=cred/munge
# cred_expire: also how long a requeued job waits before it may start again (default 120 s)
AuthInfo=socket=$dir/munge/munge.socket.2,cred_expire=${CS_SLURM_CRED_EXPIRE:-10}
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/slurmd-%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
PluginDir=$plugdir
# No cgroups (containers, CI): processes tracked by parent pid, no task binding.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
# Schedule often: a requeued job (after cred_expire) or an array's dependent
# merge job starts within seconds, not after the default 30-60 s cycles.
SchedulerParameters=sched_interval=2,bf_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=$mpi
# A node that was down comes back by itself; the configured CPUs count even
# when the hardware reports fewer (so CS_SLURM_CPUS may exceed nproc).
ReturnToService=2
SlurmdParameters=config_overrides
# Batch jobs may be requeued (scontrol requeue, preemption); a requeued job
# runs again with SLURM_RESTART_COUNT incremented.
JobRequeue=1
PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
# Seconds between SIGTERM and SIGKILL at a time limit, cancel or preemption.
KillWait=30
# Finished jobs stay visible to 'scontrol show job' for this long (no slurmdbd).
MinJobAge=600
InactiveLimit=0
SlurmdTimeout=300
SlurmctldTimeout=120
NodeName=$host NodeAddr=127.0.0.1 NodeHostname=$host CPUs=$cpus State=UNKNOWN
# Jobs may share cores (a 2-core machine runs a 2-rank job next to others).
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4 PriorityTier=1
# A higher-tier partition: its jobs preempt (requeue) jobs of 'debug'.
PartitionName=urgent Nodes=$host Default=NO MaxTime=INFINITE State=UP OverSubscribe=NO PriorityTier=2
EOF
  # PMIx scratch directories inside DIR too (the default is /tmp).
  mkdir -p "$dir/tmp"
  cat >"$dir/etc/mpi.conf" <<EOF
PMIxCliTmpDirBase=$dir/tmp
EOF
  # Not read while no cgroup plugin is configured; written for completeness.
  cat >"$dir/etc/cgroup.conf" <<EOF
# Written by scripts/slurm-local.sh: cgroups are not used (proctrack/linuxproc, task/none).
CgroupAutomount=no
EOF
}

start() {
  local b missing=()
  for b in munged mungekey slurmctld slurmd sinfo sbatch scontrol; do
    command -v "$b" >/dev/null 2>&1 || [[ -x /usr/sbin/$b ]] || missing+=("$b")
  done
  if ((${#missing[@]})); then
    say "not installed: ${missing[*]} — run: CS_WITH_SLURM=1 scripts/install-deps.sh"
    return 2
  fi
  export PATH=$PATH:/usr/sbin
  if [[ $(id -u) -ne 0 ]]; then
    say "must run as root (slurmd runs jobs as their submitting user)"
    return 2
  fi
  if status; then
    say "already running in $dir"
    print_env
    return 0
  fi
  stop_all quiet
  plugdir=$(dirname "$(find /usr/lib /usr/lib64 /usr/local/lib -name 'select_cons_tres.so' -path '*slurm*' 2>/dev/null | head -n1)")
  if [[ -z $plugdir || $plugdir == . ]]; then
    say "cannot find the Slurm plugin directory (select_cons_tres.so)"
    return 2
  fi
  mkdir -p "$dir"/{munge,etc,state,spool,log,run}
  chmod 700 "$dir/munge"
  local host ctld_port slurmd_port
  host=$(hostname -s)
  ctld_port=$(free_port 16817)
  slurmd_port=$(free_port $((ctld_port + 1)))
  mkdir -p "$dir/spool/slurmd-$host"
  write_conf "$host" "$ctld_port" "$slurmd_port"

  # munge: own key, socket, pid, log, seed
  if [[ ! -s $dir/munge/munge.key ]]; then
    mungekey --create --keyfile="$dir/munge/munge.key" --force 2>/dev/null ||
      dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
  fi
  chmod 400 "$dir/munge/munge.key"
  env "$marker" munged --force \
    --socket="$dir/munge/munge.socket.2" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/run/munged.pid" --log-file="$dir/log/munged.log" \
    --seed-file="$dir/munge/munged.seed" </dev/null >>"$dir/log/munged.log" 2>&1 ||
    { say "munged did not start"; show_logs; stop_all quiet; return 1; }

  export SLURM_CONF=$conf
  env "$marker" slurmctld -f "$conf" -i </dev/null >>"$dir/log/slurmctld.log" 2>&1 ||
    { say "slurmctld did not start"; show_logs; stop_all quiet; return 1; }
  env "$marker" slurmd -f "$conf" </dev/null >>"$dir/log/slurmd.log" 2>&1 ||
    { say "slurmd did not start"; show_logs; stop_all quiet; return 1; }

  local t0=$SECONDS s=""
  while ((SECONDS - t0 < wait_s)); do
    s=$(node_state)
    if [[ $s == idle* ]]; then
      say "up in $dir after $((SECONDS - t0)) s: node $host, $cpus CPUs, ports $ctld_port/$slurmd_port"
      print_env
      return 0
    fi
    if [[ $s == down* || $s == drain* ]] && ((SECONDS - t0 > 5)); then
      scontrol -f "$conf" update nodename="$host" state=resume >/dev/null 2>&1 || true
    fi
    sleep 0.5
  done
  say "the node did not become idle within $wait_s s (state: '${s:-no answer}')"
  SLURM_CONF=$conf sinfo -N -l >&2 2>&1 || true
  SLURM_CONF=$conf scontrol show node >&2 2>&1 || true
  show_logs
  stop_all quiet
  return 1
}

stop_all() {
  local quiet=${1:-}
  [[ -d $dir ]] || { [[ -n $quiet ]] || say "nothing in $dir"; return 0; }
  # Jobs first, while the daemons can still end them cleanly.
  if [[ -f $conf ]] && pid_of "$dir/run/slurmctld.pid" >/dev/null; then
    SLURM_CONF=$conf scancel --quiet --user="$(id -un)" 2>/dev/null
    local t0=$SECONDS
    while ((SECONDS - t0 < 10)) && [[ -n $(SLURM_CONF=$conf squeue -h -o %i 2>/dev/null) ]]; do sleep 0.5; done
  fi
  local found=() pids=() kids=() all=() alive=() p f
  mapfile -t found < <(marked_pids)
  for f in "$dir"/run/*.pid; do
    p=$(pid_of "$f") && found+=("$p")
  done
  ((${#found[@]})) && mapfile -t pids < <(printf '%s\n' "${found[@]}" | sort -un)
  ((${#pids[@]})) || { [[ -n $quiet ]] || say "not running ($dir)"; return 0; }
  read -r -a kids <<<"$(descendants "${pids[@]}")"
  all=("${pids[@]}" "${kids[@]}")
  kill -TERM "${all[@]}" 2>/dev/null
  local t0=$SECONDS
  while ((SECONDS - t0 < 10)); do
    alive=()
    for p in "${all[@]}"; do kill -0 "$p" 2>/dev/null && alive+=("$p"); done
    ((${#alive[@]})) || break
    sleep 0.2
  done
  ((${#alive[@]})) && kill -KILL "${alive[@]}" 2>/dev/null
  rm -f "$dir"/run/*.pid "$dir/munge/munge.socket.2" "$dir/munge/munge.socket.2.lock"
  [[ -n $quiet ]] || say "stopped ($dir)"
  return 0
}

case $cmd in
  start | stop | status | env) ;;
  *) usage ;;
esac
if ! pick_dir; then
  [[ $cmd == stop && -z $dir ]] && exit 0
  exit 2
fi
conf=$dir/etc/slurm.conf
marker="CS_SLURM_INSTANCE=$dir"
case $cmd in
  start) start ;;
  stop) stop_all ;;
  status)
    if status; then say "running in $dir: node $(node_state)"; print_env; else say "not running ($dir)"; exit 1; fi ;;
  env) print_env ;;
esac
