#!/usr/bin/env python3
"""How much of a split-KV MLA decode kernel's repeated KV reads the L2 serves, measured on the GPU at hand.

dcpsim's model of vLLM's Triton MLA kernel (attention.triton_mla, models/src/cost_attention.cc triton_mla_time)
lays the grid out as vLLM does -- rows fastest, then head groups of BLOCK_H query heads, then KV splits -- with
every head group's CTA loading its split itself, and a verify block's k + 1 rows (--spec-attention rows) each
loading their request's KV. It assumes such a re-read hits the L2 when the two reads run together or the bytes
streamed between them fit in the L2. This probe measures that: a small flash-decoding kernel of dcpsim's own
(Triton; 576-wide latent keys, 512-wide values, one KV head, an online softmax per split, fp32 partials) with
that grid, timed with CUDA events, and its DRAM read bytes from Nsight Compute (`--ncu`), over
  - head groups: H = 8 over a context (one group) against H = 32 over a quarter of it (four groups of 8), rows
    1 to 256, splits by vLLM's rule (the largest power of two <= 576 / (rows x ceil(H / 8)), at most 64);
  - verify rows: 4 rows per request pointing at one KV (rows_per_kv 4) against 4 requests of their own.
The DRAM bytes over the KV bytes of one read per (request, split) is the re-read factor: 1 = every re-read
found in the L2, the group count (or 4) = none.

  python3 scripts/device/l2_reuse_probe.py --out probe.jsonl              # timings
  ncu --metrics dram__bytes_read.sum --kernel-name regex:probe --csv \\
      python3 scripts/device/l2_reuse_probe.py --ncu > ncu.csv            # DRAM bytes: per case a compiling
                                                                          # launch, then the measured one (the last)
"""
import argparse
import json
import sys

import torch
import triton
import triton.language as tl

DQK, DV = 576, 512


@triton.jit
def probe_kernel(q_ptr, kv_ptr, part_ptr, lse_ptr, seq_len, n_heads, scale,
                 ROWS_PER_KV: tl.constexpr, GROUP_H: tl.constexpr, TILE_H: tl.constexpr, BLOCK_N: tl.constexpr,
                 SPLITS: tl.constexpr, DQK: tl.constexpr, DV: tl.constexpr, DPE: tl.constexpr):
    # One CTA: one row, one group of GROUP_H query heads (an MMA tile of TILE_H rows), one KV split. The
    # latent's first DV columns are both the key's no-rope part and the value (MLA); the last DPE the rope part.
    row = tl.program_id(0)
    grp = tl.program_id(1)
    split = tl.program_id(2)
    kv_index = row // ROWS_PER_KV
    lane = tl.arange(0, TILE_H)
    heads = grp * GROUP_H + lane
    head_ok = (lane < GROUP_H) & (heads < n_heads)
    dv = tl.arange(0, DV)
    dpe = tl.arange(0, DPE)
    q_row = q_ptr + (row * n_heads + heads[:, None]).to(tl.int64) * DQK
    q_nope = tl.load(q_row + dv[None, :], mask=head_ok[:, None], other=0.0)
    q_pe = tl.load(q_row + DV + dpe[None, :], mask=head_ok[:, None], other=0.0)
    per_split = tl.cdiv(seq_len, SPLITS)
    start = split * per_split
    end = tl.minimum(start + per_split, seq_len)
    m = tl.full([TILE_H], float("-inf"), tl.float32)
    l = tl.zeros([TILE_H], tl.float32)
    acc = tl.zeros([TILE_H, DV], tl.float32)
    base = kv_ptr + kv_index.to(tl.int64) * seq_len * DQK
    for n0 in range(start, end, BLOCK_N):
        tok = n0 + tl.arange(0, BLOCK_N)
        ok = tok < end
        tok_row = base + tok[:, None].to(tl.int64) * DQK
        latent = tl.load(tok_row + dv[None, :], mask=ok[:, None], other=0.0)
        k_pe = tl.load(tok_row + DV + dpe[None, :], mask=ok[:, None], other=0.0)
        s = (tl.dot(q_nope, tl.trans(latent)) + tl.dot(q_pe, tl.trans(k_pe))) * scale
        s = tl.where(ok[None, :], s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, 1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m - m_new)
        l = l * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(latent.dtype), latent)
        m = m_new
    out = acc / l[:, None]
    slot = (row * n_heads + heads).to(tl.int64) * SPLITS + split
    tl.store(part_ptr + slot[:, None] * DV + dv[None, :], out, mask=head_ok[:, None])
    tl.store(lse_ptr + slot, m + tl.log(l), mask=head_ok)


