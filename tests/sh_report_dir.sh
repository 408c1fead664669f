#!/usr/bin/env bash
# Issue 42, items 2 and 3: the report directory (docs/SECURITY.md, "The
# report directory"). (a) Someone who can write into the report directory
# while analyze runs swaps every NAME.gp for a script that runs a command,
# every NAME.dat for a FIFO and every NAME.png for a symbolic link to a
# victim file: gnuplot never runs their script (no PWNED anywhere), never
# reads their data (no hang), never writes through their link (the victim's
# sha256 unchanged), and every figure is still rendered. gnuplot reads its
# script on a pipe as /dev/stdin and works in a private directory of mode
# 0700 holding the data, which is gone afterwards. (b) A default report
# directory that is a symbolic link (to a directory with a report in it, or
# to nothing) is refused, exit 2, naming it, as -o LINK (LINK/ too) and
# export --csv LINK are; the target's files unchanged, nothing created there. (c) The
# attacked reports hold every file a normal run writes.
source "${CS_SOURCE_DIR:?}/tests/support/common.sh"
gnuplot=$(command -v gnuplot || true)
[[ -n $gnuplot ]] || { echo "gnuplot is not installed (scripts/install-deps.sh installs it)"; exit 1; }

cp "$src/tests/specs/tiny.ini" tiny.ini
"$bin" run tiny.ini --set grid.depth=1,2 -o a.h5 >o 2>&1 && ok || { bad "the tiny sweep failed"; cat o; }

# ---- a normal run: the reference list of files, every figure rendered ----
"$bin" analyze a.h5 -o N >n.out 2>&1 && ok || { bad "a normal analyze failed"; cat n.out; }
listing() { (cd "$1" && find . -mindepth 1 -printf '%P\n' | LC_ALL=C sort); }
listing N >n.list
n_gp=$(grep -c '\.gp$' n.list)
[[ $n_gp -ge 4 ]] && ok || bad "only $n_gp figures in a normal report"
grep -q "$n_gp of $n_gp plots rendered" n.out && ok || bad "not every figure rendered: $(cat n.out)"
missing=0
while IFS= read -r f; do
  [[ -f N/${f%.gp}.png && ! -L N/${f%.gp}.png && -s N/${f%.gp}.png ]] || missing=1
done < <(grep '\.gp$' n.list)
[[ $missing == 0 ]] && ok || bad "a .gp without its PNG in the normal report"
! grep -q '^\.render-' n.list && ok || bad "gnuplot's private directory was left behind: $(grep '^\.render-' n.list)"

# ---- how gnuplot is run: a gnuplot that notes its argument, its standard
# input, its working directory and what is there, then runs the real one ----
mkdir fake
cat >fake/gnuplot <<EOF
#!/bin/sh
if [ "\$1" = --version ]; then exec "$gnuplot" --version; fi
{ echo "arg=\$1"; echo "stdin=\$(stat -L -c %F /dev/stdin)"; echo "cwd=\$(pwd)";
  echo "mode=\$(stat -c %a .)"; echo "files=\$(ls -A | tr '\n' ' ')"; } >>"$tmp/fake.log"
exec "$gnuplot" "\$@"
EOF
chmod +x fake/gnuplot
CS_GNUPLOT=$tmp/fake/gnuplot "$bin" analyze a.h5 -o F >f.out 2>&1 && ok || { bad "analyze with the noting gnuplot"; cat f.out; }
[[ $(grep -c '^arg=' fake.log) == "$n_gp" ]] && ok || bad "gnuplot ran $(grep -c '^arg=' fake.log) times, not $n_gp"
! grep '^arg=' fake.log | grep -qv '^arg=/dev/stdin$' && ok || bad "gnuplot was given a script by name: $(grep '^arg=' fake.log | sort -u)"
! grep '^stdin=' fake.log | grep -qv '^stdin=fifo$' && ok || bad "gnuplot's input is not a pipe: $(grep '^stdin=' fake.log | sort -u)"
! grep '^cwd=' fake.log | grep -qv "^cwd=$tmp/F/\.render-[0-9a-f]\{12\}$" && ok || bad "gnuplot ran outside a private directory: $(grep '^cwd=' fake.log | sort -u)"
! grep '^mode=' fake.log | grep -qv '^mode=700$' && ok || bad "the private directory is not 0700: $(grep '^mode=' fake.log | sort -u)"
! grep '^files=' fake.log | grep -q '\.gp' && ok || bad "a script lay in the private directory"
grep -q '^files=.*\.dat' fake.log && ok || bad "gnuplot's data were not in its private directory: $(grep '^files=' fake.log | head -n 2)"
[[ $(listing F) == "$(cat n.list)" ]] && ok || bad "the report made with the noting gnuplot differs from the normal one"

