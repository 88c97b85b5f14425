#!/usr/bin/env bash
# Sets everything up, builds, and runs the main job on the embedded default: one DCP decode step of an MLA model
# (128 heads x 512 latent, batch 64, 32k context, DCP 8, AG+RS, CUDA-graph launch) simulated on the built-in
# h200-sxm profile. Writes out/default.pb (trace), out/default.json (Perfetto/Chrome timeline: open it at
# ui.perfetto.dev) and out/default-summary.json. Extra arguments go to `dcpsim simulate`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
DCPSIM_BUILD_DIR=build scripts/build.sh
mkdir -p out
build/analysis/dcpsim simulate --profile h200-sxm --out out/default.pb --chrome out/default.json \
  --json out/default-summary.json "$@"
