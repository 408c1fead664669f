#!/usr/bin/env bash
# Issue 28, where curvsweep writes and prints (docs/SECURITY.md): nothing is
# written through a symbolic link planted at a report temporary
# (DIR/.NAME.tmp), at ARCHIVE.tmp-<pid> or at ARCHIVE.journal; --overwrite
# replaces only a curvsweep archive (run, merge, merge --salvage,
# jobs/merge.sbatch); a spec whose cell would need more memory than
# docs/SPEC.md allows ("Sizes") is refused by run and run --dry-run naming
# the key; strings from an archive reach the terminal with their control
# characters escaped, and the spec name reaches index.md escaped. Every
# victim file lives outside the directories curvsweep is pointed at and must
# stay byte-identical.
source "${CS_SOURCE_DIR:?}/tests/support/common.sh"
victims=$(mktemp -d)
trap 'pkill -9 -f "$tmp" 2>/dev/null; rm -rf "$tmp" "$victims"' EXIT
py=/usr/bin/python3

# victims: each with its own content and a reference copy
for v in index summary log tmp journal journal2 owned; do
  printf 'victim %s: must never change\n' "$v" >"$victims/$v"
  cp "$victims/$v" "$victims/$v.ref"
done
intact() { # NAME...: every named victim still byte-identical
  local v
  for v in "$@"; do
    cmp -s "$victims/$v" "$victims/$v.ref" && ok || bad "victim $v was changed: $(head -c 80 "$victims/$v" | od -c | head -n 2)"
  done
}
expect() { # NAME WANT_STATUS STATUS PATTERN FILE
  if [[ $3 -ne $2 ]]; then bad "$1: exit $3, wanted $2: $(head -c 600 "$5")"; return; fi
  grep -q -- "$4" "$5" && ok || bad "$1: no '$4' in: $(head -c 600 "$5")"
}

cp "$src/tests/specs/tiny.ini" tiny.ini
"$bin" run tiny.ini -o a.h5 >o 2>&1 && ok || { bad "the tiny sweep failed"; cat o; }

# ---- report temporaries: DIR/.NAME.tmp ----
mkdir R1 R2
ln -s "$victims/index" R1/.index.md.tmp
"$bin" analyze a.h5 -o R1 >o 2>&1
expect "analyze, symlink at .index.md.tmp" 2 $? "R1/.index.md.tmp: cannot write: a symbolic link is there" o
[[ -L R1/.index.md.tmp && ! -e R1/index.md ]] && ok || bad "the planted link was followed or index.md written"
ln -s "$victims/summary" R2/.summary.csv.tmp
ln -s "$victims/log" R2/gnuplot.log
"$bin" analyze a.h5 -o R2 >o 2>&1
expect "analyze, symlink at .summary.csv.tmp" 2 $? "R2/.summary.csv.tmp: cannot write: a symbolic link is there" o
intact index summary log
# a stale temporary of this user (a killed analyze) is no obstacle
mkdir R3 && echo stale >R3/.index.md.tmp
CS_GNUPLOT=/nonexistent "$bin" analyze a.h5 -o R3 >o 2>&1 && [[ -s R3/index.md && ! -e R3/.index.md.tmp ]] && ok || { bad "stale report temporary"; cat o; }

# ---- ARCHIVE.tmp-<pid>: the process stops itself before exec, so its pid
# (which exec keeps) is known before the link is planted ----
mkdir O
run_stopped() { # ARGS...: curvsweep ARGS as a process stopped before exec; its pid in $pid
  bash -c 'kill -STOP $$; exec "$@"' _ "$bin" "$@" >o 2>&1 &
  pid=$!
  local t
  for ((t = 0; t < 200; t++)); do
    [[ $(ps -o stat= -p "$pid") == T* ]] && return 0
    sleep 0.05
  done
  bad "the process $pid did not stop"
}
run_stopped run tiny.ini -o O/x.h5
ln -s "$victims/tmp" "O/x.h5.tmp-$pid"
kill -CONT "$pid"; wait "$pid"
expect "run, symlink at ARCHIVE.tmp-<pid>" 2 $? "O/x.h5.tmp-$pid): a symbolic link is there" o
[[ ! -e O/x.h5 ]] && ok || bad "O/x.h5 was written"
intact tmp
# a stale temporary of this user at the same name (pid reuse) is replaced
run_stopped run tiny.ini -o O/y.h5
echo stale >"O/y.h5.tmp-$pid"
kill -CONT "$pid"; wait "$pid"
expect "run, stale ARCHIVE.tmp-<pid>" 0 $? "2 done" o
[[ ! -e O/y.h5.tmp-$pid ]] && ok || bad "the stale temporary is still there"