# ---- (a) a co-tenant swaps the scripts, data and figures while analyze runs ----
victim=$tmp/victim.txt
printf 'the victim: must never change\n' >"$victim"
want=$(sha256sum <"$victim")
printf 'system("touch %s/PWNED; touch PWNED")\n' "$tmp" >evil.gp
attack() { # DIR KINDS (gp, dat, png): until the file stop appears
  local f
  while [[ ! -e stop ]]; do
    if [[ $2 == *gp* ]]; then for f in "$1"/*.gp; do [[ -f $f ]] && cp evil.gp "$f" 2>/dev/null; done; fi
    if [[ $2 == *dat* ]]; then
      for f in "$1"/*.dat; do [[ -f $f && ! -p $f ]] && rm -f "$f" && mkfifo "$f" 2>/dev/null; done
    fi
    if [[ $2 == *png* ]]; then
      for f in "$1"/*.png "$1"/*.gp; do
        f=${f%.*}.png
        [[ -L $f ]] || ln -sfn "$victim" "$f" 2>/dev/null
      done
    fi
    sleep 0.01 # a pass every ~10 ms: inside every render of the old code, light on shared cores
  done
}
mkdir R
# a first report to swap from the start, then runs under attack: the
# figures alone (twice: each run is one chance for the race; the scripts gnuplot would run are curvsweep's),
# scripts and data alone, all three
"$bin" analyze a.h5 -o R >o 2>&1 && ok || { bad "the first report into R"; cat o; }
for kinds in png png gp,dat gp,dat,png; do
  rm -f stop
  attack R "$kinds" &
  attacker=$!
  timeout 120 "$bin" analyze a.h5 -o R >"r.out" 2>&1
  check "analyze under attack on $kinds" 0 $? "$n_gp of $n_gp plots rendered" r.out
  touch stop
  wait "$attacker"
done
[[ ! -e $tmp/PWNED ]] && [[ -z $(find "$tmp" -name PWNED) ]] && ok || bad "a swapped script ran: $(find "$tmp" -name PWNED)"
[[ $(sha256sum <"$victim") == "$want" ]] && ok || bad "the victim was written through a planted link: $(head -c 80 "$victim" | od -c | head -n 2)"
# the attacked .gp still there (their own bytes) prove the swap happened
grep -lq 'touch' R/*.gp && ok || bad "the attack never swapped a script (the test tests nothing)"

# ---- (c) the attacked report holds every file a normal run writes ----
[[ $(listing R) == "$(cat n.list)" ]] && ok || bad "the attacked report's files differ: $(diff <(listing R) n.list | head -n 8)"
# a fresh run over the debris restores every figure and script
"$bin" analyze a.h5 -o R >o 2>&1 && ok || { bad "analyze after the attack"; cat o; }
[[ $(listing R) == "$(cat n.list)" ]] && ok || bad "the report after the attack differs: $(diff <(listing R) n.list | head -n 8)"
restored=1
while IFS= read -r f; do
  cmp -s "R/$f" "N/$f" || restored=0
  [[ -f R/${f%.gp}.png && ! -L R/${f%.gp}.png && $(head -c 4 "R/${f%.gp}.png" | od -An -c | tr -d ' ') == '211PNG' ]] || restored=0
done < <(grep '\.gp$' n.list)
[[ $restored == 1 ]] && ok || bad "a script or figure was not restored by the next run"

# ---- (b) a default report directory that is a symbolic link ----
mkdir shared project
cp a.h5 shared/res.h5
printf '# my project notes\n' >project/index.md
printf 'my,data\n1,2\n' >project/summary.csv
(cd project && sha256sum index.md summary.csv) >project.sums
ln -s ../project shared/res-report
"$bin" analyze shared/res.h5 >b.out 2>&1
check "default report directory a link to a directory" 2 $? \
  "the report directory shared/res-report is a symbolic link: curvsweep never writes a report through one" b.out
(cd project && sha256sum -c --quiet ../project.sums) && ok || bad "the link's target files were changed"
[[ $(listing project) == "$(printf 'index.md\nsummary.csv')" ]] && ok || bad "files appeared in the link's target: $(listing project)"
# -o LINK is the same check (one code path), and so is export --csv LINK
"$bin" analyze shared/res.h5 -o shared/res-report >b.out 2>&1
check "-o a link to a directory" 2 $? "the report directory shared/res-report is a symbolic link" b.out
"$bin" analyze shared/res.h5 -o shared/res-report/ >b.out 2>&1
check "-o a link to a directory, with a trailing slash" 2 $? "the report directory shared/res-report is a symbolic link" b.out
"$bin" export shared/res.h5 --csv shared/res-report >b.out 2>&1
check "export --csv a link to a directory" 2 $? "the report directory shared/res-report is a symbolic link" b.out
(cd project && sha256sum -c --quiet ../project.sums) && [[ $(listing project) == "$(printf 'index.md\nsummary.csv')" ]] && ok || bad "-o or export wrote through the link"
# a dangling link: nothing is created at its target
cp a.h5 shared/dang.h5
ln -s ../nowhere shared/dang-report
"$bin" analyze shared/dang.h5 >b.out 2>&1
check "default report directory a dangling link" 2 $? "the report directory shared/dang-report is a symbolic link" b.out
[[ ! -e nowhere ]] && ok || bad "the dangling link's target was created"
# the real directory behind a link is fine given as itself, and a plain
# default directory still works
"$bin" analyze shared/res.h5 -o project/rep >o 2>&1 && [[ -s project/rep/index.md ]] && ok || { bad "analyze into a real directory"; cat o; }
rm shared/res-report
"$bin" analyze shared/res.h5 >o 2>&1 && [[ -s shared/res-report/index.md && ! -L shared/res-report ]] && ok || { bad "the default report directory"; cat o; }
finish
