#!/usr/bin/env python3
"""Converts published op measurements into dcpsim kernel tables (dcpsim-kernel-tables/1, kernels gemm and moe)
for the built-in profiles, models/tables/<profile>-ops-aic.json.gz, and vLLM's custom all-reduce into
communication tables (dcpsim-comm-tables/1, implementation "vllm-custom"), models/tables/<system>-vllm-custom-ar.json.

Source: the measured op data of NVIDIA's AIConfigurator repository (ai-dynamo/aiconfigurator, Apache-2.0),
aic-core/src/aiconfigurator_core/systems/data/<system>/{gemm,moe,comm}/vllm/<version>/*.parquet: dense GEMM
latency over an (m, n, k) grid per dtype and kernel, one MoE layer's fused experts per model shape, parallelism
and token count, and vLLM's custom all-reduce per GPU count and message size. Only data is taken, reduced to
what a decode step of dcpsim's model presets looks up; no code. Run once by a developer (needs pyarrow):

  scripts/import_aic_tables.py --repo PATH/TO/aiconfigurator --out models/tables

The provenance of every file names the repository, its commit, the paths read and the licence.
"""
import argparse
import gzip
import io
import json
import math
import os
import subprocess
import sys

import pyarrow.parquet as pq

BASE = "aic-core/src/aiconfigurator_core/systems/data"
VERSION = "0.24.0"
# dcpsim profile -> (AIC system, device name, where the all-reduce table comes from)
SYSTEMS = {
    "h200-sxm": ("h200_sxm", "NVIDIA H200", "h100_sxm"),
    "h100-sxm": ("h100_sxm", "NVIDIA H100", "h100_sxm"),
    "b200": ("b200_sxm", "NVIDIA B200", "b200_sxm"),
    "gb200-nvl72": ("gb200", "NVIDIA B200 (GB200 superchip)", "gb200"),
}
# dcpsim weight dtype -> AIC gemm dtype and the kernels vLLM runs for it, in order of preference.
GEMM = {
    "bf16": ("bfloat16", ["torch.nn.functional.linear"]),
    # FP8 weights: vLLM's per-tensor FP8 kernel stands in for the block-scaled one. The block-scaled kernels'
    # figures in the same data (DeepGEMM, FlashInfer: 57-90 us for a 1x7168x2048 GEMM that per-tensor FP8 and
    # BF16 run in 9-11 us on H200, under 260 GB/s) look host-bound, and Cutlass's block kernel covers too
    # little of the grid.
    "fp8": ("fp8", ["CutlassFP8ScaledMMLinearKernel"]),
    "nvfp4": ("nvfp4", ["FlashInferCuteDslNvFp4LinearKernel"]),
}
# The GEMM grid kept: every m a decode step of up to 4096 tokens uses (powers of two), n and k of the model
# presets' projections (the grid's 128 ... 65536).
GEMM_M = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]
GEMM_NK_MIN, GEMM_NK_MAX = 128, 65536
# dcpsim weight dtype -> AIC moe dtypes (first present wins) and the kernels in order of preference.
MOE = {
    "bf16": ["bfloat16"],
    "fp8": ["fp8_block"],
    "nvfp4": ["nvfp4"],
    "int4": ["int4_wo"],
    "mxfp4": ["w4a16_mxfp4", "w4a8_mxfp4_mxfp8"],
}
MOE_KERNEL_PREFERENCE = ["triton", "trtllm", "flashinfer_cutlass", "marlin"]
# The MoE shapes of the presets: (hidden, moe_intermediate, experts per token, experts).
MOE_SHAPES = [(7168, 2048, 8, 256), (7168, 2048, 8, 384), (4096, 1536, 8, 128)]
MOE_MAX_TOKENS = 8192


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True).stdout


def read(repo, commit, path):
    data = git(repo, "show", f"{commit}:{path}")
    import io
    return pq.read_table(io.BytesIO(data)).to_pydict()


