#!/usr/bin/env bash
# `run --help` lists the spec keys from the parser's own table: every listed
# key is one the parser knows in that section (an empty value is refused
# naming exactly that section and key and the same allowed text the help
# shows), the list has every key docs/SPEC.md documents, and a key the list
# lacks is refused as unknown.
source "${CS_SOURCE_DIR:?}/tests/support/common.sh"
"$bin" run --help >help.txt 2>&1 && ok || bad "run --help failed"
sed -n '/^Spec keys/,$p' help.txt | grep -E '^  \[' >keys.txt
n=$(wc -l <keys.txt)
[[ $n -ge 30 ]] && ok || bad "run --help lists $n spec keys"
while read -r sec key rest; do
  sec=${sec#[}; sec=${sec%]}
  allowed=${rest#\* }; allowed=${allowed#"${allowed%%[! ]*}"} # leading blanks off
  printf '[%s]\n%s =\n' "$sec" "$key" >k.ini
  "$bin" train k.ini --cell 0 >k.out 2>&1; rc=$?
  if [[ $rc == 2 ]] && grep -qF "[$sec] $key: " k.out && grep -qF "$allowed" k.out; then ok
  else bad "[$sec] $key (help: '$allowed'): exit $rc, $(cat k.out)"; fi
done <keys.txt
# every key docs/SPEC.md documents in its key tables is listed
documented=$(grep -E '^\| (sweep|grid|task|model|train|curvature|team) \| ' "$src/docs/SPEC.md" |
  awk -F'|' '{ print $3 }' | tr ',' '\n' | tr -d ' ' | sort -u)
[[ $(wc -w <<<"$documented") -ge 30 ]] && ok || bad "docs/SPEC.md's key table has $(wc -w <<<"$documented") keys"
for key in $documented; do
  grep -qE "^  \[[a-z]+\] $key( |$)" keys.txt && ok || bad "docs/SPEC.md documents '$key', run --help does not list it"
done
printf '[model]\nwidht = 3\n' >k.ini
"$bin" train k.ini --cell 0 >k.out 2>&1; rc=$?
[[ $rc == 2 ]] && grep -q "unknown key" k.out && ok || bad "an unlisted key: exit $rc, $(cat k.out)"
finish
