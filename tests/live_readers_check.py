"""Readers of a live archive (tests/sh_live_readers.sh; docs/ARCHIVE.md,
"Live readers"), run while a sweep writes ARCHIVE until the file STOP exists:

- reads through curvsweep_archive (locked(), cells(), Archive.refresh()):
  every one must succeed, and each must see a consistent archive: every done
  cell has exactly its depth's /curvature rows (prefixes 1..L) among the
  committed rows, no committed row belongs to a pending cell, and the done
  count never decreases from one read to the next;
- plain h5py.File(ARCHIVE, "r") with HDF5's default file locking: it may be
  refused while a batch is written, but only by the lock (errno 11), never
  with "already open for write" or a checksum error, and what it reads is
  consistent as above;
- once, a locked() block held for HOLD seconds (the sweep defers its writes,
  nothing fails);
- an Archive made at the start, refreshed at the end (after STOP): its done
  count must be FINAL.

Prints "opens N plain N plain_refused N holds N" and exits 1 on the first
violation. Usage: live_readers_check.py ARCHIVE STOP FINAL HOLD MIN_OPENS
[MAX_OPENS] (MAX_OPENS: stop reading after that many reads through the
module, then wait for STOP; bench/live_readers.sh)."""
import os
import sys
import time

import h5py
import numpy as np

import curvsweep_archive as ca

path, stop, final, hold, min_opens = (sys.argv[1], sys.argv[2], int(sys.argv[3]),
                                      float(sys.argv[4]), int(sys.argv[5]))
max_opens = int(sys.argv[6]) if len(sys.argv) > 6 else 0


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def consistent(f, what):
    """The done count of an open archive, after checking /curvature against /cells."""
    cells = f["cells"][()]
    status = dict(zip(cells["cell_id"].tolist(), cells["status"].tolist()))
    depth = dict(zip(cells["cell_id"].tolist(), cells["depth"].tolist()))
    d = f["curvature"]
    n = int(d.attrs["committed_rows"])
    rows = d[:n] if n else np.zeros(0, dtype=d.dtype)
    done = [c for c, s in status.items() if s == b"done"]
    prefixes = {}
    for c, p in zip(rows["cell_id"].tolist(), rows["prefix"].tolist()):
        prefixes.setdefault(c, []).append(p)
    for c in done:
        if prefixes.get(c) != list(range(1, depth[c] + 1)):
            fail("%s: done cell %d has /curvature prefixes %s, wanted 1..%d"
                 % (what, c, prefixes.get(c), depth[c]))
    for c in prefixes:
        if status.get(c) != b"done":
            fail("%s: committed /curvature rows of cell %d, whose status is %s"
                 % (what, c, status.get(c)))
    return len(done)


held = ca.Archive(path)
first = held.counts["done"]
last = {"api": first, "plain": 0}


def seen(kind, n, what):
    if n < last[kind]:
        fail("%s: done count went down from %d to %d" % (what, last[kind], n))
    last[kind] = n


opens = plain = refused = holds = k = 0
first_after = None  # the done count when MAX_OPENS was reached
t0 = time.monotonic()
while not os.path.exists(stop):
    if max_opens and opens >= max_opens:
        if first_after is None:
            first_after = held.refresh().counts["done"]
        time.sleep(0.05)
        continue
    k += 1
    if k % 3 == 0:  # the documented raw access
        with ca.locked(path) as f:
            seen("api", consistent(f, "locked()"), "locked()")
        opens += 1
    elif k % 3 == 1:  # the documented live reader and a DataFrame read
        held.refresh()
        seen("api", held.counts["done"], "Archive.refresh()")
        n = int((ca.cells(path)["status"] == "done").sum())
        seen("api", n, "cells()")
        opens += 2
    else:  # plain h5py, HDF5's default locking
        try:
            with h5py.File(path, "r") as f:
                seen("plain", consistent(f, "plain h5py"), "plain h5py")
            plain += 1
        except OSError as e:
            if getattr(e, "errno", None) != 11 or "unable to lock file" not in str(e):
                fail("plain h5py failed otherwise than by the lock: %s" % e)
            refused += 1
    if holds == 0 and time.monotonic() - t0 > 3 and hold > 0:
        with ca.locked(path) as f:  # the sweep waits for this block, never fails
            a = consistent(f, "held block")
            time.sleep(hold)
            if consistent(f, "held block, again") != a:
                fail("the archive changed under a held locked() block")
        holds += 1
    time.sleep(0.01)

n = held.refresh().counts["done"]
if n != final:
    fail("the Archive kept from the start has %d done after refresh(), wanted %d" % (n, final))
if first >= final:
    fail("the Archive was made after the sweep had finished (%d done): nothing was read live" % first)
if first_after is not None:
    print("the sweep was still running after the last read (%d of %d done then)" % (first_after, final))
if opens < min_opens:
    fail("only %d reads through curvsweep_archive while the sweep ran (wanted %d)" % (opens, min_opens))
print("opens %d plain %d plain_refused %d holds %d" % (opens, plain, refused, holds))
