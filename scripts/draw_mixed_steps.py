#!/usr/bin/env python3
"""Draws decode steps whose rows have mixed context lengths, as a serving batch has them, for one-GPU
emulation: each row's context is a request of a real trace (its input length plus a uniform share of its
output already decoded). Writes DIR/steps.txt (scripts/device/steps.sh's list: "NAME FLAGS") and one
contexts file per step (DIR/NAME.ctx, `dcpsim hw run --contexts-file`). Deterministic in --seed.

  scripts/draw_mixed_steps.py --seed S --steps 12 --out traces/measured/h100-mixed-1 \
      [--trace tests/data/mooncake_conversation_trace.no_hash_ids.jsonl.gz] [--max-kv-gb 24]
"""
import argparse
import gzip
import json
import os
import random
import sys

# (name, query heads, KV heads, head dim, qk dim) of the model; per rank after the query all-gather the
# heads are heads x N / TP (vLLM's DCP), KV heads too for GQA (at least one).
MODELS = [("dsv3", 128, 1, 512, 576), ("kimi", 64, 1, 512, 576), ("llama70b", 64, 8, 128, 128)]


def fail(msg):
    print(f"draw_mixed_steps: {msg}", file=sys.stderr)
    sys.exit(2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--out", required=True)
    ap.add_argument("--trace", default="tests/data/mooncake_conversation_trace.no_hash_ids.jsonl.gz")
    ap.add_argument("--max-kv-gb", type=float, default=24.0, help="KV of all ranks together, at most (one GPU)")
    a = ap.parse_args()
    if a.steps < 1:
        fail("--steps must be >= 1")
    if not a.max_kv_gb > 0:
        fail("--max-kv-gb must be > 0")
    try:
        with gzip.open(a.trace, "rt") as f:
            reqs = [json.loads(line) for line in f if line.strip()]
        reqs = [(int(r["input_length"]), int(r["output_length"])) for r in reqs]
    except (OSError, EOFError, ValueError, KeyError, TypeError) as e:
        fail(f"{a.trace}: not a gzipped JSON-lines request trace with input_length and output_length ({e})")
    reqs = [(i, o) for i, o in reqs if i > 0 and o >= 0]
    if not reqs:
        fail(f"{a.trace}: no request with a positive input_length")
    if os.path.exists(os.path.join(a.out, "steps.txt")):
        fail(f"{a.out}/steps.txt exists (a drawn set is never redrawn in place)")
    try:
        os.makedirs(a.out, exist_ok=True)
    except OSError as e:
        fail(f"{a.out}: {e}")
    rng = random.Random(a.seed)
    lines = []
    for i in range(a.steps):
        name, heads, kv, d, dqk = MODELS[i % len(MODELS)]
        n = rng.choice([2, 3, 4, 5, 6, 7, 8])
        tp = rng.choice([8, 16])
        h = heads * n // tp
        hkv = 1 if kv == 1 else max(1, kv * n // tp)
        if h < 1 or h % hkv:
            h, hkv = heads * n // 8, (1 if kv == 1 else n)
        b = rng.randint(4, 160)
        launch = rng.choice(["graph", "pdl", "eager"])
        kv_bytes_per_token = (dqk if kv == 1 else 2 * d) * (kv if kv > 1 else 1) * 2  # all ranks' KV heads
        ctx = []
        for _ in range(b):
            inp, outp = rng.choice(reqs)
            ctx.append(inp + rng.randint(0, max(outp, 0)))
        while len(ctx) > 1 and sum(ctx) * kv_bytes_per_token > a.max_kv_gb * 1e9:
            ctx.pop()
        if sum(ctx) * kv_bytes_per_token > a.max_kv_gb * 1e9:
            fail(f"--max-kv-gb {a.max_kv_gb}: one request's KV does not fit")
        tag = f"{name}_n{n}_h{h}_b{len(ctx)}_mixed{i}_{launch}"
        path = os.path.join(a.out, tag + ".ctx")
        try:
            with open(path, "w") as f:
                f.write("\n".join(str(c) for c in ctx) + "\n")
        except OSError as e:
            fail(f"{path}: {e}")
        lines.append(f"{tag} --dcp {n} --heads {h} --kv-heads {hkv} --head-dim {d} --qk-dim {dqk} "
                     f"--contexts-file {path} --launch {launch} --check-rows 2")
    with open(os.path.join(a.out, "steps.txt"), "w") as f:
        f.write(f"# Mixed-context steps drawn by scripts/draw_mixed_steps.py --seed {a.seed} --steps {a.steps} "
                f"--out {a.out} (rows from {a.trace})\n")
        f.write("# name  flags (each measured as: dcpsim hw run --emulate --strategy all --warmup 3 --reps 10 "
                "--seed 7 FLAGS)\n")
        f.write("\n".join(lines) + "\n")
    print(f"wrote {a.out}/steps.txt ({len(lines)} steps)")


if __name__ == "__main__":
    main()
