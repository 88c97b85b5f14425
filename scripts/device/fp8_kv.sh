#!/usr/bin/env bash
# Issue 33 item 1 on one GPU: `hw run --kv-dtype fp8` (e4m3 KV with one per-tensor scale, vLLM's
# --kv-cache-dtype fp8) on FlashInfer's FP8-KV kernels. Runs, from the repository root with the carried binaries
# (.carry/bin/dcpsim, .carry/bin/hw_tests; scripts/hw_carry.sh builds them):
#   1. the GPU tests Fp8Kv.* (GQA and MLA, emulated N = 2 and 3, exact against the fp64 reference over the
#      dequantized cache; the trace says fp8 with one-byte KV shards) and FlashInferAttention.RunnerEndToEnd (the
#      bf16 path through the same kernels' new templates);
#   2. hw run --emulate, bf16 vs fp8 KV, both on FlashInfer's kernels (--attention flashinfer: the same kernel
#      family, so the pair differs only in the KV type), ag-rs, graph launches, at 32k and 128k, batch 1 and 16:
#      MLA (DeepSeek-V3: H = 128, one KV head, D 512, D_qk 576) at N = 8, and GQA (H = 32, 8 KV heads, D 128) at
#      N = 8; each run's exactness check and its phase medians, a trace (.pb) and JSON per run;
#   3. the refusal of fp8 on dcpsim's kernel (exit 2, one line).
# Everything lands in $OUT/fp8_kv.tgz (re-made after each stage) and $OUT/summary.txt + $OUT/fp8_kv.csv:
# per run the check, the attention phase's median (slowest emulated rank), the step median, the KV bytes a rank
# reads and the attention's achieved GB/s; fp8/bf16 ratios of attention time.
# Expected GPU time: about 2 minutes (16 runs of 2-6 s each, mostly process start, KV generation and the host's
# fp64 check of 2 rows; tests ~20 s), under 3 minutes; every command has a timeout.
# Afterwards, on the CPU machine: `dcpsim validate --measured <run>.pb --profile h100-sxm` (or h200-sxm) prices
# the same steps with 1-byte KV (the trace's scenario says fp8) next to these measurements.
#   OUT=/path scripts/device/fp8_kv.sh [BIN_DIR]
set -uo pipefail
. "$(dirname "$0")/env.sh"
device_job fp8-kv "${1:-}"  # BIN, OUT, W, S, say; NCCL from PyTorch's wheel
save() { cp "$S" "$W/" 2>/dev/null; tar czf "$OUT/fp8_kv.tgz" -C "$W" . 2>/dev/null; }

"$BIN/dcpsim" hw devices >"$W/devices.txt" 2>&1
say "# $(date -u +%FT%TZ) $(head -3 "$W/devices.txt" | tr '\n' ' ')"

start=$SECONDS
timeout 150 "$BIN/hw_tests" --gtest_brief=1 --gtest_filter='Fp8Kv.*:FlashInferAttention.RunnerEndToEnd' \
  >"$W/hw_tests.log" 2>&1
say "hw_tests rc=$? wall=$((SECONDS - start))s $(grep -E '^\[  (PASSED|FAILED)|SKIPPED' "$W/hw_tests.log" | tr '\n' ' ')"
grep -E '^\[  FAILED|Failure|Expected|Which is|check FAILED|rror' "$W/hw_tests.log" | head -16 | tee -a "$S"
save

MLA=(--heads 128 --kv-heads 1 --head-dim 512 --qk-dim 576)
GQA=(--heads 32 --kv-heads 8 --head-dim 128 --qk-dim 128)
run() {  # name, dtype, context, batch, geometry...
  local name=$1 dtype=$2 ctx=$3 batch=$4
  shift 4
  local t0=$SECONDS
  timeout 60 "$BIN/dcpsim" hw run --emulate --dcp 8 --strategy ag-rs --launch graph --attention flashinfer \
    --kv-dtype "$dtype" --context "$ctx" --batch "$batch" --warmup 3 --reps 10 --check-rows 2 \
    --out "$W/$name.pb" --json "$W/$name.json" "$@" >"$W/$name.txt" 2>&1
  local rc=$?
  say "$name rc=$rc wall=$((SECONDS - t0))s $(grep -E 'check (passed|FAILED)|rror|kv-dtype' "$W/$name.txt" | head -2 | cut -c1-150 | tr '\n' ' ')"
  save
}
for geo in mla gqa; do
  for ctx in 32k 128k; do
    for batch in 1 16; do
      for dtype in bf16 fp8; do
        if [ $geo = mla ]; then g=("${MLA[@]}"); else g=("${GQA[@]}"); fi
        run "${geo}_${ctx}_b${batch}_${dtype}" "$dtype" "$ctx" "$batch" "${g[@]}"
      done
    done
  done
done

# fp8 on dcpsim's kernel: refused in one line, exit 2.
timeout 30 "$BIN/dcpsim" hw run --emulate --dcp 2 --context 1k --kv-dtype fp8 --attention dcpsim \
  >"$W/refusal.out" 2>"$W/refusal.err"
say "refusal rc=$? (expect 2) stderr_lines=$(wc -l <"$W/refusal.err"): $(head -c 250 "$W/refusal.err")"

python3 - "$W" "$OUT/fp8_kv.csv" <<'EOF' | tee -a "$S"
import glob, json, os, sys
w, csv = sys.argv[1], sys.argv[2]
rows = {}
for path in sorted(glob.glob(os.path.join(w, "*.json"))):
    name = os.path.basename(path)[:-5]
    try:
        j = json.load(open(path))[0]
    except Exception as e:  # a run that failed wrote none
        print(f"{name}: no JSON ({e})")
        continue
    att = max((p["median_ns"] for p in j.get("phases", []) if p["phase"] == "attention"), default=float("nan"))
    geo, ctx, b, dtype = name.split("_")
    kv_per_token = 576 if geo == "mla" else 2 * 8 * 128
    tokens = int(b[1:]) * int(ctx[:-1]) * 1024 / 8  # one rank's shard
    kv = tokens * kv_per_token * (1 if dtype == "fp8" else 2)
    rows[name] = dict(geo=geo, ctx=ctx, batch=b[1:], dtype=dtype, passed=j["check"]["passed"],
                      worst_bound=j["check"]["worst_bound"], attention_us=att / 1e3,
                      step_us=j["step_median_ns"] / 1e3, kv_mb=kv / 1e6, gbps=kv / att)
cols = ["geo", "ctx", "batch", "dtype", "passed", "worst_bound", "attention_us", "step_us", "kv_mb", "gbps"]
with open(csv, "w") as f:
    f.write(",".join(cols + ["fp8_over_bf16_attention"]) + "\n")
    for name, r in rows.items():
        peer = rows.get(name.replace("_fp8", "_bf16")) if r["dtype"] == "fp8" else None
        ratio = r["attention_us"] / peer["attention_us"] if peer else float("nan")
        f.write(",".join(str(r[c]) for c in cols) + f",{ratio:.3f}\n")
        print(f"{name:22s} check {'ok' if r['passed'] else 'FAILED'} (bound {r['worst_bound']:.2f}) "
              f"attention {r['attention_us']:9.1f} us  step {r['step_us']:9.1f} us  {r['gbps']:7.0f} GB/s"
              + (f"  fp8/bf16 {ratio:.2f}" if peer else ""))
EOF
cp "$OUT/fp8_kv.csv" "$W/" 2>/dev/null
save
echo "results: $OUT/fp8_kv.tgz ($(du -h "$OUT/fp8_kv.tgz" | cut -f1)), $OUT/summary.txt, $OUT/fp8_kv.csv"
