#!/usr/bin/env bash
# Installs what dcpsim builds against (Debian 12 packages). Idempotent; needs root or sudo.
#   scripts/setup.sh          everything: the simulator, the tests (GoogleTest, Google Benchmark, clang for the
#                             fuzzers, matplotlib for the plots' tests) and FlashInfer's headers for the runner
#   scripts/setup.sh --main   what the main job needs (scripts/run-default.sh): the simulator and the CLI only,
#                             no test tools, no FlashInfer download
# CUDA and NCCL are not installed here: when /usr/local/cuda exists, the hw/ runner is built against it.
set -euo pipefail
main_only=0
[ "${1:-}" = "--main" ] && main_only=1
packages=(
  cmake ninja-build g++ pkg-config
  libsimgrid-dev libprotobuf-dev protobuf-compiler libcli11-dev nlohmann-json3-dev zlib1g-dev libsqlite3-dev
  libeigen3-dev
)
if ((!main_only)); then
  packages+=(git libgtest-dev libgmock-dev libbenchmark-dev python3 python3-matplotlib python3-pip clang-format
    clang-14 libclang-rt-14-dev)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
((main_only)) && exit 0

# FlashInfer (header-only, for the hardware runner's attention): the pinned flashinfer-python wheel carries its
# headers and CUTLASS's; its headers need a newer CCCL than CUDA 13.0 ships, so the pinned nvidia-cuda-cccl wheel
# is unpacked too. Only headers are kept, in .deps/ (not committed). Without the registry the build goes on
# without FlashInfer (dcpsim's own attention kernels).
"$(dirname "$0")/fetch_flashinfer.sh" || true  # it says in one line why not
