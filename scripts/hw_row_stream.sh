#!/usr/bin/env bash
# The row-streaming merge on one GPU, in one call: its GPU tests (and those of the runner, the attention and
# the other merges, which share kernels and code with it), the issue-11 scenario (N = 8, B = 64, H = 128,
# D = 512, MLA, 32k context, emulated) under graph, PDL and eager launches with the direct merge beside it,
# the same three launches with the early tail (--row-early-tail) and its probe, and compute-sanitizer memcheck
# and racecheck over the tests that exercise every row-stream kernel.
# Everything lands in OUT/results.tgz, re-made after each stage (so a run cut short still returns its logs).
#   [SKIP_TESTS=1] scripts/hw_row_stream.sh BIN_DIR OUT_DIR [context]
set -uo pipefail
BIN=$(cd "$1" && pwd)
OUT=$2
CTX=${3:-32k}
W=$(mktemp -d /tmp/hw-row-stream.XXXXXX)
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0
nccl=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))' 2>/dev/null)
export LD_LIBRARY_PATH=$BIN:$(dirname "$(find "${nccl:-/}" -name 'libnccl.so.2' 2>/dev/null | head -1)"):${LD_LIBRARY_PATH:-}
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
save() { tar czf "$OUT/results.tgz" -C "$W" . 2>/dev/null; }

"$BIN/dcpsim" hw devices >"$W/devices.txt" 2>&1
if [ -z "${SKIP_TESTS:-}" ]; then  # SKIP_TESTS=1: the caller ran the GPU tests already
  timeout 150 "$BIN/hw_tests" --gtest_brief=1 \
    --gtest_filter='RowStream*:Runner.*:Timeline.*:Attention.*:Direct.*:A2a.*:Correct.*' >"$W/hw_tests.log" 2>&1
  echo "hw_tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$W/hw_tests.log" | tr '\n' ' ')"
  grep -E '^\[  FAILED|Failure|rror' "$W/hw_tests.log" | head -20
  save
fi

run() {  # name, then hw run flags
  local name=$1
  shift
  timeout 45 "$BIN/dcpsim" hw run --emulate --dcp 8 --heads 128 --head-dim 512 --batch 64 --context "$CTX" \
    --out "$W/$name.pb" --json "$W/$name.json" "$@" >"$W/$name.txt" 2>&1
  echo "$name rc=$? $(grep -E '^  step |row_stream|check |rror' "$W/$name.txt" | tr -s ' ' | tr '\n' ' ')"
  save
}
run rs_graph --strategy row-stream --launch graph
"$BIN/dcpsim" export --chrome "$W/rs_graph.chrome.json" "$W/rs_graph.pb" >/dev/null 2>&1

filter='RowStream.Matches*:RowStream.EarlyTailMatches*:RowStream.Padding*:Runner.RowStreamSmall*'
{ echo "# compute-sanitizer --tool memcheck --leak-check full hw_tests --gtest_filter=$filter"
  timeout 120 "$cs" --tool memcheck --leak-check full "$BIN/hw_tests" --gtest_brief=1 --gtest_filter="$filter" 2>&1; } \
  >"$W/memcheck.txt"
echo "memcheck: $(grep -E 'ERROR SUMMARY|PASSED|FAILED' "$W/memcheck.txt" | tr '\n' ' ')"
save
{ echo "# compute-sanitizer --tool racecheck --racecheck-report all hw_tests --gtest_filter=$filter"
  timeout 300 "$cs" --tool racecheck --racecheck-report all "$BIN/hw_tests" --gtest_brief=1 --gtest_filter="$filter" 2>&1; } \
  >"$W/racecheck.txt"
echo "racecheck: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY|PASSED|FAILED' "$W/racecheck.txt" | tr '\n' ' ')"
save
run direct_graph --strategy direct --launch graph
run rs_pdl --strategy row-stream --launch pdl
run rs_eager --strategy row-stream --launch eager
run rs_graph_early --strategy row-stream --launch graph --row-early-tail
run rs_pdl_early --strategy row-stream --launch pdl --row-early-tail
run rs_eager_early --strategy row-stream --launch eager --row-early-tail
run rs_probe_early --strategy row-stream --launch graph --row-early-tail --row-probe
