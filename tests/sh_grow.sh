#!/usr/bin/env bash
# Specs that can grow and shard completeness (docs/ARCHIVE.md, "Identity",
# "Growing a sweep", "Merge"): a comment added resumes; seed 0..1 then 0..3
# runs only the new cells, keeps the old results bitwise and equals a fresh
# run of 0..3; analyze sees four seeds; a changed non-grid key or fewer
# values is refused naming the key; --dry-run counts the cells a grow runs;
# a merge of 1 of 2 shards is refused without --partial and marked with it;
# archives of specs that differ only in [grid] values merge into the union.
source "${CS_SOURCE_DIR:?}/tests/support/common.sh"

cat > g2.ini <<'EOF'
; grow test: 8 quick cells
[sweep]
name        = grow
save_points = yes
save_params = yes
[grid]
arch  = ungated, gated
depth = 1..2
seed  = 0..1
[task]
train_points = 128
test_points  = 128
[model]
width = 8
[train]
epochs     = 10
batch      = 64
eval_every = 5
[curvature]
points = 16
field  = 4
EOF
sed 's/^seed  = 0..1/seed  = 0..3/' g2.ini > g4.ini
sed 's/^seed  = 0..1/seed  = 2, 3/' g2.ini > g23.ini

# 1. the first run, and a fresh run of the grown spec (the expectation)
mpi 2 "$bin" run g2.ini -o a.h5 2>a.err && ok || { bad "first run"; cat a.err; }
mpi 2 "$bin" run g4.ini -o fresh.h5 2>/dev/null && ok || bad "fresh run of seed 0..3"
cp a.h5 a2.h5

# 2. a comment, blank lines, reordered keys, an output line, spellings: resumes, runs nothing
cat > comment.ini <<'EOF'
; the same sweep: comments, blank lines, other key order and spellings,
; defaults written out, an output line
[curvature]
field  = 4
points = 16

[sweep]
save_params = yes
output      = elsewhere.h5
name        = grow
save_points = yes
[train]
eval_every = 5
epochs     = 10
batch      = 64
lr         = 0.0030
[grid]
arch  = ungated, gated
depth = 1, 2
seed  = 0, 1
[model]
width = 8
[task]
test_points  = 128
train_points = 128
EOF
mpi 1 "$bin" run comment.ini -o a.h5 2>comment.err; rc=$?
check "resume with a comment added" 0 $rc "8 cells: 8 done" comment.err
grep -q " cells in " comment.err && bad "the comment resume ran cells" || ok
cmp_archives a.h5 a2.h5 >/dev/null && ok || bad "the comment resume changed results"

# 3. seed 0..3 on the archive of 0..1: only the 8 new cells run
mpi 2 "$bin" run g4.ini -o a.h5 2>grow.err; rc=$?
check "grow to seed 0..3" 0 $rc "^curvsweep: 8 cells in " grow.err
grep -q "16 cells: 16 done" grow.err && ok || { bad "grown archive counts"; cat grow.err; }
kept=(a.h5.before-grow-*)
[[ -f "${kept[0]}" ]] && cmp_archives "${kept[0]}" a2.h5 >/dev/null && ok || bad "the old file was not kept"
[[ ! -e a.h5.journal ]] && ok || bad "a journal was left beside the grown archive"
cmp_archives a.h5 fresh.h5 && ok || bad "the grown archive differs from a fresh run of seed 0..3"
# the old cells bitwise unchanged, found by config (not by cell id)
/usr/bin/python3 - "${kept[0]}" a.h5 <<'EOF' && ok || bad "old cells changed in the grown archive"
import sys
import h5py
import numpy as np
old, new = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
key = lambda row: (row["arch"], int(row["depth"]), int(row["seed"]))
ids = {key(r): int(r["cell_id"]) for r in new["cells"][:]}
cn, co = new["curvature"][:], old["curvature"][:]
pn, po = new["points/index"][:], old["points/index"][:]
checked = 0
for r in old["cells"][:]:
    i, j = int(r["cell_id"]), ids[key(r)]
    rn = new["cells"][np.where(new["cells"]["cell_id"] == j)[0][0]]
    for f in ("status", "train_loss", "train_acc", "test_acc", "n_params"):
        assert r[f].tobytes() == rn[f].tobytes(), (i, j, f)
    a, b = co[co["cell_id"] == i], cn[cn["cell_id"] == j]
    assert len(a) == int(r["depth"]) and len(a) == len(b), (i, j, len(a), len(b))
    for f in a.dtype.names[1:]:  # every column but cell_id, bitwise
        assert a[f].tobytes() == b[f].tobytes(), (i, j, f)
    ia, ib = po[po["cell_id"] == i][0], pn[pn["cell_id"] == j][0]
    n = int(ia["depth"]) * int(ia["n_points"])
    sa = old["points/S"][ia["start"]:ia["start"] + n]
    sb = new["points/S"][ib["start"]:ib["start"] + n]
    assert sa.tobytes() == sb.tobytes(), (i, j, "points/S")
    for name in old[f"params/{i}"].attrs["tensors"]:
        name = name.decode()
        assert old[f"params/{i}/{name}"][()].tobytes() == new[f"params/{j}/{name}"][()].tobytes()
    assert old[f"fields/{i}/K_hat"][()].tobytes() == new[f"fields/{j}/K_hat"][()].tobytes()
    checked += 1
