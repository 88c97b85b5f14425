#!/usr/bin/env bash
# Configures and builds dcpsim into build/ (or $DCPSIM_BUILD_DIR). Extra arguments go to cmake.
# CUDA is used when nvcc is found (PATH or /usr/local/cuda/bin); pass -DDCPSIM_WITH_CUDA=OFF for a CPU-only build.
# $DCPSIM_BUILD_TARGETS (space-separated) builds only those targets.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${DCPSIM_BUILD_DIR:-build}
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
cmake -S . -B "$build" -G Ninja "$@" >/dev/null
# shellcheck disable=SC2086  # the target list splits on spaces
ninja -C "$build" -j "$(nproc)" ${DCPSIM_BUILD_TARGETS:-}
