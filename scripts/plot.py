#!/usr/bin/env python3
"""Plots for dcpsim's CSV outputs, one subcommand per workflow:

  plot.py scan     scan.csv     out.png   at one slice of the values the user varied (a column with one value,
                                          or one the DCP size determines, is not a slice; --at
                                          batch=64,context=128k picks one, the title says it in the flags'
                                          words): step by DCP size per strategy (research ones dashed, layouts
                                          whose weights do not fit as grey crosses); where strategies compare
                                          with two points or more on each axis a heatmap (best N and shipped
                                          strategy per geometry over every N, or step by strategy and N with
                                          n/a where a strategy cannot run), else a line or a table; step vs
                                          the group's KV capacity with the Pareto front and non-overlapping
                                          labels. --name sets the file name the title shows; --describe FILE
                                          writes what was drawn as JSON
  plot.py replay   summary.json out.png   decode step and merge per layer over time as p10-p90 bands with p50,
                                          their CDFs, and the load (dcpsim replay --summary: dcpsim-summary/1,
                                          analysis/README.md)
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
import matplotlib.text  # noqa: E402
import matplotlib.ticker  # noqa: E402

STRATEGY_ORDER = ["ag-rs", "ag-ar", "a2a", "direct", "row-stream", "flashinfer-a2a", "a2a-2call"]


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
        # DCPSIM_PLOT_DPI: a lower resolution for previews and tests (everything drawn is sized in points).
        fig.savefig(tmp, format="png", dpi=float(os.environ.get("DCPSIM_PLOT_DPI", "120")), bbox_inches="tight")
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    plt.close(fig)


# ---------------------------------------------------------------- scan
# The columns a slice may fix (those a CSV has). The panels vary the DCP size and the strategy within a slice,
# and the heatmap the geometry the user varied.
SCAN_SLICE = ["profile", "model", "tp", "heads", "head_dim", "qk_dim", "kv_heads", "batch", "context", "launch",
              "kv_dtype", "out_dtype", "interleave"]
SCAN_REQUIRED = ["profile", "heads", "head_dim", "qk_dim", "kv_heads", "batch", "context", "launch", "dcp",
                 "strategy", "step_latency_us", "merge_latency_us", "kv_capacity_tokens_per_gpu"]
GEOMETRY = ["heads", "head_dim"]  # the geometry heatmap's axes; qk_dim and kv_heads follow the geometry
RESEARCH = {"row-stream"}  # research strategies in CSVs without a tier column (analysis/layouts.h)
WORDS = {"profile": "on", "model": "", "tp": "TP", "heads": "heads", "head_dim": "head dim", "qk_dim": "qk dim",
         "kv_heads": "KV heads", "batch": "batch", "context": "context", "launch": "launch", "kv_dtype": "KV",
         "out_dtype": "out", "interleave": "interleave"}


def parse_at(text, columns):
    """--at batch=64,context=128k: the slice to draw. Values may carry k/m suffixes (powers of 1024)."""
    at = {}
    for item in filter(None, (x.strip() for x in text.split(","))):
        key, sep, value = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not value.strip():
            raise InputProblem(f"--at '{item}': expected column=value")
        if key not in columns:
            raise InputProblem(f"--at {key}: not a slice column of this CSV (one of {', '.join(columns)})")
        at[key] = value.strip()
    return at


def same_value(cell, wanted):
    def num(v):
        v = v.strip().lower()
        scale = 1
        if v[-1:] in ("k", "m", "g"):
            scale, v = 1024 ** " kmg".index(v[-1]), v[:-1]
        try:
            return float(v) * scale
        except ValueError:
            return None
    a, b = num(cell), num(wanted)
    return a == b if a is not None and b is not None else cell.strip() == wanted.strip()


def fmt_value(column, value):
    if column == "context" and value.isdigit() and int(value) % 1024 == 0:
        n = int(value) // 1024
        return f"{n // 1024}m" if n % 1024 == 0 else f"{n}k"
    return value


def words(slice_values, columns):
    """"batch 64, context 128k": the slice as the flags say it."""
    parts = []
    for c in columns:
        v = fmt_value(c, slice_values[c])
        if c == "profile" and parts and "model" in columns:
            parts[-1] += f" on {v}"  # "deepseek-v3 on gb200-nvl72"
        else:
            parts.append(f"{WORDS[c]} {v}".strip() if c != "profile" else f"on {v}")
    return ", ".join(parts)


def slice_keys(rows, columns):
    """The columns the user varied: a column with one value is not a slice, nor one whose value the DCP size
    determines (the heads on a rank with a model, H = heads x N / TP; TP = N in older scans): it varies with
    the x axis itself, and slicing on it would leave one point per slice."""
    keys = []
    for c in columns:
        if len({r[c] for r in rows}) < 2:
            continue
        if any(follows(rows, c, k) for k in ["dcp"] + keys):
            continue
        keys.append(c)
    return keys


def follows(rows, column, other):
    """True when `other` takes several values and each determines `column` (qk_dim follows head_dim)."""
    groups = defaultdict(set)
    for r in rows:
        groups[r[other]].add(r[column])
    return len(groups) > 1 and all(len(v) == 1 for v in groups.values())


def research(r):
    return r.get("tier", "") == "research" if r.get("tier") else r["strategy"] in RESEARCH


def fits(r):
    return r.get("weights_fit", "true") != "false"


def rankable(r):
    return fits(r) and not research(r)


def readable_colorbar(fig, image, ax, label):
    """A colour bar with plain tick labels: no "+1.2e1" offset, no exponent a reader must apply."""
    cb = fig.colorbar(image, ax=ax, label=label)
    cb.formatter = matplotlib.ticker.FormatStrFormatter("%.4g")
    cb.update_ticks()
    return cb


def scan_plot(path, out, at_text="", describe=None, name=None):
    rows = read_rows(path, SCAN_REQUIRED)
    slice_cols = [c for c in SCAN_SLICE if c in rows[0]]
    # The step the user cares about: the whole decode step where the CSV has it, else one attention layer.
    metric, metric_label = (("decode_step_us", "decode step") if "decode_step_us" in rows[0]
                            else ("step_latency_us", "step per attention layer"))
    for r in rows:
        for c in ("dcp", "step_latency_us", "merge_latency_us", "kv_capacity_tokens_per_gpu", metric):
            r[c] = number(r, c, path)
        # With DCP each token lives on one rank: the group holds N times a GPU's capacity.
        r["kv_group"] = (number(r, "kv_capacity_tokens_group", path) if "kv_capacity_tokens_group" in r
                         else r["kv_capacity_tokens_per_gpu"] * r["dcp"])
    at = parse_at(at_text, slice_cols)
    for key, value in at.items():
        kept = [r for r in rows if same_value(r[key], value)]
        if not kept:
            present = sorted({r[key] for r in rows}, key=lambda v: (len(v), v))
            raise InputProblem(f"--at {key}={value}: no row has it (the CSV has {', '.join(present)})")
        rows = kept
    keys = slice_keys(rows, slice_cols)
    key = lambda r: tuple(r[c] for c in keys)  # noqa: E731
    counts = Counter(key(r) for r in rows)
    # Without --at for every column the user varied, the slice with the most points is drawn; the title says
    # which and how many there were, never silently.
    chosen_key = sorted(counts, key=lambda k: (-counts[k], k))[0]
    chosen = [r for r in rows if key(r) == chosen_key]
    constant = [c for c in slice_cols if len({r[c] for r in chosen}) == 1]
    slice_values = {c: chosen[0][c] for c in constant}
    shown = [c for c in ("batch", "context") if c in constant] + [c for c in keys if c not in ("batch", "context")]
    shown += [c for c in at if c not in shown and c in constant]
    slice_text = words(slice_values, [c for c in shown if c in slice_values]) or "every row"
    setting = words(slice_values, [c for c in ("model", "profile", "tp", "launch") if c in constant
                                   and (c != "model" or slice_values[c] != "none")])
    note = (f" — 1 of {len(counts)} slices (the one with most points; --at "
            f"{','.join(c + '=...' for c in keys)} picks another)" if len(counts) > 1 else "")
    unit = "ms" if metric == "decode_step_us" else "µs"
    scale = 1e-3 if metric == "decode_step_us" else 1.0

    fig, axes = plt.subplots(1, 3, figsize=(19, 5.6))
    scan_lines(axes[0], chosen, metric, metric_label, scale, unit, slice_text)
    heat = scan_heatmap(axes[1], rows, chosen, keys, metric, scale, unit, metric_label)
    label_points = scan_pareto(axes[2], chosen, metric, scale, unit, metric_label)
    source = name or os.path.basename(path)
    fig.suptitle(f"dcpsim scan ({source}): {setting} — {slice_text}{note}", fontsize=10)
    fig.tight_layout()
    labels = label_pareto(axes[2], label_points)
    labelled_points = len(label_points)
    if describe:
        fig.canvas.draw()  # where the labels ended up, for the record below
    placed = [label_box(t) for t in labels]
    overlaps = sum(1 for i in range(len(placed)) for j in range(i) if boxes_overlap(placed[i], placed[j]))
    if describe:
        axis_points = {"dcp": len({r["dcp"] for r in chosen}), "strategy": len({r["strategy"] for r in chosen})}
        with open(describe, "w") as f:
            json.dump({"metric": metric, "slice": slice_values, "slice_keys": keys, "slices": len(counts),
                       "title": f"{setting} — {slice_text}{note}", "suptitle": fig._suptitle.get_text(),
                       "axis_points": axis_points, "heatmap": heat, "labels": [t.get_text() for t in labels],
                       "label_overlaps": overlaps, "labels_left_out": labelled_points - len(labels),
                       "colorbar_offsets": [a.yaxis.get_major_formatter().get_offset() for a in fig.axes
                                            if a.get_label() == "<colorbar>"]}, f, indent=1)
    save(fig, out)


def scan_lines(ax, chosen, metric, metric_label, scale, unit, slice_text):
    """The step by DCP size, one line per strategy: research strategies dashed and marked, layouts whose
    weights do not fit drawn as grey crosses and said so."""
    for s in strategies_in({r["strategy"] for r in chosen}):
        pts = sorted((r["dcp"], r[metric] * scale, r["merge_latency_us"]) for r in chosen
                     if r["strategy"] == s and fits(r))
        is_research = any(research(r) for r in chosen if r["strategy"] == s)
        label = f"{s} {metric_label}" + (" (research)" if is_research else "")
        if pts:
            line, = ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label,
                            linestyle="--" if is_research else "-")
            if metric == "step_latency_us":
                ax.plot([p[0] for p in pts], [p[2] for p in pts], marker="x", linestyle=":",
                        color=line.get_color(), label=f"{s} merge")
    lost = [r for r in chosen if not fits(r)]
    if lost:
        ax.scatter([r["dcp"] for r in lost], [r[metric] * scale for r in lost], marker="x", color="gray",
                   label="does not fit (weights)", zorder=3)
    ax.set_xscale("log", base=2)
    values = [r[metric] for r in chosen if r[metric] > 0]
    if values and max(values) > 5 * min(values):  # a decade apart: log, so that the strategies stay apart
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%.4g"))
        ax.yaxis.set_minor_formatter(matplotlib.ticker.FormatStrFormatter("%.3g"))
    sizes = sorted({int(r["dcp"]) for r in chosen})
    ax.set_xticks(sizes, [str(n) for n in sizes])
    ax.minorticks_off() if len(sizes) < 2 else ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_xlabel("DCP size N")
    ax.set_ylabel(f"{metric_label} ({unit})")
    one = " (one DCP size: a point per strategy)" if len(sizes) < 2 else ""
    ax.set_title(f"{metric_label} by DCP size and strategy{one}\n{slice_text}", fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
def ink(image, v):
    """Black on light cells, white on dark ones."""
    r, g, b, _ = image.cmap(image.norm(v))
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"


def best_of(rows, metric):
    """The pick: the shortest step among layouts that fit and production strategies (analysis/layouts.h)."""
    ranked = [r for r in rows if rankable(r)]
    return min(ranked, key=lambda r: (r[metric], r["dcp"], r["strategy"])) if ranked else None


def value_table(ax, title, header, cells):
    """Fewer than two points on an axis: a table, not a heatmap of one row or column."""
    ax.axis("off")
    table = ax.table(cellText=cells, colLabels=header, loc="center", cellLoc="center")
    table.auto_set_font_size(False)
    table.set_fontsize(8)
    table.scale(1, 1.4)
    ax.set_title(title, fontsize=9)


def scan_heatmap(ax, rows, chosen, keys, metric, scale, unit, metric_label):
    """Where strategies compare, and only where an axis has two points or more. The geometry the user varied:
    for each, the best DCP size and production strategy over every N (never a fixed N), a heatmap over heads
    and head dim, or a line where one of them has a single value. Otherwise step by strategy and DCP size, with
    "n/a" where a strategy cannot run and "does not fit" where the weights do not; with one DCP size or one
    strategy, a table."""
    geometry = [g for g in GEOMETRY if g in keys]
    if geometry:
        others = [k for k in keys if k not in GEOMETRY + ["qk_dim", "kv_heads"]]
        same_load = [r for r in rows if all(r[k] == chosen[0][k] for k in others)]
        cells = defaultdict(list)
        for r in same_load:
            cells[(int(float(r["heads"])), int(float(r["head_dim"])))].append(r)
        best = {k: best_of(v, metric) for k, v in cells.items()}
        best = {k: v for k, v in best.items() if v is not None}
        heads = sorted({k[0] for k in best})
        dims = sorted({k[1] for k in best})
        record = {"kind": "best_per_geometry",
                  "cells": [{"heads": h, "head_dim": d, "dcp": int(b["dcp"]), "strategy": b["strategy"],
                             "value": b[metric]} for (h, d), b in sorted(best.items())]}
        if len(heads) >= 2 and len(dims) >= 2:
            grid = [[best[(h, d)][metric] * scale if (h, d) in best else math.nan for d in dims] for h in heads]
            image = ax.imshow(grid, cmap="viridis_r", aspect="auto", origin="lower")
            readable_colorbar(ax.figure, image, ax, f"shortest {metric_label} ({unit})")
            for i, h in enumerate(heads):
                for j, d in enumerate(dims):
                    if (h, d) in best:
                        b = best[(h, d)]
                        ax.text(j, i, f"N={int(b['dcp'])} {b['strategy']}\n{b[metric] * scale:.4g} {unit}",
                                ha="center", va="center", color=ink(image, b[metric] * scale), fontsize=7)
            ax.set_xticks(range(len(dims)), [str(d) for d in dims])
            ax.set_yticks(range(len(heads)), [str(h) for h in heads])
            ax.set_xlabel("head dim D")
            ax.set_ylabel("heads H")
            ax.set_title(f"best DCP size and shipped strategy per geometry: the shortest {metric_label}\nover "
                         "every N and production strategy in the scan", fontsize=9)
            return record
        # One of heads / head dim has a single value: a line over the other.
        axis = "heads" if len(heads) >= 2 else "head_dim"
        xs = heads if axis == "heads" else dims
        pts = sorted(((k[0] if axis == "heads" else k[1]), b) for k, b in best.items())
        ax.plot([p[0] for p in pts], [p[1][metric] * scale for p in pts], marker="o", color="black")
        for x, b in pts:
            ax.annotate(f"N={int(b['dcp'])} {b['strategy']}", (x, b[metric] * scale), xytext=(4, 6),
                        textcoords="offset points", fontsize=7)
        ax.set_xticks(xs, [str(x) for x in xs])
        ax.set_xlabel("heads H" if axis == "heads" else "head dim D")
        ax.set_ylabel(f"shortest {metric_label} ({unit})")
        ax.grid(True, alpha=0.3)
        ax.set_title(f"best DCP size and shipped strategy by {WORDS[axis]} (one value of the other geometry "
                     "axis: a line, not a heatmap)", fontsize=9)
        record["kind"] = "best_per_geometry_line"
        return record
    strategies = strategies_in({r["strategy"] for r in chosen})
    sizes = sorted({int(r["dcp"]) for r in chosen})
    by = {(r["strategy"], int(r["dcp"])): r for r in chosen}
    best = best_of(chosen, metric)
    cells = [{"strategy": s, "dcp": n, "value": r[metric], "fits": fits(r)} for (s, n), r in sorted(by.items())]
    best_record = ({"dcp": int(best["dcp"]), "strategy": best["strategy"], "value": best[metric]} if best
                   else None)
    label = lambda s: s + (" (research)" if any(research(r) for r in chosen if r["strategy"] == s) else "")  # noqa
    if len(sizes) < 2 or len(strategies) < 2:
        rows_text = []
        for (s, n), r in sorted(by.items(), key=lambda kv: kv[1][metric]):
            mark = "best" if best is not None and r is best else ("does not fit" if not fits(r) else "")
            rows_text.append([label(s), str(n), f"{r[metric] * scale:.4g}", mark])
        why = "one DCP size" if len(sizes) < 2 else "one strategy"
        value_table(ax, f"{metric_label} ({unit}) by strategy and DCP size — {why}: a table, not a heatmap",
                    ["strategy", "N", unit, ""], rows_text)
        return {"kind": "table", "cells": cells, "best": best_record}
    grid = [[by[(s, n)][metric] * scale if (s, n) in by and fits(by[(s, n)]) else math.nan for n in sizes]
            for s in strategies]
    cmap = plt.get_cmap("viridis_r").copy()
    cmap.set_bad("#dddddd")
    image = ax.imshow(grid, cmap=cmap, aspect="auto", origin="lower")
    readable_colorbar(ax.figure, image, ax, f"{metric_label} ({unit})")
    for i, s in enumerate(strategies):
        for j, n in enumerate(sizes):
            r = by.get((s, n))
            if r is None or not fits(r):
                ax.text(j, i, "n/a" if r is None else "does not\nfit", ha="center", va="center",
                        color="#555555", fontsize=7)
                continue
            mark = best is not None and r is best
            ax.text(j, i, f"{r[metric] * scale:.4g}" + ("\nbest" if mark else ""), ha="center", va="center",
                    color=ink(image, r[metric] * scale), fontsize=7, fontweight="bold" if mark else "normal")
    ax.set_xticks(range(len(sizes)), [str(n) for n in sizes])
    ax.set_yticks(range(len(strategies)), [label(s) for s in strategies])
    ax.set_xlabel("DCP size N")
    best_text = (f"best production strategy: N={int(best['dcp'])} {best['strategy']} {best[metric] * scale:.4g} {unit}" if best
                 else "nothing ranked: no layout fits")
    ax.set_title(f"{metric_label} by strategy and DCP size; n/a: the strategy cannot run there\n{best_text}",
                 fontsize=9)
    return {"kind": "strategy_by_dcp", "cells": cells, "best": best_record}


def label_box(text):
    b = matplotlib.text.Text.get_window_extent(text)  # the text alone, not an annotation's arrow
    return (b.x0, b.y0, b.x1, b.y1)


def boxes_overlap(a, b):
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def place_labels(ax, points):
    """Labels beside their points without overlapping each other: each takes the first of a ring of offsets
    (growing outwards) whose box meets no label placed before it and stays inside the axes; a label with no
    such spot is left out (the caller says how many). Boxes are worked out in display space from one measured
    text size per label, so only the labels kept are drawn."""
    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    frame = ax.get_window_extent(renderer=renderer)
    px = fig.dpi / 72.0  # display pixels per point
    offsets = [(dx, dy) for r in (6, 16, 28, 42) for dx, dy in
               ((r, r), (r, -r - 8), (-r, r), (-r, -r - 8), (0, r + 4), (0, -r - 12))]
    placed, texts = [], []
    for x, y, label in points:
        # The label's box relative to its anchor, measured once.
        probe = ax.annotate(label, (x, y), xytext=(0, 0), textcoords="offset points", fontsize=7, ha="left")
        b = probe.get_window_extent(renderer=renderer)
        probe.remove()
        ox, oy = ax.transData.transform((x, y))
        rel = (b.x0 - ox, b.y0 - oy, b.x1 - ox, b.y1 - oy)
        w = rel[2] - rel[0]
        for dx, dy in offsets:
            sx = dx * px - (w if dx < 0 else 0)
            box = (ox + sx + rel[0], oy + dy * px + rel[1], ox + sx + rel[2], oy + dy * px + rel[3])
            inside = box[0] >= frame.x0 and box[2] <= frame.x1 and box[1] >= frame.y0 and box[3] <= frame.y1
            if inside and not any(boxes_overlap(box, p) for p in placed):
                t = ax.annotate(label, (x, y), xytext=(dx, dy), textcoords="offset points", fontsize=7,
                                ha="left" if dx >= 0 else "right",
                                arrowprops=dict(arrowstyle="-", color="gray", linewidth=0.5) if abs(dy) > 6 else None)
                placed.append(box)
                texts.append(t)
                break
    return texts


def scan_pareto(ax, chosen, metric, scale, unit, metric_label):
    """Step vs the DCP group's KV capacity at the slice; the front keeps the points no other point beats on
    both (lower step and at least as much capacity). Labels name the best strategy at each N."""
    for s in strategies_in({r["strategy"] for r in chosen}):
        pts = [r for r in chosen if r["strategy"] == s and fits(r)]
        tag = " (research)" if any(research(r) for r in pts) else ""
        ax.scatter([p["kv_group"] for p in pts], [p[metric] * scale for p in pts], label=s + tag, s=22,
                   marker="^" if tag else "o")
    best_per_n = {}
    for r in chosen:
        if rankable(r) and (r["dcp"] not in best_per_n or r[metric] < best_per_n[r["dcp"]][metric]):
            best_per_n[r["dcp"]] = r
    line = [best_per_n[n] for n in sorted(best_per_n)]
    ax.plot([r["kv_group"] for r in line], [r[metric] * scale for r in line], color="black", linewidth=0.8,
            linestyle=":", label="best shipped strategy per N")
    front, best = [], math.inf
    for r in sorted((r for r in chosen if rankable(r)), key=lambda r: (-r["kv_group"], r[metric])):
        if r[metric] < best:
            best = r[metric]
            front.append(r)
    ax.scatter([r["kv_group"] for r in front], [r[metric] * scale for r in front], s=110, facecolors="none",
               edgecolors="black", linewidths=1.2, label="Pareto front")
    ax.set_xscale("log")
    ax.set_xlabel("KV capacity of the DCP group (tokens: per GPU × N)")
    ax.set_ylabel(f"{metric_label} ({unit})")
    ax.set_title("latency vs KV capacity at this slice (front: shipped strategies on layouts that fit)",
                 fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    # The front first, then the other sizes' best; placed once the figure's layout is final (label_pareto).
    on_front = {id(r) for r in front}
    ordered = sorted(line, key=lambda r: (id(r) not in on_front, r["dcp"]))
    return [(r["kv_group"], r[metric] * scale, f"N={int(r['dcp'])} {r['strategy']}") for r in ordered]


def label_pareto(ax, points):
    ax.get_xlim(), ax.get_ylim()  # final limits (the layout is final) before labels go in display space
    texts = place_labels(ax, points)
    if len(texts) < len(points):
        ax.set_title(f"latency vs KV capacity at this slice ({len(points) - len(texts)} of {len(points)} "
                     "labels left out where they would overlap)", fontsize=9)
    return texts


# ---------------------------------------------------------------- replay
def replay_plot(path, out):
    """The replay summary (schema dcpsim-summary/1, command replay; analysis/README.md): percentile bands over
    time and CDFs, never one marker per step."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as e:
        raise InputProblem(f"{path}: {e.strerror}")
    except ValueError as e:
        raise InputProblem(f"{path}: not a replay summary JSON ({e})")
    if not isinstance(doc, dict) or doc.get("schema") != "dcpsim-summary/1" or doc.get("command") != "replay":
        raise InputProblem(f"{path}: not a dcpsim-summary/1 document of a replay")
    entries = {e["strategy"]: e for e in doc.get("strategies", []) if isinstance(e, dict) and "strategy" in e}
    if "bands" not in doc or "cdf_quantiles" not in doc or not entries or \
            any("bands" not in e or "cdf" not in e for e in entries.values()):
        raise InputProblem(f"{path}: the replay ran no step; nothing to draw")
    strategies = strategies_in(list(entries))
    bands = dict(doc["bands"])
    cdf = {"quantile": doc["cdf_quantiles"]}
    for name, e in entries.items():
        bands[name] = e["bands"]
        cdf[name] = e["cdf"]
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
            tag = " (research)" if entries[s].get("tier") == "research" else ""
            ax.plot(xs, [p[2] for p in pts], color=colors[s], linewidth=1.2, label=f"{s}{tag} p50 (p10-p90 band)")
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
        tag = " (research)" if entries[s].get("tier") == "research" else ""
        ax.plot([v * 1e-3 for v in cdf[s]["decode_step_us"]], q, color=colors[s], linewidth=1.4, label=f"{s}{tag}")
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
                 f"{doc.get('model', '')}, DCP {doc.get('dcp', '?')}, TP {doc.get('tp', '?')} "
                 f"({doc.get('steps', '?')} steps)")
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


