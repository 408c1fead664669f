#!/usr/bin/env bash
# The gate-position section of `curvsweep analyze` end to end
# (analysis/VERDICTS.md, "Gate positions"): a tiny self-family sweep
# (tests/specs/gates-tiny.ini, ungated and gated at g1..g5, 6 seeds) run as
# two shards, analysed from both shards at once and from their merge. The
# section, gates.csv and verdicts.csv exist, both reports agree, and every
# gate verdict is recomputed here in Python from the archives alone
# (/cells, /curvature): one value per seed (its mean difference over the
# depths), the exact two-sided sign-flip p by enumeration, Holm over G1's
# four comparisons, the seeds a test needs (6 seeds: too few for G1, which
# needs 8) and each decision (verdicts.csv), the sink means and the
# headline word; the table's accuracy of every row and its sign counts
# against g1 match the archives too.
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
cmp -s R/verdicts.csv M/verdicts.csv && ok || bad "verdicts.csv of the shards differs from the merge's"
grep -q "^## Where should the gate sit? (gate positions)" R/index.md && ok || bad "no gate section"
grep -q "(gates.png)" R/index.md && ok || bad "index.md does not show gates.png"
/usr/bin/python3 "$src/tests/support/plots_flat.py" R >flat.out 2>&1 && ok || { bad "plots_flat:"; cat flat.out; }

if /usr/bin/python3 - s0.h5 s1.h5 R/gates.csv R/index.md R/verdicts.csv <<'PYEOF'; then ok; else bad "verdicts against the archives"; fi
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
# the verdicts (verdicts.csv): one value per seed, its mean over the depths
import os
sys.path.insert(0, os.path.join(os.environ["CS_SOURCE_DIR"], "tests", "support"))
from verdict_tests import signflip, holm, needs
vrows = list(csv.DictReader(open(sys.argv[5])))
def reading(m, padj, n, k):
    return "too few" if n < needs(k) else ("supported" if m > 0 else "not supported") if padj < 0.05 else "inconclusive"
def row(claim, scope):
    # the verdict row comes first in verdicts.csv, then its check (same numbers)
    rs = [r for r in vrows if r["claim"] == claim and r["scope"] == scope]
    check(rs, "no verdicts.csv row %s %s" % (claim, scope))
    return rs[0]
def same(r, n, m, p, padj):
    check(int(r["n"]) == n and abs(float(r["effect"]) - m) < 1e-12 and abs(float(r["p_raw"]) - p) < 1e-12
          and abs(float(r["p_adj"]) - padj) < 1e-12, "verdicts.csv %s vs n %d effect %r p %r p_adj %r" % (r, n, m, p, padj))
mean = lambda v: sum(v) / len(v)
# G1 best: g1 − q per seed; Holm over the 4 comparisons; all ahead → supported
qs = ("g2", "g3", "g4", "g5")
d = {q: [mean([acc[("gated", "g1", L, s)] - acc[("gated", q, L, s)] for L in depths]) for s in seeds] for q in qs}
ps = [signflip(d[q]) for q in qs]; adj = holm(ps)
reads = []
for q, p, pa in zip(qs, ps, adj):
    same(row("gate-g1-best", "g1 vs " + q), len(seeds), mean(d[q]), p, pa)
    reads.append(reading(mean(d[q]), pa, len(seeds), 4))
word = "too few" if all(x == "too few" for x in reads) else "supported" if all(x == "supported" for x in reads) \
    else "not supported" if "not supported" in reads else "inconclusive"
check(row("gate-g1-best", "verdict")["decision"] == word, "G1 best decision, want " + word)
if word == "too few":
    check("**G1 best on accuracy: too few seeds (n = %d; needs ≥ %d)**" % (len(seeds), needs(4)) in md, "G1 too few line")
# sink: ungated − gated at g1 per seed, a family of one
u = [mean([sink[("ungated", "g1", L, s)] for L in depths]) for s in seeds]
g = [mean([sink[("gated", "g1", L, s)] for L in depths]) for s in seeds]
dd = [a - b for a, b in zip(u, g)]; p = signflip(dd)
same(row("gate-sink", "gated"), len(seeds), mean(dd), p, p)
w = reading(mean(dd), p, len(seeds), 1)
check(row("gate-sink", "gated")["decision"] == w, "sink decision, want " + w)
head = {"supported": "reduced", "not supported": "increased", "inconclusive": "no significant difference",
        "too few": "too few seeds"}[w]
line = "**attention sink at G1 (gated): %s → %s, %s**" % (f4(mean(u)), f4(mean(g)), head)
check(line in md, "want " + line)
# (g1, g2) against (g3, g4)
dd = [mean([(acc[("gated", "g1", L, s)] + acc[("gated", "g2", L, s)]) / 2 -
            (acc[("gated", "g3", L, s)] + acc[("gated", "g4", L, s)]) / 2 for L in depths]) for s in seeds]
p = signflip(dd)
same(row("gate-ov-qk", "g1 g2 vs g3 g4"), len(seeds), mean(dd), p, p)
w = reading(mean(dd), p, len(seeds), 1)
check(row("gate-ov-qk", "g1 g2 vs g3 g4")["decision"] == w, "ov-qk decision, want " + w)
for m in fail: print(m)
sys.exit(1 if fail else 0)
PYEOF
finish