# ---- ARCHIVE.journal ----
ln -s "$victims/journal" O/j.h5.journal
"$bin" run tiny.ini -o O/j.h5 >o 2>&1
expect "run, symlinked journal" 2 $? "the journal O/j.h5.journal of the archive O/j.h5 cannot be used (a symbolic link" o
ln -s "$victims/journal2" a-link.h5.journal
cp a.h5 a-link.h5
"$bin" run tiny.ini -o a-link.h5 >o 2>&1
expect "resume, symlinked journal" 2 $? "cannot be used (a symbolic link" o
intact journal journal2
cmp -s a.h5 a-link.h5 && ok || bad "the archive beside a refused journal was changed"
if [[ $(id -u) -eq 0 ]] && id nobody >/dev/null 2>&1; then
  cp "$victims/owned" O/k.h5.journal && chown nobody O/k.h5.journal
  "$bin" run tiny.ini -o O/k.h5 >o 2>&1
  expect "run, journal of another user" 2 $? "cannot be used (owned by another user" o
  cmp -s O/k.h5.journal "$victims/owned.ref" && ok || bad "another user's journal was changed"
fi

# ---- --overwrite replaces only a curvsweep archive ----
printf 'my thesis\n' >thesis.txt && cp thesis.txt thesis.ref
"$bin" run tiny.ini -o thesis.txt --overwrite >o 2>&1
expect "run --overwrite on a text file" 2 $? "--overwrite replaces only a curvsweep archive, and thesis.txt is not an HDF5 file" o
"$bin" merge thesis.txt a.h5 --overwrite >o 2>&1
expect "merge --overwrite on a text file" 2 $? "thesis.txt is not an HDF5 file" o
"$bin" merge --salvage thesis.txt a.h5 --overwrite >o 2>&1
expect "merge --salvage --overwrite on a text file" 2 $? "thesis.txt is not an HDF5 file" o
cmp -s thesis.txt thesis.ref && ok || bad "thesis.txt was replaced"
$py -c 'import h5py; h5py.File("foreign.h5", "w").attrs["format"] = "netcdf"' && cp foreign.h5 foreign.ref
"$bin" merge foreign.h5 a.h5 --overwrite >o 2>&1
expect "merge --overwrite on a foreign HDF5 file" 2 $? "foreign.h5 is not a curvsweep archive" o
cmp -s foreign.h5 foreign.ref && ok || bad "foreign.h5 was replaced"
# a curvsweep archive is still replaced
cp a.h5 b.h5
"$bin" merge b.h5 a.h5 --overwrite >o 2>&1 && ok || { bad "merge --overwrite of an archive"; cat o; }
"$bin" run tiny.ini -o b.h5 --overwrite >o 2>&1 && ok || { bad "run --overwrite of an archive"; cat o; }

# ---- jobs/merge.sbatch (run as a plain script): always --overwrite, so an
# OUT that is not an archive must survive; N is a number or refused before
# any arithmetic (bash evaluates a[$(cmd)] in (( ))) ----
cp a.h5 P-0.h5
printf 'notes\n' >notes.txt && cp notes.txt notes.ref
CS_BIN=$bin CS_ROOT=$src bash "$src/jobs/merge.sbatch" P 1 notes.txt R4 >o 2>&1
expect "merge.sbatch onto a text file" 1 $? "merge failed" o
cmp -s notes.txt notes.ref && ok || bad "merge.sbatch replaced notes.txt"
# shellcheck disable=SC2016 # the $( ) must reach merge.sbatch unexpanded
CS_BIN=$bin CS_ROOT=$src bash "$src/jobs/merge.sbatch" P 'i[$(touch pwned)]' >o 2>&1
expect "merge.sbatch with N = i[\$(cmd)]" 2 $? "N must be a positive number of shards" o
[[ ! -e pwned ]] && ok || bad "merge.sbatch ran a command hidden in N"
CS_BIN=$bin CS_ROOT=$src bash "$src/jobs/merge.sbatch" P 1 P.h5 R5 >o 2>&1 && [[ -s R5/index.md ]] && ok || { bad "merge.sbatch"; cat o; }

