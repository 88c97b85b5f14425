#!/usr/bin/env python3
"""Launch gaps and the query repack's cost, read off measured GPU timelines.

`dcpsim hw calibrate` does this itself (analysis/timeline_fit.h) for the profiles it writes; this script stays
for looking at any set of traces by hand.

Reads dcpsim traces (.pb, exported through `dcpsim export --chrome`) or their Chrome JSON exports and prints:
- per launch mode (graph and eager, from each section's scenario label; under PDL a kernel starts before its
  predecessor ends, so PDL sections give no gap), the median, p10 and p90 of the gap between two consecutive
  kernels (no copy between them) where the first ran at least --min-first-us, so the host had queued the second
  before the first ended: what a profile's launch.dependent_gap (graph) and launch.dependent_gap_eager stand
  for;
- the query repack ahead of FlashInfer's MLA kernel (kernel.q_repack): the least-squares line duration =
  floor + bytes / bandwidth over the repacks of emulated ranks after the first (bytes: the query read and
  written, 2 x B x H x D_qk x 2; the ranks' attention before them evicted their query, so they are cold), with
  the first rank's repacks (after the gathered query's copies) beside it.
Row-stream sections are left out (their ranks' kernels share the GPU at once). Element sizes are taken as 2
bytes (bf16 / fp16 queries, as the runner's traces hold).

  scripts/timeline_fit.py [--min-first-us 10] --dcpsim build/analysis/dcpsim traces/measured/h200/*.pb.gz
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def load(path, dcpsim, tmp):
    if path.endswith('.json'):
        with open(path) as f:
            return json.load(f)
    out = os.path.join(tmp, os.path.basename(path) + '.json')
    r = subprocess.run([dcpsim, 'export', path, '--chrome', out], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f'timeline_fit.py: {path}: dcpsim export failed: {r.stderr.strip()}')
    with open(out) as f:
        return json.load(f)


def mode_of(label):
    for word in label.split():
        if word in ('graph', 'eager', 'pdl'):
            return word
    return None


def scenario_numbers(label):
    """(rows, heads, qk_dim, elem bytes) from a scenario label such as 'dcp8 h128 d512/576 kv1 b16 ...'."""
    words = label.split()
    heads = int(next(w for w in words if w.startswith('h') and w[1:].isdigit())[1:])
    qk = int(next(w for w in words if w.startswith('d') and '/' in w).split('/')[1])
    rows = int(next(w for w in words if w.startswith('b') and w[1:].isdigit())[1:])
    return rows, heads, qk, 2


def repacks(trace):
    """[(bytes, us, first_rank)] of every query repack kernel outside row-stream sections."""
    events = trace['traceEvents'] if isinstance(trace, dict) else trace
    sections = [e for e in events if e.get('cat') == 'scenario' and e.get('ph') == 'X']
    kernels = [e for e in events if e.get('cat') == 'gpu' and e.get('ph') == 'X' and 'repack_q' in e['name']]
    out = []
    for s in sections:
        if ' row-stream ' in f" {s['name']} ":
            continue
        rows, heads, qk, elem = scenario_numbers(s['name'])
        lo, hi = s['ts'], s['ts'] + s['dur']
        for k in kernels:
            if lo <= k['ts'] < hi:
                out.append((2.0 * rows * heads * qk * elem, k['dur'], k['pid'] == 0))
    return out


def line_fit(points):
    """Least squares t = a + b * x; returns (a, b)."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    if sxx == 0:
        return my, 0.0
    b = sum((x - mx) * (y - my) for x, y in points) / sxx
    return my - b * mx, b


def gaps(trace, min_first_us):
    events = trace['traceEvents'] if isinstance(trace, dict) else trace
    sections = [e for e in events if e.get('cat') == 'scenario' and e.get('ph') == 'X']
    activities = [e for e in events if e.get('cat') == 'gpu' and e.get('ph') == 'X']
    out = {}
    for s in sections:
        mode = mode_of(s['name'])
        # Under PDL a kernel starts before its predecessor ends: no queued gap to read.
        if mode in (None, 'pdl') or ' row-stream ' in f" {s['name']} ":
            continue
        lo, hi = s['ts'], s['ts'] + s['dur']
        inside = sorted((k for k in activities if lo <= k['ts'] < hi), key=lambda k: k['ts'])
        # Consecutive activities that are both kernels: a copy or memset between two kernels is no gap.
        for a, b in zip(inside, inside[1:]):
            if a['name'].startswith(('memcpy', 'memset')) or b['name'].startswith(('memcpy', 'memset')):
                continue
            gap = b['ts'] - (a['ts'] + a['dur'])
            if a['dur'] >= min_first_us and gap >= 0:
                out.setdefault(mode, []).append(gap)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('traces', nargs='+', help='dcpsim traces (.pb) or their Chrome JSON exports')
    ap.add_argument('--dcpsim', default='build/analysis/dcpsim', help='dcpsim binary (to export .pb traces)')
    ap.add_argument('--min-first-us', type=float, default=10.0,
                    help='only gaps after a kernel at least this long (us): the next one was queued')
    args = ap.parse_args()
    total, repack = {}, []
    with tempfile.TemporaryDirectory() as tmp:
        for path in args.traces:
            trace = load(path, args.dcpsim, tmp)
            for mode, v in gaps(trace, args.min_first_us).items():
                total.setdefault(mode, []).extend(v)
            repack.extend(repacks(trace))
    if not total:
        sys.exit('timeline_fit.py: no kernel pairs found (traces without a GPU timeline?)')
    print('launch gaps (a kernel end to the next queued kernel start)')
    print('mode   pairs  median_us  p10_us  p90_us')
    for mode in sorted(total):
        v = sorted(total[mode])
        print(f'{mode:6} {len(v):6d}  {statistics.median(v):9.3f}  {v[len(v) // 10]:6.3f}  '
              f'{v[(9 * len(v)) // 10]:6.3f}')
    later = [(b, us) for b, us, first in repack if not first]
    if len(set(b for b, _ in later)) >= 2:
        a, slope = line_fit(later)
        sizes = len(set(b for b, _ in later))
        bw = 1e-6 / slope if slope > 0 else float('inf')
        print(f'query repack, later ranks (cold): {len(later)} kernels, {sizes} sizes: '
              f'floor {a:.3f} us, bandwidth {bw:.2f} TB/s')
        for size in sorted(set(b for b, _, _ in repack)):
            cold = [us for b, us, first in repack if b == size and not first]
            warm = [us for b, us, first in repack if b == size and first]
            med = lambda v: statistics.median(v) if v else float('nan')
            print(f'  {size / 1e6:7.3f} MB: later ranks {med(cold):.3f} us ({len(cold)}), '
                  f'first rank {med(warm):.3f} us ({len(warm)}), fit {a + slope * size:.3f} us')


if __name__ == '__main__':
    main()
