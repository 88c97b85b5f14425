#!/usr/bin/env python3
"""Clean interruption (issue 36): real scan (--jobs 2), simulate, replay, import, calibrate (traces and
--comm-tables), collectives and plan runs, signalled
with SIGINT (to the whole process group, as Ctrl-C does) or SIGTERM (to dcpsim alone) once their work has
begun. Each must
  - exit 130 (SIGINT) or 143 (SIGTERM), within a few seconds;
  - print exactly one line on stderr after its progress lines: "dcpsim: interrupted; nothing written";
  - leave no temporary or part file, no worker process, and its outputs as they were before (an output
    that existed keeps its old content byte for byte: a finished output is never half replaced);
  - leave its inputs untouched.
A scan whose worker dies must end with one line that gives the worker's own reason.
Usage: signals.py DCPSIM SOURCE_DIR [NAME_FILTER]"""
import gzip, hashlib, json, os, resource, shutil, signal, subprocess, sys, tempfile, time

DCPSIM, SRC = sys.argv[1], sys.argv[2]
FILTER = sys.argv[3] if len(sys.argv) > 3 else ""
DATA = os.path.join(SRC, "tests", "data")
H200 = os.path.join(SRC, "traces", "measured", "h200")
MOONCAKE = os.path.join(DATA, "mooncake_conversation_trace.no_hash_ids.jsonl.gz")
IMPORT_SCENARIO = ["--dcp", "2", "--heads", "16", "--head-dim", "512", "--kv-heads", "1", "--batch", "1",
                   "--context", "1k", "--strategy", "ag-rs"]
OLD = b"an output from an earlier run\n"


def big_kineto(path, events=150000):
    with open(path, "w") as f:
        f.write('{"traceEvents":[')
        for i in range(events):
            f.write(("," if i else "") + json.dumps(
                {"ph": "X", "cat": "kernel", "name": "kernel_%d" % (i % 40), "ts": 10 + 3 * i, "dur": 2, "pid": 0,
                 "tid": 7, "args": {"device": 0, "stream": 7, "correlation": i}}))
        f.write("]}")


# name, argv (with {d}), outputs (pre-filled with OLD), files to make, signal, whole group
CASES = [
    ("scan --jobs 2, Ctrl-C", ["scan", "--dcp", "1..72", "--batch", "1..256:x2", "--context", "4k..1m:x2",
                               "--strategy", "all", "--jobs", "2", "--out", "{d}/s.csv"], ["s.csv"], signal.SIGINT, True),
    ("scan --jobs 2 --plot, SIGTERM", ["scan", "--dcp", "1..72", "--batch", "1..256:x2", "--context", "4k..1m:x2",
                                       "--strategy", "all", "--jobs", "2", "--out", "{d}/s.csv", "--plot", "{d}/s.png"],
     ["s.csv"], signal.SIGTERM, False),
    ("simulate, SIGTERM", ["simulate", "--profile", "gb200-nvl72", "--dcp", "72", "--heads", "144", "--batch", "256",
                           "--context", "128k", "--strategy", "all", "--flows", "pair", "--out", "{d}/a.pb",
                           "--chrome", "{d}/a.json", "--json", "{d}/s.json"], ["a.pb", "s.json"], signal.SIGTERM, False),
    ("simulate, Ctrl-C", ["simulate", "--profile", "gb200-nvl72", "--dcp", "72", "--heads", "144", "--batch", "256",
                          "--context", "128k", "--strategy", "all", "--flows", "pair", "--out", "{d}/a.pb"],
     ["a.pb"], signal.SIGINT, True),
    ("replay --jobs 2, SIGTERM", ["replay", "--requests", MOONCAKE, "--jobs", "2", "--out", "{d}/r.csv", "--summary",
                                  "{d}/r.json"], ["r.csv"], signal.SIGTERM, False),
    ("replay --jobs 2, Ctrl-C", ["replay", "--requests", MOONCAKE, "--jobs", "2", "--out", "{d}/r.csv"], [],
     signal.SIGINT, True),
    ("import, SIGTERM", ["import", "--kineto", "{d}/k.json"] + IMPORT_SCENARIO + ["--out", "{d}/o.pb"], ["o.pb"],
     signal.SIGTERM, False),
    # Issues 32 and 33's commands, which write nothing until done: signalled after a fixed delay (last field).
    ("collectives, Ctrl-C", ["collectives", "--op", "all", "--gpus", "2..72", "--csv", "{d}/c.csv"], ["c.csv"],
     signal.SIGINT, True, 0.8),
    ("plan, SIGTERM", ["plan", "--gpus", "16", "--out", "{d}/p.csv", "--plot", "{d}/p.png"], ["p.csv"],
     signal.SIGTERM, False, 0.8),
    ("calibrate --comm-tables, SIGINT", ["calibrate", "--comm-tables"] + ["{d}/w%d.json" % i for i in range(5)] +
     ["--profile", "h100-sxm", "--out", "{d}/c.json"], ["c.json"], signal.SIGINT, True, 0.5),
    ("calibrate, SIGINT", ["calibrate", "--measured", H200 + "/mla_n2_b16_ctx8k_graph.pb.gz",
                           H200 + "/mla_n4_b64_ctx1k_graph.pb.gz", H200 + "/gqa_n8_b1_ctx32k_graph.pb.gz",
                           "--out", "{d}/c.json"], ["c.json"], signal.SIGINT, True),
]


