#!/usr/bin/env bash
# On the GPU machine, from the repository root with .carry/ carried (scripts/hw_carry.sh made it): the merge
# kernels' GPU tests, compute-sanitizer memcheck and racecheck on the merge kernels, and the comparison sweep
# (scripts/hw_kernel_compare.sh: dcpsim vs Triton vs FlashInfer). Each stage has a time limit, so one call of a
# few minutes returns whatever finished. $OUT (default /tmp/hw-out) receives results.tgz (every log and JSON
# file) and copies of the summary logs.
#   OUT=... scripts/hw_kernel_device.sh [BIN_DIR] [decode|small] [--variants]
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0   # never NVLink multicast on a shared machine
OUT=${OUT:-/tmp/hw-out}
W=${HW_WORK:-/tmp/hw-kernels}
BIN=${1:-$PWD/.carry/bin}
grid=${2:-decode}
variants=${3:-}
mkdir -p "$OUT" "$W"
nccl=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))' 2>/dev/null)
nccl_lib=$(dirname "$(find "${nccl:-/nonexistent}" -name 'libnccl.so.2' 2>/dev/null | head -1)")
export LD_LIBRARY_PATH=$BIN:$nccl_lib:${LD_LIBRARY_PATH:-}
t0=$SECONDS
stamp() { echo "== $1 at $((SECONDS - t0)) s"; }

"$BIN/dcpsim" hw devices | tee "$W/devices.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw --format=csv >>"$W/devices.txt" 2>&1
python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)' >>"$W/devices.txt" 2>&1

stamp tests
filter='MergeVariants.*:Correct.*:A2a.*:Direct.*:MergeMagnitude.*:Device.Bench*:Runner.RowStamps*:Runner.EveryStrategy*:Runner.PdlIsExact*'
timeout "${TESTS_S:-60}" "$BIN/hw_tests" --gtest_brief=1 --gtest_filter="$filter" >"$W/hw_tests.log" 2>&1
echo "hw_tests rc=$?" >>"$W/hw_tests.log"
grep -E '^\[  (PASSED|FAILED)|FAILED  \]|rc=' "$W/hw_tests.log" | tail -8

stamp sanitizers
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
sfilter='MergeVariants.*:Direct.MatchesThe*:MergeMagnitude.*'
{ echo "# compute-sanitizer --tool memcheck hw_tests --gtest_filter=$sfilter"
  timeout "${MEMCHECK_S:-60}" "$cs" --tool memcheck --leak-check full "$BIN/hw_tests" --gtest_brief=1 \
    --gtest_filter="$sfilter" 2>&1; echo "rc=$?"; } >"$W/memcheck.txt"
{ echo "# compute-sanitizer --tool racecheck hw_tests --gtest_filter=$sfilter"
  timeout "${RACECHECK_S:-45}" "$cs" --tool racecheck --racecheck-report all "$BIN/hw_tests" --gtest_brief=1 \
    --gtest_filter="$sfilter" 2>&1; echo "rc=$?"; } >"$W/racecheck.txt"
grep -hE 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED|rc=' "$W/memcheck.txt" "$W/racecheck.txt"
stamp compare
timeout "${COMPARE_S:-150}" scripts/hw_kernel_compare.sh "$BIN/dcpsim" "$W/compare" "$grid" $variants 2>&1 \
  | tee "$W/compare.txt" | grep -vE '^  \(' | tail -60

stamp done
(cd "$W" && tar czf "$OUT/results.tgz" . && cp -f hw_tests.log memcheck.txt racecheck.txt compare.txt "$OUT/" 2>/dev/null)
[ -f "$W/compare/table.md" ] && cp -f "$W/compare/table.md" "$OUT/"
exit 0