def plan_plot(path, out):
    """dcpsim plan: tokens/s per GPU against tokens/s per user, every point faint, each layout's Pareto
    points joined, the shipped front bold, the research front dashed and apart, the best point ringed."""
    import matplotlib.ticker  # noqa: F401 (the tick formatters below)

    rows = read_rows(path, ["tp", "dcp", "strategy", "research", "concurrency", "tokens_per_s_user",
                            "tokens_per_s_gpu", "pareto", "best", "model", "profile", "gpus"])
    if not rows:
        raise InputProblem(f"{path}: no points to plot")
    fig, ax = plt.subplots(figsize=(8.5, 5.5))
    layouts = sorted({(int(r["tp"]), int(r["dcp"])) for r in rows})
    colours = plt.get_cmap("tab10")
    for i, (tp, dcp) in enumerate(layouts):
        mine = [r for r in rows if (int(r["tp"]), int(r["dcp"])) == (tp, dcp) and r["research"] == "false"]
        if not mine:
            continue
        x = [number(r, "tokens_per_s_user", path) for r in mine]
        y = [number(r, "tokens_per_s_gpu", path) for r in mine]
        label = f"TP{tp}" + (f" DCP{dcp}" if dcp > 1 else "")
        ax.scatter(x, y, s=10, color=colours(i % 10), alpha=0.35)
        front = sorted((a, b) for a, b, r in zip(x, y, mine) if all(
            not (number(q, "tokens_per_s_user", path) >= a and number(q, "tokens_per_s_gpu", path) >= b and
                 (number(q, "tokens_per_s_user", path) > a or number(q, "tokens_per_s_gpu", path) > b))
            for q in mine))
        ax.plot([a for a, _ in front], [b for _, b in front], "-o", ms=3, lw=1.2, color=colours(i % 10),
                label=label)
    for kind, style, name in (("false", "k-", "Pareto front (shipped strategies)"),
                              ("true", "k--", "research front (row-stream, not deployable)")):
        front = sorted((number(r, "tokens_per_s_user", path), number(r, "tokens_per_s_gpu", path))
                       for r in rows if r["pareto"] == "true" and r["research"] == kind)
        if front:
            ax.plot([a for a, _ in front], [b for _, b in front], style, lw=2.2 if kind == "false" else 1.2,
                    alpha=0.8, label=name)
    for r in rows:
        if r["best"] == "true":
            ax.scatter([number(r, "tokens_per_s_user", path)], [number(r, "tokens_per_s_gpu", path)], s=160,
                       facecolors="none", edgecolors="red", linewidths=2,
                       label=f"best under the SLO: TP{r['tp']} DCP{r['dcp']} {r['strategy']} x{r['concurrency']}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(matplotlib.ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        axis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlabel("tokens/s per user (1 / TPOT)")
    ax.set_ylabel("tokens/s per GPU")
    ax.set_title(f"dcpsim plan — {rows[0]['model']} on {rows[0]['gpus']} x {rows[0]['profile']}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    save(fig, out)


COMMANDS = {"scan": scan_plot, "replay": replay_plot, "validate": validate_plot, "plan": plan_plot}


def main(argv):
    usage = (f"usage: plot.py {{{'|'.join(COMMANDS)}}} input output.png  "
             "(scan also: [--at column=value,...] [--name NAME-IN-TITLE] [--describe what.json])")
    if len(argv) < 4 or argv[1] not in COMMANDS:
        print(usage, file=sys.stderr)
        return 2
    options, rest = {}, argv[4:]
    while rest:
        if rest[0] not in ("--at", "--describe", "--name") or len(rest) < 2 or argv[1] != "scan":
            print(usage, file=sys.stderr)
            return 2
        options[rest[0][2:]] = rest[1]
        rest = rest[2:]
    try:
        if argv[1] == "scan":
            # DCPSIM_PLOT_DESCRIBE: where a plot drawn through dcpsim (scan --plot) records what it drew
            # (scripts/readme_figures.py checks the README's plots with it).
            describe = options.get("describe") or os.environ.get("DCPSIM_PLOT_DESCRIBE") or None
            scan_plot(argv[2], argv[3], options.get("at", ""), describe, options.get("name"))
        else:
            COMMANDS[argv[1]](argv[2], argv[3])
    except InputProblem as e:
        print(f"plot.py: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
