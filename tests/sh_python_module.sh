#!/usr/bin/env bash
# python/curvsweep_archive: pip-installable from the tree (installed here into
# a private --target directory from a copy of python/), and its DataFrames
# against a second reading path (tests/python_module_check.py).
source "${CS_SOURCE_DIR:?}/tests/support/common.sh"
PY=/usr/bin/python3
cp -r "$src/python" "$tmp/pkg"
if "$PY" -m pip install --quiet --no-deps --no-build-isolation --no-index --target "$tmp/site" "$tmp/pkg" \
     >pip.log 2>&1; then ok; else bad "pip install of python/ failed: $(tail -n 5 pip.log)"; fi
[[ -f $tmp/site/curvsweep_archive/__init__.py ]] && ok || bad "pip put no curvsweep_archive in $tmp/site"
(cd "${CS_BUILD_DIR:?}" && CS_ARCHIVE_WRITE_DEMO=$tmp/demo.h5 ./test_archive) >demo.log 2>&1 \
  && ok || bad "writing the demo archive failed: $(tail -n 5 demo.log)"
"$bin" info "$tmp/demo.h5" >info.txt 2>&1 && ok || bad "curvsweep info failed: $(cat info.txt)"
if PYTHONPATH=$tmp/site "$PY" "$src/tests/python_module_check.py" "$tmp/demo.h5" info.txt >check.log 2>&1; then
  ok
else
  bad "python_module_check: $(grep -v '^[0-9]* passed' check.log | head -n 20)"
fi
tail -n 1 check.log
finish
