#!/usr/bin/env bash
# Install what is missing, build, shellcheck every shell script, run every test
# (unit, MPI at 1-4 ranks, end to end).
# Then build again with AddressSanitizer + UndefinedBehaviorSanitizer
# (-DCS_SANITIZE=ON, in ${CS_BUILD_DIR}-sanitize) and run the archive, spec,
# analysis, report-directory, command-line, bad-input and hostile-archive tests and a sweep at 1-3 ranks
# (tests/sanitize/sweep.sh) under them; any sanitizer report fails the run.
# CS_SANITIZE_TESTS=0 leaves the sanitizer pass out. Last, the libFuzzer
# harnesses of tests/fuzz run ~20 s (the three at once) when clang is installed
# (CS_FUZZ_TESTS=0 leaves them out).
#
# scripts/test.sh --quick: the run to use while working (about 3 minutes on
# 2 cores): install, build, shellcheck and every ctest test except the
# campaigns (CS_QUICK_SKIP: the corruption campaign, the Slurm job, the lock
# race and the hostile-archive corpus), no sanitizer build, no fuzzing. The
# full run (no flag) is what CI runs and what every submission must pass.
# Any other argument goes to ctest (e.g. -R sh_cli).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
quick=0
if [[ ${1:-} == --quick ]]; then
  quick=1
  shift
  export CS_SANITIZE_TESTS=0 CS_FUZZ_TESTS=0 CS_WITH_SLURM=${CS_WITH_SLURM:-0}
fi
# The Slurm end-to-end test (tests/sh_slurm.sh) starts a real Slurm on localhost:
# install it too (CS_WITH_SLURM=0 to leave it out; ctest then reports that test skipped).
export CS_WITH_SLURM=${CS_WITH_SLURM:-1}
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
build=${CS_BUILD_DIR:-$root/build}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# shellcheck source=scripts/openblas-env.sh
source "$root/scripts/openblas-env.sh"
status=0

# The shellcheck of Debian (installed above) on every shell script of the
# repository: *.sh, *.sbatch and any other file starting with a sh or bash
# shebang (git's list of files, or every file outside build dirs when this
# is not a git checkout). Any finding fails the run (docs/SECURITY.md,
# "Scripts"; tests/.shellcheckrc names the two checks the tests' tally
# idiom is exempt from).
shell_scripts() {
  local f
  { git -C "$root" ls-files 2>/dev/null ||
      (cd "$root" && find . -type f -not -path './build*' -not -path './.git/*' | sed 's|^\./||'); } |
    while IFS= read -r f; do
      case $f in
        *.sh | *.sbatch) echo "$f" ;;
        *) [[ -f $root/$f ]] && head -n 1 "$root/$f" 2>/dev/null | grep -qE '^#!.*[/ ](ba)?sh( |$)' && echo "$f" ;;
      esac
    done
}
mapfile -t scripts < <(shell_scripts)
echo "== shellcheck: ${#scripts[@]} scripts =="
if ! (cd "$root" && shellcheck -x "${scripts[@]}"); then
  echo "FAIL: shellcheck findings above"
  status=1
fi

ctest_args=(--output-on-failure -j 2)
if [[ $quick == 1 ]]; then
  ctest_args+=(-E "${CS_QUICK_SKIP:-^(sh_corruption|sh_slurm|sh_lock_race|sh_hostile)\$}")
  echo "== quick: no campaign tests (${CS_QUICK_SKIP:-sh_corruption, sh_slurm, sh_lock_race, sh_hostile}), no sanitizer build, no fuzzing =="
fi
(cd "$build" && ctest "${ctest_args[@]}" "$@") || status=1

