#!/usr/bin/env python3
"""One-sided NVLink exchanges priced from a profile's numbers, against published figures (docs/VALIDATION.md,
"Communication against held-out measurements"). Nothing here is fitted: it prints model / published.

A one-shot all-reduce of S bytes on N ranks is what dcpsim's direct merge does with whole buffers: each rank
stores its S bytes into every peer, publishes a flag, waits for the peers' flags and reduces N buffers:
    t = dependent gap + epoch handshake + NVLink hop + (N - 1) S / store bandwidth
        + flag write + poll interval / 2 + N S / (HBM bandwidth x efficiency)
(models/cost_signals.h: one_sided_exchange_time plus the launch gap, the epoch and the local reduction; the same
form scripts/fit_one_sided.py fitted the flag latency with, on a different table). The DCP merges (FlashInfer's
fused all-to-all, NCCL all-to-all) are priced by `dcpsim simulate` itself.
Usage: scripts/one_sided_vs_published.py PUBLISHED.csv [path/to/dcpsim]"""
import csv
import json
import re
import subprocess
import sys
import tempfile

PROFILES = {"H100": "h100-sxm", "B200": "b200", "GB200": "gb200-nvl72"}


def si(q):
    scale = {"us": 1e-6, "GB/s": 1e9, "TB/s": 1e12, "ratio": 1.0}
    return q["value"] * scale[q["unit"]]


def one_shot_s(p, n, size):
    store = si(p["nvlink"].get("store_bandwidth") or p["nvlink"]["measured_bandwidth"])
    hbm = si(p["gpu"]["hbm_bandwidth_measured"]) * si(p["kernel"]["hbm_efficiency_max"])
    fixed = (si(p["launch"]["dependent_gap"]) + si(p["signal"]["epoch_handshake"]) + si(p["nvlink"]["hop_latency"])
             + si(p["signal"]["flag_write_latency"]) + si(p["signal"]["poll_interval"]) / 2)
    return fixed + (n - 1) * size / store + n * size / hbm


def merge_us(dcpsim, profile, strategy, args):
    with tempfile.TemporaryDirectory() as d:
        out = subprocess.run([dcpsim, "simulate", "--profile", profile, "--strategy", strategy, "--out", d + "/o.pb"]
                             + args, capture_output=True, text=True, check=True).stdout
    return float(re.search(r"merge adds +([0-9.]+) us", out).group(1))


def main():
    published, dcpsim = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "build/analysis/dcpsim")
    rows = list(csv.DictReader(open(published)))
    errors = []
    print("| figure | GPUs | bytes | published µs | model µs | model / published | source |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        kind = r["kind"]
        if not (kind == "custom_allreduce_one_shot" or kind.startswith("fused_allreduce_rmsnorm_one_shot")
                or kind == "fused_allreduce_rmsnorm_mnnvl"):
            continue
        gpu = r["gpu"].split()[0]
        if gpu not in PROFILES or not r["size_bytes"].isdigit() or "two-shot" in r["engine/kernel"]:
            continue
        p = json.load(open(f"models/profiles/{PROFILES[gpu]}.json"))
        n, size, t = int(r["gpus"]), int(r["size_bytes"]), float(r["time_us"])
        model = one_shot_s(p, n, size) * 1e6
        errors.append(model / t - 1)
        print(f"| one-shot all-reduce ({r['engine/kernel'].split('(')[0].strip()}, {gpu}) | {n} | {size} | {t:g} | "
              f"{model:.1f} | {model / t:.2f} | {r['source_url']} |")
    # The DCP merges the published rows name, with their stated shapes.
    mla = ["--head-dim", "512", "--qk-dim", "576", "--kv-heads", "1", "--dcp", "4"]
    for batch, t in [(1, 35), (16, 34), (64, 33)]:
        m = merge_us(dcpsim, "gb200-nvl72", "flashinfer-a2a",
                     mla + ["--heads", "128", "--batch", str(batch), "--context", "32k"])
        print(f"| FlashInfer fused DCP all-to-all merge (B {batch}; H 128 assumed) | 4 | | {t} | {m:.1f} | "
              f"{m / t:.2f} | https://github.com/flashinfer-ai/flashinfer/pull/2951 |")
    for name, t in [("a2a", 1738), ("a2a-2call", 2316)]:
        m = merge_us(dcpsim, "gb200-nvl72", name, mla + ["--heads", "64", "--batch", "8192", "--context", "4k"])
        print(f"| vLLM DCP all-to-all merge, NCCL ({name}; B 8192 H 64 D 512) | 4 | | {t} | {m:.1f} | "
              f"{m / t:.2f} | https://github.com/vllm-project/vllm/pull/41160 |")
    if errors:
        errors.sort(key=abs)
        print(f"\none-shot all-reduce rows: {len(errors)}, median |model/published - 1| "
              f"{100 * abs(errors[len(errors) // 2]):.0f}%")


if __name__ == "__main__":
    main()
