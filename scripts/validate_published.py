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
The fit / held-out column is the publication's side in split.csv (fixed before any prediction existed). No
parameter of dcpsim was fitted to any of these points.

  scripts/validate_published.py --dcpsim build/analysis/dcpsim > /tmp/summary.md
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "docs", "validation", "published")


def run_step(dcpsim, args):
    """One `dcpsim simulate` with --json; returns (decode step s, TPOT s, KV tokens per GPU, KV per group)."""
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


MAPPINGS = {
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
    if "not stated" in gpu:
        return "GPU not stated"
    for name in ("RTX PRO 6000", "SM120", "MI355X", "MI3", "H20", "GB300", "AMD"):
        if name in gpu:
            return f"no profile for {name}"
    for name in ("Kimi-K3", "GLM-5", "DSA"):
        if name in p["model"]:
            return f"no preset for {name} (hybrid or sparse attention)"
    return "deployment not expressible (see SOURCES.md)"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dcpsim", default="build/analysis/dcpsim")
    ap.add_argument("--out", default=os.path.join(DATA, "predictions.csv"))
    a = ap.parse_args()
    split = {r["publication_id"]: r["split"] for r in csv.DictReader(open(os.path.join(DATA, "split.csv")))}
    points = list(csv.DictReader(open(os.path.join(DATA, "e2e_results.csv"))))
    by_pub = {}
    for p in points:
        by_pub.setdefault(p["publication_id"], []).append(p)

    rows = []
    for p in points:
        pub = p["publication_id"]
        row = {"point_id": p["point_id"], "publication_id": pub, "split": split.get(pub, "?"),
               "dcp": p["dcp"], "concurrency": p["concurrency"].split()[0], "metric": p["metric"], "published": p["value"], "predicted": "", "error": "",
               "predicted_with_baseline": "", "error_with_baseline": "", "baseline_point": "", "note": ""}
        why = reason_not_predicted(p)
        if why:
            row["note"] = "not predicted: " + why
            rows.append(row)
            continue
        try:
            value = float(p["value"])
        except ValueError:
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
        if not conc.isdigit() or not (metric in TPOT or metric in ("tok_s_per_gpu", "output_tok_s")):
            row["note"] = "not predicted: metric " + metric + " (not a decode figure)"
            rows.append(row)
            continue
        _, _, _, group = run_step(a.dcpsim, args + ["--batch", "1"])
        context = 68 * 1024 if pub == "vllm-blog-2026-08-07-dcp" else 8500
        # With PP each GPU holds 1/PP of the layers (weights and KV), which dcpsim's TP-only accounting does not
        # see: no capacity cap there (16 requests of 8.5k fit easily).
        fits = int(conc) if pp > 1 else group // context
        batch = max(1, min(int(conc), fits) // pp)
        step, tpot, per_gpu, group = run_step(a.dcpsim, args + ["--batch", str(batch)])

        # The requests that decode at once: the concurrency, or as many as the KV holds (the rest wait).
        running = min(int(conc), fits)

        def figure(step_s):
            if metric in TPOT:
                return step_s * 1e3
            # Every running request gets a token per step (with PP: per full-model step of its micro-batch).
            if metric == "tok_s_per_gpu":
                return running / step_s / gpus
            return running / step_s  # output_tok_s of all GPUs
        pred = figure(step)
        row["predicted"] = f"{pred:.4g}"
        if pub in RATIO_ONLY:
            row["note"] = "ratio only: " + RATIO_ONLY[pub]
            rows.append(row)
            continue
        row["error"] = f"{pred / value - 1:+.3f}"
        if running < int(conc):
            row["note"] = f"KV-limited: {group} tokens hold {running} requests of {context} tokens"
        # The baseline: the TP peer at the lowest concurrency of the publication with the same metric.
        peers = [q for q in by_pub[pub] if q["metric"] == metric and q["point_id"] != p["point_id"]
                 and q["dcp"] == "1" and q["concurrency"].split()[0].isdigit()]
        peers = [q for q in peers if _num(q["value"]) is not None]
        if peers:
            base = min(peers, key=lambda q: int(q["concurrency"].split()[0]))
            bconc = int(base["concurrency"].split()[0])
            bbatch = max(1, bconc // pp)
            bstep = _step_of(metric, _num(base["value"]), bconc, gpus)
            bargs = [x for x in args]
            bargs += ["--baseline", f"tpot={bstep * 1e3:.4f}ms,tp=8,batch={bbatch},context=" +
                      args[args.index("--context") + 1]]
            step_b, _, _, _ = run_step(a.dcpsim, bargs + ["--batch", str(batch)])
            pred_b = figure(step_b)
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


def summarize(rows):
    predicted = [r for r in rows if r["predicted"]]
    print(f"| point | side | metric | published | dcpsim | error | with baseline | error | baseline |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in predicted:
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
    # DCP over TP at the same publication, metric and concurrency: the published ratio against dcpsim's.
    print("\n| DCP point | TP point | published DCP/TP | dcpsim DCP/TP | error | direction |")
    print("|---|---|---|---|---|---|")
    for r in predicted:
        if r["dcp"] == "1" or "kv_capacity" in r["metric"]:
            continue
        for q in predicted:
            if (q["dcp"] == "1" and q["publication_id"] == r["publication_id"] and q["metric"] == r["metric"]
                    and q["concurrency"] == r["concurrency"]):
                pub = float(r["published"]) / float(q["published"])
                mod = float(r["predicted"]) / float(q["predicted"])
                same = (pub > 1) == (mod > 1)
                print(f"| {r['point_id']} | {q['point_id']} | {pub:.3f} | {mod:.3f} | {mod / pub - 1:+.3f} | "
                      f"{'right' if same else 'WRONG'} |")
    reasons = {}
    for r in rows:
        if not r["predicted"]:
            reasons[r["note"]] = reasons.get(r["note"], 0) + 1
    print("\nnot predicted:")
    for why, n in sorted(reasons.items(), key=lambda x: -x[1]):
        print(f"- {n} points: {why}")


if __name__ == "__main__":
    sys.exit(main())