if [[ "${CS_SANITIZE_TESTS:-1}" == 1 ]]; then
  san=${build%/}-sanitize
  echo "== sanitizer build ($san) =="
  cmake -S "$root" -B "$san" -DCS_SANITIZE=ON >/dev/null
  # only what the sanitized tests below run (the other tests and the benches
  # stay unbuilt there: a third of the build)
  cmake --build "$san" -j "$(nproc)" --target curvsweep journal_forge test_archive test_archive_resume test_archive_inputs test_spec test_spec_errors test_analysis >/dev/null
  reports=$(mktemp -d)
  # Reports go to files (a test that expects a failing exit status must not
  # hide one). halt_on_error: the first error ends the process; UBSan is built
  # with -fno-sanitize-recover. Leak checks stay on for our code: the
  # suppressions name only Open MPI's, hwloc's and OpenBLAS's own allocations.
  # fast_unwind_on_malloc=0: frame-pointer unwinding stops inside those
  # libraries and leaves the suppressed frames unseen. use_tls=0: LSan of
  # GCC 12 crashes walking the dynamic TLS of Open MPI components unloaded at
  # MPI_Finalize; the one thread-local pointer of ours (geom's scratch) is
  # released before exit (src/cli/main.c).
  export ASAN_OPTIONS="halt_on_error=1:abort_on_error=0:fast_unwind_on_malloc=0:check_initialization_order=1:log_path=$reports/asan"
  export LSAN_OPTIONS="suppressions=$root/tests/sanitize/lsan.supp:print_suppressions=0:use_tls=0"
  export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$reports/ubsan"
  # the lock race at 3 trials per case here (10 in the normal run): six
  # sanitized processes per trial take ~6 s; not its strace-widened trials
  # (LeakSanitizer cannot run under ptrace). Two at a time (none of them
  # times anything but its own hang bound); sanitize_sweep is
  # tests/sanitize/sweep.sh, registered in this build only.
  sanitized='^(test_archive|test_archive_resume|test_archive_inputs|test_spec|test_spec_errors|test_analysis|sh_cli|sh_bad_inputs|sh_analyze|sh_report_dir|sh_lock_race|sh_salvage|sh_hostile|sanitize_sweep)$'
  (cd "$san" && CS_RACE_TRIALS=3 CS_RACE_WIDENED=0 CS_HOSTILE_SECONDS=60 ctest --output-on-failure -j 2 \
    -R "$sanitized") || status=1
  if compgen -G "$reports/*" >/dev/null; then
    echo "FAIL: sanitizer reports:"
    cat "$reports"/*
    status=1
  else
    echo "sanitizers: no report"
  fi
  rm -rf "$reports"
fi

# The libFuzzer harnesses of tests/fuzz (README there): built with clang in
# ${CS_BUILD_DIR}-fuzz (-DCS_FUZZ=ON: libFuzzer + ASan + UBSan), each run for
# CS_FUZZ_SECONDS (20) on a copy of its seed corpus; a crash, leak, sanitizer
# report or timeout fails the run (the input is kept in the fuzz build dir).
# Skipped with a message without clang; CS_FUZZ_TESTS=0 leaves it out.
if [[ "${CS_FUZZ_TESTS:-1}" == 1 ]]; then
  cc=$(command -v clang-14 || command -v clang || true)
  if [[ -z "$cc" ]]; then
    echo "== fuzz: SKIPPED: no clang (the libFuzzer harnesses of tests/fuzz need it) =="
  else
    fz=${build%/}-fuzz
    echo "== fuzz build ($fz) =="
    CC=$cc cmake -S "$root" -B "$fz" -DCS_FUZZ=ON >/dev/null
    cmake --build "$fz" -j "$(nproc)" --target fuzz_spec fuzz_journal fuzz_archive >/dev/null
    work=$(mktemp -d)
    # the three harnesses at once (each bounded by its own time, so they end
    # together), then their verdicts in order
    declare -A fuzz_pid
    for h in spec journal archive; do
      mkdir -p "$work/$h"
      ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        LSAN_OPTIONS=suppressions=$root/tests/fuzz/lsan.supp:print_suppressions=0 \
        "$fz/fuzz_$h" -max_total_time="${CS_FUZZ_SECONDS:-20}" -timeout=60 -print_final_stats=1 \
        -artifact_prefix="$fz/fuzz_$h-" "$work/$h" "$root/tests/fuzz/corpus/$h" >"$work/$h.log" 2>&1 &
      fuzz_pid[$h]=$!
    done
    for h in spec journal archive; do
      if wait "${fuzz_pid[$h]}"; then
        echo "fuzz_$h: $(grep -o 'Done [0-9]* runs in [0-9]* second(s)' "$work/$h.log"), no report"
      else
        echo "FAIL: fuzz_$h:"
        grep -v '^#\|^INFO' "$work/$h.log" | tail -n 60
        status=1
      fi
    done
    rm -rf "$work"
  fi
fi
exit $status
