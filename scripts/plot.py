#!/usr/bin/env python3
"""Plots for dcpsim's CSV outputs, one subcommand per workflow:

  plot.py scan     scan.csv     out.png   latency vs DCP size per strategy, best step latency over head
                                          geometry, and step latency vs the KV capacity each DCP size buys
                                          (Pareto front)
  plot.py replay   summary.json out.png   decode step and merge per layer over time as p10-p90 bands with p50,
                                          their CDFs, and the load (dcpsim replay --summary, analysis/README.md)
  plot.py validate report.csv   out.png   predicted vs measured with the max(3%, 0.5 us) tolerance band

Needs matplotlib only (Debian: python3-matplotlib). The PNG is written to a temporary file beside the target
and renamed into place, so a failed run never leaves a partial image. Exit status 2 for bad input.
"""
import csv
import json
import math
import os
import sys
import tempfile
from collections import Counter, defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

STRATEGY_ORDER = ["ag-rs", "ag-ar", "a2a", "direct", "row-stream", "flashinfer-a2a"]


class InputProblem(Exception):
    pass


def read_rows(path, required):
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            missing = [c for c in required if c not in (reader.fieldnames or [])]
            if missing:
                raise InputProblem(f"{path}: missing column(s) {', '.join(missing)}")
            rows = list(reader)
    except OSError as e:
        raise InputProblem(f"{path}: {e.strerror}")
    if not rows:
        raise InputProblem(f"{path}: no data rows")
    return rows


def number(row, column, path):
    try:
        return float(row[column])
    except (TypeError, ValueError):
        raise InputProblem(f"{path}: column {column} holds '{row[column]}', not a number")


def strategies_in(names):
    known = [s for s in STRATEGY_ORDER if s in names]
    return known + sorted(n for n in names if n not in STRATEGY_ORDER)


def save(fig, out):
    directory = os.path.dirname(os.path.abspath(out))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(out) + ".", suffix=".tmp", dir=directory)
    os.close(fd)
    try:
        fig.savefig(tmp, format="png", dpi=120, bbox_inches="tight")
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    plt.close(fig)


# ---------------------------------------------------------------- scan
SCAN_GROUP = ["profile", "heads", "head_dim", "qk_dim", "kv_heads", "batch", "context", "launch"]
SCAN_COLUMNS = SCAN_GROUP + ["dcp", "strategy", "step_latency_us", "merge_latency_us", "kv_capacity_tokens_per_gpu"]


def scan_plot(path, out):
    rows = read_rows(path, SCAN_COLUMNS)
    for r in rows:
        for c in ("dcp", "step_latency_us", "merge_latency_us", "kv_capacity_tokens_per_gpu"):
            r[c] = number(r, c, path)
        # With DCP each token lives on one rank: the group holds N times a GPU's capacity (the context one
        # request may reach, or the requests that fit). Per GPU alone it would not depend on N.
        r["kv_group"] = (number(r, "kv_capacity_tokens_group", path) if "kv_capacity_tokens_group" in r
                         else r["kv_capacity_tokens_per_gpu"] * r["dcp"])
    key = lambda r: tuple(r[c] for c in SCAN_GROUP)  # noqa: E731
    group = Counter(key(r) for r in rows).most_common(1)[0][0]
    chosen = [r for r in rows if key(r) == group]
    label = dict(zip(SCAN_GROUP, group))

    fig, axes = plt.subplots(1, 3, figsize=(18, 5.2))
    ax = axes[0]
    for s in strategies_in({r["strategy"] for r in chosen}):
        pts = sorted((r["dcp"], r["step_latency_us"], r["merge_latency_us"]) for r in chosen if r["strategy"] == s)
        line, = ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"{s} step")
        ax.plot([p[0] for p in pts], [p[2] for p in pts], marker="x", linestyle="--", color=line.get_color(),
                label=f"{s} merge")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("DCP size N")
    ax.set_ylabel("latency per layer (µs)")
    ax.set_title("{profile}: H={heads} D={head_dim}/{qk_dim} kv={kv_heads}\nbatch {batch}, context {context}, "
                 "{launch}".format(**label), fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, ncol=2)

    scan_heatmap(axes[1], rows, label)
    scan_pareto(axes[2], rows, label)
    fig.suptitle(f"dcpsim scan — {os.path.basename(path)} ({len(rows)} points)")
    save(fig, out)


