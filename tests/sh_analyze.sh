#!/usr/bin/env bash
# End-to-end check of `curvsweep analyze`: run the small sweep under MPI, analyse
# it, and check the report: every file exists, the PNGs are real, and each
# verdict number in index.md agrees with the CSV tables (recomputed here in
# Python from the CSVs alone), and no figure draws a flat or unresolved row's
# curvature (tests/support/plots_flat.py). Then the error paths and a missing
# gnuplot.
source "${CS_SOURCE_DIR:?}/tests/support/common.sh"

if ! "$bin" --help | grep -q ' run '; then
  echo "FAIL: 'curvsweep run' is not available in $bin yet; this test needs it to make an archive"
  exit 1
fi
if ! "$bin" --help | grep -q ' analyze '; then
  echo "FAIL: 'curvsweep analyze' is not registered in src/cli/main.c's command table (cmd_analyze)"
  exit 1
fi
spec="$src/tests/specs/sweep-small.ini"
if ! mpiexec --oversubscribe -np 2 "$bin" run "$spec" -o X.h5 >run.log 2>&1; then
  cat run.log; echo "FAIL: curvsweep run of $spec"; exit 1
fi

# --- the report ---
if "$bin" analyze X.h5 -o R >an.out 2>an.err; then ok; else bad "analyze exit $?"; cat an.out an.err; fi
grep -q "report: R/index.md" an.out && ok || bad "no 'report:' line"
grep -q "analysed 12 of 12 cells done" an.out && ok || { bad "cell count line"; cat an.out; }
[[ ! -s an.err ]] && ok || { bad "warnings with gnuplot present:"; cat an.err; }
for f in summary.csv prefix.csv amplification.csv gap.csv verdicts.csv index.md; do
  [[ -s R/$f ]] && ok || bad "missing R/$f"
done
png_sig=$(printf '\x89PNG\r\n\x1a\n' | od -An -tx1)
for p in curvature_depth accuracy_depth prefix hist_Kt hist_Kh map_Kt; do
  for ext in gp dat png; do [[ -s R/${p}_circles.$ext ]] && ok || bad "missing R/${p}_circles.$ext"; done
  f=R/${p}_circles.png
  [[ -f $f && "$(head -c 8 "$f" | od -An -tx1)" == "$png_sig" ]] && ok || bad "$f: not a PNG"
  size=$(stat -c %s "$f" 2>/dev/null || echo 0)
  [[ $size -gt 5000 ]] && ok || bad "$f: $size bytes, want > 5000"
  grep -q "(${p}_circles.png)" R/index.md && ok || bad "index.md does not link ${p}_circles.png"
  # the script re-renders by itself in the report directory
  if (cd R && rm -f "${p}_circles.png" && gnuplot "${p}_circles.gp" 2>/dev/null) && [[ -s R/${p}_circles.png ]]; then ok
  else bad "gnuplot ${p}_circles.gp does not re-render"; fi
done
for t in summary prefix amplification gap; do
  grep -q "($t.csv)" R/index.md && ok || bad "index.md does not link $t.csv"
done
[[ $(grep -c '^arch,' R/summary.csv) -eq 1 && $(wc -l <R/summary.csv) -eq 7 ]] && ok || bad "summary.csv rows"

# --- the verdicts of index.md against the CSVs ---
cat >check.py <<'EOF'
import csv, math, sys

REPORT = sys.argv[1]
def rows(name):
    with open(f"{REPORT}/{name}") as f:
        return list(csv.DictReader(f))
def num(s):
    return float(s)
def f4(v):
    return "n/a" if math.isnan(v) else "%.4g" % v
def sign_p(k, n):
    if n == 0: return float("nan")
    m = min(k, n - k)
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(m + 1)) / 2 ** n)
def median(v):
    v = sorted(v); n = len(v)
    return float("nan") if n == 0 else (v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2)

md = open(f"{REPORT}/index.md", encoding="utf-8").read()
sec = {}
for part in md.split("### Claim ")[1:]:
    sec[int(part[0])] = part.split("\n## ")[0]
assert set(sec) == {1, 2, 3, 4}, sorted(sec)
errors = []
def expect(claim, text):
    if text not in sec[claim]:
        errors.append(f"claim {claim}: '{text}' not in index.md:\n{sec[claim]}")

