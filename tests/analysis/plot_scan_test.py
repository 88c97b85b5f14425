#!/usr/bin/env python3
"""The scan plot tells the truth (scripts/plot.py scan, with --describe to read back what it drew):
  - the heatmap compares where strategies compare: the best DCP size and strategy over every N per geometry,
    never "the best at the largest N" (the case that said "N=72 ag-ar" when N=64 row-stream was faster);
  - one geometry: step by strategy and N, with the combinations a strategy cannot run left out; a single
    point: no heatmap;
  - the slice drawn is stated (title), chosen with --at, and a bad --at is one line and exit 2;
  - the Pareto labels do not overlap, even with many close points.
Usage: plot_scan_test.py SOURCE_DIR. Exits 77 (skipped) without a python3 that has matplotlib."""
import contextlib, csv, importlib.util, io, json, os, subprocess, sys, tempfile

SRC = sys.argv[1]
PLOT = os.path.join(SRC, "scripts", "plot.py")
COLUMNS = ["profile", "dcp", "heads", "head_dim", "qk_dim", "kv_heads", "batch", "context", "strategy", "launch",
           "step_latency_us", "merge_latency_us", "kv_capacity_tokens_per_gpu"]


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
            "strategy": strategy, "launch": "graph", "step_latency_us": step, "merge_latency_us": step / 3,
            "kv_capacity_tokens_per_gpu": 100000}


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

# Two geometries at one load: at N=72 only AG+AR runs for one of them, and N=64 row-stream is faster.
grid = []
for heads in (128, 144):
    for n, strategies in ((8, {"ag-ar": 300.0, "row-stream": 200.0}), (64, {"ag-ar": 140.0, "row-stream": 72.9}),
                          (72, {"ag-ar": 125.7})):
        for s, step in strategies.items():
            grid.append(row(n, s, step + (heads - 128), heads=heads))
d = plot("two_geometries", grid)
check(d["heatmap"]["kind"] == "best_per_geometry", f"two geometries: heatmap kind {d['heatmap']['kind']}")
for cell in d["heatmap"]["cells"]:
    check((cell["dcp"], cell["strategy"]) == (64, "row-stream"),
          f"two geometries: best for H={cell['heads']} is N={cell['dcp']} {cell['strategy']}, not N=64 row-stream")
    check(cell["value"] == min(r["step_latency_us"] for r in grid if r["heads"] == cell["heads"]),
          "two geometries: the best cell is the minimum over every N and strategy")

# One geometry: strategies by N, the missing row-stream at N=72 absent, the best named.
one = [r for r in grid if r["heads"] == 144]
d = plot("one_geometry", one)
check(d["heatmap"]["kind"] == "strategy_by_dcp", f"one geometry: heatmap kind {d['heatmap']['kind']}")
check(d["heatmap"]["best"]["dcp"] == 64 and d["heatmap"]["best"]["strategy"] == "row-stream",
      f"one geometry: best {d['heatmap']['best']}")
check(not any(c["dcp"] == 72 and c["strategy"] == "row-stream" for c in d["heatmap"]["cells"]),
      "one geometry: no value drawn where the strategy cannot run")
check(d["slices"] == 1 and "heads=144" in d["title"] and "context=128k" in d["title"],
      f"one geometry: the title names the slice: {d['title']!r}")

# A single point: no heatmap.
d = plot("single_point", [row(8, "ag-rs", 100.0)])
check(d["heatmap"]["kind"] == "none", f"single point: heatmap kind {d['heatmap']['kind']}")

# Several loads: without --at the title says which slice and how many there are; --at picks another.
loads = [row(n, s, 50.0 * n / b + 10, batch=b) for b in (16, 64) for n in (8, 16) for s in ("ag-rs", "a2a")]
d = plot("loads_default", loads)
check(d["slices"] == 2 and "1 of 2 slices" in d["title"] and "--at" in d["title"],
      f"several loads: the title says it is one slice of two: {d['title']!r}")
d = plot("loads_at", loads, "--at", "batch=64,context=128k")
check(d["slice"]["batch"] == "64" and "batch=64" in d["title"] and "1 of" not in d["title"],
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
