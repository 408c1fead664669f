#!/usr/bin/env bash
# Bad inputs at the command line: each gets a clear message naming the file,
# exit 2 (input) or 1 (run time), and never changes an existing archive.
source "${CS_SOURCE_DIR:?}/tests/support/common.sh"
mnt=""
on_exit_extra() { [[ -n "$mnt" ]] && umount "$mnt" 2>/dev/null; }
small="$src/tests/specs/sweep-small.ini"
# expect NAME STATUS PATTERN -- COMMAND...: exit status and a message matching PATTERN
expect() {
  local name=$1 want=$2 pat=$3; shift 4
  "$@" >out.txt 2>err.txt; local got=$?
  if [[ $got -ne $want ]]; then bad "$name: exit $got, wanted $want"; cat err.txt; return; fi
  if ! grep -qE -- "$pat" err.txt; then bad "$name: message does not match '$pat':"; cat err.txt; return; fi
  ok
}
unchanged() { # NAME FILE SHA: the file's bytes are as before
  if [[ "$(sha256sum < "$2")" == "$3" ]]; then ok; else bad "$1: $2 changed"; fi
}

"$bin" run "$small" -o good.h5 2>/dev/null || { echo "FAIL: cannot make the reference archive"; exit 1; }
good_sha=$(sha256sum < good.h5)

# specs
expect missing-spec 2 "nope.ini: cannot open spec" -- "$bin" run nope.ini -o x.h5
printf '[model]\nwidth = 0\n' > w0.ini
expect width-zero 2 "w0.ini:2: \[model\] width" -- "$bin" run w0.ini -o x.h5
printf '[grid]\ndepth =\n' > empty.ini
expect empty-axis 2 "empty.ini:2: \[grid\] depth" -- "$bin" run empty.ini -o x.h5
printf '[train]\nlr = 1e-3\n[grid]\nlr = 1e-3, 3e-3\n' > both.ini
expect key-twice 2 "both.ini:[0-9]+: \[(grid|train)\] lr" -- "$bin" run both.ini -o x.h5
printf '[modle]\nwidth = 8\n' > sect.ini
expect unknown-section 2 "did you mean \[model\]" -- "$bin" run sect.ini -o x.h5
printf '[grid]\narch = gated, mlp\n[model]\nfamily = self\n' > selfmlp.ini
expect self-mlp 2 "selfmlp.ini:4: \[model\] family: self has no mlp block" -- "$bin" run selfmlp.ini -o x.h5
printf '[grid]\ngate = g1, g7\n' > gate.ini
expect bad-gate 2 "gate.ini:2: \[grid\] gate: unknown value 'g7'" -- "$bin" run gate.ini -o x.h5
[[ ! -e x.h5 ]] && ok || bad "a bad spec created an archive"
# a run started on its own checks its spec before MPI starts, and a dry run
# needs no MPI (docs/SWEEP.md, "Starting"): with an MPI that cannot start
# (no such point-to-point component) both still answer, while a real run
# fails in MPI_Init
without_mpi() { OMPI_MCA_pml=nonexistent "$@"; }
expect bad-spec-before-mpi 2 "w0.ini:2: \[model\] width" -- without_mpi "$bin" run w0.ini -o x.h5
without_mpi "$bin" run "$small" --dry-run -o x.h5 >out.txt 2>err.txt && grep -q "^grid  *12 cells" out.txt &&
  ok || { bad "dry run without MPI"; cat out.txt err.txt; }
without_mpi "$bin" run "$small" -o x.h5 >out.txt 2>&1 && bad "a run started although MPI cannot" || ok

# command line
expect shard-range 2 "--shard needs I/N" -- "$bin" run "$small" -o x.h5 --shard 3/3
expect shard-text 2 "--shard needs I/N" -- "$bin" run "$small" -o x.h5 --shard a/b
expect unknown-option 2 "unknown option '--frobnicate'" -- "$bin" run "$small" --frobnicate
expect merge-nothing 2 "need OUT.h5 and at least one IN.h5" -- "$bin" merge out.h5
expect info-missing 2 "missing.h5" -- "$bin" info missing.h5
# the synthetic-cell mode of the benches (docs/SCALING.md): its mean duration
# must be a positive finite number of seconds; refused before anything is written
for v in abc 0 -1 1e999 nan 0.5s; do
  expect "synthetic-$v" 2 "CS_SYNTHETIC_CELLS='$v' must be a positive number of seconds" \
    -- env CS_SYNTHETIC_CELLS="$v" "$bin" run "$small" -o synth.h5
done
[[ ! -e synth.h5 && ! -e synth.h5.journal ]] && ok || bad "a refused CS_SYNTHETIC_CELLS wrote an archive"

