"""What the journal beside an archive holds, read by the format of
docs/ARCHIVE.md ("Journal"), independently of curvsweep's C reader:
prints "results R runs U unapplied K", the result records and the /runs
records (begin, end) up to the first torn or bad record, and the cells
whose last journaled result (status, attempts) the archive's /cells does
not hold. tests/sh_sweep.sh compares it with `curvsweep info`'s journal
line.

The records are native C structs of the writing build (x86-64 here): a
result payload starts with its cs_cell_result, whose first fields are
cell_id (int64), status (int32: 0 pending, 1 done, 2 failed, 3 diverged),
rank (int32) and attempts (int32).

usage: journal_check.py ARCHIVE"""

import struct
import sys
import zlib

import h5py

STATUS = {0: b"pending", 1: b"done", 2: b"failed", 3: b"diverged"}
HEADER_BYTES = 112
RECORD_MAGIC = 0x31525343
RESULT, RUN_BEGIN, RUN_END, COVER = 1, 2, 3, 4


def records(data):
    """(kind, payload) of each valid record, up to the first bad one."""
    if len(data) < HEADER_BYTES or data[:8] != b"CSJRNL01":
        return
    if zlib.crc32(data[:104]) != struct.unpack_from("<I", data, 104)[0]:
        return
    at = HEADER_BYTES
    while at + 24 <= len(data):
        magic, kind, length, crc = struct.unpack_from("<IIQI", data, at)
        payload = data[at + 24:at + 24 + length]
        if magic != RECORD_MAGIC or len(payload) != length:
            return
        if zlib.crc32(payload, zlib.crc32(data[at:at + 16])) != crc:
            return
        if kind not in (RESULT, RUN_BEGIN, RUN_END, COVER):
            return
        yield kind, payload
        at += 24 + length


def main(path):
    with open(path + ".journal", "rb") as f:
        data = f.read()
    results = runs = 0
    last = {}
    for kind, payload in records(data):
        if kind == RESULT:
            results += 1
            cell, status, _rank, attempts = struct.unpack_from("<qiii", payload, 0)
            last[cell] = (STATUS[status], attempts)
        elif kind in (RUN_BEGIN, RUN_END):
            runs += 1
    with h5py.File(path, "r") as f:
        cells = f["cells"][:]
    have = {int(r["cell_id"]): (bytes(r["status"]).rstrip(b"\0"), int(r["attempts"]))
            for r in cells}
    unapplied = sum(1 for c, s in last.items() if c in have and have[c] != s)
    print("results %d runs %d unapplied %d" % (results, runs, unapplied))


if __name__ == "__main__":
    main(sys.argv[1])
