#!/usr/bin/python3
"""plots_flat.py REPORT [--archive ARCHIVE] [--min-flat N]

Fails (exit 1) when a figure of an analyze report draws the curvature of a
flat or unresolved row as a value (analysis/README.md, "Figures").

Which rows are flat is recomputed here from the report's prefix.csv alone,
by claim 1's rule (docs: analysis/README.md, "Measures", and analysis/VERDICTS.md,
"Verdicts in index.md"), not read from the figures:
  - a row with the point classification (its fraction columns finite) is
    curved when some seed has curved points (curved_frac_max > 0), else flat
    when flat_frac_mean + curved_frac_mean > 0, else unresolved;
  - a row without it: flat when Kt_absmean_max <= 1e-8, or <= 1e-6 x the
    mean |K~| of the gated arch (gated, else gated-headwise) at the same
    (task, depth, regime, prefix) for a row of another arch; curved above;
    unresolved when Kt_absmean_max is nan.

Then every .dat of a curvature figure (curvature_depth_*, prefix_*,
hist_Kt_*, hist_Kh_*, field_Kh_*, map_Kt_*, gates*) is read: its columns
are named by its "# columns:" lines (or, in a file without one, by its first
comment line), a data line belongs to the row of the last "# row ..." key
of its block, and a column named K..., Kt... or Kh... is a curvature. Checks:
  - a data line with a curvature column belongs to a row of prefix.csv;
  - a flat or unresolved row's curvature columns are NaN;
  - a point whose point_class column is not curved (2) has NaN curvature;
  - in curvature_depth_* and prefix_*, the key agrees with the block's own
    "# arch A[, depth L]" comment, the file name and the x column (and
    where a file has no keys, those make the row);
  - with --archive, each point panel's point classes are the archive's
    (/fields/<cell>/class for field_Kh_*, /points class for map_Kt_*);
  - every such file names its columns ("# columns:");
  - at least --min-flat flat or unresolved rows were checked (default 0).
"""
import csv
import math
import os
import re
import sys

CURV = re.compile(r"^(K|Kt|Kh)(_|$)")
KEY = re.compile(r"^# row arch=(\S+) task=(\S+) depth=(\d+) regime=(\S+) prefix=(\d+)(?: cell=(\d+))?$")
FIGURES = ("curvature_depth_", "prefix_", "hist_Kt_", "hist_Kh_", "field_Kh_", "map_Kt_", "gates")
CURVED, FLAT, UNRESOLVED = "curved", "flat", "unresolved"


def is_curvature_figure(name):
    """A .dat of a figure that plots a curvature: the prefixes above, the
    gates figure being exactly gates.dat or gates_<tag>.dat (gatescores_*,
    the gate-score histograms, plot no curvature)."""
    return name.startswith(FIGURES[:-1]) or name == "gates.dat" or name.startswith("gates_")


def fnum(s):
    try:
        return float(s)
    except ValueError:
        return math.nan


def row_classes(report):
    """(arch, task, depth, regime, prefix) -> class, by claim 1's rule from prefix.csv."""
    with open(os.path.join(report, "prefix.csv")) as f:
        rows = list(csv.DictReader(f))
    key = lambda r: (r["arch"], r["task"], int(r["depth"]), r["regime"], int(r["prefix"]))
    archs = {r["arch"] for r in rows}
    ref = "gated" if "gated" in archs else ("gated-headwise" if "gated-headwise" in archs else None)
    ref_kt = {key(r)[1:]: fnum(r["Kt_absmean_mean"]) for r in rows if r["arch"] == ref}
    out = {}
    for r in rows:
        flat, curved = fnum(r["flat_frac_mean"]), fnum(r["curved_frac_mean"])
        cmax, kt = fnum(r["curved_frac_max"]), fnum(r["Kt_absmean_max"])
        if math.isfinite(flat) and math.isfinite(curved):
            c = CURVED if cmax > 0 else (FLAT if flat + curved > 0 else UNRESOLVED)
        elif not math.isfinite(kt):
            c = UNRESOLVED
        else:
            g = ref_kt.get(key(r)[1:], math.nan) if r["arch"] != ref else math.nan
            c = FLAT if kt <= 1e-8 or (g > 0 and kt / g <= 1e-6) else CURVED
        out[key(r)] = c
    return out


def regime_tags(classes):
    """file tag -> regime name (the tag: the name with every character but
    letters, digits, '.' and '-' made '_'), and whether names carry it."""
    regimes = {k[3] for k in classes}
    return {re.sub(r"[^A-Za-z0-9.-]", "_", g): g for g in regimes}, len(regimes) > 1


