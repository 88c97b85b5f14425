#!/usr/bin/env python3
"""The AG strategies' LSE correction as a Triton kernel written in the style of vLLM's `correct_attn_out`
(vllm-project/vllm, `_correct_attn_cp_out_kernel` in vllm/attention/ops/common.py: one program per (row, head)
reads the N gathered LSEs of that pair, forms the merged LSE and this rank's factor exp(L_r - L), and scales the
D-element output slice). Written for dcpsim's comparison, not copied: same launch shape (grid (B, H), Triton's
default 4 warps), in place, merged LSE written, NaN/+inf LSEs treated as empty as SPEC step 1 says.

Timed like `dcpsim hw bench --sweep` (hw/src/bench.cc): inputs rotate over enough copies of O to exceed 3x L2
(at most 8); "graph" = 20 calls captured in one CUDA graph, replayed, time per call; "eager" = 20 calls enqueued
behind a device-side sleep long enough for Python to stay ahead, span per call (the host's time per launch is
recorded beside it). Median of the repetitions. One JSON line per point.

  python3 scripts/hw_triton_correction.py OUT.jsonl [--grid decode|small] [--dtypes bf16,fp16] [--modes graph,eager]
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch
import triton
import triton.language as tl

CALLS = 20


@triton.jit
def lse_correct_kernel(o_ptr, lse_ptr, merged_ptr, o_stride_b, o_stride_h, lse_stride_n, lse_stride_b,
                       lse_stride_h, rank, n_ranks, heads, N_POW2: tl.constexpr, D: tl.constexpr):
    b = tl.program_id(0)
    h = tl.program_id(1)
    ranks = tl.arange(0, N_POW2)
    pair = b * lse_stride_b + h * lse_stride_h
    lse = tl.load(lse_ptr + pair + ranks * lse_stride_n, mask=ranks < n_ranks, other=float("-inf"))
    lse = tl.where((lse != lse) | (lse == float("inf")), float("-inf"), lse)
    top = tl.max(lse, axis=0)
    top = tl.where(top == float("-inf"), 0.0, top)
    merged = top + tl.log(tl.sum(tl.exp(lse - top), axis=0))
    mine = tl.load(lse_ptr + pair + rank * lse_stride_n)
    mine = tl.where((mine != mine) | (mine == float("inf")), float("-inf"), mine)
    factor = tl.exp(mine - merged)
    factor = tl.where(factor != factor, 0.0, factor)
    tl.store(merged_ptr + b * heads + h, merged)
    lanes = tl.arange(0, D)
    ptr = o_ptr + b * o_stride_b + h * o_stride_h + lanes
    x = tl.load(ptr).to(tl.float32)
    y = tl.where(factor == 0.0, 0.0, x * factor)
    tl.store(ptr, y.to(o_ptr.dtype.element_ty))


def correct(o, lse, merged, rank):
    n, b, h = lse.shape
    lse_correct_kernel[(b, h)](o, lse, merged, o.stride(0), o.stride(1), lse.stride(0), lse.stride(1),
                               lse.stride(2), rank, n, h, N_POW2=triton.next_power_of_2(n), D=o.shape[2])


def reference(o, lse, rank):
    """SPEC steps 1-5 in fp64 for one rank."""
    l = lse.double()
    l = torch.where(torch.isnan(l) | (l == float("inf")), float("-inf"), l)
    merged = torch.logsumexp(l, dim=0)
    w = torch.nan_to_num(torch.exp(l[rank] - merged), nan=0.0)
    return (o.double() * w.unsqueeze(-1)), merged


def check(dtype):
    """Exactness first: a few shapes against the fp64 reference, empty and sentinel LSEs included."""
    torch.manual_seed(1)
    for n, b, h, d in [(3, 17, 96, 512), (6, 4, 8, 128), (8, 2, 16, 512)]:
        o = torch.randn(b, h, d, device="cuda", dtype=dtype)
        lse = torch.randn(n, b, h, device="cuda") * 4
        lse[n - 1, 0, ::3] = float("nan")
        lse[n - 1, 0, 1::3] = float("inf")
        lse[:, 1, 0] = float("-inf")
        want, want_lse = reference(o, lse, 0)
        merged = torch.empty(b, h, device="cuda")
        got = o.clone()
        correct(got, lse, merged, 0)
        torch.cuda.synchronize()
        err = ((got.double() - want).norm() / want.norm()).item()
        if not err < 1e-2 or torch.isnan(got).any():
            raise SystemExit(f"triton correction wrong at N={n} B={b} H={h} D={d} {dtype}: rel err {err}")
        finite = torch.isfinite(want_lse)
        if not torch.allclose(merged.double()[finite], want_lse[finite], atol=1e-4):
            raise SystemExit(f"triton merged LSE wrong at N={n} B={b} H={h} D={d}")


def shapes(grid):
    if grid == "small":
        return [(2, 1, 8, 128), (6, 17, 96, 512), (8, 32, 128, 512), (4, 40, 32, 128), (3, 17, 96, 128)]
    out = [(n, b, h, d) for n in (2, 3, 4, 6, 8) for b in (1, 4, 8, 16, 17, 32, 64, 128, 256)
           for h in (8, 16, 32, 64, 96, 128) for d in (128, 512)]
    return out + [(8, 1024, 128, 128)]


def rotation_sets(nbytes):
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    return max(1, min(8, int(3 * l2 / nbytes) + 1))


def time_graph(calls, reps, warmup):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for c in calls[:2]:
            c()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for c in calls:
            c()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(warmup):
        g.replay()
    times = []
    for _ in range(reps):
        start.record()
        g.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e6 / len(calls))
    del g
    return times, None


def time_eager(calls, reps, warmup, clock_hz):
    for _ in range(warmup):
        for c in calls:
            c()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for c in calls:
        c()
    host = (time.perf_counter() - t0) / len(calls)
    torch.cuda.synchronize()
    # A sleep twice as long as the host needs to enqueue the calls keeps the GPU from waiting on Python.
    cycles = int((2 * host * len(calls) + 100e-6) * clock_hz)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        torch.cuda._sleep(cycles)
        start.record()
        for c in calls:
            c()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e6 / len(calls))
    return times, host * 1e9


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--grid", default="decode", choices=["decode", "small"])
    ap.add_argument("--dtypes", default="bf16,fp16")
    ap.add_argument("--modes", default="graph,eager")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--warmup", type=int, default=3)
    args = ap.parse_args()
    dtypes = {"bf16": torch.bfloat16, "fp16": torch.float16}
    dev = torch.device("cuda")
    # The SM clock under load, for torch.cuda._sleep (which counts cycles).
    clock_hz = 1.98e9
    for name in args.dtypes.split(","):
        check(dtypes[name])
    rows = 0
    t_start = time.time()
    with open(args.out + ".partial", "w") as f:
        for n, b, h, d in shapes(args.grid):
            for name in args.dtypes.split(","):
                dtype = dtypes[name]
                o_bytes = b * h * d * 2
                sets = rotation_sets(o_bytes)
                gen = torch.Generator(device=dev).manual_seed(n * 7919 + b * 31 + h * 7 + d)
                os_ = [torch.rand(b, h, d, device=dev, generator=gen).mul_(2).sub_(1).to(dtype) for _ in range(sets)]
                lse = torch.rand(n, b, h, device=dev, generator=gen).mul_(16).sub_(8)
                merged = torch.empty(b, h, device=dev)
                calls = [(lambda o=os_[i % sets]: correct(o, lse, merged, 0)) for i in range(CALLS)]
                for mode in args.modes.split(","):
                    graph = mode == "graph"
                    if graph:
                        times, host = time_graph(calls, args.reps, args.warmup)
                    else:
                        times, host = time_eager(calls, args.reps, args.warmup, clock_hz)
                    nbytes = 2 * o_bytes + 4 * n * b * h + 4 * b * h
                    med = statistics.median(times)
                    row = {"impl": "triton", "op": "correct", "variant": "vllm-style", "dtype": name,
                           "graph": graph, "N": n, "B": b, "H": h, "D": d, "median_ns": med,
                           "min_ns": min(times), "max_ns": max(times), "bytes": nbytes,
                           "bandwidth": nbytes / (med * 1e-9)}
                    if host is not None:
                        row["host_ns_per_call"] = host
                    f.write(json.dumps(row) + "\n")
                    rows += 1
                del os_
    os.replace(args.out + ".partial", args.out)
    print(f"triton correction: {rows} points in {time.time() - t_start:.1f} s -> {args.out}")


if __name__ == "__main__":
    sys.exit(main())
