#!/usr/bin/env python3
"""Memory is bounded and estimated before work starts (issue 36). Each reader runs under an address-space
limit (ulimit -v) a little above what dcpsim itself maps and below what its input needs: it must refuse in
one line, exit 2, naming its estimate and the limit, having written nothing. What dcpsim did before (read
until an allocation failed: "error: out of memory", exit 1, or a crash inside a library) breaks these. The same
input under a limit large enough must succeed, so the estimates are not merely pessimistic, and a gzip whose
trailer understates its size is cut while it is read at what the limit allows.
Skipped under AddressSanitizer (it reserves terabytes of address space).
Usage: memory_bounds.py DCPSIM SOURCE_DIR"""
import gzip, json, os, random, re, resource, shutil, subprocess, sys, tempfile

DCPSIM, SRC = sys.argv[1], sys.argv[2]
IMPORT_SCENARIO = ["--dcp", "2", "--heads", "16", "--head-dim", "512", "--kv-heads", "1", "--batch", "1",
                   "--context", "1k", "--strategy", "ag-rs"]
MB = 1 << 20


def sanitized():
    deps = subprocess.run(["ldd", DCPSIM], capture_output=True, text=True).stdout
    return "libasan" in deps or "libubsan" in deps


def base_address_space():
    """The address space dcpsim maps for itself (libraries, the built-in profiles), from --memory-report."""
    p = subprocess.run([DCPSIM, "profiles", "--memory-report"], capture_output=True, text=True)
    m = re.search(r"address space ([0-9.]+) GB", p.stderr)
    return float(m.group(1)) * 1e9


def partials(path, n=8, b=64, h=32, d=256):
    random.seed(1)
    with open(path, "w") as f:
        f.write('{"lse":' + json.dumps([[[random.uniform(-5, 5) for _ in range(h)] for _ in range(b)] for _ in range(n)]))
        f.write(',"out":[')
        for r in range(n):
            f.write(("," if r else "") + json.dumps(
                [[[round(random.uniform(-1, 1), 5) for _ in range(d)] for _ in range(h)] for _ in range(b)]))
        f.write("]}")


def kineto(path, events, gz=False):
    text = '{"traceEvents":[' + ",".join(json.dumps(
        {"ph": "X", "cat": "kernel", "name": "kernel_%d" % (i % 40), "ts": 10 + 3 * i, "dur": 2, "pid": 0, "tid": 7,
         "args": {"device": 0, "stream": 7, "correlation": i}}) for i in range(events)) + "]}"
    if gz:
        # Members of ~1 MB, and a last member whose trailer says 1 kB: the file understates its size.
        raw = text.encode()
        with open(path, "wb") as f:
            for i in range(0, len(raw), MB):
                f.write(gzip.compress(raw[i:i + MB], compresslevel=1))
    else:
        open(path, "w").write(text)


def run(argv, limit, cwd):
    def apply():
        resource.setrlimit(resource.RLIMIT_AS, (int(limit), int(limit)))
    return subprocess.run([DCPSIM] + argv, capture_output=True, text=True, cwd=cwd, preexec_fn=apply, timeout=300)


def main():
    if sanitized():
        print("skipped: AddressSanitizer build (no ulimit -v)")
        return 0
    base = base_address_space()
    d = tempfile.mkdtemp(prefix="dcpsim-mem-")
    failures = count = 0
    try:
        partials(os.path.join(d, "p.json"))           # ~44 MB: the merge holds ~120 MB
        kineto(os.path.join(d, "k.json"), 150000)     # ~25 MB: the import holds ~100 MB
        kineto(os.path.join(d, "k.json.gz"), 150000, gz=True)
        subprocess.run([DCPSIM, "import", "--kineto", "k.json"] + IMPORT_SCENARIO + ["--out", "t.pb"], cwd=d,
                       check=True, capture_output=True)
        # name, argv, output, limit above dcpsim's own address space, expected exit, text the message holds
        cases = [
            ("merge under a 64 MB margin", ["merge", "--input", "p.json", "--out", "m.json"], "m.json", 64 * MB, 2,
             "merge needs an estimated"),
            ("merge with room", ["merge", "--input", "p.json", "--out", "m.json"], "m.json", 600 * MB, 0, "merged"),
            ("import under a 48 MB margin", ["import", "--kineto", "k.json"] + IMPORT_SCENARIO + ["--out", "o.pb"],
             "o.pb", 48 * MB, 2, "import needs an estimated"),
            ("import with room", ["import", "--kineto", "k.json"] + IMPORT_SCENARIO + ["--out", "o.pb"], "o.pb",
             500 * MB, 0, "imported"),
            ("import of a gzip that understates its size", ["import", "--kineto", "k.json.gz"] + IMPORT_SCENARIO +
             ["--out", "g.pb"], "g.pb", 60 * MB, 2, "bytes per input byte"),
            ("export under a 48 MB margin", ["export", "--chrome", "c.json", "t.pb"], "c.json", 48 * MB, 2,
             "export needs an estimated"),
            ("validate under a 32 MB margin", ["validate", "--measured", "t.pb"], None, 32 * MB, 2,
             "validate needs an estimated"),
        ]
        for name, argv, out, margin, code, text in cases:
            count += 1
            p = run(argv, base + margin, d)
            lines = p.stderr.splitlines()
            errs = []
            if p.returncode != code:
                errs.append(f"exit {p.returncode}, expected {code}")
            if code != 0 and len(lines) != 1:
                errs.append(f"{len(lines)} stderr lines")
            message = (p.stderr + p.stdout) if code == 0 else p.stderr
            if text not in message:
                errs.append(f"no '{text}' in {lines[-1:] or p.stdout[-200:]}")
            if code != 0 and out and os.path.exists(os.path.join(d, out)):
                errs.append(f"{out} written")
            leftovers = [f for f in os.listdir(d) if f.startswith(".")]
            if leftovers:
                errs.append(f"left {leftovers}")
            print(("FAIL " if errs else "ok   ") + name + (": " + "; ".join(errs) if errs else ""), flush=True)
            failures += bool(errs)
            if out and os.path.exists(os.path.join(d, out)):
                os.remove(os.path.join(d, out))
    finally:
        shutil.rmtree(d, ignore_errors=True)
    print(f"{count - failures}/{count} memory bounds held")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
