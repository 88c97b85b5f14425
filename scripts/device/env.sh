# Sourced by the scripts in scripts/device/: what every run on the GPU machine needs.
#   device_env          after BIN is set (the carried binaries' folder): NVLink multicast off on a shared
#                       machine; NCCL from PyTorch's wheel (the machine has no system NCCL), after BIN's libraries
#   device_job NAME [BIN_DIR]
#                       the common start of a measurement script: BIN (default .carry/bin), OUT (required, made),
#                       W (a fresh work folder /tmp/NAME.XXXXXX), S ($OUT/summary.txt, emptied), say (echo to the
#                       summary too), then device_env
device_env() {
  export NCCL_NVLS_ENABLE=0
  local wheel lib
  wheel=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))' 2>/dev/null)
  lib=$(dirname "$(find "${wheel:-/}" -name 'libnccl.so.2' 2>/dev/null | head -1)")
  export LD_LIBRARY_PATH=$BIN:$lib:${LD_LIBRARY_PATH:-}
}

device_job() {
  BIN=$(cd "${2:-.carry/bin}" && pwd)
  OUT=${OUT:?set OUT to the results directory}
  mkdir -p "$OUT"
  W=$(mktemp -d "/tmp/$1.XXXXXX")
  S=$OUT/summary.txt
  : >"$S"
  device_env
}

say() { echo "$*" | tee -a "$S"; }
