#!/usr/bin/python3
"""Copies of a file with one byte flipped each, for tests/sh_corruption.sh.

    flip_bytes.py SRC N SEED PREFIX

Writes PREFIX-I (I = 0 .. N-1): SRC with the byte at one offset xor-ed with
a nonzero mask; the offset lies in the I-th of N equal slices of SRC, so the
N copies cover the whole file. Offsets and masks come from Python's
random.Random(SEED), so a seed names the same campaign on every machine.
Prints one line per copy: "I OFFSET". One process for the whole campaign:
per-flip shell pipelines (stat, od, dd) cost more than the checks.
"""
import random
import sys


def main():
    src, n, seed, prefix = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    with open(src, "rb") as f:
        data = f.read()
    size, rng = len(data), random.Random(seed)
    for i in range(n):
        lo, hi = i * size // n, (i + 1) * size // n
        hi = max(hi, lo + 1)
        off = lo + rng.randrange(hi - lo)
        copy = bytearray(data)
        copy[off] ^= 1 + rng.randrange(255)
        with open("%s-%d" % (prefix, i), "wb") as f:
            f.write(copy)
        print(i, off)


if __name__ == "__main__":
    main()
