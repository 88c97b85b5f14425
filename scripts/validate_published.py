#!/usr/bin/env python3
"""Predicts every published end-to-end figure dcpsim can express (docs/validation/published/e2e_results.csv)
and writes the predictions beside them (predictions.csv) plus a Markdown summary (stdout) for
docs/VALIDATION.md.

A point is predicted when its model has a preset (or the preset of its architecture with the stated weight
dtype), its GPU a profile, and its metric is a decode figure dcpsim computes (TPOT, output tokens/s, KV
capacity). Every other point is listed with the reason it is not. Each predicted point gets two figures:
  - without a baseline: dcpsim's own step (simulated attention + the op model + its per-step overhead);
  - with a baseline of the same deployment: anchored (--baseline) on another point of the same publication
    (the TP peer of a DCP point, or the lowest concurrency), never on itself; a baseline point is not scored
    in that column.
The fit / held-out column is the publication's side in split.csv (fixed before any prediction existed). Three
numbers are fitted, on a fit-side publication only, and used unchanged on its held-out one: the rtx-pro-6000
profile's two compute rates, attention.triton_mla.tensor_rate (vLLM's Triton MLA kernel's) and
attention.tensor_rate (the GEMM/MoE roofline's) (a grid, --fit-rtx-attention with --fit-rtx-gemm; the result is
written into the profile by hand) and, on every run, the per-step time of the rtx6kpro deployment outside
dcpsim's model (fit_rtx_overhead). Nothing else of dcpsim was fitted to any of these points.

  scripts/validate_published.py --dcpsim build/analysis/dcpsim > /tmp/summary.md
(about a minute on 2 cores: some 1,400 `dcpsim simulate` runs; progress on stderr; a grid point of the fit
about 6 s)
"""
import argparse
import atexit
import concurrent.futures
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "docs", "validation", "published")


_RUNS = {}


def run_step(dcpsim, args):
    """One `dcpsim simulate` with --json; returns (decode step s, TPOT s, KV tokens per GPU, KV per group)."""
    key = (dcpsim, tuple(args))
    if key not in _RUNS:
        _RUNS[key] = _run_step(dcpsim, args)
    return _RUNS[key]


def _run_step(dcpsim, args):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "s.json")
        cmd = [dcpsim, "simulate", "--json", path] + args
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(" ".join(cmd) + ": " + r.stderr.strip())
        j = json.load(open(path))
    if isinstance(j, list):
        j = j[0]
    if "strategies" in j:
        j = j["strategies"][0]
    step = j["decode_step"]["decode_step_us"] * 1e-6
    tpot = j["decode_step"].get("tpot_us", j["decode_step"]["decode_step_us"]) * 1e-6
    mem = j["memory"]
    return step, tpot, mem["kv_capacity_tokens_per_gpu"], mem["kv_capacity_tokens_group"]


# How each publication's deployment is spelled in dcpsim: a function of the point giving the simulate
# arguments (or a reason it cannot be), the concurrency per replica and how the metric is derived.
def kimi_k26_b200(p):
    # vLLM blog: Kimi-K2.6 NVFP4 (Kimi K2's architecture), 8 x B200, TP8 + EP8 (+ DCP8), an agentic trace with
    # a median ~67-68k input and ~400 output tokens: decode at ~68k. The KV dtype is not stated: fp8 (vLLM's
    # usual MLA setting), the one whose capacity agrees with the TP layout's KV usage (a fit-side choice).
    args = ["--model", "kimi-k2", "--weight-dtype", "nvfp4", "--profile", "b200", "--tp", "8", "--ep",
            "--dcp", p["dcp"], "--context", "68k", "--strategy", "ag-rs", "--kv-dtype", "fp8"]
    return args, 8, 1


def kimi_k2_thinking_h200(p):
    args = ["--model", "kimi-k2-thinking", "--profile", "h200-sxm", "--tp", "8", "--dcp", p["dcp"],
            "--context", "8000", "--strategy", "ag-rs"]
    return args, 8, 1


