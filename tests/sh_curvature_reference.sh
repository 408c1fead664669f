#!/usr/bin/env bash
# The per-point rounding error estimate against an independent 50-digit
# reference (docs/NUMERICS.md): trained models of every memory-family arch at
# depths 1, 4 and 7, with and without residual and pre-LayerNorm, rebuilt from
# /params and recomputed point by point in mpmath by
# tests/reference/curvature_ref.py (no code shared with the engine).
# Asserts |S - S_ref| <= S_err at every point, that every resolved point of
# the ungated affine skeleton is flat, and that at most 1% of the
# non-degenerate points are unresolved.
source "${CS_SOURCE_DIR:?}/tests/support/common.sh"
PY=/usr/bin/python3

if ! $PY -c 'import h5py, mpmath' 2>/dev/null; then
  echo "sh_curvature_reference: python3-h5py and python3-mpmath are required (scripts/install-deps.sh)" >&2
  exit 1
fi

# 1. the trained models (2 ranks: the result does not depend on the rank count)
if mpiexec --oversubscribe --bind-to none -np 2 "$bin" run "$src/tests/specs/reference.ini" \
     -o reference.h5 2>run.err; then ok; else bad "run"; cat run.err; fi

# 2. every point: the engine's S_err covers its true error
if $PY "$src/tests/reference/curvature_ref.py" reference.h5 --check --dump ref.tsv; then ok
else bad "S_err does not cover |S - S_ref| at every point"; fi

# 3. the classification: ungated skeleton (3 slots = m + 1, 1 head, no residual,
# no LayerNorm) is flat wherever it is resolved; few unresolved points overall
if $PY - reference.h5 <<'PYEOF'; then ok; else bad "classification"; fi
import os, sys, h5py, numpy as np
sys.path.insert(0, os.path.join(os.environ["CS_SOURCE_DIR"], "tests"))
from archive_points import cell_points
f = h5py.File(sys.argv[1], "r")
cells = f["cells"][()]
flat_cells = unres = nondeg = 0
for r in cells:
    cls = cell_points(f, int(r["cell_id"]))["class"]
    nondeg += int((cls != 0).sum())
    unres += int((cls == 3).sum())
    if r["arch"] == b"ungated" and r["residual"] == b"no" and r["norm"] == b"none":
        resolved = cls[(cls == 1) | (cls == 2)]
        if not (resolved.size > 0 and (resolved == 1).all()):
            print("cell %d: ungated skeleton has curved points: %s" % (r["cell_id"], cls))
            sys.exit(1)
        flat_cells += 1
print("skeleton cells all flat: %d; unresolved %d of %d non-degenerate points" % (flat_cells, unres, nondeg))
sys.exit(0 if flat_cells == 3 and unres <= 0.01 * nondeg else 1)
PYEOF

finish
