#!/usr/bin/env bash
# One GPU-machine call that re-makes what the repository commits from the H200: every GPU test, FlashInfer
# attention end to end against dcpsim's kernels, compute-sanitizer on the FlashInfer path, the kernel benchmarks
# the kernel tables (scripts/hw_tables.sh) and the measured-trace sweeps (fit and held-out sets). With
# FUZZ_DIR (a folder of fuzz_* binaries and the libraries they need) and FUZZ_TARGETS ("nsys=8 kineto=3 ..."),
# the long fuzz run (scripts/fuzz_long.sh) uses the otherwise idle CPU cores meanwhile, for FUZZ_SECONDS.
# Results under $OUT (at most 8 files).
#   OUT=... [FUZZ_DIR=... FUZZ_TARGETS=... FUZZ_SECONDS=...] scripts/hw_session.sh
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/hw-out}
W=/tmp/hw-session
mkdir -p "$OUT" "$W"
BIN=$PWD/.carry/bin
nccl=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))' 2>/dev/null)
export LD_LIBRARY_PATH=$BIN:$(dirname "$(find "${nccl:-/}" -name 'libnccl.so.2' 2>/dev/null | head -1)"):${LD_LIBRARY_PATH:-}
fuzz_pid=
if [ -n "${FUZZ_DIR:-}" ]; then
  # shellcheck disable=SC2086  # FUZZ_TARGETS is a list of TARGET=WEIGHT words
  (LD_LIBRARY_PATH=$FUZZ_DIR nice -n 5 scripts/fuzz_long.sh "$FUZZ_DIR" "$PWD" "${FUZZ_SECONDS:-240}" "$W/fz" 14 \
     ${FUZZ_TARGETS:-} >"$W/fuzz_long.txt" 2>&1; echo "exit $?" >>"$W/fuzz_long.txt") &
  fuzz_pid=$!
fi
"$BIN/dcpsim" hw devices | tee "$W/devices.txt"
"$BIN/hw_tests" --gtest_brief=1 >"$W/hw_tests.log" 2>&1
grep -E '^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]' "$W/hw_tests.log" | tail -12
scripts/hw_flashinfer_check.sh "$BIN/dcpsim" "$W/fi" 2>&1 | tee "$W/fi.txt"
fi_rc=${PIPESTATUS[0]}
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
"$cs" --tool memcheck "$BIN/hw_tests" --gtest_brief=1 --gtest_filter='FlashInfer*' >"$W/fi_memcheck.txt" 2>&1
grep -E 'ERROR SUMMARY|PASSED|FAILED' "$W/fi_memcheck.txt" | tail -3
scripts/hw_bench.sh "$BIN/dcpsim" "$W/bench.jsonl" >"$W/bench.txt" 2>&1
grep -E 'attention|FAILED' "$W/bench.txt" | head -40
scripts/hw_tables.sh "$BIN/dcpsim" "$W/tables" all h200-sxm --date "$(date -u +%F)" >"$W/tables.txt" 2>"$W/tables.err"
cat "$W/tables.txt"
(cd "$W" && tar czf "$OUT/tables.tgz" tables tables.txt)
if [ "$fi_rc" = 0 ]; then
  scripts/hw_sweep.sh "$BIN/dcpsim" "$W/traces" >"$W/sweep.log" 2>&1
  scripts/hw_sweep.sh "$BIN/dcpsim" "$W/holdout" holdout >>"$W/sweep.log" 2>&1
  echo "sweep: $(grep -c '^ok ' "$W/sweep.log") ok, $(grep -c '^FAIL ' "$W/sweep.log") failed"
  (cd "$W" && tar czf "$OUT/traces.tgz" traces holdout)
fi
if [ -n "$fuzz_pid" ]; then
  wait "$fuzz_pid"
  cat "$W/fuzz_long.txt"
  cp "$W/fuzz_long.txt" "$OUT/"
fi
(cd "$W" && tar czf "$OUT/results.tgz" --exclude=traces --exclude=holdout --exclude=fz --exclude=tables . &&
  cp -f hw_tests.log fi.txt bench.txt fi_memcheck.txt "$OUT/")
