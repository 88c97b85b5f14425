#!/usr/bin/env bash
# Measures a committed list of steps on one GPU, as `dcpsim hw calibrate` measures its held-out set: each line
# "NAME FLAGS" of the list (comments and blank lines skipped) becomes
#   dcpsim hw run --emulate --strategy all --warmup 3 --reps 10 --seed 7 FLAGS --out $OUT/NAME.pb   (then gzip -9n)
# (every strategy N emulates on one GPU, the merged output checked against the fp64 reference). Used for a
# fresh held-out draw (`hw calibrate --dry-run --holdout-seed S` prints one), measured before any change to the
# model it then validates; validate here with `dcpsim validate --profile P --measured $OUT/*.pb.gz`.
# Writes $OUT/NAME.pb.gz per step, $OUT/summary.txt (rc and wall time of each) and $OUT/steps_logs.tgz.
# Steps still to run when STEPS_BUDGET_S (default 300 s) is spent are not started.
#   OUT=/path scripts/device/steps.sh LIST [BIN_DIR]
set -uo pipefail
list=${1:?usage: OUT=/path scripts/device/steps.sh LIST [BIN_DIR]}
. "$(dirname "$0")/env.sh"
device_job steps "${2:-}"
BUDGET=${STEPS_BUDGET_S:-300}
start=$SECONDS
say "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1); $list"
while read -r name flags; do
  case "$name" in ''|'#'*) continue ;; esac
  left=$((BUDGET - (SECONDS - start)))
  if [ "$left" -lt 10 ]; then say "$name: not run (the ${BUDGET} s budget is spent)"; continue; fi
  t0=$SECONDS
  # shellcheck disable=SC2086  # FLAGS are words
  timeout "$left" "$BIN/dcpsim" hw run --emulate --strategy all --warmup 3 --reps 10 --seed 7 $flags \
    --out "$OUT/$name.pb" >"$W/$name.out" 2>"$W/$name.err" </dev/null
  say "$name rc=$? wall=$((SECONDS - t0))s exactness checks: $(grep -c 'check passed' "$W/$name.out") passed, $(grep -ci 'check failed' "$W/$name.out") failed"
done <"$list"
find "$OUT" -name '*.pb' -exec gzip -9nf {} +
tar czf "$OUT/steps_logs.tgz" -C "$W" . 2>/dev/null
say "done in $((SECONDS - start))s"
