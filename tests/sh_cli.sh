#!/usr/bin/env bash
# End-to-end checks of the command line: exit statuses, messages, train output.
source "${CS_SOURCE_DIR:?}/tests/support/common.sh"
"$bin" --version >"$tmp/o" 2>&1; check version 0 $? "curvsweep 0" "$tmp/o"
check version-small-products 0 0 "^small products: libxsmm, kernels for [a-z0-9_][a-z0-9_]*$" "$tmp/o"
# one BLAS thread per process unless the user chose (docs/SWEEP.md, "Threads"):
# without the default, OpenBLAS would take one thread per core
env -u OPENBLAS_NUM_THREADS -u GOTO_NUM_THREADS -u OMP_NUM_THREADS "$bin" --version >"$tmp/o" 2>&1
check blas-threads-default 0 $? "^BLAS: OpenBLAS, kernel .*, 1 thread per process$" "$tmp/o"
if (($(nproc) >= 2)); then
  env -u GOTO_NUM_THREADS -u OMP_NUM_THREADS OPENBLAS_NUM_THREADS=2 "$bin" --version >"$tmp/o" 2>&1
  check blas-threads-chosen 0 $? "^BLAS: .*, 2 threads per process$" "$tmp/o"
  env -u OPENBLAS_NUM_THREADS -u GOTO_NUM_THREADS OMP_NUM_THREADS=2 "$bin" --version >"$tmp/o" 2>&1
  check blas-threads-omp 0 $? "^BLAS: .*, 2 threads per process$" "$tmp/o"
fi
"$bin" --help >"$tmp/o" 2>&1; check help 0 $? "usage: curvsweep COMMAND" "$tmp/o"
"$bin" >"$tmp/o" 2>&1; check no-command 2 $? "usage" "$tmp/o"
"$bin" frobnicate >"$tmp/o" 2>&1; check unknown-command 2 $? "unknown command 'frobnicate'" "$tmp/o"
"$bin" train --help >"$tmp/o" 2>&1; check train-help 0 $? "usage: curvsweep train SPEC.ini --cell ID" "$tmp/o"
"$bin" train "$src/tests/specs/demo-small.ini" >"$tmp/o" 2>&1; check train-no-cell 2 $? "missing --cell" "$tmp/o"
"$bin" train "$src/tests/specs/demo-small.ini" --cell x >"$tmp/o" 2>&1; check train-bad-cell 2 $? "is not a cell number" "$tmp/o"
"$bin" train "$src/tests/specs/demo-small.ini" --cell 8 >"$tmp/o" 2>&1; check train-cell-range 2 $? "out of range: .* has 8 cells" "$tmp/o"
"$bin" train "$tmp/missing.ini" --cell 0 >"$tmp/o" 2>&1; check train-missing-spec 2 $? "missing.ini: cannot open spec" "$tmp/o"
printf '[model]\nwidht = 8\n' > "$tmp/bad.ini"
"$bin" train "$tmp/bad.ini" --cell 0 >"$tmp/o" 2>&1; check train-bad-spec 2 $? 'bad.ini:2: \[model\] widht: unknown key; did you mean width? allowed: family, gate, width, slots' "$tmp/o"
"$bin" train "$src/tests/specs/demo-small.ini" --cell 3 >"$tmp/o" 2>&1; check train-runs 0 $? "cell 3 of 8: arch=ungated depth=2 task=linear seed=1" "$tmp/o"
# the curvature table's two prefix rows (K_mean in %.4e) and the entropy table's
grep -q "^status done" "$tmp/o" && grep -q "test_acc 0\.[0-9]" "$tmp/o" &&
  [[ $(grep -cE '^[12] +-?[0-9]\.[0-9]{4}e[-+]' "$tmp/o") -eq 2 ]] &&
  grep -qE "^test_nll [0-9.]+ +test_brier [0-9.]+ +test_ece [0-9.]+ +loss spikes 0 " "$tmp/o" &&
  grep -qE "^prefix +attn_entropy +ablate_first +ablate_attn" "$tmp/o"
