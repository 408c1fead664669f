#!/usr/bin/env bash
# sh_archive_h5py.sh — an archive written by the C library, read with h5py +
# numpy (tests/archive_h5py_check.py), and shown by h5dump.
source "${CS_SOURCE_DIR:?}/tests/support/common.sh"
# Debian's python3-h5py lives in the system python; prefer it over any other
PY=/usr/bin/python3
[[ -x $PY ]] || PY=python3
if ! $PY -c 'import h5py, numpy' 2>/dev/null; then
  echo "sh_archive_h5py: python3-h5py and python3-numpy are required (scripts/install-deps.sh)" >&2
  exit 1
fi
archive=$tmp/demo.h5
(cd "${CS_BUILD_DIR:?}" && CS_ARCHIVE_WRITE_DEMO=$archive ./test_archive) && ok || bad "writing the demo archive"
# one cell pending: the journal stays beside the archive
[[ -f $archive.journal ]] && ok || bad "no journal beside the archive"
$PY "$src/tests/archive_h5py_check.py" "$archive" "$src/tests/specs/demo-small.ini" && ok || bad "archive_h5py_check"
# h5dump reads it too (between writes the file is closed and consistent)
if command -v h5dump >/dev/null; then
  h5dump -H "$archive" >"$tmp/dump.txt"
  grep -q 'DATASET "cells"' "$tmp/dump.txt" && ok || bad "h5dump shows no /cells"
fi
finish
