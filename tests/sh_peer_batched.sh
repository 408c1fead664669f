#!/usr/bin/env bash
# bench/peer_batched.py (issue 40): E seeds of the memory, self and lm
# reference cells trained as one batched model must be the E one-model
# peers' trainings: --check trains every seed alone with the one-model
# peers' code (bench/peer_train_cell.py, bench/peer_lm_cell.py) and batched,
# and fails unless each seed's final parameters and loss agree to 1e-10
# (relative), its accuracies and status are equal and the seeds are
# distinct models. Then the --serve protocol bench_train_cell speaks: a
# ready line, one result line per "train" with the per-cell times (total /
# seeds). Small budgets; a benchmark peer, so a python without torch
# (Debian: python3-torch, scripts/install-deps.sh) makes the test exit 77,
# which ctest reports as skipped (tests/tests.cmake).
source "${CS_SOURCE_DIR:?}/tests/support/common.sh"
PY=/usr/bin/python3
if ! "$PY" -c 'import torch' 2>/dev/null; then
  echo "SKIP: $PY cannot import torch (scripts/install-deps.sh installs python3-torch)"
  exit 77
fi
peer=$src/bench/peer_batched.py

"$PY" "$peer" --check --family memory self lm --seeds 3 --epochs 2 --eval-every 1 \
  --points 512 --train 160 --test 64 >check.txt 2>&1
check "check of 3 families" 0 $? "check lm E=3 epochs=2 .* passed" check.txt
for f in memory self lm; do
  n=$(grep -c "^peer_batched check $f seed=[0-9]* .* ok$" check.txt)
  [[ $n == 3 ]] && ok || { bad "$f: $n of 3 seeds agree"; cat check.txt; }
  grep -q "^peer_batched check $f E=3 .* passed$" check.txt && ok || bad "$f: check not passed"
done

# an option no family knows is refused (exit 2, argparse)
"$PY" "$peer" --check --family memory --no-such-option 1 >unknown.txt 2>&1
check "unknown option" 2 $? "unrecognized arguments: --no-such-option" unknown.txt

# --serve: ready, then per "train" one line whose wall_s is total_wall_s / seeds
printf 'train\n' | "$PY" "$peer" --serve --family memory --seeds 2 --epochs 1 --points 256 \
  >serve.txt 2>&1
check "serve" 0 $? "^peer_batched ready family=memory seeds=2 " serve.txt
line=$(grep "^peer_batched family=memory .* status=done " serve.txt)
if [[ -n $line ]] && awk -v l="$line" 'BEGIN {
    n = split(l, w, " ")
    for (i = 1; i <= n; i++) { split(w[i], kv, "="); v[kv[1]] = kv[2] }
    d = v["total_wall_s"] / v["cells"] - v["wall_s"]; c = v["total_cpu_s"] / v["cells"] - v["cpu_s"]
    exit !(v["cells"] == 2 && v["wall_s"] > 0 && d * d < 1e-11 && c * c < 1e-11) }'; then
  ok
else
  bad "serve: no result line with wall_s = total_wall_s / 2:"; cat serve.txt
fi
finish
