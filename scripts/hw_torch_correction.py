#!/usr/bin/env python3
"""The AG strategies' LSE correction written the straightforward PyTorch way, timed on the same shapes as
`dcpsim hw bench --op correct` (docs/PERFORMANCE.md compares the two). Eager calls and CUDA-graph replay, median
of CUDA-event timings; bytes counted as for the kernel (O read and written once, N LSEs read once)."""
import json
import statistics
import sys

import torch


def correct(o, lse_all, rank):
    # SPEC merge, steps 1-5, for one rank: sanitise, merged LSE, weight, scale in place.
    lse = torch.where(torch.isnan(lse_all) | (lse_all == float("inf")), float("-inf"), lse_all)
    merged = torch.logsumexp(lse, dim=0)
    w = torch.exp(lse[rank] - merged)
    w = torch.nan_to_num(w, nan=0.0)
    scaled = (o.float() * w.unsqueeze(-1)).to(o.dtype)
    o.copy_(torch.where(w.unsqueeze(-1) == 0, torch.zeros_like(scaled), scaled))


def time_it(fn, reps, graph, calls=100):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    if graph:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            fn()
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(calls):
                fn()
        run, per = g.replay, calls
    else:
        run, per = fn, 1
    times = []
    for _ in range(reps):
        start.record()
        run()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1e6 / per)
    return statistics.median(times)


def main():
    torch.manual_seed(0)
    dev = torch.device("cuda")
    rows = []
    for n, b, h, d, graph in [(8, 256, 128, 512, False), (8, 1024, 128, 128, False), (8, 256, 128, 512, True),
                              (8, 1, 128, 512, True), (8, 8, 128, 512, True), (8, 32, 128, 512, True),
                              (8, 32, 128, 512, False)]:
        o = torch.randn(b, h, d, device=dev, dtype=torch.bfloat16)
        lse = torch.randn(n, b, h, device=dev, dtype=torch.float32) * 4
        ns = time_it(lambda: correct(o, lse, 0), 50, graph)
        nbytes = 2 * 2 * b * h * d + 4 * n * b * h
        row = {"impl": "torch", "op": "correct", "shape": f"N={n} B={b} H={h} D={d}", "graph": graph,
               "median_ns": ns, "bytes": nbytes, "bandwidth": nbytes / (ns * 1e-9)}
        rows.append(row)
        print(f"torch correct N={n} B={b} H={h} D={d} {'graph' if graph else 'eager'}: {ns / 1e3:.2f} us "
              f"{row['bandwidth'] / 1e9:.1f} GB/s")
    with open(sys.argv[1] if len(sys.argv) > 1 else "/dev/null", "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
