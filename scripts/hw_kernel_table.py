#!/usr/bin/env python3
"""Joins the JSON lines of `scripts/hw_kernel_compare.sh` (dcpsim's sweeps, the Triton script) into the
comparison tables of docs/PERFORMANCE.md: per shape dcpsim / Triton (correction) and dcpsim / FlashInfer
(combine vs MergeStates), the roofline (bytes / the 1 GiB copy bandwidth of the same run), the fraction of a
same-size device copy (same launch mode), the worst ratios per batch range, and which kernel variant wins where.

  python3 scripts/hw_kernel_table.py DIR [--markdown OUT.md]
DIR holds correct.jsonl, combine.jsonl, a2a_combine.jsonl, merge_states.jsonl, copy.jsonl, triton.jsonl and
optionally correct_variants.jsonl, combine_variants.jsonl, touch.jsonl and empty.jsonl (the correction's floor) (any may be missing; each may be gzipped, as in
docs/hw/merge_kernels/). Prints the summary; --markdown also writes every row.
"""
import argparse
import collections
import gzip
import json
import os
import sys

B_RANGES = [("B<=16", lambda b: b <= 16), ("17<=B<=64", lambda b: 17 <= b <= 64),
            ("128<=B<=256", lambda b: 128 <= b <= 256), ("B=1024", lambda b: b == 1024)]


def load(path):
    """JSON lines of `path`, else of `path`.partial (a sweep cut short), else of `path`.gz (as committed)."""
    for p, opener in ((path, open), (path + ".partial", open), (path + ".gz", gzip.open)):
        if os.path.exists(p):
            with opener(p, "rt") as f:
                return [json.loads(line) for line in f if line.strip()]
    return []


def key(r):
    return (r["N"], r["B"], r["H"], r["D"], r["dtype"], bool(r["graph"]))


def mode(graph):
    return "graph" if graph else "eager"


def index(rows, variant=None):
    out = {}
    for r in rows:
        if "median_ns" not in r:
            continue
        if variant is not None and r.get("variant") != variant:
            continue
        out[key(r)] = r
    return out


