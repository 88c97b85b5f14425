#!/usr/bin/env bash
# On the GPU machine, from the repository root with .carry/ carried (scripts/hw_carry.sh): one
# `dcpsim hw calibrate` from a bare machine to a validated profile of this GPU, named after the profile it
# starts from. Everything it writes (the profile, its tables, its sidecar, the work folder with device.json,
# plan.json, every step trace, validation.md and log.txt, and nvidia-smi's view of the clocks) goes to
# $OUT/calibrate-<name>.tgz, one file.
#   OUT=... scripts/device/calibrate.sh h100-sxm [budget]        (budget: default 9m)
#   RESUME=calibrate-h100-sxm.tgz OUT=... scripts/device/calibrate.sh h100-sxm   (a second call resumes)
# GPU time: the plan's estimate (`dcpsim hw calibrate --dry-run`) is about 8 min on an H100 (measured: 228 s);
# the command stops before a stage that would end past the budget (9 min: one 10-minute call), keeping what it
# measured, and the same command resumes from that (RESUME). Exit status: 0 validated profile; 3 stopped by the
# budget, or measured by a runner without the simulator (fit and validate on any machine with SimGrid:
# `dcpsim hw calibrate --out <name>.json --base <name>` in the unpacked folder; no GPU needed); else a failure.
set -uo pipefail
cd "$(dirname "$0")/../.."
name=${1:?profile base name, e.g. h100-sxm}
budget=${2:-9m}
OUT=${OUT:-/tmp/hw-out}
W=${CALIBRATE_WORK:-/tmp/calibrate}
BIN=$PWD/.carry/bin
. scripts/device/env.sh
device_env  # NCCL from PyTorch's wheel, no NVLink multicast; SimGrid, when carried: .carry/bin/simgrid by RPATH
mkdir -p "$OUT" "$W"
if [ -n "${RESUME:-}" ]; then
  tar xzf "$RESUME" -C "$W" && echo "resuming from $RESUME: $(ls "$W/$name.calibrate" | tr '\n' ' ')"
fi
"$BIN/dcpsim" hw devices | tee -a "$W/devices.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,power.draw,temperature.gpu \
  --format=csv >>"$W/devices.txt" 2>&1
start=$(date +%s)
"$BIN/dcpsim" hw calibrate --out "$W/$name.json" --base "$name" --budget "$budget" >"$W/calibrate.out" 2>"$W/calibrate.err"
rc=$?
took=$(($(date +%s) - start))
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv >>"$W/devices.txt" 2>&1
cat "$W/calibrate.out"
grep -E '^\[|FAILED|budget|interrupted|simulator' "$W/calibrate.err" | tail -25
# The traces compress well; one archive under the 16 MiB a file may have.
find "$W/$name.calibrate" -name '*.pb' -exec gzip -9nf {} +
(cd "$W" && tar czf "$OUT/calibrate-$name.tgz" --exclude='*.tgz' .)
echo "calibrate.sh $name: exit $rc after ${took} s; $OUT/calibrate-$name.tgz $(du -h "$OUT/calibrate-$name.tgz" | cut -f1)"
exit $rc
