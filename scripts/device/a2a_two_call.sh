#!/usr/bin/env bash
# The all-to-all in two calls (--strategy a2a-2call, vLLM's --dcp-comm-backend a2a) on the GPU machine, in one
# call of about 4 minutes on one GPU (more GPUs: NCCL across them too):
#   1. its GPU tests and those it shares kernels with: the split pack against the packed reference, the
#      emulated runner's exactness over every strategy (N = 1, 2, 3, 5; GQA and MLA; both LSE bases; padding),
#      its four phases, and, with two or more GPUs, NCCL across them (RunnerStrategy.CollectiveStrategiesAcrossGpus);
#   2. compute-sanitizer memcheck over the split pack and the two-call runner test;
#   3. hw run --emulate of DeepSeek-V3's DCP 8 step (128 heads, 512 latent, batch 64, 32k) with a2a and
#      a2a-2call side by side under graph and eager launches (phase medians: all_to_all_lse is the second call),
#      and with several GPUs the same over NCCL (devices 0..G-1, one thread each, no --emulate);
#   4. the simulator's view of the same scenarios cannot run there (no SimGrid): compare afterwards with
#      `dcpsim validate --measured a2a_graph.pb --profile h200-sxm` on the CPU machine.
# Run from the repository root with the carried runner (scripts/hw_carry.sh): .carry/bin/dcpsim, .carry/bin/hw_tests.
# Everything lands in $OUT/a2a_two_call.tgz, re-made after each stage (a run cut short still returns its logs);
# a short summary is printed.
#   scripts/device/a2a_two_call.sh [BIN_DIR=.carry/bin] [OUT_DIR=$OUT]
set -uo pipefail
BIN=$(cd "${1:-.carry/bin}" && pwd)
OUT=${2:-${OUT:?set OUT or pass OUT_DIR}}
W=$(mktemp -d /tmp/a2a-two-call.XXXXXX)
mkdir -p "$OUT"
. "$(dirname "$0")/env.sh"
device_env  # NCCL from PyTorch's wheel, no NVLink multicast
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
save() { tar czf "$OUT/a2a_two_call.tgz" -C "$W" . 2>/dev/null; }

"$BIN/dcpsim" hw devices >"$W/devices.txt" 2>&1
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
echo "gpus=$gpus $(head -2 "$W/devices.txt" | tr '\n' ' ')"

filter='A2a.*:Runner.EveryStrategyIsExactInEmulation:RunnerStrategy.TwoCall*:RunnerStrategy.CollectiveStrategiesAcrossGpus'
timeout 240 "$BIN/hw_tests" --gtest_brief=1 --gtest_filter="$filter" >"$W/hw_tests.log" 2>&1
echo "hw_tests rc=$? $(grep -E '^\[  (PASSED|FAILED)|SKIPPED' "$W/hw_tests.log" | tr '\n' ' ')"
grep -E '^\[  FAILED|Failure|rror' "$W/hw_tests.log" | head -20
save

mfilter='A2a.SplitPack*:RunnerStrategy.TwoCall*'
{ echo "# compute-sanitizer --tool memcheck --leak-check full hw_tests --gtest_filter=$mfilter"
  timeout 150 "$cs" --tool memcheck --leak-check full "$BIN/hw_tests" --gtest_brief=1 --gtest_filter="$mfilter" 2>&1; } \
  >"$W/memcheck.txt"
echo "memcheck: $(grep -E 'ERROR SUMMARY|PASSED|FAILED' "$W/memcheck.txt" | tr '\n' ' ')"
save

run() {  # name, then hw run flags
  local name=$1
  shift
  timeout 60 "$BIN/dcpsim" hw run --heads 128 --head-dim 512 --batch 64 --context 32k \
    --strategy a2a,a2a-2call --out "$W/$name.pb" --json "$W/$name.json" "$@" >"$W/$name.txt" 2>&1
  echo "$name rc=$? $(grep -E 'a2a|all_to_all|check|rror' "$W/$name.txt" | tr -s ' ' | head -12 | tr '\n' ' ')"
  save
}
run a2a_graph --emulate --dcp 8 --launch graph
run a2a_eager --emulate --dcp 8 --launch eager
if [ "$gpus" -ge 2 ]; then
  n=$((gpus > 8 ? 8 : gpus))
  run a2a_nccl_graph --dcp "$n" --launch graph  # one thread per GPU, devices 0..n-1
fi
echo "results: $OUT/a2a_two_call.tgz ($(du -h "$OUT/a2a_two_call.tgz" | cut -f1))"