def scan_heatmap(ax, rows, label):
    """Best step latency over strategies for each (heads, head_dim) at the largest DCP of the same load."""
    same = [r for r in rows if r["profile"] == label["profile"] and r["batch"] == label["batch"]
            and r["context"] == label["context"] and r["launch"] == label["launch"]]
    dcp = max(r["dcp"] for r in same)
    best = {}
    for r in same:
        if r["dcp"] != dcp:
            continue
        k = (int(r["heads"]), int(r["head_dim"]))
        if k not in best or r["step_latency_us"] < best[k][0]:
            best[k] = (r["step_latency_us"], r["strategy"])
    heads = sorted({k[0] for k in best})
    dims = sorted({k[1] for k in best})
    grid = [[best.get((h, d), (math.nan, ""))[0] for d in dims] for h in heads]
    image = ax.imshow(grid, cmap="viridis", aspect="auto", origin="lower")
    ax.figure.colorbar(image, ax=ax, label="best step latency (µs)")
    for i, h in enumerate(heads):
        for j, d in enumerate(dims):
            if (h, d) in best:
                ax.text(j, i, f"{best[(h, d)][0]:.1f}\n{best[(h, d)][1]}", ha="center", va="center",
                        color="white", fontsize=8)
    ax.set_xticks(range(len(dims)), [str(d) for d in dims])
    ax.set_yticks(range(len(heads)), [str(h) for h in heads])
    ax.set_xlabel("head dim D")
    ax.set_ylabel("heads H")
    ax.set_title(f"best strategy at N={int(dcp)}, batch {label['batch']}, context {label['context']}", fontsize=10)