summary, prefix, amp, gap = rows("summary.csv"), rows("prefix.csv"), rows("amplification.csv"), rows("gap.csv")
gated = ("gated", "gated-headwise")
# claim 1: largest Kt_absmean_max of ungated skeleton prefixes, cell count, gated median;
# a prefix row is flat when Kt_absmean_max <= 1e-8, or <= 1e-6 x the gated mean |K~| there
pkey = lambda r: (r["task"], r["depth"], r["regime"], r["prefix"])
gref = {pkey(r): num(r["Kt_absmean_mean"]) for r in prefix if r["arch"] == "gated"}
def flat_rows(task=None, regime=None):
    sel = [r for r in prefix if r["arch"] == "ungated" and r["skeleton"] == "1"
           and task in (None, r["task"]) and regime in (None, r["regime"])]
    cls = [r for r in sel if math.isfinite(num(r["curved_frac_max"]))]
    if cls:  # classified: every resolved point flat
        return all(num(r["curved_frac_max"]) == 0 for r in cls)
    return sel and all(num(r["Kt_absmean_max"]) <= 1e-8 or
                       (pkey(r) in gref and num(r["Kt_absmean_max"]) <= 1e-6 * gref[pkey(r)]) for r in sel)
ung_skel = [r for r in prefix if r["arch"] == "ungated" and r["skeleton"] == "1"]
cells = sum(int(r["n_seeds"]) for r in summary if r["arch"] == "ungated" and r["skeleton"] == "1")
assert ung_skel and cells > 0, (len(ung_skel), cells)
classified = [r for r in ung_skel if math.isfinite(num(r["curved_frac_max"]))]
if classified:
    # every resolved point flat: no seed of any prefix row has curved points
    expect(1, "their points classified after every layer")
    cmax = max(num(r["curved_frac_max"]) for r in classified)
    if cmax == 0: expect(1, "**Supported**: every resolved point of ungated skeleton cells is flat")
    else: expect(1, f"largest curved fraction **{f4(cmax)}**")
    shares = [num(r["unresolved_share"]) for r in classified]
    if all(v <= 0.01 for v in shares if math.isfinite(v)):
        if "**Caution**" in sec[1]: errors.append("claim 1: Caution with no row above 1% unresolved")
    groups = {}
    for r in classified: groups.setdefault((r["task"], r["depth"], r["regime"]), []).append(num(r["unresolved_share"]))
    if any(all(v > 0.01 for v in g) for g in groups.values()): expect(1, "**Caution**")
else:
    flat = [num(r["Kt_absmean_max"]) for r in ung_skel]
    expect(1, f"{cells} done; largest mean |K̃|")
    expect(1, f"**{f4(max(flat))}** (flat bound 1e-08)")
    gmed = median([num(r["Kt_absmean_mean"]) for r in prefix if r["arch"] in gated and r["skeleton"] == "1"])
    expect(1, f"gated skeleton cells: {f4(gmed)}.")
    if max(flat) <= 1e-8: expect(1, "**Supported**: every ungated skeleton cell is flat")
    elif flat_rows(): expect(1, "**Supported, up to rounding in ill-conditioned models**")
    else: expect(1, "**Not supported by these data**")
# claims 2-4 (verdicts.csv), recomputed from the archive: one value per seed,
# exact sign-flip tests by enumeration, Holm within each family
import os
import h5py
sys.path.insert(0, os.path.join(os.environ["CS_SOURCE_DIR"], "tests", "support"))
from verdict_tests import signflip, holm, needs
f = h5py.File(sys.argv[2], "r")
cells = f["cells"][()]
cv = f["curvature"][: f["curvature"].attrs["committed_rows"]]
cell = {}
for c in cells:
    if c["status"] == b"done":
        cell[(c["arch"].decode(), c["task"].decode(), int(c["depth"]), int(c["seed"]))] = int(c["cell_id"])
acc = {k: float(cells[cells["cell_id"] == i]["test_acc"][0]) for k, i in cell.items()}
stat = {}
for r in cv:
    stat[(int(r["cell_id"]), int(r["prefix"]))] = r
seeds = sorted({k[3] for k in cell}); depths = sorted({k[2] for k in cell}); tasks = sorted({k[1] for k in cell})
def last(key, col):
    i = cell.get(key)
    return float(stat[(i, key[2])][col]) if i is not None else float("nan")
vt = {(r["claim"], r["scope"]): r for r in rows("verdicts.csv")}
checked = []
def check_row(claim, scope, d, p, padj, k, side):
    checked.append((claim, scope))
    r = vt.get((claim, scope))
    if r is None: errors.append(f"verdicts.csv: no row {claim} {scope}"); return
    n = sum(math.isfinite(x) for x in d)
    m = sum(x for x in d if math.isfinite(x)) / n
    if int(r["n"]) != n: errors.append(f"{claim} {scope}: n {r['n']} != {n}")
    if abs(num(r["effect"]) - m) > 1e-9 * max(1, abs(m)): errors.append(f"{claim} {scope}: effect {r['effect']} != {m}")
    if abs(num(r["p_raw"]) - p) > 1e-12: errors.append(f"{claim} {scope}: p_raw {r['p_raw']} != {p}")
    if abs(num(r["p_adj"]) - padj) > 1e-12: errors.append(f"{claim} {scope}: p_adj {r['p_adj']} != {padj}")
    want = "too few" if n < needs(k, "greater" if side == "one" else "two") else "supported" if padj < 0.05 and m > 0 else "not supported"
    if r["decision"] != want: errors.append(f"{claim} {scope}: decision {r['decision']} != {want}")