def vllm_splits(rows, heads):
    target = max(1, 576 // (rows * max(1, (heads + 7) // 8)))
    p = 1
    while p * 2 <= target:
        p *= 2
    return min(64, p)


def run_case(case, reps):
    rows, heads, ctx, rows_per_kv = case["rows"], case["heads"], case["context"], case["rows_per_kv"]
    block_h = 8  # vLLM's default BLOCK_H: head groups of 8 (a 16-row MMA tile)
    splits = vllm_splits(rows, heads)
    requests = rows // rows_per_kv
    kv = torch.randn(requests, ctx, DQK, device="cuda", dtype=torch.bfloat16)
    q = torch.randn(rows, heads, DQK, device="cuda", dtype=torch.bfloat16)
    part = torch.empty(rows, heads, splits, DV, device="cuda", dtype=torch.float32)
    lse = torch.empty(rows, heads, splits, device="cuda", dtype=torch.float32)
    groups = triton.cdiv(heads, block_h)
    grid = (rows, groups, splits)
    flush = torch.empty(256 << 20, device="cuda", dtype=torch.uint8)

    def launch():
        probe_kernel[grid](q, kv, part, lse, ctx, heads, DQK ** -0.5, ROWS_PER_KV=rows_per_kv, GROUP_H=block_h,
                           TILE_H=16, BLOCK_N=32, SPLITS=splits, DQK=DQK, DV=DV, DPE=DQK - DV, num_warps=4,
                           num_stages=2)

    launch()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        flush.zero_()  # the previous launch's KV out of the L2
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        launch()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e-3)
    times.sort()
    kv_bytes = requests * ctx * DQK * 2
    return dict(case, block_h=block_h, groups=groups, splits=splits, ctas=rows * groups * splits,
                kv_bytes_once=kv_bytes, median_s=times[len(times) // 2], min_s=times[0])


def cases():
    out = []
    for rows in (1, 8, 32, 128, 256):
        out.append(dict(name=f"groups-dcp1-b{rows}", rows=rows, heads=8, context=65536, rows_per_kv=1))
        out.append(dict(name=f"groups-dcp4-b{rows}", rows=rows, heads=32, context=16384, rows_per_kv=1))
    for requests in (1, 8, 32):
        out.append(dict(name=f"verify-shared-r{requests}", rows=4 * requests, heads=8, context=65536, rows_per_kv=4))
        out.append(dict(name=f"verify-separate-r{requests}", rows=4 * requests, heads=8, context=65536,
                        rows_per_kv=1))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="JSON lines, one per case (default: stdout)")
    ap.add_argument("--ncu", action="store_true", help="one timed launch per case (under Nsight Compute)")
    ap.add_argument("--reps", type=int, default=15)
    a = ap.parse_args()
    sink = open(a.out, "w") if a.out else sys.stdout
    dev = torch.cuda.get_device_properties(0)
    print(json.dumps(dict(device=dev.name, sms=dev.multi_processor_count, l2_bytes=dev.L2_cache_size)), file=sink)
    for c in cases():
        r = run_case(c, 1 if a.ncu else a.reps)
        print(json.dumps(r), file=sink, flush=True)
        print(f"{r['name']}: {r['ctas']} CTAs, {r['median_s'] * 1e6:.1f} us", file=sys.stderr)


if __name__ == "__main__":
    main()
