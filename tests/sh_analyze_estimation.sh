#!/usr/bin/env bash
# The estimation-rates section end to end (analysis/VERDICTS.md, "Estimation
# rates"): a tiny mha sweep (tests/specs/estimation-rates-tiny.ini) through
# `analyze`: the section and its verdict line in index.md, its row in the
# summary table, estimation.csv with one row per (arch, gate, H, H*, n) and
# the seeds of each, estimation_slopes.csv with a finite function-error
# slope per group, the figure's script; and a sweep without such cells has
# none of it (tests/specs/demo-small.ini).
source "${CS_SOURCE_DIR:?}/tests/support/common.sh"
export CS_GNUPLOT=/nonexistent/gnuplot # scripts and data only

mpi 2 "$bin" run "$src/tests/specs/estimation-rates-tiny.ini" >run.txt 2>&1
check run 0 $?
"$bin" analyze estimation-rates-tiny.h5 -o rep >an.txt 2>&1
check analyze 0 $? "analysed 48 of 48 cells done" an.txt
check section 0 0 "^## Estimation rates (teacher–student)" rep/index.md
check verdict-line 0 0 "^Verdict: \*\*G1/G2 estimate experts at a polynomial rate where ungated attention does not: " rep/index.md
check summary-row 0 0 "^| \[estimation-rate\](#estimation-rates-teacher-student) |" rep/index.md
check figure 0 0 "estimation_rates.dat" rep/estimation_rates.gp
# 2 archs x 2 teachers x 4 sizes, 3 seeds each
rows=$(grep -c ',exact,\|,over-specified,' rep/estimation.csv)
[[ $rows -eq 16 ]] && ok || bad "estimation.csv: $rows rows, wanted 16"
/usr/bin/python3 - rep <<'PY' && ok || bad "estimation csv contents"
import sys, math, pandas as pd
d = sys.argv[1]
p = pd.read_csv(f"{d}/estimation.csv")
assert (p.fn_seeds == 3).all() and (p.cells == 3).all(), p[["fn_seeds", "cells"]]
assert (p.fn_median > 0).all() and (p.voronoi_median >= 0).all()
s = pd.read_csv(f"{d}/estimation_slopes.csv")
assert len(s) == 4 and set(s.specification) == {"exact", "over-specified"}, s
assert all(math.isfinite(v) for v in s.fn_full_slope), s.fn_full_slope
PY
# no estimation cells: no section, no tables
mpi 2 "$bin" run "$src/tests/specs/demo-small.ini" -o demo.h5 >run2.txt 2>&1
"$bin" analyze demo.h5 -o rep2 >an2.txt 2>&1
check demo-analyze 0 $?
! grep -q "Estimation rates" rep2/index.md && [[ ! -e rep2/estimation.csv ]] && ok || bad "a sweep without mha cells has the section"
finish
