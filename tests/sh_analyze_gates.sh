#!/usr/bin/env bash
# The gate-position section of `curvsweep analyze` end to end
# (analysis/README.md, "Gate positions"): a tiny self-family sweep
# (tests/specs/gates-tiny.ini, ungated and gated at g1..g5, 6 seeds) run as
# two shards, analysed from both shards at once and from their merge. The
# section and gates.csv exist, both reports agree, and every verdict line is
# recomputed here in Python from the archives alone (/cells, /curvature):
# the pooled sign counts, the sign-test p, the yes/no/tie rule and the sink
# means; the table's accuracy of every row and its sign counts against g1
# match the archives too.
source "${CS_SOURCE_DIR:?}/tests/support/common.sh"
spec="$src/tests/specs/gates-tiny.ini"
for k in 0 1; do
  "$bin" run "$spec" --shard $k/2 -o s$k.h5 >run$k.log 2>&1 || { cat run$k.log; bad "run shard $k"; }
done
"$bin" merge m.h5 s0.h5 s1.h5 >merge.log 2>&1 || { cat merge.log; bad "merge"; }
if "$bin" analyze s0.h5 s1.h5 -o R >an.out 2>an.err; then ok; else bad "analyze shards"; cat an.out an.err; fi
if "$bin" analyze m.h5 -o M >an2.out 2>an2.err; then ok; else bad "analyze merged"; cat an2.out an2.err; fi
[[ -s R/gates.csv && -s R/gates.gp && -s R/gates.dat ]] && ok || bad "gates.csv, gates.gp, gates.dat"
cmp -s R/gates.csv M/gates.csv && ok || bad "gates.csv of the shards differs from the merge's"
grep -q "^## Where should the gate sit? (gate positions)" R/index.md && ok || bad "no gate section"
grep -q "(gates.png)" R/index.md && ok || bad "index.md does not show gates.png"
sed -n '/^## Where should the gate sit/,/^## Tables/p' R/index.md | grep '^- \*\*' > verdicts.txt
cat verdicts.txt

if /usr/bin/python3 - s0.h5 s1.h5 R/gates.csv R/index.md <<'PYEOF'; then ok; else bad "verdicts against the archives"; fi
import csv, math, re, sys
import h5py, numpy as np
fail = []
def check(c, msg):
    if not c: fail.append(msg)
acc, sink = {}, {}
for path in sys.argv[1:3]:
    f = h5py.File(path, "r")
    cells, cv = f["cells"][()], f["curvature"][()]
    last = {int(r["cell_id"]): float(r["sink_mass"]) for r in cv
            if int(r["prefix"]) == int(cells[cells["cell_id"] == r["cell_id"]]["depth"][0])}
    for c in cells:
        assert c["status"] == b"done"
        key = (c["arch"].decode(), c["gate"].decode(), int(c["depth"]), int(c["seed"]))
        acc[key] = float(c["test_acc"])
        sink[key] = last[int(c["cell_id"])]
depths = sorted({k[2] for k in acc}); seeds = sorted({k[3] for k in acc})
def sign_p(a, b):
    n = a + b
    if n == 0: return float("nan")
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(min(a, b) + 1)) / 2 ** n)
def f4(v): return "n/a" if v != v else "%.4g" % v
md = open(sys.argv[4]).read()
rows = list(csv.DictReader(open(sys.argv[3])))
# the table against the archives: accuracy means and sign counts against g1
for r in rows:
    g = r["gate"] if r["gate"] != "-" else "g1"
    v = [acc[(r["arch"], g, int(r["depth"]), s)] for s in seeds]
    check(abs(float(r["acc_mean"]) - sum(v) / len(v)) < 1e-12, "acc_mean of %s" % r)
    if r["arch"] == "gated" and g != "g1":
        d = [acc[("gated", g, int(r["depth"]), s)] - acc[("gated", "g1", int(r["depth"]), s)] for s in seeds]
        check(int(r["dacc_vs_g1_npos"]) == sum(x > 0 for x in d) and
              int(r["dacc_vs_g1_nneg"]) == sum(x < 0 for x in d), "sign counts of %s" % r)
# G1 best: pooled over depths and seeds, yes / no (Bonferroni) / tie
ps, ahead, behind = {}, {}, {}
for q in ("g2", "g3", "g4", "g5"):
    d = [acc[("gated", "g1", L, s)] - acc[("gated", q, L, s)] for L in depths for s in seeds]
    ahead[q], behind[q] = sum(x > 0 for x in d), sum(x < 0 for x in d)
    ps[q] = sign_p(ahead[q], behind[q])
    check("%s: ahead in %d, behind in %d of %d pairs" % (q, ahead[q], behind[q], len(d)) in md, "counts " + q)
pp = {q: (1.0 if p != p else p) for q, p in ps.items()}
k = len(pp)
if all(ahead[q] > behind[q] and pp[q] < 0.05 for q in pp): word, p = "yes", max(pp.values())
elif any(behind[q] > ahead[q] and min(1, k * pp[q]) < 0.05 for q in pp):
    word, p = "no", min(min(1, k * pp[q]) for q in pp if behind[q] > ahead[q])
else: word, p = "tie", max(pp.values())
line = "**G1 best on accuracy: %s (p = %s)**" % (word, f4(p))
check(line in md, "want " + line)
# sink: ungated vs gated at g1, last layer
u = [sink[("ungated", "g1", L, s)] for L in depths for s in seeds]
g = [sink[("gated", "g1", L, s)] for L in depths for s in seeds]
red = sum(a > b for a, b in zip(u, g)); inc = sum(a < b for a, b in zip(u, g))
line = "**sink reduced by G1: from %s to %s** (gated;" % (f4(sum(u) / len(u)), f4(sum(g) / len(g)))
check(line in md, "want " + line)
check("reduced in %d, increased in %d, p %s" % (red, inc, f4(sign_p(red, inc))) in md, "sink counts")
# (g1, g2) against (g3, g4)
d = [(acc[("gated", "g1", L, s)] + acc[("gated", "g2", L, s)]) / 2 -
     (acc[("gated", "g3", L, s)] + acc[("gated", "g4", L, s)]) / 2 for L in depths for s in seeds]
a, b = sum(x > 0 for x in d), sum(x < 0 for x in d)
p = sign_p(a, b); p1 = 1.0 if p != p else p
word = "yes" if a > b and p1 < 0.05 else "no" if b > a and p1 < 0.05 else "tie"
line = "beat query/key gates (g3, g4): %s (p = %s)** — mean accuracy of g1 and g2 minus that of g3 and g4, per arch, cell and seed: ahead in %d, behind in %d of %d" % (word, f4(p1), a, b, len(d))
check(line in md, "want " + line)
for m in fail: print(m)
sys.exit(1 if fail else 0)
PYEOF
finish
