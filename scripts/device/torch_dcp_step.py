#!/usr/bin/env python3
"""One rank's share of a DCP decode step written the way a PyTorch user would, profiled with torch.profiler
(Kineto, CUPTI), over the grid fixed in docs/validation/torch_dcp/grid.json (fit and held-out points chosen
before any trace was taken).

The step: attention over the rank's KV shard through SDPA's flash backend, which returns the LSE
(aten::_scaled_dot_product_flash_attention); the LSE all-gather emulated by writing the rank's LSE into slot r of
an [N][B][H] buffer that holds the other ranks' LSEs; the AG+RS correction as a Triton kernel named as vLLM names
its own (`_correct_attn_cp_out_kernel`: one program per (row, head), reads the N LSEs, forms the merged LSE and
scales the rank's D-element slice in place). No reduce-scatter: one GPU has no peer.

Also measured, for the communication model's event-timed traces: what a CUDA event pair around one short kernel
reports against the kernel's CUPTI duration (eager launches, kernels of 2 us to ~300 us).

  python3 scripts/device/torch_dcp_step.py GRID.json OUTDIR
Writes OUTDIR/traces/<id>.json.gz (Kineto Chrome JSON), OUTDIR/points.jsonl (per point: the scenario, the
event-timed step median, the exactness check) and OUTDIR/event_vs_cupti.jsonl.
"""
import gzip
import json
import math
import os
import shutil
import statistics
import sys
import time

import torch
import triton
import triton.language as tl

WARMUP, STEPS = 5, 20


@triton.jit
def _correct_attn_cp_out_kernel(o_ptr, lse_ptr, merged_ptr, o_stride_b, o_stride_h, lse_stride_n, lse_stride_b,
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


def correct(o, lse_all, merged, rank):
    n, b, h = lse_all.shape
    _correct_attn_cp_out_kernel[(b, h)](o, lse_all, merged, o.stride(0), o.stride(1), lse_all.stride(0),
                                        lse_all.stride(1), lse_all.stride(2), rank, n, h,
                                        N_POW2=triton.next_power_of_2(n), D=o.shape[2])


class RankStep:
    """Buffers of one point; step() enqueues the rank's kernels."""

    def __init__(self, p, d, seed):
        g = torch.Generator(device="cuda").manual_seed(seed)
        n, b, h = p["dcp"], p["batch"], p["heads"]
        s = p["context"] // n
        self.n, self.b, self.h, self.d, self.s = n, b, h, d, s
        self.scale = 1.0 / math.sqrt(d)
        self.q = torch.randn(b, h, 1, d, device="cuda", dtype=torch.bfloat16, generator=g)
        self.k = torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16, generator=g)
        self.v = torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16, generator=g)
        # The other ranks' LSEs, as a gather would bring them: log(s) plus noise, the size a real shard's has.
        self.lse_all = (torch.randn(n, b, h, device="cuda", generator=g) + math.log(s)).float()
        self.merged = torch.empty(b, h, device="cuda", dtype=torch.float32)
        self.rank = 0
        self.out = None

    def step(self):
        out, lse = torch.ops.aten._scaled_dot_product_flash_attention(self.q, self.k, self.v, 0.0, False, False,
                                                                      scale=self.scale)[:2]
        self.lse_all[self.rank].copy_(lse.squeeze(-1))
        o = out.squeeze(2)
        correct(o, self.lse_all, self.merged, self.rank)
        self.out = o


def check(p, d):
    """Exactness: the step's corrected output and merged LSE against fp64 on a few rows of a small copy."""
    small = dict(p, batch=min(p["batch"], 2), context=min(p["context"], 4096 * p["dcp"]))
    st = RankStep(small, d, 7)
    lse_before = st.lse_all.clone()
    st.step()
    torch.cuda.synchronize()
    q, k, v = st.q.double()[:, :, 0], st.k.double(), st.v.double()
    sc = torch.einsum("bhd,bhsd->bhs", q, k) * st.scale
    lse = torch.logsumexp(sc, dim=-1)
    o = torch.einsum("bhs,bhsd->bhd", torch.softmax(sc, dim=-1), v)
    lse_all = lse_before.double()
    lse_all[0] = lse
    merged = torch.logsumexp(lse_all, dim=0)
    want = o * torch.exp(lse - merged).unsqueeze(-1)
    err = ((st.out.double() - want).norm() / want.norm()).item()
    lerr = (st.merged.double() - merged).abs().max().item()
    return {"rel_l2": err, "merged_lse_max_abs": lerr, "ok": err < 2e-2 and lerr < 1e-3}


