#!/usr/bin/env bash
# End-to-end check of `curvsweep analyze`: run the small sweep under MPI, analyse
# it, and check the report: every file exists, the PNGs are real, and each
# verdict number in index.md agrees with the CSV tables (recomputed here in
# Python from the CSVs alone). Then the error paths and a missing gnuplot.
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
for f in summary.csv prefix.csv amplification.csv gap.csv index.md; do
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

d = sys.argv[1]
def rows(name):
    with open(f"{d}/{name}") as f:
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

md = open(f"{d}/index.md", encoding="utf-8").read()
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
# claim 2: gated above ungated on k of n (task, depth, regime) pairs, median ratio
key = lambda r: (r["task"], r["depth"], r["regime"])
ung = {key(r): num(r["Kt_absmean_mean"]) for r in summary if r["arch"] == "ungated"}
pairs = [(num(r["Kt_absmean_mean"]), ung[key(r)]) for r in summary
         if r["arch"] == "gated" and key(r) in ung
         and math.isfinite(num(r["Kt_absmean_mean"])) and math.isfinite(ung[key(r)])]
k = sum(g > u for g, u in pairs)
expect(2, f"above ungated on **{k} of {len(pairs)}**")
expect(2, f"sign test p = {f4(sign_p(k, len(pairs)))}")
expect(2, f"median ratio gated/ungated **{f4(median([g / u for g, u in pairs if u > 0]))}**")
# claim 3: per-row gaps and pooled signs per boundary
for r in gap:
    if r["comparison"] != "gated-ungated": continue
    expect(3, f"{r['task']} ({r['boundary']}), depth {r['depth']}, {r['regime']}: {r['n_pairs']} pair{'' if r['n_pairs'] == '1' else 's'}, "
              f"Δacc {f4(num(r['dacc_mean']))} [{f4(num(r['dacc_ci_low']))}, {f4(num(r['dacc_ci_high']))}], "
              f"sign test p = {f4(num(r['dacc_sign_p']))}")
for b in ("nonlinear", "linear"):
    sel = [r for r in gap if r["comparison"] == "gated-ungated" and r["boundary"] == b]
    if not sel:
        expect(3, f"{b} tasks: none in this archive"); continue
    npos = sum(int(r["dacc_npos"]) for r in sel); nneg = sum(int(r["dacc_nneg"]) for r in sel)
    expect(3, f"{b} tasks, pooled over every seed pair: gated more accurate in **{npos}**, less in "
              f"**{nneg}** (sign test p = **{f4(sign_p(npos, npos + nneg))}**)")
