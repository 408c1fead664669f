#!/usr/bin/env python3
"""Check what curvsweep wrote from untrusted strings (docs/SECURITY.md,
"Terminal output" and "Exported CSV").

usage: untrusted_text_check.py --terminal LOG [--csv FILE ...]
LOG holds the stdout and stderr of many commands, each after a line
"== <command>". A command's output may hold no raw control character: no
byte that is not well-formed UTF-8, no C0 control but newline, no DEL and
no C1 control (U+0080..U+009F). Each CSV FILE (RFC 4180, read with Python's
csv module) may hold no text field that a spreadsheet would evaluate: one
that is not a number and starts with =, +, -, @, tab or carriage return.
Exit 0 when all hold, 1 with every violation listed otherwise."""
import csv
import sys


def bad_chars(line):
    """The offending characters of one output line (bytes)."""
    out = []
    text = line.decode("utf-8", errors="surrogateescape")
    for ch in text:
        cp = ord(ch)
        if 0xDC80 <= cp <= 0xDCFF:  # an undecodable byte
            out.append("byte 0x%02X (not UTF-8)" % (cp - 0xDC00))
        elif (cp < 0x20 and ch != "\n") or 0x7F <= cp <= 0x9F:
            out.append("U+%04X" % cp)
    return out


def check_terminal(path):
    problems, command = [], "(before the first command)"
    with open(path, "rb") as f:
        for line in f:
            if line.startswith(b"== "):
                command = line[3:].decode("utf-8", errors="replace").rstrip("\n")
                continue
            found = bad_chars(line)
            if found:
                problems.append("%s: raw %s in %r" % (command, ", ".join(found), line[:120]))
    return problems


def is_number(s):
    try:
        float(s)
        return True
    except ValueError:
        return False


def check_csv(path):
    problems = []
    with open(path, newline="", encoding="utf-8", errors="surrogateescape") as f:
        for r, row in enumerate(csv.reader(f), 1):
            for c, field in enumerate(row, 1):
                if field and field[0] in "=+-@\t\r" and not is_number(field):
                    problems.append("%s row %d column %d: %r would be a formula" % (path, r, c, field[:60]))
    return problems


def main(argv):
    problems, mode = [], None
    for a in argv:
        if a in ("--terminal", "--csv"):
            mode = a
        elif mode == "--terminal":
            problems += check_terminal(a)
        elif mode == "--csv":
            problems += check_csv(a)
        else:
            sys.exit(__doc__)
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
