#!/usr/bin/env bash
# Issue 33's leftover on one Hopper GPU: FP8-KV attention tables. `hw sweep --kv-dtype fp8` times FlashInfer's
# FP8-KV kernels (e4m3 cache with one per-tensor scale, generated as `hw run --kv-dtype fp8` does; query and
# output bf16) over the grids the simulator reads an fp8 scenario's attention from. Runs, from the repository
# root with the carried binaries (.carry/bin/dcpsim, .carry/bin/hw_tests; scripts/hw_carry.sh builds them):
#   1. the tests SweepGridFp8.* and SweepGpuFp8.* (a small fp8 sweep: keys "mla qk576 d512 fp8 flashinfer" and
#      "gqa qk128 d128 g4 fp8 flashinfer", every point priced exactly by its table, an fp8 scenario at a
#      measured point priced from it, about 10 s);
#   2. the sweeps, one file each, most useful first, so a stop at the budget loses the least:
#      MLA (FlashInfer's sm_90a kernel): H in {16, 32, 48, 64, 96, 128} (the bf16 family's 11 head counts thinned),
#      GQA decode at G = 8, 4, 1: H in {8, 16, 32, 64, 128} (divisible by G);
#      rows {1, 2, 3, 4, 6, ..., 192, 256} and tokens {128, 256, 384, ..., 16k, 32k, 64k, 128k} per row, as the
#      bf16 tables (analysis/src/calibration_steps.cc); KV caches over 4 GB skipped (as calibrate does);
#      3 warm-ups and 10 timed graph replays per point (as calibrate does);
#   3. per file: its points, and the median fp8/bf16 ratio over the points it shares with the built-in bf16
#      table of the same geometry (MLA: FlashInfer's bf16 kernel, the same family; GQA: dcpsim's bf16 kernel,
#      the runner's bf16 choice).
# Writes $OUT/<gpu>-attention-mla-fp8.json, $OUT/<gpu>-attention-gqa-g{8,4,1}-fp8.json (<gpu>: h100-sxm on an
# H100, h200-sxm on an H200), $OUT/summary.txt and $OUT/fp8_tables_logs.tgz (stderr, test log).
# Expected GPU time: about 2 minutes (MLA 1,578 points, GQA 1,262 + 1,205 + 1,036; `hw sweep --dry-run
# --profile h100-sxm` estimates 29 s and 18 + 19 + 20 s of sweeping, with FlashInfer 0.7.2's measured fp8
# slowdown, plus ~15 s of tests and process starts), under 4 minutes: a sweep still running at
# FP8_TABLES_BUDGET_S (default 220 s) since the start is stopped (its file is not written) and the later ones
# are not started.
# Afterwards, on the CPU machine: gzip the JSON files into models/tables/ (`gzip -9n`: X.json.gz, found as
# X.json) and list them in the profile's "tables" (models/profiles/<gpu>.json), then `dcpsim simulate ...
# --kv-dtype fp8` prices fp8 attention from them (its summary says "attention from the profile's fp8-KV
# tables").
#   OUT=/path scripts/device/fp8_tables.sh [BIN_DIR]
set -uo pipefail
. "$(dirname "$0")/env.sh"
device_job fp8-tables "${1:-}"  # BIN, OUT, W, S, say; NCCL from PyTorch's wheel
BUDGET=${FP8_TABLES_BUDGET_S:-220}
save() { tar czf "$OUT/fp8_tables_logs.tgz" -C "$W" . 2>/dev/null; }
start=$SECONDS

name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
case "$name" in
  *H100*) gpu=h100-sxm ;;
  *H200*) gpu=h200-sxm ;;
  *) gpu=$(echo "${name:-gpu}" | tr 'A-Z ' 'a-z-' | sed 's/nvidia-//; s/[^a-z0-9-]//g') ;;
esac
"$BIN/dcpsim" hw devices >"$W/devices.txt" 2>&1
say "# $(date -u +%FT%TZ) $name -> $gpu; $(head -3 "$W/devices.txt" | tr '\n' ' ' | cut -c1-200)"

timeout 90 "$BIN/hw_tests" --gtest_brief=1 --gtest_filter='SweepGridFp8.*:SweepGpuFp8.*' >"$W/hw_tests.log" 2>&1
say "hw_tests rc=$? wall=$((SECONDS - start))s $(grep -E '^\[  (PASSED|FAILED)|SKIPPED' "$W/hw_tests.log" | tr '\n' ' ')"
grep -E '^\[  FAILED|Failure|Expected|Which is|rror' "$W/hw_tests.log" | head -12 | tee -a "$S"
save

ROWS=1,2,3,4,6,8,12,16,24,32,48,64,96,128,192,256
TOKENS=128,256,384,512,768,1k,1536,2k,3k,4k,6k,8k,12k,16k,32k,64k,128k
date=$(date -u +%F)
sweep() {  # file suffix, geometry, heads
  local file=$OUT/$gpu-attention-$1-fp8.json left=$((BUDGET - (SECONDS - start))) t0=$SECONDS
  if [ "$left" -lt 15 ]; then
    say "$1: not swept (the ${BUDGET} s budget is spent)"
    return
  fi
  timeout "$left" "$BIN/dcpsim" hw sweep --kernels attention --kv-dtype fp8 --attention flashinfer \
    --geometry "$2" --heads "$3" --batch "$ROWS" --tokens "$TOKENS" --max-kv-gb 4 --warmup 3 --reps 10 \
    --date "$date" --out "$file" >"$W/$1.out" 2>"$W/$1.err"
  local rc=$?
  say "$1 rc=$rc wall=$((SECONDS - t0))s $(tail -1 "$W/$1.out" | cut -c1-160) $(tail -c 300 "$W/$1.err" | tr '\r' '\n' | grep -E 'rror|dcpsim:' | tail -1)"
  save
}
sweep mla mla 16,32,48,64,96,128
sweep gqa-g8 gqa:8 8,16,32,64,128
sweep gqa-g4 gqa:4 8,16,32,64,128
sweep gqa-g1 gqa:1 8,16,32,64,128

python3 - "$OUT" "$gpu" <<'EOF' | tee -a "$S"
import glob, gzip, json, os, statistics, sys
out, gpu = sys.argv[1], sys.argv[2]
for path in sorted(glob.glob(os.path.join(out, f"{gpu}-attention-*-fp8.json"))):
    ref = os.path.join("models/tables", os.path.basename(path).replace("-fp8", ""))  # the built-in bf16 table
    peers = (json.load(open(ref)) if os.path.exists(ref) else
             json.load(gzip.open(ref + ".gz", "rt")) if os.path.exists(ref + ".gz") else {"tables": []})["tables"]
    for t in json.load(open(path))["tables"]:
        line = f"{os.path.basename(path)}: [{t['key']}] {len(t['points'])} points"
        bf16 = t["key"].replace(" fp8 flashinfer", " bf16 ")
        for r in (r for r in peers if r["key"].startswith(bf16)):
            have = {tuple(p["at"]): p["median_ns"] for p in r["points"]}
            ratios = sorted(p["median_ns"] / have[tuple(p["at"])] for p in t["points"] if tuple(p["at"]) in have)
            if ratios:
                n = len(ratios)
                line += (f"; fp8/bf16 over {n} shared points: median {statistics.median(ratios):.2f}, "
                         f"p10 {ratios[n // 10]:.2f}, p90 {ratios[(9 * n) // 10]:.2f} against [{r['key']}]")
        print(line)
EOF
save
say "done in $((SECONDS - start))s: $(ls "$OUT" | tr '\n' ' ')"
