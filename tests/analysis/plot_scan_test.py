#!/usr/bin/env python3
"""The scan plot tells the truth (scripts/plot.py scan, with --describe to read back what it drew):
  - the heatmap compares where strategies compare: the best DCP size and shipped strategy over every N per
    geometry, never "the best at the largest N", never a research strategy or a layout that does not fit;
  - one geometry: step by strategy and N, with the combinations a strategy cannot run left out; fewer than
    two points on an axis: a table or a line, never a heatmap;
  - slice keys are what the user varied: a column the DCP size determines (heads = heads x N / TP with a
    model) is not one, so the README's scan draws every N in one slice;
  - the slice drawn is stated in the flags' words (title), chosen with --at, and a bad --at is one line and
    exit 2; the title shows the name given, never a temporary file's; colour bars carry no offset;
  - the Pareto labels do not overlap, even with many close points.
Usage: plot_scan_test.py SOURCE_DIR. Exits 77 (skipped) without a python3 that has matplotlib."""
import contextlib, csv, importlib.util, io, json, os, subprocess, sys, tempfile

SRC = sys.argv[1]
PLOT = os.path.join(SRC, "scripts", "plot.py")
COLUMNS = ["profile", "dcp", "heads", "head_dim", "qk_dim", "kv_heads", "batch", "context", "strategy", "tier",
           "launch", "step_latency_us", "merge_latency_us", "kv_capacity_tokens_per_gpu", "weights_fit"]


def python_with_matplotlib():
    for p in [os.environ.get("DCPSIM_PYTHON", ""), sys.executable, "python3", "/usr/bin/python3"]:
        if p and subprocess.run([p, "-c", "import matplotlib"], capture_output=True).returncode == 0:
            return p
    return None


PY = python_with_matplotlib()
if PY is None:
    print("skipped: no python3 with matplotlib")
    sys.exit(77)
if PY != sys.executable:  # run the whole test under the interpreter that has matplotlib
    os.execvp(PY, [PY, os.path.abspath(__file__), *sys.argv[1:]])
TMP = tempfile.mkdtemp(prefix="dcpsim-plot-scan-")
failures = []
module = None  # plot.py, loaded below


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL", what)


def row(dcp, strategy, step, heads=144, head_dim=512, batch=64, context=131072):
    return {"profile": "gb200-nvl72", "dcp": dcp, "heads": heads, "head_dim": head_dim,
            "qk_dim": 576 if head_dim == 512 else head_dim, "kv_heads": 1, "batch": batch, "context": context,
            "strategy": strategy, "tier": "research" if strategy == "row-stream" else "production",
            "launch": "graph", "step_latency_us": step, "merge_latency_us": step / 3,
            "kv_capacity_tokens_per_gpu": 100000, "weights_fit": "true"}


spec = importlib.util.spec_from_file_location("dcpsim_plot", PLOT)


def plot(name, rows, *options, code=0):
    """Draws in this process (one matplotlib import for the whole test); exit code and stderr as the command
    line gives them come from plot.main()."""
    path = os.path.join(TMP, name + ".csv")
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    png, what = os.path.join(TMP, name + ".png"), os.path.join(TMP, name + ".json")
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        got = module.main(["plot.py", "scan", path, png, "--describe", what, *options])
    check(got == code, f"{name}: exit {got}, expected {code}: {err.getvalue().strip()}")
    if code != 0:
        check(len(err.getvalue().strip().splitlines()) == 1, f"{name}: one line on stderr, got {err.getvalue()!r}")
        check(not os.path.exists(png), f"{name}: no PNG after an error")
        return err.getvalue()
    check(os.path.getsize(png) > 10000, f"{name}: a real PNG")
    return json.load(open(what))


module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)

# Two geometries at one load: at N=72 only AG+AR runs, N=64 a2a is the fastest shipped strategy, and
# row-stream (research) is faster still at N=64 but never the pick.
grid = []
for heads in (128, 144):
    for n, strategies in ((8, {"ag-ar": 300.0, "a2a": 200.0, "row-stream": 190.0}),
                          (64, {"ag-ar": 140.0, "a2a": 72.9, "row-stream": 60.0}), (72, {"ag-ar": 125.7})):
        for s, step in strategies.items():
            grid.append(row(n, s, step + (heads - 128), heads=heads, head_dim=512))
    grid.append(row(64, "a2a", 80.0 + heads - 128, heads=heads, head_dim=128))
d = plot("two_geometries", grid)
check(d["heatmap"]["kind"] == "best_per_geometry", f"two geometries: heatmap kind {d['heatmap']['kind']}")
for cell in d["heatmap"]["cells"]:
    if cell["head_dim"] != 512:
        continue
    check((cell["dcp"], cell["strategy"]) == (64, "a2a"),
          f"two geometries: best for H={cell['heads']} is N={cell['dcp']} {cell['strategy']}, not N=64 a2a")
    check(cell["value"] == min(r["step_latency_us"] for r in grid if r["heads"] == cell["heads"]
                               and r["head_dim"] == 512 and r["strategy"] != "row-stream"),
          "two geometries: the best cell is the minimum over every N and shipped strategy")