def profile_point(p, d, outdir):
    st = RankStep(p, d, 1)
    for _ in range(WARMUP):
        st.step()
    torch.cuda.synchronize()
    # Event-timed step, for comparison with the CUPTI kernel durations.
    ev = []
    for _ in range(STEPS):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        st.step()
        b.record()
        torch.cuda.synchronize()
        ev.append(a.elapsed_time(b) * 1e3)
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts) as prof:
        for _ in range(STEPS):
            st.step()
            torch.cuda.synchronize()  # one step at a time: no kernel queues behind the previous step
    path = os.path.join(outdir, "traces", p["id"] + ".json")
    prof.export_chrome_trace(path)
    with open(path, "rb") as f, gzip.open(path + ".gz", "wb", compresslevel=9) as g:
        shutil.copyfileobj(f, g)
    os.remove(path)
    del st
    torch.cuda.empty_cache()
    return {"event_step_us_median": statistics.median(ev), "event_step_us_min": min(ev)}


def event_vs_cupti(outdir):
    """CUDA event pair around one eager kernel vs the kernel's own CUPTI duration."""
    rows = []
    for n in [1 << 10, 1 << 14, 1 << 17, 1 << 20, 1 << 22, 1 << 24, 1 << 26]:
        x = torch.ones(n, device="cuda", dtype=torch.float32)
        for _ in range(10):
            x.mul_(1.0000001)
        torch.cuda.synchronize()
        ev = []
        for _ in range(200):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            x.mul_(1.0000001)
            b.record()
            torch.cuda.synchronize()
            ev.append(a.elapsed_time(b) * 1e3)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(200):
                x.mul_(1.0000001)
                torch.cuda.synchronize()
        durs = [e.device_time for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        rows.append({"elements": n, "bytes": 8 * n, "event_us_median": statistics.median(ev),
                     "event_us_p10": sorted(ev)[len(ev) // 10], "cupti_us_median": statistics.median(durs),
                     "cupti_us_p10": sorted(durs)[len(durs) // 10], "kernels": len(durs)})
        print(json.dumps(rows[-1]), flush=True)
    with open(os.path.join(outdir, "event_vs_cupti.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def main():
    grid_path, outdir = sys.argv[1], sys.argv[2]
    grid = json.load(open(grid_path))
    d = grid["head_dim"]
    os.makedirs(os.path.join(outdir, "traces"), exist_ok=True)
    props = torch.cuda.get_device_properties(0)
    print(f"device {props.name}, torch {torch.__version__}, triton {triton.__version__}", flush=True)
    points = [dict(p, set="fit") for p in grid["fit"]] + [dict(p, set="heldout") for p in grid["heldout"]]
    t0 = time.time()
    with open(os.path.join(outdir, "points.jsonl"), "w") as f:
        for i, p in enumerate(points):
            rec = dict(p, head_dim=d, kv_heads=p["heads"], dtype=grid["dtype"], device=props.name,
                       torch=torch.__version__, triton=triton.__version__)
            rec["check"] = check(p, d)
            rec.update(profile_point(p, d, outdir))
            f.write(json.dumps(rec) + "\n")
            f.flush()
            print(f"[{i + 1}/{len(points)}] {p['id']}: step {rec['event_step_us_median']:.1f} us (events), "
                  f"check {rec['check']}, {time.time() - t0:.0f} s", flush=True)
    event_vs_cupti(outdir)


if __name__ == "__main__":
    main()
