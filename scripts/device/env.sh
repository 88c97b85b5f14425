# Sourced by the scripts in scripts/device/ after they set BIN (the carried binaries' folder): the environment
# every run on the GPU machine needs. NVLink multicast stays off on a shared machine, and NCCL comes from
# PyTorch's wheel (the machine has no system NCCL); the carried libraries in BIN come first.
export NCCL_NVLS_ENABLE=0
nccl_wheel=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))' 2>/dev/null)
nccl_lib=$(dirname "$(find "${nccl_wheel:-/}" -name 'libnccl.so.2' 2>/dev/null | head -1)")
export LD_LIBRARY_PATH=$BIN:$nccl_lib:${LD_LIBRARY_PATH:-}
