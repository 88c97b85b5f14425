#!/usr/bin/env bash
# The direct merge's GPU round (docs/PERFORMANCE.md, "One-kernel direct merge"): its GPU tests (emulated at
# odd shapes, the timeout, NCCL windows of a one-rank communicator or of every GPU, FlashInfer's fused merge),
# compute-sanitizer memcheck and racecheck of the merge kernel, write + combine against a device copy of the
# same bytes (both graph-replayed) at decode shapes, and `hw run --strategy all` at the issue's shape on the
# GPU timeline. Logs and a summary table under OUT.
#   scripts/hw_direct.sh BIN_DIR OUT      (BIN_DIR holds dcpsim and hw_tests, as scripts/hw_carry.sh makes them)
set -uo pipefail
bin=${1:?directory with dcpsim and hw_tests}
out=${2:?output directory}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
"$bin/dcpsim" hw devices | tee "$out/devices.txt"

tests='DirectMerge.*:FlashInferMerge.*:RunnerStrategy.*:Direct.*:DirectLayout.*:FlashInferDcpLayout.*:NcclDeviceApi.*'
tests+=':Timeline.*:Runner.PdlIsExactForEveryStrategy'
limit=${DCPSIM_STAGE_LIMIT:-600}  # seconds per stage, so a short lease still brings every log back
timeout "$limit" "$bin/hw_tests" --gtest_filter="$tests" >"$out/tests.log" 2>&1
echo "hw_tests rc=$?"
grep -E '^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \]|^\[  SKIPPED \]' "$out/tests.log" | tail -20

cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
kernel_tests='DirectMerge.EmulatedMatchesTheReferenceAtOddShapes:DirectMerge.OverNcclWindows'
for tool in memcheck racecheck; do
  [ "$tool" = racecheck ] && kernel_tests='DirectMerge.EmulatedMatchesTheReferenceAtOddShapes'
  timeout "$limit" "$cs" --tool "$tool" --report-api-errors no --error-exitcode 9 "$bin/hw_tests" --gtest_filter="$kernel_tests" \
    >"$out/sanitizer_$tool.txt" 2>&1
  echo "compute-sanitizer $tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitizer_$tool.txt" | tail -1)"
done

# Write + combine of every emulated rank (one launch) against a device copy of the bytes the ranks exchange
# (N·B·H·(2·D + 4): every rank's O and LSE), both as 20 calls per CUDA graph.
json="$out/direct_vs_copy.jsonl"
: >"$json"
printf '%-24s %12s %12s %8s\n' "N B H D" "direct_us" "copy_us" "ratio" >"$out/direct_vs_copy.txt"
for shape in "6 17 96 512" "3 17 96 512" "5 17 80 512" "8 1 128 512" "8 8 128 512" "8 32 128 512" \
  "8 64 128 512" "4 40 32 128" "8 256 128 512"; do
  set -- $shape
  bytes=$(($1 * $2 * $3 * (2 * $4 + 4)))
  d=$("$bin/dcpsim" hw bench --op direct --dcp "$1" --batch "$2" --heads "$3" --head-dim "$4" --graph --graph-calls 20 \
    --reps 30 --json "$json" | awk '{for (i = 1; i < NF; ++i) if ($(i + 1) == "us") {print $i; exit}}')
  c=$("$bin/dcpsim" hw bench --op copy --copy-bytes "$bytes" --graph --graph-calls 20 --reps 30 --json "$json" |
    awk '{for (i = 1; i < NF; ++i) if ($(i + 1) == "us") {print $i; exit}}')
  printf '%-24s %12s %12s %8s\n' "$shape" "$d" "$c" "$(awk -v a="$d" -v b="$c" 'BEGIN {if (b > 0) printf "%.2f", a / b}')" \
    >>"$out/direct_vs_copy.txt"
done
cat "$out/direct_vs_copy.txt"
# Blocks per rank at the issue's shape (auto: as many as stay resident, capped by the work), and N = 1 (the
# kernel's own floor: stores, one flag, one wait, a one-source combine).
for blocks in 4 8 16 32 0; do
  "$bin/dcpsim" hw bench --op direct --dcp 6 --batch 17 --heads 96 --head-dim 512 --graph --graph-calls 20 --reps 30 \
    --blocks "$blocks" --json "$out/direct_blocks.jsonl" | sed "s/^/blocks $blocks: /"
done | tee "$out/direct_blocks.txt"
"$bin/dcpsim" hw bench --op direct --dcp 1 --batch 17 --heads 96 --head-dim 512 --graph --graph-calls 20 --reps 30 |
  tee -a "$out/direct_blocks.txt"

# The step at the issue's shape, every strategy this machine runs, on the GPU timeline (CUPTI), graph and PDL.
for launch in graph pdl; do
  timeout "$limit" "$bin/dcpsim" hw run --emulate --dcp 6 --heads 96 --kv-heads 1 --head-dim 512 --qk-dim 576 --batch 17 \
    --context 8k --strategy all --launch "$launch" --out "$out/run_$launch.pb" --json "$out/run_$launch.json" \
    >"$out/run_$launch.txt" 2>&1
  echo "hw run $launch rc=$?"
  grep -E '^dcp|^  0 |notice|check|step ' "$out/run_$launch.txt" | head -40
done
