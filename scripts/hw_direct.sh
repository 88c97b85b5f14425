#!/usr/bin/env bash
# The direct merge's GPU round (docs/PERFORMANCE.md, "One-kernel direct merge"): its GPU tests (emulated at
# odd shapes, the timeout, NCCL windows of a one-rank communicator or of every GPU, FlashInfer's fused merge),
# compute-sanitizer memcheck and racecheck of the merge kernel, write + combine against a device copy of the
# same bytes (both graph-replayed) at decode shapes, and `hw run --strategy all` at the issue's shape on the
# GPU timeline. Logs and a summary table under OUT.
#   scripts/hw_direct.sh BIN_DIR OUT      (BIN_DIR holds dcpsim and hw_tests, as scripts/hw_carry.sh makes them)
# SKIP_SANITIZERS=1 leaves compute-sanitizer out; DIRECT_VARIANTS="chunk grid" times only those kernels.
set -uo pipefail
bin=${1:?directory with dcpsim and hw_tests}
out=${2:?output directory}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
"$bin/dcpsim" hw devices | tee "$out/devices.txt"

tests='DirectMerge.*:DirectMerge/*:FlashInferMerge.*:RunnerStrategy.*:Direct.*:DirectLayout.*:FlashInferDcpLayout.*:NcclDeviceApi.*'
tests+=':Timeline.*:Runner.PdlIsExactForEveryStrategy'
limit=${DCPSIM_STAGE_LIMIT:-600}  # seconds per stage, so a short lease still brings every log back
timeout "$limit" "$bin/hw_tests" --gtest_filter="$tests" >"$out/tests.log" 2>&1
echo "hw_tests rc=$?"
grep -E '^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \]|^\[  SKIPPED \]' "$out/tests.log" | tail -20

cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
kernel_tests='DirectMerge/DirectKernels.*:DirectMerge.OverNcclWindows'
for tool in memcheck racecheck; do
  [ -n "${SKIP_SANITIZERS:-}" ] && break
  [ "$tool" = racecheck ] && kernel_tests='DirectMerge/DirectKernels.*'
  timeout "$limit" "$cs" --tool "$tool" --report-api-errors no --error-exitcode 9 "$bin/hw_tests" --gtest_filter="$kernel_tests" \
    >"$out/sanitizer_$tool.txt" 2>&1
  echo "compute-sanitizer $tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitizer_$tool.txt" | tail -1)"
done

# Write + combine of every emulated rank (one launch) against a device copy of the bytes the ranks exchange
# (N·B·H·(2·D + 4): every rank's O and LSE), both as 20 calls per CUDA graph; every kernel of the protocol
# (chunk: per-chunk flags, the default, device-scope here, its loads in one round where they fit; chunk-staged:
# the same with the sends and combines in rounds of four; chunk-sys: chunk at system scope, as across GPUs;
# grid: one flag per source).
variants=${DIRECT_VARIANTS:-chunk chunk-staged chunk-sys grid}
json="$out/direct_vs_copy.jsonl"
: >"$json"
us_of() { awk '{for (i = 1; i < NF; ++i) if ($(i + 1) == "us") {print $i; exit}}'; }
{
  printf '%-16s' "N B H D"
  for v in $variants; do printf ' %12s' "${v}_us"; done
  printf ' %10s' copy_us
  for v in $variants; do printf ' %12s' "$v/c"; done
  printf '\n'
} >"$out/direct_vs_copy.txt"
for shape in "6 17 96 512" "3 17 96 512" "5 17 80 512" "8 1 128 512" "8 8 128 512" "8 32 128 512" \
  "8 64 128 512" "4 40 32 128" "8 256 128 512" "2 1 16 512" "4 16 64 128"; do
  set -- $shape
  bytes=$(($1 * $2 * $3 * (2 * $4 + 4)))
  t=()
  for v in $variants; do
    t+=("$("$bin/dcpsim" hw bench --op direct --variant $v --dcp $1 --batch $2 --heads $3 --head-dim $4 --graph \
      --graph-calls 20 --reps 30 --json "$json" | us_of)")
  done
  c=$("$bin/dcpsim" hw bench --op copy --copy-bytes "$bytes" --graph --graph-calls 20 --reps 30 --json "$json" | us_of)
  ratio() { awk -v a="$1" -v b="$c" 'BEGIN {if (b > 0) printf "%.2f", a / b}'; }
  {
    printf '%-16s' "$shape"
    for x in "${t[@]}"; do printf ' %12s' "$x"; done
    printf ' %10s' "$c"
    for x in "${t[@]}"; do printf ' %12s' "$(ratio "$x")"; done
    printf '\n'
  } >>"$out/direct_vs_copy.txt"
done
cat "$out/direct_vs_copy.txt"
# Blocks per rank at the issue's shape (auto: one per chunk, as many as stay resident), and N = 1 (the
# kernel's own floor: stores, its flags, one wait, a one-source combine).
for v in $variants; do
  for blocks in 4 8 16 32 0; do
    "$bin/dcpsim" hw bench --op direct --variant $v --dcp 6 --batch 17 --heads 96 --head-dim 512 --graph --graph-calls 20 \
      --reps 30 --blocks "$blocks" --json "$out/direct_blocks.jsonl" | sed "s/^/$v blocks $blocks: /"
  done
  "$bin/dcpsim" hw bench --op direct --variant $v --dcp 1 --batch 17 --heads 96 --head-dim 512 --graph --graph-calls 20 \
    --reps 30 | sed "s/^/$v N=1: /"
done | tee "$out/direct_blocks.txt"

# The step at the issue's shape, every strategy this machine runs, on the GPU timeline (CUPTI), graph and PDL.
for launch in graph pdl; do
  timeout "$limit" "$bin/dcpsim" hw run --emulate --dcp 6 --heads 96 --kv-heads 1 --head-dim 512 --qk-dim 576 --batch 17 \
    --context 8k --strategy all --launch "$launch" --out "$out/run_$launch.pb" --json "$out/run_$launch.json" \
    >"$out/run_$launch.txt" 2>&1
  echo "hw run $launch rc=$?"
  grep -E '^dcp|^  0 |notice|check|step ' "$out/run_$launch.txt" | head -40
done