# archives that are not ours: refused, untouched
echo "not an archive" > text.h5; sha=$(sha256sum < text.h5)
expect not-hdf5 2 "text.h5 is not an HDF5 file" -- "$bin" run "$small" -o text.h5
unchanged not-hdf5 text.h5 "$sha"
: > empty.h5
expect empty-file 2 "empty.h5 is empty" -- "$bin" run "$small" -o empty.h5
head -c 30000 good.h5 > trunc.h5; sha=$(sha256sum < trunc.h5)
expect truncated 2 "trunc.h5" -- "$bin" run "$small" -o trunc.h5
unchanged truncated trunc.h5 "$sha"
expect info-truncated 2 "trunc.h5" -- "$bin" info trunc.h5
/usr/bin/python3 -c "import h5py; f=h5py.File('foreign.h5','w'); f['x']=[1,2,3]"
sha=$(sha256sum < foreign.h5)
expect foreign-hdf5 2 "foreign.h5" -- "$bin" run "$small" -o foreign.h5
unchanged foreign-hdf5 foreign.h5 "$sha"
cp good.h5 v2.h5
/usr/bin/python3 -c "import h5py; f=h5py.File('v2.h5','r+'); f.attrs['format_version']=7"
sha=$(sha256sum < v2.h5)
expect format-version 2 "v2.h5.*format_version 7" -- "$bin" run "$small" -o v2.h5
unchanged format-version v2.h5 "$sha"
sed 's/epochs     = 20/epochs     = 19/' "$small" > other.ini
expect spec-mismatch 2 "different spec" -- "$bin" run other.ini -o good.h5
unchanged spec-mismatch good.h5 "$good_sha"
"$bin" run other.ini -o other.h5 2>/dev/null
expect merge-mismatch 2 "different specs" -- "$bin" merge m.h5 good.h5 other.h5
[[ ! -e m.h5 ]] && ok || bad "refused merge wrote its output"
cp good.h5 exists.h5; sha=$(sha256sum < exists.h5)
expect merge-exists 2 "exists.h5" -- "$bin" merge exists.h5 good.h5
unchanged merge-exists exists.h5 "$sha"
expect not-a-dir 1 "/etc/passwd/x.h5" -- "$bin" run "$small" -o /etc/passwd/x.h5

# special files: refused at once, exit 2, naming the path (a FIFO as the spec
# used to block rank 0 in open() while the other ranks spun in MPI_Bcast;
# `timeout` turns a hang into exit 124, a failure here)
mkfifo fifo.ini fifo.h5; mkdir dir.h5
expect fifo-spec 2 "fifo.ini: cannot read spec: not a regular file \(a FIFO\)" -- timeout 30 "$bin" run fifo.ini -o x.h5
expect fifo-spec-2-ranks 2 "fifo.ini: cannot read spec: not a regular file \(a FIFO\)" -- \
  timeout 60 mpiexec --oversubscribe --bind-to none -np 2 "$bin" run fifo.ini -o x.h5
expect device-spec 2 "/dev/null: cannot read spec: not a regular file" -- timeout 30 "$bin" run /dev/null -o x.h5
expect fifo-archive 2 "fifo.h5 is not a regular file" -- timeout 30 "$bin" run "$small" -o fifo.h5
expect dir-archive 2 "dir.h5 is not a regular file" -- timeout 30 "$bin" run "$small" -o dir.h5
[[ ! -e fifo.h5.journal && ! -e dir.h5.journal ]] && ok || bad "a refused special file left a journal"
expect fifo-info 2 "fifo.h5 is not a regular file" -- timeout 30 "$bin" info fifo.h5
expect fifo-merge 2 "fifo.h5 is not a regular file" -- timeout 30 "$bin" merge m.h5 fifo.h5
expect fifo-analyze 2 "fifo.h5 is not a regular file" -- timeout 30 "$bin" analyze fifo.h5 -o rep
[[ ! -e m.h5 ]] && ok || bad "a refused merge wrote its output"

# /spec text and its spec_sha256 attribute disagree (same length, one letter
# changed): every reader and the writer refuse, saying exactly that
cp good.h5 spectext.h5
/usr/bin/python3 -c "import h5py; f=h5py.File('spectext.h5','r+'); t=f['spec'][0]; f['spec'][0]=t.replace(b'epochs     = 20', b'epochs     = 21')"
sha=$(sha256sum < spectext.h5)
damaged="archive spectext.h5: /spec text does not match its spec_sha256 attribute: the archive is damaged"
expect spec-sha-info 2 "$damaged" -- "$bin" info spectext.h5
expect spec-sha-run 2 "$damaged" -- "$bin" run "$small" -o spectext.h5
expect spec-sha-merge 2 "$damaged" -- "$bin" merge m.h5 spectext.h5
expect spec-sha-analyze 2 "$damaged" -- "$bin" analyze spectext.h5 -o rep
unchanged spec-sha spectext.h5 "$sha"
[[ ! -e m.h5 ]] && ok || bad "a refused merge wrote its output"