assert checked == 8, checked
EOF
# analyze sees four seeds in every group
CS_GNUPLOT=/bin/false "$bin" analyze a.h5 -o rep >/dev/null 2>&1
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "n_seeds") c = i; next }
         { n++; if ($c != 4) bad = 1 } END { exit !(c && n == 4 && !bad) }' rep/summary.csv &&
  ok || { bad "analyze does not see 4 seeds"; cat rep/summary.csv; }

# 4. refusals name the keys, old → new, and touch nothing
sum=$(sha256sum < a.h5)
sed 's/^width = 8/width = 16/' g4.ini > width.ini
mpi 1 "$bin" run width.ini -o a.h5 2>width.err; rc=$?
check "a changed non-grid key" 2 $rc "\[model\] width: 8 → 16" width.err
mpi 1 "$bin" run g2.ini -o a.h5 2>fewer.err; rc=$?
check "fewer seeds" 2 $rc "\[grid\] seed: 0..3 → 0..1" fewer.err
[[ "$(sha256sum < a.h5)" == "$sum" ]] && ok || bad "a refused spec changed the archive"
mpi 1 "$bin" run width.ini -o a.h5 --overwrite 2>/dev/null && ok || bad "--overwrite still discards"

# 5. --dry-run of a spec that grows the archive: the new cells only
sed 's/^seed  = 0..1/seed  = 0..5/' g2.ini > g6.ini
"$bin" run g6.ini -o a2.h5 --dry-run >dry.out 2>&1; rc=$?
check "dry run of a grow" 0 $rc "to run   16 of 24 cells" dry.out
grep -q "grows (\[grid\] seed: 0..1 → 0..5)" dry.out && ok || { bad "dry run names the grown key"; cat dry.out; }

# 6. shards: info names the shard, merge refuses an incomplete set, --partial marks it
for i in 0 1; do mpi 1 "$bin" run g2.ini -o "s$i.h5" --shard $i/2 2>/dev/null || bad "shard $i/2"; done
"$bin" info s0.h5 >info.out; rc=$?
check "info of a shard" 0 $rc "^shard     0/2: 4 of the sweep's 8 cells; 4 outside it" info.out
"$bin" merge m.h5 s0.h5 2>m.err; rc=$?
check "merge of 1 of 2 shards" 2 $rc "missing shards 1/2" m.err
grep -q "got 0/2 (s0.h5)" m.err && ok || { bad "merge says what it got"; cat m.err; }
[[ ! -e m.h5 ]] && ok || bad "a refused merge wrote its output"
"$bin" merge m.h5 s0.h5 --partial 2>mp.err; rc=$?
check "merge --partial" 0 $rc "partial" mp.err
"$bin" info m.h5 >mi.out && grep -q "^partial   subset: 4 of the sweep's 8 cells" mi.out && ok ||
  { bad "info of a partial merge"; cat mi.out; }
/usr/bin/python3 -c 'import h5py, sys; sys.exit(int(h5py.File("m.h5", "r").attrs["partial"][()]) != 1)' &&
  ok || bad "no partial attribute"
CS_GNUPLOT=/bin/false "$bin" analyze m.h5 -o rep-m >/dev/null 2>am.err
grep -q "m.h5 is a partial merge: it holds 4 of the sweep's 8 cells" am.err && ok ||
  { bad "analyze of a partial merge says nothing"; cat am.err; }
"$bin" merge full.h5 s0.h5 s1.h5 2>full.err; rc=$?
check "merge of both shards" 0 $rc "got 0/2 (s0.h5), 1/2 (s1.h5)" full.err
cmp_archives full.h5 a2.h5 && ok || bad "merged shards differ from the unsharded archive"

# 7. archives of specs that differ only in [grid] values merge into the union
mpi 1 "$bin" run g23.ini -o b23.h5 2>/dev/null && ok || bad "run of seed 2, 3"
"$bin" merge u.h5 a2.h5 b23.h5 2>u.err; rc=$?
check "merge of seed 0..1 and seed 2, 3" 0 $rc "the union of their grids" u.err
cmp_archives --ignore-spec u.h5 fresh.h5 && ok || bad "the union archive differs from a fresh run"
# ... and analyse together, as the fresh run of the union does
CS_GNUPLOT=/bin/false "$bin" analyze fresh.h5 -o rep-fresh >/dev/null 2>&1
CS_GNUPLOT=/bin/false "$bin" analyze a2.h5 b23.h5 -o rep-ab >/dev/null 2>ab.err; rc=$?
[[ $rc -eq 0 || $rc -eq 1 ]] && ok || { bad "analyze of seed 0..1 and seed 2, 3: exit $rc"; cat ab.err; }
for t in summary.csv prefix.csv amplification.csv; do
  cmp -s "rep-fresh/$t" "rep-ab/$t" && ok || bad "analyze of the two archives: $t differs from the fresh run's"
done
"$bin" merge x.h5 a2.h5 a.h5 2>x.err; rc=$?
check "merge of specs differing outside [grid]" 2 $rc "\[model\] width 8 and 16" x.err

finish
