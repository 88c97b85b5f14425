#!/usr/bin/env bash
# On the GPU machine, from the repository root, with the carried runner (.carry/bin/dcpsim, scripts/hw_carry.sh):
# the decode step's dense GEMMs timed through cuBLASLt, BF16 and FP8 (per-tensor scales), over the m x n x k
# grid the model presets' projections need, as a gemm kernel table ($OUT/<gpu>-gemm.json) for
# models/tables/ (gzip -9n it there; the profile lists it ahead of the published *-ops-aic.json). Also the device's memory total
# as vLLM sees it (nvidia-smi memory.total; the profiles' hbm_capacity is what vLLM's KV accounting starts
# from). About 1-2 minutes of GPU time on an H100 (2 dtypes x 13 m x 9 n x 9 k = 2,106 points, 20 calls each).
set -euo pipefail
out=${OUT:?}
bin=${DCPSIM_BIN:-.carry/bin/dcpsim}
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv | tee "$out/device.csv"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr 'A-Z ' 'a-z-' | sed 's/nvidia-//; s/[^a-z0-9-]//g')
# cuBLASLt: the toolkit's, else PyTorch's wheel (nvidia-cublas).
if [ -z "${DCPSIM_CUBLASLT:-}" ]; then
  for lib in /usr/local/cuda/lib64/libcublasLt.so.13 /usr/local/cuda/lib64/libcublasLt.so.12 \
    $(python3 -c 'import nvidia, os, glob; print(" ".join(glob.glob(os.path.join(list(nvidia.__path__)[0], "**", "libcublasLt.so*"), recursive=True)))' 2>/dev/null); do
    if [ -f "$lib" ]; then export DCPSIM_CUBLASLT=$lib; break; fi
  done
fi
echo "cuBLASLt: ${DCPSIM_CUBLASLT:-from the loader path}"
date=$(date -u +%F)
timeout 300 "$bin" hw sweep --kernels gemm --out "$out/${gpu}-gemm.json" --reps 20 --warmup 3 --date "$date" \
  2>"$out/gemm-stderr.txt" | tee "$out/gemm.txt"
"$bin" tables --show "$out/${gpu}-gemm.json" | head -20 | tee -a "$out/gemm.txt"