# damaged data: a flipped byte inside a /cells chunk or a /curvature chunk
# fails its Fletcher32 checksum: every reader refuses naming the file and the
# dataset, never reads different numbers
flip() { # FILE DATASET: flip one byte in the middle of the dataset's first chunk
  /usr/bin/python3 - "$1" "$2" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    info = f[sys.argv[2]].id.get_chunk_info(0)
pos = info.byte_offset + info.size // 2
with open(sys.argv[1], "r+b") as g:
    g.seek(pos); b = g.read(1); g.seek(pos); g.write(bytes([b[0] ^ 0x55]))
PY
}
cp good.h5 badcells.h5; flip badcells.h5 cells
expect cells-checksum-info 2 "badcells.h5: damaged archive: cannot read /cells" -- "$bin" info badcells.h5
expect cells-checksum-run 2 "badcells.h5" -- "$bin" run "$small" -o badcells.h5
cp good.h5 badcurv.h5; flip badcurv.h5 curvature
expect curv-checksum-analyze 2 "badcurv.h5: damaged archive: cannot read /curvature" -- "$bin" analyze badcurv.h5 -o rep
expect curv-checksum-merge 2 "badcurv.h5: damaged archive: cannot read /curvature" -- "$bin" merge m.h5 badcurv.h5
# merge copies only what it read back: a bad byte in /points values or in a
# /params dataset (copied as stored) is a refusal naming the file and object
cp good.h5 badpts.h5; flip badpts.h5 points/S
expect points-checksum-merge 2 "badpts.h5: damaged archive: cannot read /points/S elements" -- "$bin" merge m.h5 badpts.h5
par=$(/usr/bin/python3 -c "
import h5py; g = h5py.File('good.h5', 'r')['params/3']; n = []
g.visit(lambda k: n.append(k) if isinstance(g[k], h5py.Dataset) else None); print(n[0])")
cp good.h5 badpar.h5; flip badpar.h5 "params/3/$par"
expect params-checksum-merge 2 "badpar.h5: damaged archive: cannot read /params/3/$par" -- "$bin" merge m.h5 badpar.h5
[[ ! -e m.h5 ]] && ok || bad "a refused merge wrote its output"
# /curvature emptied (rows and committed_rows): done cells without rows are
# refused, not analysed with fewer rows
cp good.h5 nocurv.h5
/usr/bin/python3 -c "import h5py; f=h5py.File('nocurv.h5','r+'); d=f['curvature']; d.resize((0,)); d.attrs['committed_rows']=0"
expect curv-missing-analyze 2 "nocurv.h5: damaged archive: cell 0 is done but /curvature has no row of it" -- "$bin" analyze nocurv.h5 -o rep
expect curv-missing-merge 2 "nocurv.h5: damaged archive: cell 0 is done but /curvature has no row of it" -- "$bin" merge m.h5 nocurv.h5
[[ ! -e m.h5 ]] && ok || bad "a refused merge wrote its output"

# the same input twice, under any name, is refused (it counted its runs twice)
ln good.h5 hardlink.h5; ln -s good.h5 symlink.h5
expect merge-duplicate 2 "merge: good.h5 and good.h5 are the same file" -- "$bin" merge dup.h5 good.h5 good.h5
expect merge-duplicate-dot 2 "merge: good.h5 and ./good.h5 are the same file" -- "$bin" merge dup.h5 good.h5 ./good.h5
expect merge-duplicate-link 2 "merge: hardlink.h5 and symlink.h5 are the same file" -- "$bin" merge dup.h5 hardlink.h5 symlink.h5
[[ ! -e dup.h5 ]] && ok || bad "a refused merge wrote its output"
unchanged good-after-all good.h5 "$good_sha"

# run-time: a read-only file system and a full one (tmpfs; needs root)
mkdir ro full
if mount -t tmpfs -o ro,size=1m tmpfs ro 2>/dev/null; then
  mnt="$tmp/ro"
  expect read-only 1 "ro/x.h5.*(Read-only|read-only)" -- "$bin" run "$small" -o ro/x.h5
  umount ro; mnt=""
  # 1200k: the 1 MiB free-space margin of a write plus about half of the sweep (the
  # v110-format archive of sweep-small is ~200 kB): some results kept, then full
  mount -t tmpfs -o size=1200k tmpfs full && mnt="$tmp/full"
  expect disk-full 1 "No space left on device.*resume with the same command" -- "$bin" run "$small" -o full/x.h5
  done_before=$("$bin" info full/x.h5 | grep -oE '[0-9]+ done')
  [[ "$done_before" != "0 done" && -n "$done_before" ]] && ok || bad "nothing kept on the full disk"
  umount full; mnt=""
else
  bad "cannot mount a tmpfs here (needs root): read-only and disk-full cases not run"
fi

finish
