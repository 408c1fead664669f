#!/usr/bin/env bash
# analyze's exit status and a report that reads alone (docs/SPEC.md,
# analysis/README.md "index.md"): a gnuplot that fails on a plot makes
# analyze exit 1 with gnuplot's own message (the report still written); a
# default report directory next to a read-only archive is refused with a
# hint to -o; index.md opens with a summary table holding exactly the verdict
# rows of verdicts.csv (decision, n, p_adj as written there) and a table of
# contents whose every link has its anchor; COLUMNS.md describes every column
# of every table written.
source "${CS_SOURCE_DIR:?}/tests/support/common.sh"
# the small demo spec on circles with three seeds (an override, docs/SPEC.md)
"$bin" run "$src/tests/specs/demo-small.ini" --set grid.task=circles --set grid.seed=0..2 -o a.h5 \
  >run.log 2>&1 && ok || { bad "the small sweep failed"; cat run.log; }

# a gnuplot that answers --version but fails on every script, with a message
mkdir fake
cat >fake/gnuplot <<'EOF'
#!/bin/sh
if [ "$1" = --version ]; then echo "gnuplot 5.4 (fake)"; exit 0; fi
echo "\"$1\" line 7: unknown or ambiguous terminal type (fake)" >&2
exit 1
EOF
chmod +x fake/gnuplot
PATH="$PWD/fake:$PATH" "$bin" analyze a.h5 -o R >an.out 2>an.err
check "failing gnuplot" 1 $? "^curvsweep analyze: [0-9]* plots failed; gnuplot (gnuplot) failed on R/[a-z_]*\.gp: exit status 1: \"[a-z_]*\.gp\" line 7: unknown or ambiguous terminal type (fake)$" an.err
[[ -s R/index.md && -s R/summary.csv ]] && ok || bad "no report after the failed plots"
grep -q 'line 7: unknown or ambiguous terminal type' R/index.md && ok || bad "index.md lacks gnuplot's message"
[[ ! -e R/gnuplot.log ]] && ok || bad "a gnuplot.log was left behind"
# a gnuplot that cannot be started at all is a missing one: plots skipped, exit 0
CS_GNUPLOT=/nonexistent/gnuplot "$bin" analyze a.h5 -o NG >ng.out 2>ng.err
check "no gnuplot" 0 $? "warning: gnuplot not found: plots skipped" ng.err

# the default report directory next to a read-only archive (as a user
# without write access to it; root writes anywhere)
if [[ $(id -u) -eq 0 ]] && command -v setpriv >/dev/null; then
  chmod 755 "$tmp"; mkdir ro; cp a.h5 ro/; chmod 555 ro; chmod 644 ro/a.h5
  setpriv --reuid=65534 --regid=65534 --clear-groups "$bin" analyze ro/a.h5 >ro.out 2>&1
  check "read-only default directory" 1 $? "cannot write the report next to the archive, in ro/a-report: Permission denied; give a writable directory with -o DIR" ro.out
  [[ ! -e ro/a-report ]] && ok || bad "a report directory appeared in the read-only directory"
fi

# index.md: the summary table and the contents, against verdicts.csv
"$bin" analyze a.h5 -o S >s.out 2>&1
/usr/bin/python3 - S <<'EOF' && ok || bad "index.md summary or contents disagree with verdicts.csv"
import csv, re, sys
d = sys.argv[1]
md = open(f"{d}/index.md", encoding="utf-8").read()
rows = list(csv.DictReader(open(f"{d}/verdicts.csv")))
order = ["1", "2", "3", "4", "sample-efficiency", "gate-g1-best", "gate-sink", "gate-ov-qk"]
rank = lambda c: order.index(c) if c in order else 99
# verdict rows: the claim's own verdict (scope "verdict", claim 1 its one row) and the
# per-normalisation rows of claim 2 — those index.md marks with verdict = 1 are the ones
# in the summary; here: every row that is not a check behind another row of its claim
errors = []
head = md.index("## Summary"); toc = md.index("## Contents")
if not head < toc < md.index("## Grid"):
    errors.append("summary, contents and grid are not in that order")
