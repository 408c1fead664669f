#!/usr/bin/env bash
# sh_archive_h5py.sh — an archive written by the C library, read with h5py +
# numpy (tests/archive_h5py_check.py), and shown by h5dump.
set -euo pipefail
: "${CS_BUILD_DIR:?}" "${CS_SOURCE_DIR:?}"
# Debian's python3-h5py lives in the system python; prefer it over any other
PY=/usr/bin/python3
[[ -x $PY ]] || PY=python3
if ! $PY -c 'import h5py, numpy' 2>/dev/null; then
  echo "sh_archive_h5py: python3-h5py and python3-numpy are required (scripts/install-deps.sh)" >&2
  exit 1
fi
work=$(mktemp -d "$CS_BUILD_DIR/sh_archive_h5py.XXXXXX")
trap 'rm -rf "$work"' EXIT
archive=$work/demo.h5
CS_ARCHIVE_WRITE_DEMO=$archive "$CS_BUILD_DIR/test_archive"
# one cell pending: the journal stays beside the archive
[[ -f $archive.journal ]] || { echo "FAIL: no journal beside the archive" >&2; exit 1; }
$PY "$CS_SOURCE_DIR/tests/archive_h5py_check.py" "$archive" "$CS_SOURCE_DIR/tests/specs/demo-small.ini"
# h5dump reads it too (between writes the file is closed and consistent)
if command -v h5dump >/dev/null; then
  h5dump -H "$archive" >"$work/dump.txt"
  grep -q 'DATASET "cells"' "$work/dump.txt" || { echo "FAIL: h5dump shows no /cells" >&2; exit 1; }
fi
echo "1 passed, 0 failed"
