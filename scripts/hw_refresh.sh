#!/usr/bin/env bash
# One GPU-machine call that re-makes the measured data the models rest on, and nothing else: every GPU test,
# the kernel tables (scripts/hw_tables.sh) and the measured-trace sweeps (fit and held-out sets); with
# FUZZ_DIR/FUZZ_TARGETS the long fuzz run on the idle CPU cores meanwhile (as in scripts/hw_session.sh).
# Results under $OUT, each written as soon as its stage ends (tests, merge tables, held-out traces, attention
# tables, fit traces): hw_tests.log, tables.tgz, holdout.tgz, traces.tgz (SKIP_FIT=1 leaves the fit set out),
# fuzz_long.txt.
#   OUT=... [SKIP_FIT=1] [FUZZ_DIR=... FUZZ_TARGETS=... FUZZ_SECONDS=...] scripts/hw_refresh.sh
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/hw-out}
W=/tmp/hw-refresh
mkdir -p "$OUT" "$W"
BIN=${BIN:-$PWD/.carry/bin}
nccl=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))' 2>/dev/null)
export LD_LIBRARY_PATH=$BIN:$(dirname "$(find "${nccl:-/}" -name 'libnccl.so.2' 2>/dev/null | head -1)"):${LD_LIBRARY_PATH:-}
fuzz_pid=
if [ -n "${FUZZ_DIR:-}" ]; then
  # shellcheck disable=SC2086  # FUZZ_TARGETS is a list of TARGET=WEIGHT words
  (LD_LIBRARY_PATH=$FUZZ_DIR nice -n 5 scripts/fuzz_long.sh "$FUZZ_DIR" "$PWD" "${FUZZ_SECONDS:-240}" "$W/fz" 14 \
     ${FUZZ_TARGETS:-} >"$W/fuzz_long.txt" 2>&1; echo "exit $?" >>"$W/fuzz_long.txt") &
  fuzz_pid=$!
fi
"$BIN/dcpsim" hw devices
# Stages in order of what the models need most; each result lands in $OUT as soon as its stage ends, so a
# call cut short by its time limit still returns what finished.
timeout "${TESTS_TIMEOUT:-180}" "$BIN/hw_tests" --gtest_brief=1 >"$W/hw_tests.log" 2>&1
echo "hw_tests exit $?"
grep -E '^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]' "$W/hw_tests.log" | tail -12
cp "$W/hw_tests.log" "$OUT/"
stage() {  # NAME WHICH: one hw_tables.sh part
  local start
  start=$(date +%s)
  scripts/hw_tables.sh "$BIN/dcpsim" "$W/tables" "$2" h200-sxm --date "$(date -u +%F)" >>"$W/tables.txt" \
    2>>"$W/tables.err"
  echo "$1 tables took $(($(date +%s) - start)) s"
  (cd "$W" && tar czf "$OUT/tables.tgz" tables tables.txt tables.err)
}
stage merge merge
# Held-out set next: it is what validation needs; the fit set is re-measured when time is left.
scripts/hw_sweep.sh "$BIN/dcpsim" "$W/holdout" holdout >"$W/sweep.log" 2>&1
(cd "$W" && tar czf "$OUT/holdout.tgz" holdout sweep.log)
echo "held-out sweep: $(grep -c '^ok ' "$W/sweep.log") ok, $(grep -c '^FAIL ' "$W/sweep.log") failed"
stage attention attention
if [ -z "${SKIP_FIT:-}" ]; then
  scripts/hw_sweep.sh "$BIN/dcpsim" "$W/traces" >"$W/sweep-fit.log" 2>&1
  echo "fit sweep: $(grep -c '^ok ' "$W/sweep-fit.log") ok, $(grep -c '^FAIL ' "$W/sweep-fit.log") failed"
  (cd "$W" && tar czf "$OUT/traces.tgz" traces sweep-fit.log)
fi
grep -h '^FAIL' "$W"/sweep*.log | head -5
if [ -n "$fuzz_pid" ]; then
  wait "$fuzz_pid"
  cat "$W/fuzz_long.txt"
  cp "$W/fuzz_long.txt" "$OUT/"
fi