def kimi_k2_instruct_h200_pp2(p):
    # TP8 x PP2 on 16 GPUs, 16 requests, 8000 in / 1000 out, fp8 KV: two pipeline micro-batches of 8 requests;
    # a request's token takes one full-model step of its micro-batch (approximated: PP is not modelled).
    args = ["--model", "kimi-k2", "--profile", "h200-sxm", "--tp", "8", "--dcp", p["dcp"], "--kv-dtype", "fp8",
            "--context", "8500", "--strategy", "ag-rs"]
    return args, 16, 2


# The rtx6kpro Kimi-K2.6 benchmarks (models/kimi-k26.md and its 2026-04-25 refresh): 8 x RTX PRO 6000 on PCIe,
# vLLM TP 8 with DCP 1/4/8 (ag_rs), TRITON_MLA, fp8 KV, --gpu-memory-utilization 0.94, --max-num-batched-tokens
# 8192, INT4 routed experts (the kimi-k2-thinking preset's release format), decode-only cells of 10 s.
# With EAGLE3 (k = 3) the draft layer is priced as one MTP layer (docs/validation/published/models) and the mean
# acceptance length is the published one of the same drafter family on this host: 1 + 0.645 + 0.393 + 0.240 =
# 2.28 (DCP1) to 2.34 (DCP8) by position (local-inference-lab/rtx6kpro models/kimi-k26-v4.md), 2.3 here. The
# per-step overhead outside the CUDA graph is RTX_OVERHEAD_US, fitted on the fit-side matrix only
# (`--fit-rtx-overhead`) and then used unchanged on the held-out refresh.
RTX_ACCEPT = 2.3
RTX_OVERHEAD_US = None  # None: dcpsim's estimate; set from --fit-rtx-overhead (printed with its fit)
RTX_FIT_NOTE = ""
RTX_TENSOR_RATE = None  # None: the built-in's; --fit-rtx-gemm tries others (attention.tensor_rate)
RTX_TRITON_RATE = None  # None: the built-in's; --fit-rtx-attention tries others (attention.triton_mla.tensor_rate)
_PROFILE_DIR = tempfile.mkdtemp(prefix="validate_published.")
atexit.register(shutil.rmtree, _PROFILE_DIR, True)
KIMI_K26_EAGLE = os.path.join(DATA, "models", "kimi-k2.6-eagle3.json")
# Tokens in context while a decode-only cell runs: the prompt plus about half of the tokens a request decodes
# in the cell's 10 s (tens to ~1,000): +256.
RTX_DECODED = 256


def rtx_context(label):
    """The prompt length of a cell: the true length where the source gives it (refresh: 16k = 16,384; the
    matrix's labels were ~10.5k/20.8k/41.5k/82.8k actual), 0 for decode-only."""
    label = label.strip()
    if label.startswith("~"):
        return int(float(label[1:].split("k")[0]) * 1000)
    if label[0].isdigit() and "k" in label.split()[0]:
        return int(label.split("k")[0]) * 1024
    return 0 if label.split()[0] == "0" else None


# Prompts the benchmark's requests share through vLLM's prefix caching (--enable-prefix-caching): the refresh
# page shows 107-118 requests of 128k running at once and the matrix's throughput grows with concurrency far
# past the KV capacity at 83k, so the group's capacity does not cap the running requests there (each request's
# attention still reads its whole context).
SHARED_PREFIX = {"rtx6kpro-kimi-k26-matrix", "rtx6kpro-kimi-k26-refresh-2026-04-25"}
# The matrix ran with the image's PCIe custom all-reduce (VLLM_ENABLE_PCIE_ALLREDUCE=1, models/kimi-k26.md):
# the built-in plus that table. The refresh turned it off (`unset VLLM_ENABLE_PCIE_ALLREDUCE` in every command
# of models/kimi-k26-prometheus-benchmark-refresh-2026-04-25.md): the built-in's NCCL, as upstream vLLM.
CUSTOM_ALL_REDUCE = {"rtx6kpro-kimi-k26-matrix"}