def snapshot(d):
    out = {}
    for root, _, files in os.walk(d):
        for f in files:
            p = os.path.join(root, f)
            out[os.path.relpath(p, d)] = hashlib.sha256(open(p, "rb").read()).hexdigest()
    for root, dirs, _ in os.walk(d):
        for x in dirs:
            out[os.path.relpath(os.path.join(root, x), d) + "/"] = "dir"
    return out


def children_of(pid):
    """Live processes whose parent is `pid` (from /proc)."""
    kids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid and fields[0] != "Z":
                kids.append(int(entry))
        except (OSError, IndexError, ValueError):
            pass
    return kids


def started(d, before, p, wait_children):
    """The run is at work: its workers exist (scan, replay), or a new file or directory appeared in its
    directory (a temporary output)."""
    if wait_children:
        return bool(children_of(p.pid))
    return bool(set(snapshot(d)) - set(before))


def wide_comm_table(path):
    """H100's nccl-tests table widened to every group of 2 to 8 GPUs (times scaled from 4): a fit of a few
    hundred milliseconds per file."""
    d = json.load(open(os.path.join(SRC, "models", "tables", "h100-sxm-nccl.json")))
    for t in d["tables"]:
        have = {(p["gpus"], p["size_bytes"]) for p in t["points"]}
        extra = []
        for p in t["points"]:
            for g in range(3, 9):
                if p["gpus"] == 4 and (g, p["size_bytes"]) not in have:
                    extra.append(dict(p, gpus=g, **{k: p[k] * g / 4 for k in ("time_us", "min_us", "max_us") if k in p}))
                    have.add((g, p["size_bytes"]))
        t["points"] += extra
    json.dump(d, open(path, "w"))


def run_case(name, argv, outputs, sig, group, delay=None):
    d = tempfile.mkdtemp(prefix="dcpsim-sig-")
    try:
        if any("{d}/k.json" in a for a in argv):
            big_kineto(os.path.join(d, "k.json"))
        for a in argv:
            if a.startswith("{d}/w") and a.endswith(".json"):
                wide_comm_table(a.replace("{d}", d))
        for o in outputs:
            open(os.path.join(d, o), "wb").write(OLD)
        before = snapshot(d)
        argv = [a.replace("{d}", d) for a in argv]
        p = subprocess.Popen([DCPSIM] + argv, cwd=d, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             start_new_session=True, env=dict(os.environ, ASAN_OPTIONS="detect_leaks=0"))
        deadline = time.time() + 60
        workers = name.startswith(("scan", "replay"))
        if name.startswith("calibrate"):  # it writes nothing until it is done: signal it while it fits
            deadline = time.time() + 1.5
        if delay is not None:
            time.sleep(delay)
        else:
            while time.time() < deadline and p.poll() is None and not started(d, before, p, workers):
                time.sleep(0.05)
            time.sleep(0.3)
        if p.poll() is not None:
            return f"finished before it could be signalled (exit {p.returncode})"
        kids = children_of(p.pid)
        (os.killpg(p.pid, sig) if group else p.send_signal(sig))
        try:
            _, err = p.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            return "did not stop within 20 s"
        errs = []
        if p.returncode != 128 + sig:
            errs.append(f"exit {p.returncode}, expected {128 + sig}")
        lines = err.decode(errors="replace").splitlines()
        progress = ("scan: ", "replay: ", "notice: ", "calibrate")
        last = [l for l in lines if not l.startswith(progress)]
        if last != ["dcpsim: interrupted; nothing written"]:
            errs.append(f"stderr {last[:3]}")
        time.sleep(0.2)
        alive = [k for k in kids if os.path.exists(f"/proc/{k}") and open(f"/proc/{k}/stat").read().split()[2] != "Z"]
        if alive:
            errs.append(f"workers still running: {alive}")
        after = snapshot(d)
        if after != before:
            changed = sorted(set(after.items()) ^ set(before.items()))
            errs.append(f"files changed or left: {[c[0] for c in changed][:6]}")
        return "; ".join(errs)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def worker_reason_case():
    """A scan whose worker is killed (here by the file size limit, as the kernel kills one out of memory): the
    last line says which worker failed and why; no part file is left."""
    d = tempfile.mkdtemp(prefix="dcpsim-sig-")
    try:
        limit = lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))
        p = subprocess.run([DCPSIM, "scan", "--dcp", "1..16", "--batch", "1,64", "--context", "32k", "--strategy",
                            "all", "--jobs", "2", "--out", os.path.join(d, "s.csv")], cwd=d, capture_output=True,
                           preexec_fn=limit, timeout=120, env=dict(os.environ, ASAN_OPTIONS="detect_leaks=0"))
        lines = p.stderr.decode(errors="replace").splitlines()
        errs = []
        if p.returncode != 1:
            errs.append(f"exit {p.returncode}, expected 1")
        if not lines or "worker" not in lines[-1] or "SIGXFSZ" not in lines[-1]:
            errs.append(f"last line {lines[-1:]}")
        if os.listdir(d):
            errs.append(f"left {os.listdir(d)}")
        return "; ".join(errs)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main():
    failures = count = 0
    for name, argv, outputs, sig, group, *delay in CASES:
        if FILTER and FILTER not in name:
            continue
        count += 1
        start = time.time()
        why = run_case(name, argv, outputs, sig, group, *delay)
        name += f" ({time.time() - start:.1f} s)"
        print(("FAIL " if why else "ok   ") + name + (": " + why if why else ""), flush=True)
        failures += bool(why)
    if not FILTER or FILTER in "scan worker reason":
        count += 1
        why = worker_reason_case()
        print(("FAIL " if why else "ok   ") + "scan worker reason" + (": " + why if why else ""), flush=True)
        failures += bool(why)
    print(f"{count - failures}/{count} interruptions clean")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