check(d["colorbar_offsets"] == [""], f"two geometries: colour bar offset {d['colorbar_offsets']}")

# Heads varied, one head dim: a line over the heads, not a one-column heatmap.
d = plot("heads_only", [r for r in grid if r["head_dim"] == 512])
check(d["heatmap"]["kind"] == "best_per_geometry_line", f"heads only: {d['heatmap']['kind']}")

# One geometry: strategies by N, the missing row-stream at N=72 absent, the best named and shipped.
one = [r for r in grid if r["heads"] == 144 and r["head_dim"] == 512]
d = plot("one_geometry", one, "--name", "scan.csv")
check(d["heatmap"]["kind"] == "strategy_by_dcp", f"one geometry: heatmap kind {d['heatmap']['kind']}")
check(d["heatmap"]["best"]["dcp"] == 64 and d["heatmap"]["best"]["strategy"] == "a2a",
      f"one geometry: best {d['heatmap']['best']}")
check(not any(c["dcp"] == 72 and c["strategy"] == "row-stream" for c in d["heatmap"]["cells"]),
      "one geometry: no value drawn where the strategy cannot run")
check(d["slices"] == 1 and "batch 64" in d["title"] and "context 128k" in d["title"],
      f"one geometry: the title names the slice in the flags' words: {d['title']!r}")
check("scan.csv" in d["suptitle"] and ".tmp" not in d["suptitle"], f"one geometry: --name: {d['suptitle']!r}")
check(d["colorbar_offsets"] == [""], f"one geometry: colour bar offset {d['colorbar_offsets']}")

# A layout whose weights do not fit: shown, never the best.
nofit = [dict(r) for r in one]
for r in nofit:
    if r["dcp"] == 64:
        r["weights_fit"] = "false"
d = plot("does_not_fit", nofit)
check(d["heatmap"]["best"]["dcp"] != 64, f"does not fit: best {d['heatmap']['best']}")
check(any(c["dcp"] == 64 and not c["fits"] for c in d["heatmap"]["cells"]), "does not fit: the cells say so")

# With a model the heads on a rank follow N (H = 128 x N / TP 8): not a slice key, so every N is one slice.
derived = [row(n, s, 100.0 / n + i, heads=16 * n) for n in (1, 2, 4, 8) for i, s in enumerate(("ag-rs", "a2a"))]
d = plot("derived_heads", derived)
check(d["slices"] == 1 and d["axis_points"]["dcp"] == 4 and "heads" not in d["slice_keys"],
      f"derived heads: {d['slices']} slices, {d['axis_points']} points, keys {d['slice_keys']}")
check(d["heatmap"]["kind"] == "strategy_by_dcp", f"derived heads: {d['heatmap']['kind']}")

# One DCP size, or a single point: a table.
d = plot("single_point", [row(8, "ag-rs", 100.0)])
check(d["heatmap"]["kind"] == "table", f"single point: heatmap kind {d['heatmap']['kind']}")
d = plot("one_size", [row(8, s, 100.0 + i) for i, s in enumerate(("ag-rs", "a2a", "direct"))])
check(d["heatmap"]["kind"] == "table" and d["heatmap"]["best"]["strategy"] == "ag-rs",
      f"one size: {d['heatmap']}")

# Several loads: without --at the title says which slice and how many there are; --at picks another.
loads = [row(n, s, 50.0 * n / b + 10, batch=b) for b in (16, 64) for n in (8, 16) for s in ("ag-rs", "a2a")]
d = plot("loads_default", loads)
check(d["slices"] == 2 and "1 of 2 slices" in d["title"] and "--at" in d["title"],
      f"several loads: the title says it is one slice of two: {d['title']!r}")
d = plot("loads_at", loads, "--at", "batch=64,context=128k")
check(d["slice"]["batch"] == "64" and "batch 64" in d["title"] and "1 of" not in d["title"],
      f"--at batch=64: slice {d['slice']}, title {d['title']!r}")
err = plot("loads_at_absent", loads, "--at", "batch=32", code=2)
check("batch=32" in err and "16" in err and "64" in err, f"--at batch=32: names the values there are: {err!r}")
err = plot("loads_at_unknown", loads, "--at", "colour=red", code=2)
check("colour" in err, f"--at colour=red: names the column: {err!r}")

# Many close points on the Pareto panel: labels placed without overlapping.
dense = [row(n, s, 100.0 + n * 0.01 + i, batch=64) for n in range(2, 42, 2)
         for i, s in enumerate(("ag-rs", "a2a", "row-stream"))]
for r in dense:
    r["kv_capacity_tokens_per_gpu"] = 100000
d = plot("dense_labels", dense)
check(d["label_overlaps"] == 0, f"dense: {d['label_overlaps']} overlapping label pairs")
check(len(d["labels"]) >= 5 and len(d["labels"]) + d["labels_left_out"] == 20,
      f"dense: {len(d['labels'])} labels drawn, {d['labels_left_out']} left out, of 20 sizes")
check("N=2 " in " ".join(d["labels"]), "dense: the Pareto front's end is labelled")

print(f"{'FAILED' if failures else 'passed'}: {len(failures)} failure(s)")
sys.exit(1 if failures else 0)