check train-table 0 $?
# the same cell twice prints the same numbers (wall time aside)
"$bin" train "$src/tests/specs/demo-small.ini" --cell 3 | sed 's/wall .*//' > "$tmp/a"
"$bin" train "$src/tests/specs/demo-small.ini" --cell 3 | sed 's/wall .*//' > "$tmp/b"
cmp -s "$tmp/a" "$tmp/b"; check train-deterministic 0 $?
"$bin" verify >"$tmp/o" 2>&1; check verify 0 $? "checks passed" "$tmp/o"
"$bin" verify extra >"$tmp/o" 2>&1; check verify-extra-arg 2 $? "unexpected argument" "$tmp/o"
# run without -o: the archive is [sweep] output of the spec (here relative to
# the working directory), and the summary names it (it was read after the
# spec holding it had been freed)
cp "$src/tests/specs/sweep-small.ini" "$tmp/noo.ini"
(cd "$tmp" && "$bin" run noo.ini) >"$tmp/o" 2>&1; check run-without-o 0 $? "12 done, 0 failed, 0 diverged, 0 pending -> sweep-small.h5$" "$tmp/o"
[[ -f "$tmp/sweep-small.h5" ]]; check run-without-o-archive 0 $?
# train --save-points prints exactly what a run with save_points = yes stores
# in /points for the cell (the archive above): every value, bitwise (%.17g)
"$bin" train "$tmp/noo.ini" --cell 5 --save-points >"$tmp/o" 2>&1; check train-save-points 0 $? "^layer point x1 x2 S S_err S_tilde tr_g logdet_g H_norm class$" "$tmp/o"
/usr/bin/python3 - "$tmp/o" "$tmp/sweep-small.h5" <<'PY'
import os, sys, h5py, numpy as np
sys.path.insert(0, os.path.join(os.environ["CS_SOURCE_DIR"], "tests"))
from archive_points import cell_points
lines = open(sys.argv[1]).read().split("layer point x1 x2 S S_err S_tilde tr_g logdet_g H_norm class\n")[1].split("\n")
rows = np.array([[float(v) for v in l.split()] for l in lines if l.strip()])
with h5py.File(sys.argv[2], "r") as f:
    g = cell_points(f, 5)
    L, n = g["S"].shape
    assert rows.shape == (L * n, 11), rows.shape
    for l in range(L):
        r = rows[l * n:(l + 1) * n]
        assert (r[:, 0] == l + 1).all() and (r[:, 1] == np.arange(n)).all()
        assert np.array_equal(r[:, 2:4], g["x"][()]), "x"
        for c, name in enumerate(["S", "S_err", "S_tilde", "tr_g", "logdet_g", "H_norm"]):
            assert np.array_equal(r[:, 4 + c], g[name][l], equal_nan=True), name
        assert np.array_equal(r[:, 10], g["class"][l]), "class"
PY
check train-save-points-values 0 $?
# analyze --help wraps its table list (generated from the report's tables)
# at 88 display columns, not bytes: a multibyte character (K̃ is three bytes,
# one column) neither breaks a line early nor shifts the text's column
"$bin" analyze --help >"$tmp/o" 2>&1; check analyze-help 0 $? "^Tables (CSV)" "$tmp/o"
/usr/bin/python3 - "$tmp/o" <<'PY'
import re, sys, unicodedata
text = open(sys.argv[1], encoding="utf-8").read()
block = text.split("Tables (CSV), each with when it is written if not always:\n")[1].split("\nAlso:")[0]
lines = block.split("\n")
def cols(s):  # display columns: a combining mark takes none
    return sum(0 if unicodedata.combining(c) else 1 for c in s)
assert any(ord(c) > 127 for c in block), "no multibyte character in the table list: nothing tested"
for i, l in enumerate(lines):
    assert cols(l) <= 88, "longer than 88 columns: %r" % l
    m = re.match(r"^(  \S+ +)\S", l)
    lead = m.group(1) if m else re.match(r"^ *", l).group(0)
    assert len(lead) == 25, "text not at column 25: %r" % l
    if i + 1 < len(lines) and not re.match(r"^  \S", lines[i + 1]):
        word = lines[i + 1].split()[0]
        assert cols(l) + 1 + cols(word) > 88, "broken early: %r, then %r" % (l, word)
PY
check analyze-help-wrap 0 $?
finish
