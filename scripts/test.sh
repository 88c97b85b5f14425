#!/usr/bin/env bash
# Sets everything up and runs the whole test suite, as CI does:
#   1. the default build (CUDA kernels compiled when nvcc exists; GPU tests skip without a device), warnings as
#      errors, every CTest entry;
#   2. a CPU-only build under AddressSanitizer + UndefinedBehaviorSanitizer, every CTest entry;
#   3. clang-format check of every C++/CUDA source.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
jobs=$(nproc)

DCPSIM_BUILD_DIR=build scripts/build.sh -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDCPSIM_WERROR=ON
(cd build && ctest --output-on-failure -j "$jobs")

DCPSIM_BUILD_DIR=build-asan scripts/build.sh -DCMAKE_BUILD_TYPE=Debug -DDCPSIM_WITH_CUDA=OFF \
  -DDCPSIM_SANITIZE=ON -DDCPSIM_WERROR=ON -DDCPSIM_BUILD_BENCHMARKS=OFF
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j "$jobs")

scripts/check-format.sh
