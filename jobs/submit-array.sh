#!/usr/bin/env bash
# Submit a sweep as a Slurm job array of N shards plus one job that merges the
# shards and writes the report once every shard has succeeded.
#
#   jobs/submit-array.sh [--parsable] SPEC.ini N [PREFIX] [-- SBATCH_OPTIONS...]
#
#   shard i -> PREFIX-i.h5     (jobs/array.sbatch, array 0..N-1)
#   merged  -> PREFIX.h5       (jobs/merge.sbatch, --dependency=afterok:ARRAY)
#   report  -> PREFIX-report/  (curvsweep analyze, skipped when not available)
#
# PREFIX defaults to the spec's file name without .ini. SBATCH_OPTIONS go to
# the array (e.g. -- -n 4 -t 02:00:00 -p long); the merge job gets its own
# defaults (CS_MERGE_SBATCH="..." adds options to it). Paths are relative to
# the current directory, which is where the jobs run. CS_BIN and the other
# CS_* variables reach the jobs through the environment.
# Prints the two job ids; with --parsable only "ARRAY_JOB MERGE_JOB".
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

parsable=0
[[ ${1:-} == --parsable ]] && { parsable=1; shift; }
if [[ $# -lt 2 || ${1:-} == -h || ${1:-} == --help ]]; then
  sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
spec=$1 n=$2
shift 2
prefix=$(basename "$spec" .ini)
if [[ $# -gt 0 && $1 != -- ]]; then prefix=$1; shift; fi
[[ ${1:-} == -- ]] && shift
if ! [[ $n =~ ^[1-9][0-9]{0,6}$ ]]; then
  echo "submit-array: N must be a positive number of shards, not '$n'" >&2; exit 2
fi
[[ -f $spec ]] || { echo "submit-array: no spec file '$spec'" >&2; exit 2; }
command -v sbatch >/dev/null || { echo "submit-array: sbatch not found (is Slurm set up here?)" >&2; exit 2; }

# CS_MERGE_SBATCH: options split at blanks into words, never globbed or evaluated
read -r -a merge_options <<<"${CS_MERGE_SBATCH:-}"
array=$(sbatch --parsable --array="0-$((n - 1))" "$@" "$here/array.sbatch" "$spec" "$prefix")
array=${array%%;*}
merge=$(sbatch --parsable --dependency="afterok:$array" --kill-on-invalid-dep=yes \
  "${merge_options[@]}" "$here/merge.sbatch" "$prefix" "$n")
merge=${merge%%;*}
if ((parsable)); then
  echo "$array $merge"
else
  echo "array job $array: $n shards of $spec -> $prefix-0.h5 ... $prefix-$((n - 1)).h5"
  echo "merge job $merge (after all shards succeed) -> $prefix.h5, report $prefix-report/"
  echo "watch: squeue -j $array,$merge; curvsweep info $prefix-0.h5"
fi