def kimi_k26_rtx_pro_6000(p):
    spec = "eagle3" in p["mtp_or_spec"]
    ctx = rtx_context(p["context_tokens"])
    if ctx is None and not p["metric"].startswith("kv_capacity"):
        raise ValueError(f"{p['point_id']}: no prompt length in {p['context_tokens']!r}")
    profile = rtx_profile(custom_all_reduce=p["publication_id"] in CUSTOM_ALL_REDUCE)
    args = ["--model", KIMI_K26_EAGLE if spec else "kimi-k2-thinking", "--profile", profile, "--tp", "8",
            "--dcp", p["dcp"], "--kv-dtype", "fp8", "--strategy", "ag-rs", "--gpu-memory-utilization", "0.94",
            "--max-num-batched-tokens", "8192", "--context", str((ctx or 0) + RTX_DECODED)]
    if spec:
        # The image's TRITON_MLA runs each verify block as decode rows, one row per query token with its own
        # sequence length, each reading the KV (models/kimi-k26-mtp-long-ctx-wip/README.md, "Phase 1": the
        # decode kernel treats each query as a separate request; vLLM PR #40750 in the image's patch stack).
        args += ["--spec-tokens", "3", "--accept-length", str(RTX_ACCEPT), "--spec-attention", "rows"]
    if RTX_OVERHEAD_US is not None:
        args += ["--step-overhead-us", f"{RTX_OVERHEAD_US:.1f}"]
    return args, 8, 1


MAPPINGS = {
    "rtx6kpro-kimi-k26-matrix": kimi_k26_rtx_pro_6000,
    "rtx6kpro-kimi-k26-refresh-2026-04-25": kimi_k26_rtx_pro_6000,
    "vllm-blog-2026-08-07-dcp": kimi_k26_b200,
    "vllm-recipes-kimi-k2-thinking": kimi_k2_thinking_h200,
    "vllm-recipes-kimi-k2-instruct": kimi_k2_instruct_h200_pp2,
}
TPOT = {"tpot_ms_mean", "tpot_ms_median", "tpot_ms_p50", "itl_ms_mean"}
# Absolute figures a decode-step model cannot match, whose DCP/TP ratios at one concurrency it can.
RATIO_ONLY = {
    "vllm-blog-2026-08-07-dcp": "total throughput of an agentic trace (~67k input, ~400 output, prefix caching): "
                                "input tokens counted; only the DCP/TP ratio compared (decode output tokens)",
}
NOT_COMPARABLE = {
    "vllm-recipes-kimi-k2-thinking": "open-loop overload (1000 prompts at 100 req/s, TTFT minutes): TPOT and "
                                     "throughput are prefill-bound, not a decode step; only KV capacity compared",
}


def reason_not_predicted(p):
    gpu = p["gpu"]
    if p["publication_id"] in MAPPINGS:
        return None
    for name in ("Kimi-K3", "GLM-5", "DSA"):
        if name in p["model"]:
            return f"no preset for {name} (hybrid or sparse attention)"
    if "not stated" in gpu:
        return "GPU not stated"
    for name in ("MI355X", "MI3", "H20", "GB300", "AMD"):
        if name in gpu:
            return f"no profile for {name}"
    return "deployment not expressible (see SOURCES.md)"


FLAGGED = ("cold-start artifact", "capacity-limited cell")


def context_of(args):
    v = args[args.index("--context") + 1]
    return int(v[:-1]) * 1024 if v.endswith("k") else int(v)


