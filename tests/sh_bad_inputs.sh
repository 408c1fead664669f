#!/usr/bin/env bash
# Bad inputs at the command line: each gets a clear message naming the file,
# exit 2 (input) or 1 (run time), and never changes an existing archive.
set -u
bin=${CS_BIN:?} src=${CS_SOURCE_DIR:?}
tmp=$(mktemp -d); mnt=""
cleanup() { [[ -n "$mnt" ]] && umount "$mnt" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
cd "$tmp"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
small="$src/tests/specs/sweep-small.ini"
passes=0 fails=0
# expect NAME STATUS PATTERN -- COMMAND...: exit status and a message matching PATTERN
expect() {
  local name=$1 want=$2 pat=$3; shift 4
  "$@" >out.txt 2>err.txt; local got=$?
  if [[ $got -ne $want ]]; then echo "FAIL $name: exit $got, wanted $want"; cat err.txt; fails=$((fails+1)); return; fi
  if ! grep -qE -- "$pat" err.txt; then echo "FAIL $name: message does not match '$pat':"; cat err.txt; fails=$((fails+1)); return; fi
  passes=$((passes+1))
}
unchanged() { # NAME FILE SHA: the file's bytes are as before
  if [[ "$(sha256sum < "$2")" == "$3" ]]; then passes=$((passes+1)); else echo "FAIL $1: $2 changed"; fails=$((fails+1)); fi
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
[[ ! -e x.h5 ]] && passes=$((passes+1)) || { echo "FAIL: a bad spec created an archive"; fails=$((fails+1)); }

# command line
expect shard-range 2 "--shard needs I/N" -- "$bin" run "$small" -o x.h5 --shard 3/3
expect shard-text 2 "--shard needs I/N" -- "$bin" run "$small" -o x.h5 --shard a/b
expect unknown-option 2 "unknown option '--frobnicate'" -- "$bin" run "$small" --frobnicate
expect merge-nothing 2 "need OUT.h5 and at least one IN.h5" -- "$bin" merge out.h5
expect info-missing 2 "missing.h5" -- "$bin" info missing.h5

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
/usr/bin/python3 -c "import h5py; f=h5py.File('v2.h5','r+'); f.attrs['format_version']=3"
sha=$(sha256sum < v2.h5)
expect format-version 2 "v2.h5.*format_version 3" -- "$bin" run "$small" -o v2.h5
unchanged format-version v2.h5 "$sha"
sed 's/epochs     = 20/epochs     = 19/' "$small" > other.ini
expect spec-mismatch 2 "different spec" -- "$bin" run other.ini -o good.h5
unchanged spec-mismatch good.h5 "$good_sha"
"$bin" run other.ini -o other.h5 2>/dev/null
expect merge-mismatch 2 "different specs" -- "$bin" merge m.h5 good.h5 other.h5
[[ ! -e m.h5 ]] && passes=$((passes+1)) || { echo "FAIL: refused merge wrote its output"; fails=$((fails+1)); }
cp good.h5 exists.h5; sha=$(sha256sum < exists.h5)
expect merge-exists 2 "exists.h5" -- "$bin" merge exists.h5 good.h5
unchanged merge-exists exists.h5 "$sha"
expect not-a-dir 1 "/etc/passwd/x.h5" -- "$bin" run "$small" -o /etc/passwd/x.h5
unchanged good-after-all good.h5 "$good_sha"

# run-time: a read-only file system and a full one (tmpfs; needs root)
mkdir ro full
if mount -t tmpfs -o ro,size=1m tmpfs ro 2>/dev/null; then
  mnt="$tmp/ro"
  expect read-only 1 "ro/x.h5.*(Read-only|read-only)" -- "$bin" run "$small" -o ro/x.h5
  umount ro; mnt=""
  mount -t tmpfs -o size=1400k tmpfs full && mnt="$tmp/full"
  expect disk-full 1 "No space left on device.*resume with the same command" -- "$bin" run "$small" -o full/x.h5
  done_before=$("$bin" info full/x.h5 | grep -oE '[0-9]+ done')
  [[ "$done_before" != "0 done" && -n "$done_before" ]] && passes=$((passes+1)) || { echo "FAIL: nothing kept on the full disk"; fails=$((fails+1)); }
  umount full; mnt=""
else
  echo "FAIL: cannot mount a tmpfs here (needs root): read-only and disk-full cases not run"
  fails=$((fails+1))
fi

echo "$passes passed, $fails failed"
[[ $fails -eq 0 ]]