def summarise(title, ours, theirs, target_small=None, lines=None):
    """Worst and median ratio ours/theirs per (dtype, mode, B range)."""
    lines.append(f"\n{title}: ratio = dcpsim time / peer time (< 1: dcpsim faster)")
    lines.append(f"  {'dtype':5} {'mode':5} {'B range':12} {'shapes':>6} {'worst':>7} {'median':>7} {'best':>7}"
                 + ("  target" if target_small else ""))
    groups = collections.defaultdict(list)
    for k, r in ours.items():
        if k not in theirs:
            continue
        n, b, h, d, dtype, graph = k
        for name, pred in B_RANGES:
            if pred(b):
                groups[(dtype, graph, name)].append((r["median_ns"] / theirs[k]["median_ns"], k))
    for (dtype, graph, name), v in sorted(groups.items()):
        v.sort()
        ratios = [x for x, _ in v]
        worst, wk = v[-1]
        med = ratios[len(ratios) // 2]
        tgt = ""
        if target_small:
            limit = 0.8 if name in ("B<=16", "17<=B<=64") else 1.0
            miss = sum(1 for x in ratios if x > limit)
            tgt = f"  <= {limit}: {'met' if miss == 0 else f'{miss} shapes miss'}"
        lines.append(f"  {dtype:5} {mode(graph):5} {name:12} {len(v):6d} {worst:7.3f} {med:7.3f} {ratios[0]:7.3f}"
                     f"{tgt}   worst at N={wk[0]} B={wk[1]} H={wk[2]} D={wk[3]}")


def floor_summary(touch, empty, tri, lines):
    """The touch kernel (O read and written back, 16 bytes a thread, nothing else) is the least any correction
    costs at its shape. Where it is above 0.8x Triton, no correction kernel meets the B <= 64 target there."""
    floor = {}
    for r in touch:
        if "median_ns" in r:
            k = (r["B"], r["H"], r["D"], bool(r["graph"]))
            floor[k] = min(floor.get(k, float("inf")), r["median_ns"])
    if not floor:
        return
    for r in empty:
        if "median_ns" in r:
            lines.append(f"\nEmpty kernel, {mode(bool(r['graph']))}: {r['median_ns']:.0f} ns")
    lines.append("\nCorrection floor (touch: O read and written back, no LSE, no arithmetic) vs Triton: ratio = "
                 "floor / Triton; above 0.8 no correction kernel can meet the B <= 64 target at that shape")
    lines.append(f"  {'dtype':5} {'mode':5} {'B range':12} {'shapes':>6} {'worst':>7} {'median':>7} "
                 f"{'above 0.8':>9}")
    groups = collections.defaultdict(list)
    for k, t in tri.items():
        n, b, h, d, dtype, graph = k
        f = floor.get((b, h, d, graph))
        if f is None:
            continue
        for name, pred in B_RANGES[:2]:
            if pred(b):
                groups[(dtype, graph, name)].append((f / t["median_ns"], k))
    for (dtype, graph, name), v in sorted(groups.items()):
        v.sort()
        worst, wk = v[-1]
        above = sum(1 for x, _ in v if x > 0.8)
        lines.append(f"  {dtype:5} {mode(graph):5} {name:12} {len(v):6d} {worst:7.3f} {v[len(v) // 2][0]:7.3f} "
                     f"{above:9d}   worst at N={wk[0]} B={wk[1]} H={wk[2]} D={wk[3]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--markdown")
    a = ap.parse_args()
    d = a.dir
    correct = load(os.path.join(d, "correct.jsonl"))
    correct_v = load(os.path.join(d, "correct_variants.jsonl"))
    combine = load(os.path.join(d, "combine.jsonl"))
    combine_v = load(os.path.join(d, "combine_variants.jsonl"))
    packed = load(os.path.join(d, "a2a_combine.jsonl"))
    fi = load(os.path.join(d, "merge_states.jsonl"))
    copy = load(os.path.join(d, "copy.jsonl"))
    triton = load(os.path.join(d, "triton.jsonl"))
    touch = load(os.path.join(d, "touch.jsonl"))
    empty = load(os.path.join(d, "empty.jsonl"))
    lines = []
    copy_bw = next((r["copy_bandwidth"] for r in correct + combine + copy if r.get("copy_bandwidth")), None)
    if copy_bw:
        lines.append(f"copy bandwidth (1 GiB cudaMemcpy D2D, same run): {copy_bw / 1e9:.1f} GB/s")
    # Same-size copies: O bytes → time per mode.
    copies = {(r["copy_bytes"], bool(r["graph"])): r["median_ns"] for r in copy if "median_ns" in r}

    ours = index(correct, "auto")
    tri = index(triton)
    summarise("Correction, dcpsim (auto) vs Triton (vLLM-style)", ours, tri, True, lines)
    floor_summary(touch, empty, tri, lines)
    comb = index(combine, "auto")
    fis = index(fi)
    summarise("Combine (slots layout), dcpsim (auto) vs FlashInfer MergeStates", comb, fis, False, lines)
    fi_err = collections.Counter(r["error"].split(":")[-1].strip() for r in fi if "error" in r)
    for e, c in fi_err.items():
        lines.append(f"  FlashInfer MergeStates failed at {c} points: {e}")

    # Large shapes against a same-size copy.
    lines.append("\nCorrection at the large shapes vs a same-size device copy (same mode, bf16):")
    for n, b, h, dd in [(8, 256, 128, 512), (8, 1024, 128, 128)]:
        for graph in (True, False):
            k = (n, b, h, dd, "bf16", graph)
            if k not in ours:
                continue
            t = ours[k]["median_ns"]
            c = copies.get((b * h * dd * 2, graph))
            tt = tri.get(k, {}).get("median_ns")
            lines.append(f"  N={n} B={b} H={h} D={dd} {mode(graph)}: dcpsim {t / 1e3:.2f} us"
                         + (f", copy {c / 1e3:.2f} us = {100 * c / t:.1f} % of copy speed" if c else "")
                         + (f", Triton {tt / 1e3:.2f} us" if tt else "")
                         + (f", roofline {ours[k]['bytes'] / copy_bw * 1e6:.2f} us" if copy_bw else ""))

    # Which variant wins where, by the bytes the call reads (O for the correction, N partials for the combine).
    def variants(title, rows, nbytes):
        by_shape = collections.defaultdict(dict)
        for r in rows:
            if "median_ns" in r:
                by_shape[key(r)][r["variant"]] = r["median_ns"]
        if not any(len(v) > 2 for v in by_shape.values()):
            return
        lines.append(f"\n{title}: fastest variant per size bucket (wins), auto / fastest (mean, max)")
        buckets = collections.defaultdict(collections.Counter)
        slack = collections.defaultdict(list)
        for k, v in by_shape.items():
            if "auto" not in v or len(v) < 2:
                continue
            bucket = 1 << max(0, (nbytes(k) - 1).bit_length())
            best = min((t, name) for name, t in v.items() if name != "auto")
            buckets[(k[4], k[5], bucket)][best[1]] += 1
            slack[(k[4], k[5], bucket)].append(v["auto"] / best[0])
        for (dtype, graph, bucket), c in sorted(buckets.items()):
            sl = slack[(dtype, graph, bucket)]
            lines.append(f"  {dtype} {mode(graph)} <= {bucket:>10d} B: {dict(c.most_common(4))}  auto/best "
                         f"{sum(sl) / len(sl):.3f} max {max(sl):.3f}")

    variants("Correction variants", correct + correct_v, lambda k: k[1] * k[2] * k[3] * 2)
    variants("Combine variants", combine + combine_v, lambda k: k[1] * k[2] * k[3] * 2)
    errors = [r for r in correct + combine + packed + copy if "error" in r]
    lines.append(f"\ndcpsim points with errors: {len(errors)}" + (f" (first: {errors[0]})" if errors else ""))
    print("\n".join(lines))

    if a.markdown:
        md = ["# Merge kernels vs Triton and FlashInfer, per shape", "", "\n".join(lines), ""]
        md.append("## Correction (in place, merged LSE written): dcpsim auto vs Triton (vLLM-style)\n")
        md.append("| N | B | H | D | dtype | mode | dcpsim µs | Triton µs | ratio | roofline µs | same-size copy µs |")
        md.append("|---|---|---|---|---|---|---|---|---|---|---|")
        for k in sorted(ours):
            r = ours[k]
            t = tri.get(k, {}).get("median_ns")
            c = copies.get((k[1] * k[2] * k[3] * 2, k[5]))
            md.append(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {k[4]} | {mode(k[5])} | {r['median_ns'] / 1e3:.2f} | "
                      + (f"{t / 1e3:.2f} | {r['median_ns'] / t:.3f}" if t else "| ")
                      + f" | {r['bytes'] / copy_bw * 1e6:.2f} | " + (f"{c / 1e3:.2f} |" if c else " |"))
        md.append("\n## Combine (slots) and packed A2A combine vs FlashInfer MergeStates\n")
        md.append("| N | B | H/N | D | dtype | mode | dcpsim µs | a2a packed µs | FlashInfer µs | ratio | roofline µs |")
        md.append("|---|---|---|---|---|---|---|---|---|---|---|")
        pk = index(packed, "auto")
        fi_all = {key(r): r for r in fi}
        for k in sorted(comb):
            r = comb[k]
            f = fi_all.get(k, {})
            p = pk.get(k, {}).get("median_ns")
            ft = f.get("median_ns")
            md.append(f"| {k[0]} | {k[1]} | {k[2] // k[0]} | {k[3]} | {k[4]} | {mode(k[5])} | "
                      f"{r['median_ns'] / 1e3:.2f} | " + (f"{p / 1e3:.2f}" if p else "") + " | "
                      + (f"{ft / 1e3:.2f} | {r['median_ns'] / ft:.3f}" if ft else ("fails | " if f else " | "))
                      + f" | {r['bytes'] / copy_bw * 1e6:.2f} |")
        with open(a.markdown, "w") as f:
            f.write("\n".join(md) + "\n")


if __name__ == "__main__":
    sys.exit(main())
