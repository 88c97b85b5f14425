#!/usr/bin/env bash
# One GPU-machine call for the model's fidelity data that scripts/hw_refresh.sh does not re-make: the GPU
# tests, the stamped merge-kernel tables (scripts/hw_tables.sh stamped), one-rank steps with per-row stamps in
# the attention kernel (scripts/hw_sweep.sh rows) and the second held-out set (scripts/hw_sweep.sh holdout2).
# Results under $OUT, each as soon as its stage ends: hw_tests.log, stamped.tgz, rows.tgz, holdout2.tgz.
#   OUT=... [BIN=.carry/bin] scripts/hw_fidelity.sh
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/hw-out}
W=/tmp/hw-fidelity
mkdir -p "$OUT" "$W"
BIN=${BIN:-$PWD/.carry/bin}
nccl=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))' 2>/dev/null)
export LD_LIBRARY_PATH=$BIN:$(dirname "$(find "${nccl:-/}" -name 'libnccl.so.2' 2>/dev/null | head -1)"):${LD_LIBRARY_PATH:-}
"$BIN/dcpsim" hw devices
timed() {  # NAME COMMAND...: runs it, says how long it took
  local name=$1 start
  shift
  start=$(date +%s)
  "$@"
  echo "$name: exit $?, $(($(date +%s) - start)) s"
}
timed tests timeout "${TESTS_TIMEOUT:-240}" "$BIN/hw_tests" --gtest_brief=1 >"$W/hw_tests.log" 2>&1
grep -E '^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]' "$W/hw_tests.log" | tail -12
cp "$W/hw_tests.log" "$OUT/"
timed stamped scripts/hw_tables.sh "$BIN/dcpsim" "$W/tables" stamped h200-sxm --date "$(date -u +%F)" \
  >"$W/tables.txt" 2>"$W/tables.err"
(cd "$W" && tar czf "$OUT/stamped.tgz" tables tables.txt tables.err)
for set in rows holdout2; do
  timed "$set" scripts/hw_sweep.sh "$BIN/dcpsim" "$W/$set" "$set" >"$W/$set.log" 2>&1
  echo "$set: $(grep -c '^ok ' "$W/$set.log") ok, $(grep -c '^FAIL ' "$W/$set.log") failed"
  grep '^FAIL' "$W/$set.log" | head -5
  (cd "$W" && tar czf "$OUT/$set.tgz" "$set" "$set.log")
done
