#!/usr/bin/env bash
# a2a-2call's merge tables on one GPU: `hw sweep --split-lse` times the A2A pack and combine in a2a-2call's
# layout (the LSEs in buffers of their own; the combine's 16-byte short path instead of the packed rows'
# 4-byte one) over the grid `hw calibrate` measures the packed layout on (analysis/src/calibration_steps.cc),
# warm and cold, and the combine with row stamps (the lane-group kernel: the short path takes no stamps) warm
# and cold, as that command's stages "tables merge-split[-stamped][-cold]" do. For a profile calibrated before
# those stages existed: copy the files beside its other tables in the unpacked calibration archive, remove the
# archive's NAME.json and NAME.calibrate/plan.json (made by the plan without those stages), and `dcpsim hw
# calibrate --out NAME.json --base NAME` there refits it with them: every other stage's files count as done
# (no GPU needed).
# Writes $OUT/<gpu>-merge-split[-stamped][-cold].json (<gpu>: h100-sxm on an H100, h200-sxm on an H200) and
# $OUT/split_tables_logs.tgz. Expected GPU time: under a minute (2 x 2,520 + 2 x 1,260 points; `hw sweep
# --dry-run --profile h100-sxm` estimates 7 s and 9 s for the two unstamped sweeps and 4 s for each stamped one;
# measured on an H100: 24 s in all).
#   OUT=/path scripts/device/split_tables.sh [BIN_DIR]
set -uo pipefail
. "$(dirname "$0")/env.sh"
device_job split_tables "${1:-}"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$gpu" in
  *H200*) name=h200-sxm ;;
  *H100*) name=h100-sxm ;;
  *) say "split_tables.sh: no profile name for '$gpu'"; exit 2 ;;
esac
grid="--merge-dcp 2,3,4,6,8 --merge-batch 1,2,4,8,16,32,64,128,256 --merge-heads 8,16,24,48,96,192
  --merge-heads-per-rank 1,2,3,4,6,8,12,16,24,32,48,64,96,128 --merge-head-dims 128,512 --reps 10 --warmup 3"
start=$SECONDS
for stamps in "" -stamped; do
  for inputs in warm cold; do
    suffix=$stamps$([ $inputs = cold ] && echo -cold)
    kernels=a2a_pack,a2a_combine
    [ -n "$stamps" ] && kernels="a2a_combine --row-stamps"
    t0=$SECONDS
    # shellcheck disable=SC2086  # the grid and the kernels are words
    "$BIN/dcpsim" hw sweep --out "$OUT/$name-merge-split$suffix.json" --kernels $kernels --split-lse \
      --merge-inputs $inputs $grid >"$W/split$suffix.out" 2>"$W/split$suffix.err" </dev/null
    say "$name-merge-split$suffix.json: rc=$? wall=$((SECONDS - t0))s; $(tr "\r" "\n" <"$W/split$suffix.err" | grep . | tail -1)"
  done
done
tar czf "$OUT/split_tables_logs.tgz" -C "$W" . 2>/dev/null
say "done in $((SECONDS - start))s on $gpu"
