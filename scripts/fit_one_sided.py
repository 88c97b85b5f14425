#!/usr/bin/env python3
"""Peer-store bandwidth and flag latency of one-sided NVLink exchanges, fitted to a published one-shot
all-reduce table (../shared/data/comm/aic_custom_allreduce_h100_sxm.csv: SGLang's custom all-reduce,
CUDA graph, 2/4/8 x H100). A one-shot all-reduce of S bytes on N ranks is what dcpsim's direct merge does:
each rank stores its S bytes into every peer, publishes a flag, waits for the peers' flags and reduces
the N buffers. Replayed back to back from a graph, one call takes
    t = c0 + (N - 1) S / B_store + N S / R_reduce
where c0 = launch gap + epoch barrier + NVLink hop + flag write + half a poll interval (the fixed cost),
B_store the bandwidth of a kernel's stores to peers and R_reduce the local read rate of the reduction.
Only the one-shot regime is fitted (S <= --max-bytes, where the one-shot kernel runs). Prints the fit and
the flag latency it implies, given the profile's other fixed costs. Usage:
  scripts/fit_one_sided.py CSV [--impl sglang_graph --version 0.5.14 --max-bytes 131072]"""
import argparse
import csv
import statistics


def solve3(rows, rhs):
    """Least squares for three unknowns by the normal equations (Gaussian elimination)."""
    m = [[sum(r[i] * r[j] for r in rows) for j in range(3)] + [sum(r[i] * y for r, y in zip(rows, rhs))]
         for i in range(3)]
    for c in range(3):
        p = max(range(c, 3), key=lambda k: abs(m[k][c]))
        m[c], m[p] = m[p], m[c]
        for k in range(3):
            if k != c:
                f = m[k][c] / m[c][c]
                m[k] = [x - f * y for x, y in zip(m[k], m[c])]
    return [m[i][3] / m[i][i] for i in range(3)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--impl", default="sglang_graph")
    ap.add_argument("--version", default="0.5.14")
    ap.add_argument("--max-bytes", type=int, default=131072)
    ap.add_argument("--gap-us", type=float, default=0.35, help="profile launch.dependent_gap")
    ap.add_argument("--epoch-us", type=float, default=0.5, help="profile signal.epoch_handshake")
    ap.add_argument("--hop-us", type=float, default=0.6, help="profile nvlink.hop_latency")
    ap.add_argument("--poll-us", type=float, default=0.5, help="profile signal.poll_interval")
    a = ap.parse_args()
    lines = open(a.csv).read().splitlines()
    rows = [r for r in csv.DictReader(lines[1:])
            if r["impl"] == a.impl and r["framework_version"] == a.version and int(r["size_bytes"]) <= a.max_bytes]
    if not rows:
        raise SystemExit("no rows match")
    pts = [(int(r["gpus"]), int(r["size_bytes"]), float(r["time_us"]) * 1e-6) for r in rows]
    # Least squares on relative error: the columns 1, (N-1)S, NS, each divided by t.
    x = [[1 / t, (n - 1) * s / t, n * s / t] for n, s, t in pts]
    c0, inv_b, inv_r = solve3(x, [1.0] * len(pts))
    rel = [(c0 + (n - 1) * s * inv_b + n * s * inv_r) / t - 1 for n, s, t in pts]
    print(f"{len(rows)} points ({a.impl} {a.version}, N in {sorted({p[0] for p in pts})}, S <= {a.max_bytes} B)")
    print(f"fixed cost c0 = {c0 * 1e6:.3f} us; store bandwidth = {1 / inv_b / 1e9 if inv_b > 0 else float('inf'):.1f} "
          f"GB/s; reduce read rate = {1 / inv_r / 1e9 if inv_r > 0 else float('inf'):.1f} GB/s")
    print(f"|relative error| median {100 * statistics.median(abs(e) for e in rel):.1f}%, "
          f"max {100 * max(abs(e) for e in rel):.1f}%")
    flag = c0 * 1e6 - a.gap_us - a.epoch_us - a.hop_us - a.poll_us / 2
    print(f"flag write latency implied = c0 - gap - epoch - hop - poll/2 = {flag:.3f} us")


if __name__ == "__main__":
    main()