# claim 2: per seed, the net share of (task, depth) rows where gated is more curved
for q, col in (("Kt", "Kt_absmean"), ("Kh", "Kh_absmean")):
    d = []
    for s in seeds:
        v = [(last(("gated", t, L, s), col), last(("ungated", t, L, s), col)) for t in tasks for L in depths]
        v = [(a > b) - (a < b) for a, b in v if math.isfinite(a) and math.isfinite(b)]
        d.append(sum(v) / len(v) if v else float("nan"))
    if any(math.isfinite(x) for x in d):
        p = signflip(d, "greater"); check_row("2", f"gated;{q}", d, p, p, 1, "one")
# claim 3: nonlinear rows (circles) one-sided, Holm over the rows; the pooled per-seed mean
rowd = {L: [acc[("gated", "circles", L, s)] - acc[("ungated", "circles", L, s)] for s in seeds] for L in depths}
ps = [signflip(rowd[L], "greater") for L in depths]
for L, p, pa in zip(depths, ps, holm(ps)):
    check_row("3", f"nonlinear;circles;depth {L};all", rowd[L], p, pa, len(depths), "one")
pool = [sum(rowd[L][i] for L in depths) / len(depths) for i in range(len(seeds))]
p = signflip(pool, "greater"); check_row("3", "nonlinear;pooled", pool, p, p, 1, "one")
# claim 4: per seed, the slope of log mean |K^| on log depth; the family: gated rows x 2 x 2
def slope(x, y):
    pts = [(a, b) for a, b in zip(x, y) if math.isfinite(b)]
    if len(pts) < 2: return float("nan")
    mx = sum(a for a, _ in pts) / len(pts); my = sum(b for _, b in pts) / len(pts)
    sxx = sum((a - mx) ** 2 for a, _ in pts)
    return sum((a - mx) * (b - my) for a, b in pts) / sxx if sxx > 0 else float("nan")
fam = {}
for col, name in (("Kh_absmean", "Kh"), ("intabsK", "intabsK")):
    d = []
    for s in seeds:
        y = [last(("gated", "circles", L, s), col) for L in depths]
        d.append(slope([math.log(L) for L in depths], [math.log(v) if v > 0 else float("nan") for v in y]))
    fam[f"gated;circles;all;across-depths;{name}"] = d
    D = max(depths); d = []
    for s in seeds:
        i = cell.get(("gated", "circles", D, s))
        y = [float(stat[(i, l)][col]) if i is not None else float("nan") for l in range(1, D + 1)]
        d.append(slope([math.log(l) for l in range(1, D + 1)], [math.log(v) if v > 0 else float("nan") for v in y]))
    fam[f"gated;circles;all;along-layers;{name}"] = d
fam = {k: d for k, d in fam.items() if any(math.isfinite(x) for x in d)}
ps = {k: signflip(d, "greater") for k, d in fam.items()}
adj = dict(zip(ps, holm(list(ps.values()))))
for k, d in fam.items(): check_row("4", k, d, ps[k], adj[k], len(fam), "one")
# claim 2 on K~ and K^ (2), claim 3 (3 rows + pooled), claim 4 (2 directions x 2 measures)
if len(checked) != 10: errors.append(f"recomputed {len(checked)} checks, want 10: {checked}")
# every supported row has p_adj < alpha; the verdict rows state n
for r in rows("verdicts.csv"):
    if r["decision"] == "supported" and not (num(r["p_adj"]) < 0.05) and r["test"] not in ("every resolved point flat", "mean |Kt| bound"):
        errors.append(f"supported with p_adj {r['p_adj']}: {r}")
    if r["decision"] not in ("supported", "not supported", "equivalent", "not equivalent", "inconclusive", "too few"):
        errors.append(f"bad decision: {r}")
for r in rows("summary.csv"):
    for c in ("acc_ci_low", "acc_ci_high"):
        if math.isfinite(num(r[c])) and not 0 <= num(r[c]) <= 1: errors.append(f"summary.csv {c} {r[c]} outside [0, 1]")
if errors:
    print("\n".join(errors)); sys.exit(1)
