#!/usr/bin/env bash
# curvsweep export ARCHIVE --csv DIR: the tables against a second reader
# (python/curvsweep_archive, tests/export_check.py), and its usage errors.
source "${CS_SOURCE_DIR:?}/tests/support/common.sh"
PY=/usr/bin/python3
(cd "${CS_BUILD_DIR:?}" && CS_ARCHIVE_WRITE_DEMO=$tmp/demo.h5 ./test_archive) >demo.log 2>&1 \
  && ok || bad "writing the demo archive failed: $(tail -n 5 demo.log)"
"$bin" export "$tmp/demo.h5" --csv out >export.log 2>&1 && ok || bad "export failed: $(cat export.log)"
grep -q '^exported 8 cells' export.log && ok || bad "export said: $(cat export.log)"
if PYTHONPATH=$src/python "$PY" "$src/tests/export_check.py" "$tmp/demo.h5" out --require-estimation \
    --require-gates --require-cellstats >check.log 2>&1; then ok
else bad "export_check: $(grep -v '^[0-9]* passed' check.log | head -n 20)"; fi
# usage errors: exit 2, nothing written
for args in "demo.h5" "--csv out2" "demo.h5 --csv out2 --bogus" "missing.h5 --csv out2"; do
  # shellcheck disable=SC2086
  "$bin" export $args >err.log 2>&1; rc=$?
  [[ $rc == 2 && ! -e out2 ]] && ok || bad "export $args: exit $rc, $(cat err.log)"
done
finish