def scan_pareto(ax, rows, label):
    """Step latency vs the DCP group's KV capacity for one geometry and load; the front keeps the points that no
    other point beats on both (lower latency and at least as much capacity)."""
    same = [r for r in rows if all(r[c] == label[c] for c in SCAN_GROUP)]
    for s in strategies_in({r["strategy"] for r in same}):
        pts = [r for r in same if r["strategy"] == s]
        ax.scatter([p["kv_group"] for p in pts], [p["step_latency_us"] for p in pts], label=s, s=22)
    best_per_n = {}
    for r in same:
        if r["dcp"] not in best_per_n or r["step_latency_us"] < best_per_n[r["dcp"]]["step_latency_us"]:
            best_per_n[r["dcp"]] = r
    line = [best_per_n[n] for n in sorted(best_per_n)]
    ax.plot([r["kv_group"] for r in line], [r["step_latency_us"] for r in line], color="black", linewidth=0.8,
            linestyle=":", label="best strategy per N")
    front, best = [], math.inf
    for r in sorted(same, key=lambda r: (-r["kv_group"], r["step_latency_us"])):
        if r["step_latency_us"] < best:
            best = r["step_latency_us"]
            front.append(r)
    ax.scatter([r["kv_group"] for r in front], [r["step_latency_us"] for r in front], s=110, facecolors="none",
               edgecolors="black", linewidths=1.2, label="Pareto front")
    for r in line:
        ax.annotate(f"N={int(r['dcp'])} {r['strategy']}", (r["kv_group"], r["step_latency_us"]), fontsize=7,
                    xytext=(4, -10), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_xlabel("KV capacity of the DCP group (tokens: per GPU × N)")
    ax.set_ylabel("step latency per layer (µs)")
    ax.set_title("latency vs KV capacity (same geometry and load)", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)


# ---------------------------------------------------------------- replay
def replay_plot(path, out):
    """The compact replay summary (dcpsim-replay-summary/1, analysis/README.md): percentile bands over time and
    CDFs, never one marker per step."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as e:
        raise InputProblem(f"{path}: {e.strerror}")
    except ValueError as e:
        raise InputProblem(f"{path}: not a replay summary JSON ({e})")
    if not isinstance(doc, dict) or doc.get("format") != "dcpsim-replay-summary/1":
        raise InputProblem(f"{path}: not a dcpsim-replay-summary/1 document")
    if "bands" not in doc or "cdf" not in doc:
        raise InputProblem(f"{path}: the replay ran no step; nothing to draw")
    bands, cdf = doc["bands"], doc["cdf"]
    strategies = strategies_in(doc.get("strategies", []))
    t = bands["time_s"]
    fig, axes = plt.subplots(2, 2, figsize=(14, 9))
    colors = {s: plt.cm.tab10(i) for i, s in enumerate(strategies)}

    def band(ax, key, scale, ylabel, title):
        for s in strategies:
            b = bands[s][key]
            pts = [(x, lo * scale, mid * scale, hi * scale, mx * scale)
                   for x, lo, mid, hi, mx in zip(t, b["p10"], b["p50"], b["p90"], b["max"]) if mid is not None]
            if not pts:
                continue
            xs = [p[0] for p in pts]
            ax.fill_between(xs, [p[1] for p in pts], [p[3] for p in pts], color=colors[s], alpha=0.18, linewidth=0)
            ax.plot(xs, [p[2] for p in pts], color=colors[s], linewidth=1.2, label=f"{s} p50 (p10-p90 band)")
            ax.plot(xs, [p[4] for p in pts], color=colors[s], linewidth=0, marker=".", markersize=2)
        ax.set_ylabel(ylabel)
        ax.set_xlabel("trace time (s)")
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)

    band(axes[0][0], "decode_step_us", 1e-3, "decode step (ms)",
         f"decode step ({doc.get('layers', '?')} layers + non-attention) per {bands['bin_s']:.3g} s bin; dots: max")
    band(axes[0][1], "layer_merge_us", 1.0, "merge per attention layer (µs)", "merge after attention, per layer")
    ax = axes[1][0]
    q = cdf["quantile"]
    for s in strategies:
        ax.plot([v * 1e-3 for v in cdf[s]["decode_step_us"]], q, color=colors[s], linewidth=1.4, label=f"{s}")
    ax.set_xlabel("decode step (ms)")
    ax.set_ylabel("fraction of steps")
    ax.set_title("CDF of the decode step (solid) and of the merge per layer (dashed)", pad=30)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    twin = ax.twiny()
    for s in strategies:
        twin.plot(cdf[s]["layer_merge_us"], q, color=colors[s], linewidth=0.8, linestyle="--")
    twin.set_xlabel("merge per layer (µs), dashed")
    ax = axes[1][1]
    rows = [(x, p, m) for x, p, m in zip(t, bands["rows_p50"], bands["rows_max"]) if p is not None]
    ax.plot([r[0] for r in rows], [r[1] for r in rows], color="tab:gray", linewidth=1, label="rows p50")
    ax.plot([r[0] for r in rows], [r[2] for r in rows], color="black", linewidth=0.6, label="rows max")
    ax.set_ylabel("rows in the step")
    ax.set_xlabel("trace time (s)")
    ctx = [(x, c) for x, c in zip(t, bands["max_context"]) if c is not None]
    twin = ax.twinx()
    twin.plot([c[0] for c in ctx], [c[1] for c in ctx], color="tab:purple", linewidth=0.8, label="longest context")
    twin.set_ylabel("longest context (tokens)")
    ax.legend(loc="upper left", fontsize=7)
    twin.legend(loc="upper right", fontsize=7)
    ax.grid(True, alpha=0.3)
    fig.suptitle(f"dcpsim replay — {os.path.basename(str(doc.get('trace', path)))} on {doc.get('profile', '?')}, "
                 f"{doc.get('model', '')}, DCP {doc.get('dcp', '?')} ({doc.get('steps', '?')} steps)")
    fig.tight_layout()
    save(fig, out)


# ---------------------------------------------------------------- validate
def validate_plot(path, out):
    rows = read_rows(path, ["figure", "measured_ns", "predicted_ns", "within_tolerance"])
    fig, ax = plt.subplots(figsize=(7.5, 7))
    by_figure = defaultdict(list)
    for r in rows:
        by_figure[r["figure"]].append((number(r, "measured_ns", path) / 1e3, number(r, "predicted_ns", path) / 1e3))
    lo = min(min(p) for pts in by_figure.values() for p in pts)
    hi = max(max(p) for pts in by_figure.values() for p in pts)
    lo, hi = max(lo * 0.8, 1e-3), hi * 1.25
    for name in sorted(by_figure):
        pts = by_figure[name]
        ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=18, label=f"{name} ({len(pts)})")
    xs = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    ax.plot(xs, xs, color="black", linewidth=1, label="predicted = measured")
    band = [max(0.03 * x, 0.5) for x in xs]
    ax.fill_between(xs, [x - b for x, b in zip(xs, band)], [x + b for x, b in zip(xs, band)], color="gray",
                    alpha=0.25, label="tolerance max(3%, 0.5 µs)")
    inside = sum(1 for r in rows if r["within_tolerance"] == "1")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("measured (µs)")
    ax.set_ylabel("predicted (µs)")
    ax.set_title(f"dcpsim validate — {inside} of {len(rows)} within tolerance")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    save(fig, out)


COMMANDS = {"scan": scan_plot, "replay": replay_plot, "validate": validate_plot}


def main(argv):
    if len(argv) != 4 or argv[1] not in COMMANDS:
        print(f"usage: plot.py {{{'|'.join(COMMANDS)}}} input.csv output.png", file=sys.stderr)
        return 2
    try:
        COMMANDS[argv[1]](argv[2], argv[3])
    except InputProblem as e:
        print(f"plot.py: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