def point(at, ms_values):
    ns = sorted(v * 1e6 for v in ms_values)
    med = ns[len(ns) // 2] if len(ns) % 2 else 0.5 * (ns[len(ns) // 2 - 1] + ns[len(ns) // 2])
    return {"at": [float(a) for a in at], "median_ns": round(med, 1), "samples": len(ns),
            "min_ns": round(ns[0], 1), "max_ns": round(ns[-1], 1)}


def whole_grid(cells):
    """Drops the n or k value with the most unmeasured cells until every (m, n, k) of the grid is measured:
    the lookup interpolates on whole grids."""
    while cells:
        axes = [sorted({c[a] for c in cells}) for a in range(3)]
        missing = {}
        for m in axes[0]:
            for n in axes[1]:
                for k in axes[2]:
                    if (m, n, k) not in cells:
                        for a, v in ((0, m), (1, n), (2, k)):
                            missing[(a, v)] = missing.get((a, v), 0) + 1
        if not missing:
            return cells
        a, v = max(missing, key=lambda x: (missing[x] / len(axes[x[0]]) ** 0, x[0] != 0))
        cells = {c: t for c, t in cells.items() if c[a] != v}
    return cells


def gemm_tables(d):
    out, used = [], []
    for dtype, (aic_dtype, kernels) in GEMM.items():
        for kernel in kernels:
            parts = kernel.split("+")  # small-m kernel + large-m kernel: each where the other was not measured
            cells = {}
            for i in range(len(d["m"])):
                if d["gemm_dtype"][i] != aic_dtype or d["kernel_source"][i] not in parts:
                    continue
                m, n, k = d["m"][i], d["n"][i], d["k"][i]
                if len(parts) == 2 and (d["kernel_source"][i] == parts[0]) != (m < 32):
                    continue
                if m in GEMM_M and GEMM_NK_MIN <= n <= GEMM_NK_MAX and GEMM_NK_MIN <= k <= GEMM_NK_MAX:
                    cells.setdefault((m, n, k), []).append(d["latency"][i])
            cells = whole_grid(cells)
            if len({c[0] for c in cells}) < 6:
                continue
            pts = [point(c, cells[c]) for c in sorted(cells)]
            out.append({"kernel": "gemm", "key": dtype, "axes": ["m", "n", "k"], "points": pts})
            used.append(f"gemm {dtype}: {aic_dtype} {kernel}")
            break
    return out, used


def moe_kernel_rank(kernel):
    for i, word in enumerate(MOE_KERNEL_PREFERENCE):
        if word in kernel:
            return i
    return len(MOE_KERNEL_PREFERENCE)


def moe_tables(d):
    out, used = [], []
    n = len(d["latency"])
    for dtype, aic_dtypes in MOE.items():
        for shape in MOE_SHAPES:
            rows = [i for i in range(n) if d["moe_dtype"][i] in aic_dtypes and d["distribution"][i] == "balanced"
                    and (d["hidden_size"][i], d["inter_size"][i], d["topk"][i], d["num_experts"][i]) == shape
                    and d["num_tokens"][i] <= MOE_MAX_TOKENS]
            if not rows:
                continue
            # Per parallel layout, the kernel vLLM prefers among those measured there.
            by_layout = {}
            for i in rows:
                by_layout.setdefault((d["moe_tp_size"][i], d["moe_ep_size"][i]), set()).add(d["kernel_source"][i])
            groups, kernels = {}, set()
            for i in rows:
                layout = (d["moe_tp_size"][i], d["moe_ep_size"][i])
                kernel = min(by_layout[layout], key=lambda k: (moe_kernel_rank(k), k))
                if d["kernel_source"][i] != kernel:
                    continue
                kernels.add(kernel)
                groups.setdefault(layout, {}).setdefault(d["num_tokens"][i], []).append(d["latency"][i])
            h, inter, topk, experts = shape
            for (tp, ep), by_tokens in sorted(groups.items()):
                if tp * ep > 72 or len(by_tokens) < 2:
                    continue
                key = f"{dtype} h{h} i{inter} e{experts} k{topk} tp{tp} ep{ep}"
                pts = [point([t], v) for t, v in sorted(by_tokens.items())]
                out.append({"kernel": "moe", "key": key, "axes": ["tokens"], "points": pts})
            used.append(f"moe {dtype} h{h} i{inter} e{experts} k{topk}: {d['moe_dtype'][rows[0]]} " +
                        " / ".join(sorted(kernels)))
    return out, used


def allreduce_points(d):
    groups = {}
    for i in range(len(d["latency"])):
        if d["kernel_source"][i] != "vLLM_custom_graph" or d["allreduce_dtype"][i] != "bfloat16":
            continue
        # message_size counts bf16 elements: the buffer is twice that (nccl-tests' all-reduce size)
        groups.setdefault((d["num_gpus"][i], 2 * d["message_size"][i]), []).append(d["latency"][i])
    pts = []
    for (g, size), v in sorted(groups.items()):
        v = sorted(v)
        med = v[len(v) // 2] if len(v) % 2 else 0.5 * (v[len(v) // 2 - 1] + v[len(v) // 2])
        # AIC latencies are ms
        pts.append({"gpus": int(g), "nodes": 1, "size_bytes": float(size), "time_us": round(med * 1e3, 4),
                    "min_us": round(v[0] * 1e3, 4), "max_us": round(v[-1] * 1e3, 4), "samples": len(v)})
    return pts


# AIC system -> (file name, device, system) of the custom all-reduce communication table
AR_FILES = {
    "h100_sxm": ("h100-sxm", "NVIDIA H100", "HGX H100 8-GPU, NVLink 4 + NVSwitch, 1 node"),
    "b200_sxm": ("b200", "NVIDIA B200", "HGX B200 8-GPU, NVLink 5 + NVSwitch, 1 node"),
    "gb200": ("gb200", "NVIDIA GB200", "GB200 NVL72 compute tray (4 GPUs, NVLink 5 through the NVLink switch trays)"),
}


def write_allreduce(out_dir, repo, commit, ar_system, date):
    path = f"{BASE}/{ar_system}/comm/vllm/{VERSION}/custom_allreduce_perf.parquet"
    name, device, system = AR_FILES[ar_system]
    pts = allreduce_points(read(repo, commit, path))
    prov = {"device": device, "nccl": "", "system": system,
            "source": f"github.com/ai-dynamo/aiconfigurator@{commit[:12]} {path} (kernel_source vLLM_custom_graph, "
                      "bfloat16; Apache-2.0)",
            "date": date,
            "command": "scripts/import_aic_tables.py (vLLM " + VERSION + " CustomAllreduce, 5 all-reduces captured "
                       "in one CUDA graph, 20 replays, time per op; size = bf16 elements x 2 = the buffer)"}
    head = {"op": "all-reduce", "dtype": "bfloat16", "in_place": False, "graph": True, "implementation": "vllm-custom"}
    text = ('{\n  "format": "dcpsim-comm-tables/1",\n  "provenance": ' + json.dumps(prov, separators=(",", ":")) +
            ',\n  "tables": [\n    ' + json.dumps(head)[:-1] + ', "points": [' +
            ",".join("\n      " + json.dumps(p) for p in pts) + "\n    ]}\n  ]\n}\n")
    with open(f"{out_dir}/{name}-vllm-custom-ar.json", "w") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repo", required=True, help="a clone of ai-dynamo/aiconfigurator")
    ap.add_argument("--out", required=True, help="folder for <profile>-ops-aic.json.gz")
    ap.add_argument("--date", default="2026-12-06")
    a = ap.parse_args()
    commit = git(a.repo, "rev-parse", "HEAD").decode().strip()
    for profile, (system, device, ar_system) in SYSTEMS.items():
        paths = [f"{BASE}/{system}/gemm/vllm/{VERSION}/gemm_perf.parquet",
                 f"{BASE}/{system}/moe/vllm/{VERSION}/moe_perf.parquet"]
        g, g_used = gemm_tables(read(a.repo, commit, paths[0]))
        m, m_used = moe_tables(read(a.repo, commit, paths[1]))
        if ar_system == system or ar_system not in [s[0] for s in SYSTEMS.values()]:
            write_allreduce(a.out, a.repo, commit, ar_system, a.date)
        doc = {
            "format": "dcpsim-kernel-tables/1",
            "provenance": {
                "device": device, "driver": "", "cuda": "", "nccl": "", "clocks": "as published",
                "date": a.date,
                "command": "scripts/import_aic_tables.py (vLLM " + VERSION + " op measurements; " +
                           "; ".join(g_used + m_used) + ")",
                "source": f"github.com/ai-dynamo/aiconfigurator@{commit[:12]} " + ", ".join(paths),
                "license": "Apache-2.0",
            },
            "tables": g + m,
        }
        # Stored gzip-compressed, as every kernel table of models/tables/ (each reader finds X.json.gz as X.json).
        path = f"{a.out}/{profile}-ops-aic.json.gz"
        with io.StringIO() as f:
            f.write("{\n  \"format\": " + json.dumps(doc["format"]) + ",\n  \"provenance\": " +
                    json.dumps(doc["provenance"]) + ",\n  \"tables\": [")
            for ti, t in enumerate(doc["tables"]):
                f.write(("," if ti else "") + "\n    {\"kernel\": " + json.dumps(t["kernel"]) + ", \"key\": " +
                        json.dumps(t["key"]) + ", \"axes\": " + json.dumps(t["axes"]) + ", \"points\": [")
                f.write(",".join("\n      " + json.dumps(p, separators=(",", ":")) for p in t["points"]))
                f.write("\n    ]}")
            f.write("\n  ]\n}\n")
            with open(path, "wb") as z:
                z.write(gzip.compress(f.getvalue().encode(), 9, mtime=0))
        if os.path.exists(path[:-3]):  # a plain copy beside it would be read in its place
            os.remove(path[:-3])
        print(f"{path}: {sum(len(t['points']) for t in doc['tables'])} points in {len(doc['tables'])} tables",
              file=sys.stderr)


if __name__ == "__main__":
    main()
