#!/usr/bin/env bash
# Every script the README tells a user to run (scripts/*.sh, jobs/*.sh,
# jobs/*.sbatch) is committed executable (mode 100755 in git, so a fresh
# clone can run it as written) and has a shebang line.
source "${CS_SOURCE_DIR:?}/tests/support/common.sh"
cd "$src" || exit 1
mapfile -t named < <(grep -oE '(scripts|jobs)/[A-Za-z0-9_.-]+\.(sh|sbatch)' README.md | sort -u)
[[ ${#named[@]} -ge 2 ]] && ok || bad "README names fewer than 2 scripts (${#named[@]})"
for f in "${named[@]}"; do
  if [[ ! -f $f ]]; then bad "README names $f, which does not exist"; continue; fi
  head -n 1 "$f" | grep -q '^#!' && ok || bad "$f has no shebang line"
  if git -C "$src" rev-parse --git-dir >/dev/null 2>&1 && git -C "$src" ls-files --error-unmatch "$f" >/dev/null 2>&1; then
    mode=$(git -C "$src" ls-files -s -- "$f" | cut -d' ' -f1)
    [[ $mode == 100755 ]] && ok || bad "$f is committed with mode $mode, not 100755"
  fi
  [[ -x $f ]] && ok || bad "$f is not executable in the work tree"
done
finish