class Checker:
    def __init__(self, report, archive):
        self.report = report
        self.classes = row_classes(report)
        self.tags, self.tagged = regime_tags(self.classes)
        self.tasks = {k[1] for k in self.classes}
        self.errors = []
        self.checked = {CURVED: 0, FLAT: 0, UNRESOLVED: 0}
        self.h5 = None
        if archive:
            import h5py
            self.h5 = h5py.File(archive, "r")

    def fail(self, name, line, msg):
        if len(self.errors) < 40:
            self.errors.append(f"{name}:{line}: {msg}")

    def file_row(self, name):
        """(task, regime) of a per-(task, regime) figure from its file name, or None."""
        stem = name[:-4]
        for kind in ("curvature_depth_", "prefix_"):
            if stem.startswith(kind):
                rest = stem[len(kind):]
                for t in self.tasks:
                    if rest == t and not self.tagged:
                        return t, next(iter(self.tags.values()))
                    if self.tagged and rest.startswith(t + "_") and rest[len(t) + 1:] in self.tags:
                        return t, self.tags[rest[len(t) + 1:]]
        return None

    def check_file(self, name):
        path = os.path.join(self.report, name)
        lines = open(path, encoding="utf-8").read().split("\n")
        cols, key, block_arch, block_depth, blanks = None, None, None, None, 0
        first_comment = None
        derive = name.startswith(("curvature_depth_", "prefix_"))
        where = self.file_row(name) if derive else None
        if derive and where is None:
            self.fail(name, 0, "no (task, regime) of prefix.csv gives this file name")
        panel = []  # (line number, key, point_class, cell) of the point lines of a keyed panel
        for i, raw in enumerate(lines, 1):
            s = raw.strip()
            if not s:
                blanks += 1
                if blanks >= 2:
                    self.end_panel(name, panel)
                    panel, key, block_arch, block_depth = [], None, None, None
                continue
            blanks = 0
            if s.startswith("#"):
                if first_comment is None:
                    first_comment = s[1:].split()
                if s.startswith("# columns:"):
                    cols = s[len("# columns:"):].split()
                    continue
                m = KEY.match(s)
                if m:
                    self.end_panel(name, panel)
                    panel = []
                    a, t, d, g, l, cell = m.groups()
                    key = (a, t, int(d), g, int(l), int(cell) if cell else None)
                    continue
                m = re.match(r"^# arch (\S+?)(?:, depth (\d+))?$", s)
                if m:
                    block_arch, block_depth = m.group(1), m.group(2)
                continue
            names = cols if cols is not None else first_comment
            vals = s.split()
            if not names:
                self.fail(name, i, "data before any column names")
                continue
            curv = [j for j, n in enumerate(names) if CURV.match(n) and j < len(vals)]
            if not curv:
                continue
            row = key[:5] if key else None
            if derive and where is not None and block_arch:
                x = int(fnum(vals[0])) if math.isfinite(fnum(vals[0])) else -1
                depth = x if name.startswith("curvature_depth_") else int(block_depth or -1)
                derived = (block_arch, where[0], depth, where[1], x)
                if row is not None and row != derived:
                    self.fail(name, i, f"row key {row} but the block, file and x say {derived}")
                row = row or derived
            if row is None:
                self.fail(name, i, "curvature values outside any row (no '# row' key)")
                continue
            cls = self.classes.get(row)
            if cls is None:
                self.fail(name, i, f"row {row} is not a row of prefix.csv")
                continue
            self.checked[cls] += 1
            finite = [names[j] for j in curv if math.isfinite(fnum(vals[j]))]
            if cls != CURVED and finite:
                self.fail(name, i, f"{cls} row {row} carries curvature values: "
                                   + ", ".join(f"{names[j]}={vals[j]}" for j in curv if names[j] in finite))
            if "point_class" in names:
                pc = int(fnum(vals[names.index("point_class")]))
                if pc != 2 and finite:
                    self.fail(name, i, f"point of class {pc} (not curved) carries " + ", ".join(finite))
                if key and key[5] is not None:
                    panel.append((i, key, pc))
        self.end_panel(name, panel)
        if not any(l.startswith("# columns:") for l in lines):
            self.fail(name, 0, "no '# columns:' line: the figure's columns are not named")

    def end_panel(self, name, panel):
        """With the archive: a point panel's classes are the cell's, in order."""
        if not self.h5 or not panel:
            return
        i0, key, _ = panel[0]
        cell, l = key[5], key[4]
        got = [pc for _, _, pc in panel]
        if name.startswith("field_Kh_"):
            want = list(self.h5[f"fields/{cell}/class"][l - 1])
        elif name.startswith("map_Kt_"):
            ix = self.h5["points/index"][: self.h5["points/index"].attrs["committed_rows"]]
            r = [x for x in ix if x["cell_id"] == cell]
            if not r:
                self.fail(name, i0, f"cell {cell} has no /points row")
                return
            r = r[-1]
            n = int(r["n_points"])
            start = int(r["start"]) + (l - 1) * n
            want = list(self.h5["points/class"][start:start + n])
        else:
            return
        if [int(w) for w in want] != got:
            self.fail(name, i0, f"cell {cell} prefix {l}: point classes differ from the archive's "
                                f"({len(got)} points here, {len(want)} there)")

    def run(self, min_flat):
        names = sorted(n for n in os.listdir(self.report) if n.endswith(".dat") and is_curvature_figure(n))
        for n in names:
            self.check_file(n)
        no_value = self.checked[FLAT] + self.checked[UNRESOLVED]
        print(f"plots_flat: {len(names)} curvature figures, data lines of {self.checked[CURVED]} curved, "
              f"{self.checked[FLAT]} flat and {self.checked[UNRESOLVED]} unresolved rows checked")
        if no_value < min_flat:
            self.errors.append(f"only {no_value} flat or unresolved row lines checked, want >= {min_flat}")
        for e in self.errors:
            print("FAIL:", e)
        return not self.errors


def main(argv):
    args, archive, min_flat = [], None, 0
    it = iter(argv[1:])
    for a in it:
        if a == "--archive":
            archive = next(it)
        elif a == "--min-flat":
            min_flat = int(next(it))
        else:
            args.append(a)
    if len(args) != 1:
        print(__doc__)
        return 2
    return 0 if Checker(args[0], archive).run(min_flat) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