table = [l for l in md[head:toc].splitlines() if l.startswith("| ") and not l.startswith("| claim ")]
cells = [[c.strip() for c in re.split(r"(?<!\\)\|", l)[1:-1]] for l in table]
want = [r for r in rows if r["scope"] == "verdict" or r["claim"] == "1" or
        (r["claim"] == "2" and r["scope"] in ("Kt", "Kh"))]
# the sections whose verdict row repeats its check's scope (calib-ece, ...): the second
# row of each (claim, scope) is the verdict
seen = set()
for r in rows:
    if r["claim"] in order or r["scope"] == "verdict":
        continue
    if (r["claim"], r["scope"]) in seen:
        want.append(r)
    seen.add((r["claim"], r["scope"]))
want.sort(key=lambda r: rank(r["claim"]))
if len(cells) != len(want):
    errors.append(f"summary has {len(cells)} rows, verdicts.csv {len(want)} verdict rows")
def num(s):
    return float(s) if s not in ("—", "n/a") else float("nan")
for c, r in zip(cells, want):
    claim = re.sub(r"\[(.*)\]\(#.*\)", r"\1", c[0])
    if claim != r["claim"] or c[2] != r["scope"]:
        errors.append(f"row {c} is not {r['claim']},{r['scope']}")
    if c[3] != f"**{r['decision']}**" or int(c[4]) != int(r["n"]):
        errors.append(f"row {c}: decision/n, want {r['decision']} / {r['n']}")
    p = float(r["p_adj"])
    if p == p and abs(num(c[6]) - p) > 5e-4 * max(abs(p), 1e-12):
        errors.append(f"row {c}: p_adj {c[6]}, verdicts.csv {p}")
    e = float(r["effect"])
    if e == e and abs(num(c[5].split(" [")[0]) - e) > 5e-4 * max(abs(e), 1e-12):
        errors.append(f"row {c}: effect {c[5]}, verdicts.csv {e}")
# every link of the contents (and of the summary) has its anchor; the claims are listed
anchors = set(re.findall(r'<a id="([^"]+)"></a>', md))
links = re.findall(r"\]\(#([^)]+)\)", md[head:md.index("## Grid")])
missing = [l for l in links if l not in anchors]
if missing: errors.append(f"links without an anchor: {missing}")
for k in "1234":
    if not re.search(rf"^  - \[Claim {k} — ", md[toc:], re.M): errors.append(f"claim {k} not in the contents")
# the claim-4 section is a table, no long bullets
c4 = md[md.index("### Claim 4"):]
c4 = c4[:c4.index("\n## ")]
if re.search(r"^- \*\*", c4, re.M): errors.append("claim 4 still has bullets")
if not re.search(r"^\| gated \| circles \| all \(skeleton\) \| 1–2 \| 3 \| ", c4, re.M):
    errors.append("claim 4's table has no gated circles row")
# COLUMNS.md: every column of every table index.md links is described
cols = open(f"{d}/COLUMNS.md", encoding="utf-8").read()
if "not described" in cols: errors.append("COLUMNS.md has undescribed columns")
for t in sorted(set(re.findall(r"\]\(([a-z_]+\.csv)\)", md))):
    header = open(f"{d}/{t}").readline().strip().split(",")
    sec = cols[cols.index(f"## {t}"):]
    sec = sec[:sec.index("\n## ")] if "\n## " in sec else sec
    for h in header:
        if h.replace("_", r"\_") not in sec: errors.append(f"COLUMNS.md: {t} column {h} missing")
if "analysis/README.md in the curvsweep sources" in md: errors.append("index.md sends readers to the sources")
if "[COLUMNS.md](COLUMNS.md)" not in md: errors.append("index.md does not link COLUMNS.md")
if errors:
    print("\n".join(errors)); sys.exit(1)
EOF
finish