print("index.md verdicts agree with the CSVs")
EOF
if /usr/bin/python3 check.py R X.h5; then ok; else bad "index.md verdicts disagree with the CSVs"; fi
# --- no figure draws the curvature of a row flat to rounding or unresolved (its
# ungated rows are flat), and its point map's classes are the archive's ---
if /usr/bin/python3 "$src/tests/support/plots_flat.py" R --archive X.h5 --min-flat 1 >flat.out 2>&1; then ok
else bad "a figure draws a flat or unresolved row's curvature:"; cat flat.out; fi
grep -q "Cells: \*\*12 of 12 done (100.0%)\*\*" R/index.md && ok || bad "index.md grid line"

# --- a second run gives the same tables (fixed bootstrap streams) ---
# (the analyses below check tables and index.md only: no plots rendered)
CS_GNUPLOT=/nonexistent "$bin" analyze X.h5 -o R2 >/dev/null 2>&1
for t in summary prefix amplification gap verdicts; do cmp -s R/$t.csv R2/$t.csv && ok || bad "$t.csv differs between runs"; done

# --- default directory: X-report next to the archive ---
CS_GNUPLOT=/nonexistent "$bin" analyze X.h5 >o 2>&1 && [[ -s X-report/index.md ]] && grep -q "report: X-report/index.md" o && ok || { bad "default directory"; cat o; }

# --- missing gnuplot: tables and index.md, no plots, a warning ---
CS_GNUPLOT=/nonexistent/gnuplot "$bin" analyze X.h5 -o NG >o 2>e; rc=$?
[[ $rc -eq 0 ]] && ok || bad "no gnuplot: exit $rc"
grep -q "warning: gnuplot not found: plots skipped" e && ok || { bad "no gnuplot warning"; cat e; }
[[ -s NG/summary.csv && -s NG/index.md && -s NG/prefix_circles.gp ]] && ok || bad "no gnuplot: tables missing"
ls NG/*.png >/dev/null 2>&1 && bad "no gnuplot: PNGs written" || ok

# --- a partial archive (one shard of two): analysed, the fraction stated ---
mpiexec --oversubscribe -np 2 "$bin" run "$spec" -o P.h5 --shard 0/2 >run2.log 2>&1 || { cat run2.log; bad "shard run"; }
CS_GNUPLOT=/nonexistent "$bin" analyze P.h5 -o PR >o 2>e && ok || { bad "partial analyze"; cat o e; }
grep -q "Partial archive" PR/index.md && grep -q "of 12 done" PR/index.md && ok || bad "partial not stated"
grep -q "warning: partial archive" e && ok || bad "no partial warning"

# --- errors: another spec mixed in, a missing file, usage (no done cells: test_analysis) ---
mpiexec --oversubscribe -np 2 "$bin" run "$src/tests/specs/demo-small.ini" -o O.h5 >/dev/null 2>&1
"$bin" analyze X.h5 O.h5 -o MX >o 2>&1; rc=$?
[[ $rc -eq 2 ]] && grep -q "different sweeps" o && grep -q "O.h5" o && ok || { bad "mixed specs: exit $rc"; cat o; }
[[ ! -e MX ]] && ok || bad "mixed specs: directory created"
"$bin" analyze "$tmp/none.h5" >o 2>&1; rc=$?
[[ $rc -ne 0 ]] && grep -q "none.h5" o && ok || { bad "missing file: exit $rc"; cat o; }
"$bin" analyze >o 2>&1; [[ $? -eq 2 ]] && grep -q "missing ARCHIVE" o && ok || bad "no archive usage"
"$bin" analyze X.h5 --frob >o 2>&1; [[ $? -eq 2 ]] && grep -q "unknown option" o && ok || bad "bad option"
for bad_arg in "--alpha 2" "--alpha 0" "--alpha x" "--margin 1.5" "--margin -0.01" "--alpha"; do
  # shellcheck disable=SC2086
  "$bin" analyze X.h5 -o BAD $bad_arg >o 2>&1; rc=$?
  [[ $rc -eq 2 ]] && grep -q -- "${bad_arg%% *} needs" o && ok || { bad "analyze $bad_arg: exit $rc"; cat o; }
done
[[ ! -e BAD ]] && ok || bad "bad --alpha/--margin: directory created"
# --alpha and --margin reach the verdicts: a stricter alpha adjusts nothing but the decisions
CS_GNUPLOT=/nonexistent "$bin" analyze X.h5 -o A1 --alpha 0.2 --margin 0.05 >/dev/null 2>&1 && grep -q "α = 0.2" A1/index.md && grep -q "±0.05" A1/index.md \
  && ok || bad "--alpha 0.2 --margin 0.05 not in index.md"
"$bin" analyze --help >o 2>&1 && grep -q "usage: curvsweep analyze ARCHIVE" o && ok || bad "help"

finish