def decode_point(dcpsim, p, args, pp):
    """Simulates a decode point: (step s, time per output token s, requests running). The requests that decode
    at once are the concurrency, or as many as the group's KV holds (the rest wait)."""
    conc = int(p["concurrency"].split()[0])
    _, _, _, group = run_step(dcpsim, args + ["--batch", "1"])
    # With PP each GPU holds 1/PP of the layers (weights and KV), which dcpsim's TP-only accounting does not
    # see: no capacity cap there (16 requests of 8.5k fit easily).
    fits = conc if pp > 1 or p["publication_id"] in SHARED_PREFIX else max(1, group // context_of(args))
    running = min(conc, fits)
    batch = max(1, running // pp)
    step, tpot, _, _ = run_step(dcpsim, args + ["--batch", str(batch)])
    # With speculative decoding a step emits the acceptance length per request: dcpsim's TPOT is per token.
    return step, (tpot if "--spec-tokens" in args else step), running, group


def spec_suffix(args):
    if "--spec-tokens" not in args:
        return ""
    return (",spec=" + args[args.index("--spec-tokens") + 1] + ",accept=" +
            args[args.index("--accept-length") + 1])


def fit_rtx_overhead(dcpsim, points, split):
    """RTX_OVERHEAD_US from the fit-side rtx6kpro publication alone: the median over its decode cells of the
    published time per step minus dcpsim's step without a per-step overhead."""
    global RTX_OVERHEAD_US, RTX_FIT_NOTE
    gaps = [ps - m for ps, m in published_and_model_steps(dcpsim, fit_cells(points, split))]
    RTX_OVERHEAD_US = max(0.0, statistics.median(gaps) * 1e6)
    q = statistics.quantiles(gaps, n=10)
    RTX_FIT_NOTE = (f"rtx6kpro per-step overhead: {RTX_OVERHEAD_US:.0f} us, the median over {len(gaps)} cells of "
                    f"the fit-side matrix only (--fit-rtx-overhead) of the published step minus dcpsim's without "
                    f"one (p10 {q[0] * 1e6:.0f} us, p90 {q[-1] * 1e6:.0f} us)")
    print(RTX_FIT_NOTE, file=sys.stderr)


def rtx_profile(custom_all_reduce=False):
    """A copy of models/profiles/rtx-pro-6000.json in a scratch folder (its table paths made absolute), with
    vLLM's PCIe custom all-reduce table added and/or a compute rate replaced (RTX_TENSOR_RATE: attention.tensor_rate,
    the GEMM/MoE roofline's; RTX_TRITON_RATE: attention.triton_mla.tensor_rate, the Triton MLA kernel's). Always the
    file, never the built-in by name: a binary built before the file changed would price some cells from the
    old copy compiled into it and the others from the file."""
    here = os.path.join(HERE, "..", "models", "profiles")
    prof = json.load(open(os.path.join(here, "rtx-pro-6000.json")))
    prof["comm_tables"] = [os.path.abspath(os.path.join(here, t)) for t in prof["comm_tables"]]
    if custom_all_reduce:
        prof["comm_tables"].append(os.path.abspath(os.path.join(here, "..", "tables",
                                                                "rtx-pro-6000-vllm-custom-ar.json")))
    if RTX_TENSOR_RATE is not None:
        prof["attention"]["tensor_rate"] = {"value": RTX_TENSOR_RATE, "unit": "TFLOP/s",
                                            "source": "validate_published.py --fit-rtx-gemm grid point"}
    if RTX_TRITON_RATE is not None:
        prof["attention"]["triton_mla"]["tensor_rate"] = {
            "value": RTX_TRITON_RATE, "unit": "TFLOP/s", "source": "validate_published.py --fit-rtx-attention grid point"}
    path = os.path.join(_PROFILE_DIR, f"rtx-{int(custom_all_reduce)}-{RTX_TENSOR_RATE}-{RTX_TRITON_RATE}.json")
    if not os.path.exists(path):
        json.dump(prof, open(path, "w"))
    return path


def fit_cells(points, split):
    """The decode cells of the fit-side rtx6kpro publication a fit reads (not flagged by the source)."""
    return [p for p in points if MAPPINGS.get(p["publication_id"]) is kimi_k26_rtx_pro_6000 and
            split.get(p["publication_id"]) == "fit" and p["metric"] == "output_tok_s" and
            not any(f in p["notes"] for f in FLAGGED) and _num(p["value"]) is not None]


def published_and_model_steps(dcpsim, cells):
    """(published step s, dcpsim's step s without a per-step overhead) for each cell, two cells at a time."""
    def one(p):
        args, gpus, pp = kimi_k26_rtx_pro_6000(p)
        args += ["--step-overhead-us", "0"]
        step, per_token, running, _ = decode_point(dcpsim, p, args, pp)
        return running / float(p["value"]) * (step / per_token), step
    for p in cells[:1]:
        one(p)  # writes the grid point's profile file before the threads read it
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        return list(pool.map(one, cells))


def fit_rtx_attention(dcpsim, points, split, triton_rates, gemm_rates):
    """The two compute rates and the per-step overhead of the rtx6kpro deployment from the fit-side matrix alone:
    for each (Triton MLA rate, GEMM/MoE rate) of the grid the overhead is the median gap (fit_rtx_overhead's
    rule), and the pair kept is the one whose cells then have the smallest median |error|. Prints the grid."""
    global RTX_TENSOR_RATE, RTX_TRITON_RATE
    best = None
    for gemm in gemm_rates:
        for triton in triton_rates:
            RTX_TENSOR_RATE, RTX_TRITON_RATE = gemm, triton
            pairs = published_and_model_steps(dcpsim, fit_cells(points, split))
            overhead = max(0.0, statistics.median(ps - m for ps, m in pairs))
            err = statistics.median(abs(ps / (m + overhead) - 1) for ps, m in pairs)
            gemm_text = "the profile's" if gemm is None else f"{gemm:g} TFLOP/s"
            print(f"rtx fit grid: triton_mla.tensor_rate {triton:g} TFLOP/s, tensor_rate {gemm_text}: overhead "
                  f"{overhead * 1e6:.0f} us, median |error| {err:.1%} over {len(pairs)} fit-side cells",
                  file=sys.stderr, flush=True)
            if best is None or err < best[0]:
                best = (err, triton, gemm, overhead)
    RTX_TENSOR_RATE = RTX_TRITON_RATE = None
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dcpsim", default="build/analysis/dcpsim")
    ap.add_argument("--out", default=os.path.join(DATA, "predictions.csv"))
    ap.add_argument("--fit-rtx-attention", metavar="TFLOPS,...",
                    help="only the fit: the rtx-pro-6000 Triton MLA compute rates (attention.triton_mla.tensor_rate) "
                         "to try (with the overhead fitted at each) on the fit-side matrix; prints the grid and the "
                         "best, predicts nothing")
    ap.add_argument("--fit-rtx-gemm", metavar="TFLOPS,...",
                    help="with --fit-rtx-attention: the GEMM/MoE roofline rates (attention.tensor_rate) to try with "
                         "each (default: the profile's)")
    ap.add_argument("--fit-rtx-overhead", action=argparse.BooleanOptionalAction, default=True,
                    help="fit the rtx6kpro per-step overhead on the fit-side publication first (default; "
                         "--no-fit-rtx-overhead: dcpsim's estimate)")
    a = ap.parse_args()
    split = {r["publication_id"]: r["split"] for r in csv.DictReader(open(os.path.join(DATA, "split.csv")))}
    points = list(csv.DictReader(open(os.path.join(DATA, "e2e_results.csv"))))
    by_pub = {}
    for p in points:
        by_pub.setdefault(p["publication_id"], []).append(p)
    if a.fit_rtx_attention:
        gemm = [float(x) for x in a.fit_rtx_gemm.split(",")] if a.fit_rtx_gemm else [None]
        err, triton, rate, overhead = fit_rtx_attention(
            a.dcpsim, points, split, [float(x) for x in a.fit_rtx_attention.split(",")], gemm)
        rate_text = "the profile's" if rate is None else f"{rate:g} TFLOP/s"
        print(f"best: attention.triton_mla.tensor_rate {triton:g} TFLOP/s, attention.tensor_rate {rate_text}, "
              f"per-step overhead {overhead * 1e6:.0f} us, median |error| {err:.1%} on the fit-side matrix")
        return 0
    if a.fit_rtx_overhead:
        fit_rtx_overhead(a.dcpsim, points, split)

    rows = []
    for i, p in enumerate(points):
        if i % 50 == 0:
            print(f"[{i}/{len(points)}] predicting", file=sys.stderr)
        pub = p["publication_id"]
        row = {"point_id": p["point_id"], "publication_id": pub, "split": split.get(pub, "?"),
               "dcp": p["dcp"], "cell": p["context_tokens"] + " | " + p["mtp_or_spec"],
               "concurrency": p["concurrency"].split()[0], "metric": p["metric"], "published": p["value"],
               "predicted": "", "error": "", "predicted_with_baseline": "", "error_with_baseline": "",
               "baseline_point": "", "note": ""}
        why = reason_not_predicted(p)
        if why:
            row["note"] = "not predicted: " + why
            rows.append(row)
            continue
        value = _num(p["value"])
        if value is None:
            row["note"] = "not a number: " + p["value"]
            rows.append(row)
            continue
        mapping = MAPPINGS[pub]
        args, gpus, pp = mapping(p)
        conc = p["concurrency"].split()[0]
        metric = p["metric"]
        if metric == "kv_cache_usage_pct_peak":
            _, _, per_gpu, group = run_step(a.dcpsim, args + ["--batch", "1"])
            pred = min(100.0, 100.0 * int(conc) * 68 * 1024 / group)
            row["predicted"] = f"{pred:.3g}"
            row["error"] = f"{pred / value - 1:+.3f}"
            row["note"] = "requests x 68k tokens over the group's KV capacity (no prefix sharing)"
            rows.append(row)
            continue
        if metric.startswith("kv_capacity"):
            _, _, per_gpu, group = run_step(a.dcpsim, args + ["--batch", "1"])
            pred = group
            row["predicted"] = str(pred)
            row["error"] = f"{pred / value - 1:+.3f}"
            row["note"] = "KV tokens of the DCP group (vLLM's accounting)"
            rows.append(row)
            continue
        if pub in NOT_COMPARABLE:
            row["note"] = "not comparable: " + NOT_COMPARABLE[pub]
            rows.append(row)
            continue
        flag = next((f for f in FLAGGED if f in p["notes"]), None)
        if flag:
            row["note"] = "not comparable: flagged by the source as a " + flag
            rows.append(row)
            continue
        if not conc.isdigit() or not (metric in TPOT or metric in ("tok_s_per_gpu", "output_tok_s")):
            row["note"] = "not predicted: metric " + metric + " (not a decode figure)"
            rows.append(row)
            continue
        step, per_token, running, group = decode_point(a.dcpsim, p, args, pp)

        def figure(token_s):
            if metric in TPOT:
                return token_s * 1e3
            # Every running request gets its tokens each step (with PP: per full-model step of its micro-batch).
            if metric == "tok_s_per_gpu":
                return running / token_s / gpus
            return running / token_s  # output_tok_s of all GPUs
        pred = figure(per_token)
        row["predicted"] = f"{pred:.4g}"
        if pub in RATIO_ONLY:
            row["note"] = "ratio only: " + RATIO_ONLY[pub]
            rows.append(row)
            continue
        row["error"] = f"{pred / value - 1:+.3f}"
        if running < int(conc):
            row["note"] = f"KV-limited: {group} tokens hold {running} requests of {context_of(args)} tokens"
        # The baseline: the TP peer at the lowest concurrency of the publication with the same metric (and the
        # same context and speculative decoding where the publication has such a peer), never a flagged one.
        peers = [q for q in by_pub[pub] if q["metric"] == metric and q["point_id"] != p["point_id"]
                 and q["dcp"] == "1" and q["concurrency"].split()[0].isdigit() and _num(q["value"]) is not None
                 and not any(f in q["notes"] for f in FLAGGED)]
        same = [q for q in peers if q["context_tokens"] == p["context_tokens"] and
                q["mtp_or_spec"] == p["mtp_or_spec"]]
        peers = same or peers
        if peers:
            base = min(peers, key=lambda q: int(q["concurrency"].split()[0]))
            bconc = int(base["concurrency"].split()[0])
            bbatch = max(1, bconc // pp)
            bstep = _step_of(metric, _num(base["value"]), bconc, gpus)
            bargs = [x for x in args]
            bargs += ["--baseline", f"tpot={bstep * 1e3:.4f}ms,tp=8,batch={bbatch},context=" +
                      args[args.index("--context") + 1] + spec_suffix(args)]
            step_b, tpot_b, _, _ = run_step(a.dcpsim, bargs + ["--batch", str(max(1, running // pp))])
            pred_b = figure(tpot_b if "--spec-tokens" in args else step_b)
            row["predicted_with_baseline"] = f"{pred_b:.4g}"
            row["error_with_baseline"] = f"{pred_b / value - 1:+.3f}"
            row["baseline_point"] = base["point_id"]
        rows.append(row)

    with open(a.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    summarize(rows)


def _num(v):
    try:
        return float(v)
    except ValueError:
        return None


def _step_of(metric, value, conc, gpus):
    """The decode step (s) a published figure implies."""
    if metric in TPOT:
        return value * 1e-3
    if metric == "tok_s_per_gpu":
        return conc / (value * gpus)
    return conc / value


LISTED = 30  # publications with more predicted points than this get one summary line instead of a row each


def _stats(errs):
    if not errs:
        return "-"
    p90 = statistics.quantiles(errs, n=10)[-1] if len(errs) > 1 else errs[0]
    return f"{statistics.median(errs):.1%} / {p90:.1%} (n {len(errs)})"


def summarize(rows):
    predicted = [r for r in rows if r["predicted"]]
    by_pub = {}
    for r in predicted:
        by_pub.setdefault(r["publication_id"], []).append(r)
    if RTX_FIT_NOTE:
        print(RTX_FIT_NOTE + "\n")
    print("| publication | side | decode points: median / p90 abs error | with a baseline | signed median |")
    print("|---|---|---|---|---|")
    for pub, rs in by_pub.items():
        dec = [r for r in rs if r["error"] and "kv_" not in r["metric"]]
        errs = [abs(float(r["error"])) for r in dec]
        errs_b = [abs(float(r["error_with_baseline"])) for r in dec if r["error_with_baseline"]]
        signed = f"{statistics.median([float(r['error']) for r in dec]):+.1%}" if dec else "-"
        print(f"| {pub} | {rs[0]['split']} | {_stats(errs)} | {_stats(errs_b)} | {signed} |")
    print()
    print(f"| point | side | metric | published | dcpsim | error | with baseline | error | baseline |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in predicted:
        if len(by_pub[r["publication_id"]]) > LISTED and "kv_" not in r["metric"]:
            continue  # in predictions.csv; summarized above
        print(f"| {r['point_id']} | {r['split']} | {r['metric']} | {r['published']} | {r['predicted']} | "
              f"{r['error'] or 'ratio only'} | {r['predicted_with_baseline'] or '-'} | {r['error_with_baseline'] or '-'} | "
              f"{r['baseline_point'] or '-'} |")
    for side in ("fit", "held-out"):
        errs = [abs(float(r["error"])) for r in predicted if r["split"] == side and r["error"] and
                "kv_" not in r["metric"]]
        errs_b = [abs(float(r["error_with_baseline"])) for r in predicted if r["split"] == side and
                  r["error_with_baseline"]]
        if errs:
            print(f"\n{side}: {len(errs)} decode points, median |error| {statistics.median(errs):.1%} without a "
                  f"baseline" + (f"; {len(errs_b)} with a baseline, median |error| {statistics.median(errs_b):.1%}"
                                 if errs_b else ""))
    # DCP over TP at the same publication, metric, cell and concurrency: the published ratio against dcpsim's.
    pairs = {}
    for r in predicted:
        if r["dcp"] == "1" or "kv_capacity" in r["metric"]:
            continue
        for q in predicted:
            if (q["dcp"] == "1" and q["publication_id"] == r["publication_id"] and q["metric"] == r["metric"]
                    and q["concurrency"] == r["concurrency"] and q["cell"] == r["cell"]):
                pub = float(r["published"]) / float(q["published"])
                mod = float(r["predicted"]) / float(q["predicted"])
                pairs.setdefault(r["publication_id"], []).append((r, q, pub, mod))
    print("\n| publication | side | DCP/TP pairs | direction right | ratio error: median / p90 |")
    print("|---|---|---|---|---|")
    for pub, ps in pairs.items():
        right = sum((p > 1) == (m > 1) for _, _, p, m in ps)
        print(f"| {pub} | {ps[0][0]['split']} | {len(ps)} | {right} | "
              f"{_stats([abs(m / p - 1) for _, _, p, m in ps])} |")
    print("\n| DCP point | TP point | published DCP/TP | dcpsim DCP/TP | error | direction |")
    print("|---|---|---|---|---|---|")
    for pub, ps in pairs.items():
        if len(ps) > LISTED:
            continue
        for r, q, p, m in ps:
            print(f"| {r['point_id']} | {q['point_id']} | {p:.3f} | {m:.3f} | {m / p - 1:+.3f} | "
                  f"{'right' if (p > 1) == (m > 1) else 'WRONG'} |")
    reasons = {}
    for r in rows:
        if not r["predicted"]:
            reasons[r["note"]] = reasons.get(r["note"], 0) + 1
    print("\nnot predicted:")
    for why, n in sorted(reasons.items(), key=lambda x: -x[1]):
        print(f"- {n} points: {why}")


if __name__ == "__main__":
    sys.exit(main())
