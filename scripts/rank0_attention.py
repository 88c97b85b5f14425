#!/usr/bin/env python3
"""Rank 0's attention against the later ranks' of the same emulated step (docs/VALIDATION.md, "Where rank 0's
attention stands").

For each section of each trace, the ratio measured/predicted of rank 0's attention over the median of the later
ranks' ratios, times rank 0's predicted time: how many µs rank 0 runs slower than the later ranks, relative to
their prices. Binned by rank 0's predicted attention time and by the bytes the step's merge writes
(N x B x H x D x 2), median (count) per cell.

  scripts/rank0_attention.py --dcpsim build/analysis/dcpsim --profile h100-sxm SET_DIR [SET_DIR ...]

Each SET_DIR holds measured traces (*.pb.gz); `dcpsim validate --csv` prices them.
"""
import argparse
import csv
import glob
import os
import re
import statistics
import subprocess
import sys
import tempfile

TIME_BINS_US = [(0, 30), (30, 80), (80, 200), (200, float("inf"))]
BYTE_BINS_MB = [(0, 2), (2, 5), (5, 10), (10, float("inf"))]
SCENARIO = re.compile(r"dcp(\d+) h(\d+) d(\d+)/\d+ kv\d+ b(\d+)")


def excess_points(csv_path):
    sections = {}
    with open(csv_path, newline="") as f:
        for r in csv.DictReader(f):
            if r["kind"] != "phase" or r["figure"] != "attention":
                continue
            s = sections.setdefault((r["trace"], r["section"]), {"scenario": r["scenario"], "ranks": {}})
            s["ranks"][int(r["rank"])] = (float(r["measured_ns"]), float(r["predicted_ns"]))
    points = []
    for s in sections.values():
        ranks = s["ranks"]
        if 0 not in ranks or len(ranks) < 2:
            continue
        m = SCENARIO.search(s["scenario"])
        if not m:
            continue
        n, heads, dim, batch = map(int, m.groups())
        first = ranks[0][0] / ranks[0][1]
        later = statistics.median(ranks[r][0] / ranks[r][1] for r in ranks if r > 0)
        predicted_us = ranks[0][1] / 1e3
        points.append((predicted_us, n * batch * heads * dim * 2 / 1e6, (first / later - 1) * predicted_us))
    return points


def table(points):
    header = "| attention time \\ output bytes | " + " | ".join(
        f"{lo:g}-{hi:g} MB" if hi != float("inf") else f">= {lo:g} MB" for lo, hi in BYTE_BINS_MB) + " |"
    lines = [header, "|" + "---|" * (len(BYTE_BINS_MB) + 1)]
    for tlo, thi in TIME_BINS_US:
        cells = []
        for blo, bhi in BYTE_BINS_MB:
            v = [e for t, b, e in points if tlo <= t < thi and blo <= b < bhi]
            cells.append(f"{statistics.median(v):+.2f} ({len(v)})" if v else "-")
        label = f"{tlo:g}-{thi:g} us" if thi != float("inf") else f">= {tlo:g} us"
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dcpsim", default="build/analysis/dcpsim")
    ap.add_argument("--profile", default="h100-sxm")
    ap.add_argument("sets", nargs="+", help="folders of measured traces (*.pb.gz)")
    a = ap.parse_args()
    points = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, d in enumerate(a.sets):
            traces = sorted(glob.glob(os.path.join(d, "*.pb.gz")))
            if not traces:
                sys.exit(f"rank0_attention: no *.pb.gz in {d}")
            out = os.path.join(tmp, f"{i}.csv")
            subprocess.run([a.dcpsim, "validate", "--profile", a.profile, "--csv", out,
                            "--max-median-err", "1", "--measured", *traces],
                           check=True, stdout=subprocess.DEVNULL)
            points += excess_points(out)
    print(f"{len(points)} steps; rank 0's excess over the later ranks (us), median (count)")
    print(table(points))


if __name__ == "__main__":
    main()
