#!/usr/bin/env bash
# The main job: installs the packages it needs, builds the simulator and the CLI (no CUDA, no tests: the
# hardware runner is built by scripts/build.sh or scripts/hw_carry.sh), and simulates one DCP decode step of
# DeepSeek-V3 (128 heads x 512 latent, batch 64, 32k context, DCP 8 in TP 8, AG+RS, CUDA-graph launch) on the
# built-in h200-sxm profile. Writes out/default.pb (trace), out/default.json (Perfetto/Chrome timeline: open it
# at ui.perfetto.dev) and out/default-summary.json (dcpsim-summary/1). The CLI it builds is
# build-main/analysis/dcpsim. Extra arguments go to `dcpsim simulate`. A few minutes on a fresh 2-core machine
# (docs/PERFORMANCE.md).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --main
DCPSIM_BUILD_DIR=build-main DCPSIM_BUILD_TARGETS=dcpsim scripts/build.sh -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" -DDCPSIM_WITH_CUDA=OFF -DDCPSIM_BUILD_TESTS=OFF \
  -DDCPSIM_BUILD_BENCHMARKS=OFF -DDCPSIM_UNITY_BUILD=ON
mkdir -p out
build-main/analysis/dcpsim simulate --profile h200-sxm --out out/default.pb --chrome out/default.json \
  --json out/default-summary.json "$@"
