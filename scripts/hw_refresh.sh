#!/usr/bin/env bash
# One GPU-machine call that re-makes the measured data the models rest on, and nothing else. Stages, in the
# order given by STAGES (default: all of them, in this order):
#   tests      every GPU test                                        -> hw_tests.log
#   sanitize   compute-sanitizer memcheck and racecheck over a small merge-kernel sweep, stamped and not
#                                                                    -> sanitize.txt
#   merge      the merge-kernel tables (scripts/hw_tables.sh merge)  -> tables.tgz
#   stamped    their stamped variants (hw_tables.sh stamped)         -> tables.tgz
#   holdout    the held-out traces (scripts/hw_sweep.sh holdout)     -> holdout.tgz
#   holdout2   the second held-out set                               -> holdout2.tgz
#   holdout3   the third held-out set                                -> holdout3.tgz
#   pdl        the merge kernels alone and after their like under PDL (hw_tables.sh pdl) -> tables.tgz
#   rows       one-rank steps with per-row stamps                    -> rows.tgz
#   attention  the attention tables (hw_tables.sh attention)         -> tables.tgz
#   fit        the fit traces (scripts/hw_sweep.sh fit)              -> traces.tgz
# Each result lands in $OUT as soon as its stage ends, so a call cut short by its time limit still returns
# what finished. All stages add up to about 10 minutes on one H200 (their times measured on 2026-12-02, the
# attention stage 4.5 of them): more than one 600 s call, so split STAGES over two. Each archive holds the stage's folder and log under the stage's name (fit/ and fit.log in
# traces.tgz). With FUZZ_DIR/FUZZ_TARGETS the long fuzz run uses the idle CPU cores meanwhile
# (fuzz_long.txt).
# The project's own campaign (its held-out sets, sanitizers, fuzzing); a new GPU's profile comes from
# `dcpsim hw calibrate` (scripts/device/calibrate.sh).
#   OUT=... [BIN=.carry/bin] [STAGES="tests merge ..."] [FUZZ_DIR=... FUZZ_TARGETS=... FUZZ_SECONDS=...]
#     scripts/hw_refresh.sh PROFILE          (PROFILE: the tables' file prefix, h200-sxm, h100-sxm, ...)
set -uo pipefail
cd "$(dirname "$0")/.."
PROFILE=${1:?the profile name the tables are made for (h200-sxm, h100-sxm, ...)}
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/hw-out}
W=/tmp/hw-refresh
mkdir -p "$OUT" "$W"
BIN=${BIN:-$PWD/.carry/bin}
STAGES=${STAGES:-tests sanitize merge stamped holdout holdout2 holdout3 pdl rows attention fit}
for stage in $STAGES; do
  case $stage in
    tests|sanitize|merge|stamped|pdl|attention|holdout|holdout2|holdout3|rows|fit) ;;
    *) echo "hw_refresh.sh: unknown stage '$stage' (tests sanitize merge stamped pdl holdout holdout2 holdout3 rows attention fit)" >&2
       exit 2 ;;
  esac
done
if [ -n "${SKIP_FIT:-}" ]; then
  echo "hw_refresh.sh: SKIP_FIT is gone; leave fit out of STAGES instead" >&2
  exit 2
fi
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

tables() {  # WHICH: one hw_tables.sh part
  scripts/hw_tables.sh "$BIN/dcpsim" "$W/tables" "$1" "$PROFILE" --date "$(date -u +%F)" >>"$W/tables.txt" \
    2>>"$W/tables.err"
  (cd "$W" && tar czf "$OUT/tables.tgz" tables tables.txt tables.err)
}
traces() {  # SET ARCHIVE: one hw_sweep.sh set
  scripts/hw_sweep.sh "$BIN/dcpsim" "$W/$1" "$1" >"$W/$1.log" 2>&1
  echo "$1: $(grep -c '^ok ' "$W/$1.log") ok, $(grep -c '^FAIL ' "$W/$1.log") failed"
  grep '^FAIL' "$W/$1.log" | head -5
  (cd "$W" && tar czf "$OUT/$2" "$1" "$1.log")
}
sanitize() {  # every merge kernel of a small sweep, stamped and not, under memcheck and racecheck
  local sweep=(hw sweep --merge-dcp 3,8 --merge-batch 1,17 --merge-heads 24,96 --merge-heads-per-rank 3,32
    --merge-head-dims 128,512 --reps 3 --warmup 0)
  for tool in memcheck racecheck; do
    for stamps in "" --row-stamps; do  # the pack stamps no rows
      local kernels=correction,a2a_pack,a2a_combine
      [ -n "$stamps" ] && kernels=correction,a2a_combine
      timeout 150 compute-sanitizer --tool "$tool" --error-exitcode 3 "$BIN/dcpsim" "${sweep[@]}" \
        --kernels $kernels $stamps \
        --out "$W/sanitize.json" >"$W/sanitize-$tool$stamps.txt" 2>&1
      echo "$tool ${stamps:-(no stamps)}: exit $?, $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' \
        "$W/sanitize-$tool$stamps.txt" | tail -1)" | tee -a "$W/sanitize.txt"
    done
  done
  cp "$W/sanitize.txt" "$OUT/"
}
for stage in $STAGES; do
  start=$(date +%s)
  case $stage in
    tests)
      timeout "${TESTS_TIMEOUT:-240}" "$BIN/hw_tests" --gtest_brief=1 >"$W/hw_tests.log" 2>&1
      echo "hw_tests exit $?"
      grep -E '^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]' "$W/hw_tests.log" | tail -12
      cp "$W/hw_tests.log" "$OUT/" ;;
    sanitize) sanitize ;;
    merge|stamped|pdl|attention) tables "$stage" ;;
    holdout|holdout2|holdout3|rows) traces "$stage" "$stage.tgz" ;;
    fit) traces fit traces.tgz ;;
  esac
  echo "stage $stage took $(($(date +%s) - start)) s"
done
if [ -n "$fuzz_pid" ]; then
  wait "$fuzz_pid"
  cat "$W/fuzz_long.txt"
  cp "$W/fuzz_long.txt" "$OUT/"
fi
