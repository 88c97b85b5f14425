#!/usr/bin/env bash
# Run on the GPU machine from the repository root, with .carry/ carried (scripts/hw_carry.sh made it): the GPU
# tests, compute-sanitizer memcheck and racecheck, the kernel benchmarks, the PyTorch comparison and the measured
# trace sweep. Logs go to a work folder; $OUT (default /tmp/hw-out) receives at most 8 files: results.tgz (every
# log and JSON file), traces.tgz (the sweep), and copies of the main logs. The last lines printed are a summary.
#   scripts/hw_device.sh [tests] [sanitize] [bench] [torch] [stamps] [timeline] [sweep]  (no argument: all)
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0   # never NVLink multicast on a shared machine
OUT=${OUT:-/tmp/hw-out}
W=${HW_WORK:-/tmp/hw-work}
mkdir -p "$OUT" "$W"
BIN=$PWD/.carry/bin
nccl=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))' 2>/dev/null)
nccl_lib=$(dirname "$(find "${nccl:-/}" / -name 'libnccl.so.2' 2>/dev/null | head -1)")
export LD_LIBRARY_PATH=$BIN:$nccl_lib:${LD_LIBRARY_PATH:-}
stages=${*:-tests sanitize bench torch stamps timeline sweep}
has() { [[ " $stages " == *" $1 "* ]]; }
summary=()

"$BIN/dcpsim" hw devices | tee "$W/devices.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw --format=csv >>"$W/devices.txt" 2>&1

if has tests; then
  "$BIN/hw_tests" --gtest_brief=1 2>&1 | tee "$W/hw_tests.log" | tail -5
  summary+=("tests: $(grep -E '^\[  (PASSED|FAILED)' "$W/hw_tests.log" | tr '\n' ' ')")
fi

if has sanitize; then
  cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
  filter='Attention.StridedOutput*:Attention.SplitCount*:Correct.*:A2a.*:Direct.MatchesThe*:Runner.WritesATraceSection:Runner.RowStamps*:Runner.PdlIsExact*'
  { echo "# compute-sanitizer --tool memcheck hw_tests --gtest_filter=$filter"
    "$cs" --tool memcheck --leak-check full "$BIN/hw_tests" --gtest_brief=1 --gtest_filter="$filter" 2>&1; } \
    | tee "$W/memcheck.txt" | tail -3
  { echo "# compute-sanitizer --tool racecheck hw_tests --gtest_filter=$filter"
    "$cs" --tool racecheck --racecheck-report all "$BIN/hw_tests" --gtest_brief=1 --gtest_filter="$filter" 2>&1; } \
    | tee "$W/racecheck.txt" | tail -3
  summary+=("memcheck: $(grep -E 'ERROR SUMMARY' "$W/memcheck.txt" | tail -1)")
  summary+=("racecheck: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$W/racecheck.txt" | tail -1)")
fi

if has bench; then
  scripts/hw_bench.sh "$BIN/dcpsim" "$W/bench.jsonl" 2>&1 | tee "$W/bench.txt"
fi

if has torch; then
  python3 scripts/hw_torch_correction.py "$W/torch.jsonl" 2>&1 | tee "$W/torch.txt"
fi

if has stamps; then
  # What --row-stamps costs: the sweep's instrumented case with and without stamps (kernel phases, median µs).
  for flags in "" "--row-stamps" "--padded-rows 4" "--row-stamps --padded-rows 4"; do
    echo "## flags: ${flags:-none}" >>"$W/stamps.txt"
    "$BIN/dcpsim" hw run --emulate --strategy ag-rs --dcp 3 --heads 48 --kv-heads 1 --head-dim 512 --qk-dim 576 \
      --batch 64 --context 1k --launch graph --warmup 3 --reps 10 --seed 7 $flags 2>&1 | tee -a "$W/stamps.txt" \
      | grep -E 'correct|attention|step' | head -4
  done
  summary+=("stamps: see stamps.txt")
fi

if has timeline; then
  scripts/hw_timeline.sh "$BIN/dcpsim" "$W/timeline" 2>&1 | tee "$W/timeline.txt"
  summary+=("timeline: see timeline.txt")
fi

if has sweep; then
  scripts/hw_sweep.sh "$BIN/dcpsim" "$W/traces" 2>&1 | tee "$W/sweep.log" | tail -5
  scripts/hw_sweep.sh "$BIN/dcpsim" "$W/holdout" holdout 2>&1 | tee -a "$W/sweep.log" | tail -5
  (cd "$W" && tar czf "$OUT/traces.tgz" traces holdout)
  summary+=("sweep: $(grep -c '^ok ' "$W/sweep.log") ok, $(grep -c '^FAIL ' "$W/sweep.log") failed")
fi

(cd "$W" && tar czf "$OUT/results.tgz" --exclude=traces . && cp -f hw_tests.log memcheck.txt racecheck.txt \
  bench.txt torch.txt stamps.txt timeline.txt "$OUT/" 2>/dev/null)
echo "==== summary"
for line in "${summary[@]}"; do echo "$line"; done