# ---- sizes: a 41-byte spec wrapped n_params and crashed run ----
printf '[model]\nwidth = 2147443568\nslots = 80159\n' >huge.ini
"$bin" run huge.ini --dry-run >o 2>&1
expect "run --dry-run, huge width" 2 $? "huge.ini:2: \[model\] width: 2147443568 makes a cell need over 16 EiB of memory" o
"$bin" run huge.ini -o huge.h5 >o 2>&1
expect "run, huge width" 2 $? "huge.ini:2: \[model\] width: 2147443568 makes a cell need" o
"$bin" train huge.ini --cell 0 >o 2>&1
expect "train, huge width" 2 $? "huge.ini:2: \[model\] width" o
[[ ! -e huge.h5 ]] && ok || bad "huge.h5 was written"

# ---- printing: control characters from an archive are escaped ----
cp a.h5 evil.h5
$py - <<'EOF'
import h5py, numpy as np
with h5py.File("evil.h5", "r+") as f:
    f.attrs["spec_name"] = np.bytes_(b"ti\x1b[2Jny\r\x07")
    r = f["runs"][0]
    r["end"] = b"2026\x1b]0;pwned\x07\rX"
    f["runs"][0] = r
EOF
"$bin" info evil.h5 >o 2>&1
expect "info, control characters" 0 $? 'spec      ti\\x1B\[2Jny\\x0D\\x07 (identity' o
grep -q 'last ended 2026\\x1B\]0;pwned\\x07\\x0DX' o && ok || bad "the /runs end time is not escaped: $(od -c o | head)"
LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' o && bad "a control character reached the terminal: $(od -c o | head)" || ok
# a spec name with one is refused where it is read
printf '[sweep]\nname = a\033[31mb\n' >esc.ini
"$bin" run esc.ini --dry-run >o 2>&1
expect "spec name with ESC" 2 $? 'esc.ini:2: \[sweep\] name: control character 0x1B' o
# a command-line argument is escaped too
"$bin" info $'nofile\e[31m.h5' >o 2>&1
expect "info, ESC in a path" 2 $? 'nofile\\x1B\[31m.h5' o

# a dataset whose filter the library lacks names the filter, not the plugin
# directory HDF5 searched: a copy of the archive with v1 object headers (the
# filter's name stored), the first deflate's id changed to 32001
$py - <<'EOF'
import h5py
src = h5py.File("a.h5", "r")
def attrs(dst, obj):
    for k, v in obj.attrs.items():
        dst.attrs.create(k, v, dtype=obj.attrs.get_id(k).get_type())
with h5py.File("filter.h5", "w", libver="earliest") as f:
    attrs(f, src)
    def copy(name, obj):
        if isinstance(obj, h5py.Dataset):
            d = f.create_dataset(name, data=obj[()], dtype=obj.dtype, chunks=obj.chunks,
                                 maxshape=obj.maxshape, shuffle=obj.shuffle, fletcher32=obj.fletcher32,
                                 compression="gzip" if obj.compression else None)
            attrs(d, obj)
        else:
            attrs(f.require_group(name), obj)
    src.visititems(copy)
b = bytearray(open("filter.h5", "rb").read())
i = b.find(b"\x01\x00\x08\x00\x01\x00\x01\x00deflate\x00")
assert i > 0
b[i:i + 2] = (32001).to_bytes(2, "little")
open("filter.h5", "wb").write(b)
EOF
"$bin" info filter.h5 >o 2>&1
expect "info, a filter the library lacks" 2 $? "filter.h5: damaged archive: cannot read /cells rows 0..1: required filter 'deflate' is not registered" o
grep -q plugins o && bad "the plugin directory is named instead of the filter: $(cat o)" || ok

# ---- index.md: the spec name as literal text ----
# shellcheck disable=SC2016 # the backticks are part of the name
sed 's/^name = tiny$/name = <img src=x onerror=alert(1)> [click](javascript:x) *b* `c` #/' tiny.ini >md.ini
"$bin" run md.ini -o md.h5 >o 2>&1 && CS_GNUPLOT=/nonexistent "$bin" analyze md.h5 -o R6 >o 2>&1 && ok || { bad "md sweep"; cat o; }
# shellcheck disable=SC2016 # the backticks are the expected text
want='# Depth-amplification report: &lt;img src=x onerror=alert\(1\)&gt; \[click\]\(javascript:x\) \*b\* \`c\` \#'
[[ $(head -n 1 R6/index.md) == "$want" ]] && ok || bad "index.md heading: $(head -n 1 R6/index.md)"
grep -q '<img' R6/index.md && bad "raw HTML from the spec name in index.md" || ok

# ---- analyze -o FILE is bad input ----
printf 'x\n' >afile && cp afile afile.ref
"$bin" analyze a.h5 -o afile >o 2>&1
expect "analyze -o FILE" 2 $? "the report directory afile exists and is not a directory" o
cmp -s afile afile.ref && ok || bad "afile was changed"
finish