# claim 4: every amplification row's slopes as printed, and its verdict recomputed:
# Supported only when K^ or integral |K| dA grows (interval above 0) across depths or prefixes
for r in amp:
    s = lambda q: f"{f4(num(r[q]))} [{f4(num(r[q + '_ci_low']))}, {f4(num(r[q + '_ci_high']))}]"
    sl = lambda d: (f"K̃ slope {s(f'Kt_{d}_slope')}, raw |K| slope {s(f'K_{d}_slope')}, "
                    f"log det g slope {s(f'logdet_{d}_slope')}, K̂ slope {s(f'Kh_{d}_slope')}, "
                    f"∫|K| dA slope {s(f'intabsK_{d}_slope')}, anisotropy index slope {s(f'aniso_{d}_slope')}")
    expect(4, f"**{r['arch']}**, {r['task']}, {r['regime']}")
    expect(4, f"{sl('depth')}; K̃ ratio deepest/shallowest {f4(num(r['Kt_ratio']))}, raw |K| ratio "
              f"{f4(num(r['K_ratio']))}, K̂ ratio {f4(num(r['Kh_ratio']))}, ∫|K| dA ratio {f4(num(r['intabsK_ratio']))}; "
              f"anisotropy index {f4(num(r['aniso_shallowest']))} at depth {r['depth_min']} → "
              f"{f4(num(r['aniso_deepest']))} at depth {r['depth_max']}")
    expect(4, f"depth-{r['prefix_depth']} models: {sl('prefix')}; anisotropy index "
              f"{f4(num(r['aniso_prefix_first']))} after layer 1 → {f4(num(r['aniso_prefix_last']))} "
              f"after layer {r['prefix_depth']}")
    up = lambda q, d: num(r[f"{q}_{d}_slope_ci_low"]) > 0
    known = lambda q, d: math.isfinite(num(r[f"{q}_{d}_slope_ci_low"]))
    dirs = ("depth", "prefix")
    line = [l for l in sec[4].split("\n") if l.startswith(f"- **{r['arch']}**, {r['task']}, {r['regime']}")]
    if len(line) != 1:
        errors.append(f"claim 4: {len(line)} lines for {r['arch']} {r['task']} {r['regime']}"); continue
    line = line[0]
    def has(text):
        if text not in line: errors.append(f"claim 4: '{text}' not in:\n{line}")
    if r["arch"] == "ungated" and r["skeleton"] == "1" and flat_rows(r["task"], r["regime"]):
        has("flat to rounding"); has("Verdict: **Not supported** (flat, claim 1)")
    elif any(up("Kh", d) or up("intabsK", d) for d in dirs):
        has("Verdict: **Supported**.")
    elif any(up("Kt", d) and (known("Kh", d) or known("intabsK", d)) for d in dirs):
        has("Verdict: **K̃ only: growth explained by anisotropy**: ")
        if up("Kt", "depth") and (known("Kh", "depth") or known("intabsK", "depth")):
            has(f"anisotropy index {f4(num(r['aniso_shallowest']))} at depth {r['depth_min']} → "
                f"{f4(num(r['aniso_deepest']))} at depth {r['depth_max']} (AM/GM")
    elif any(up("Kt", d) for d in dirs):
        has("Verdict: **Not testable with this archive**")
    elif any(known("Kt", d) or known("Kh", d) or known("intabsK", d) for d in dirs):
        has("Verdict: **Not supported**.")
    else:
        has("Verdict: **Not testable** (no interval)")
if errors:
    print("\n".join(errors)); sys.exit(1)
print("index.md verdicts agree with the CSVs")
EOF
if python3 check.py R; then ok; else bad "index.md verdicts disagree with the CSVs"; fi
grep -q "Cells: \*\*12 of 12 done (100.0%)\*\*" R/index.md && ok || bad "index.md grid line"

# --- a second run gives the same tables (fixed bootstrap streams) ---
"$bin" analyze X.h5 -o R2 >/dev/null 2>&1
for t in summary prefix amplification gap; do cmp -s R/$t.csv R2/$t.csv && ok || bad "$t.csv differs between runs"; done

# --- default directory: X-report next to the archive ---
"$bin" analyze X.h5 >o 2>&1 && [[ -s X-report/index.md ]] && grep -q "report: X-report/index.md" o && ok || { bad "default directory"; cat o; }

# --- missing gnuplot: tables and index.md, no plots, a warning ---
CS_GNUPLOT=/nonexistent/gnuplot "$bin" analyze X.h5 -o NG >o 2>e; rc=$?
[[ $rc -eq 0 ]] && ok || bad "no gnuplot: exit $rc"
grep -q "warning: gnuplot not found: plots skipped" e && ok || { bad "no gnuplot warning"; cat e; }
[[ -s NG/summary.csv && -s NG/index.md && -s NG/prefix_circles.gp ]] && ok || bad "no gnuplot: tables missing"
ls NG/*.png >/dev/null 2>&1 && bad "no gnuplot: PNGs written" || ok

# --- a partial archive (one shard of two): analysed, the fraction stated ---
mpiexec --oversubscribe -np 2 "$bin" run "$spec" -o P.h5 --shard 0/2 >run2.log 2>&1 || { cat run2.log; bad "shard run"; }
"$bin" analyze P.h5 -o PR >o 2>e && ok || { bad "partial analyze"; cat o e; }
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
"$bin" analyze --help >o 2>&1 && grep -q "usage: curvsweep analyze ARCHIVE" o && ok || bad "help"

finish
