#!/usr/bin/env bash
# On the GPU machine (the carried runner in .carry/dcpsim.txz): why `hw sweep --kernels gemm` found every FP8
# GEMM NOT_SUPPORTED on the H100 (docs/PERFORMANCE.md). Builds scripts/device/fp8_gemm_probe.cu with the
# toolkit's nvcc and runs it against the toolkit's and PyTorch's cuBLASLt (scales on/off, fast accumulation,
# BF16 or FP8 output), tries torch._scaled_mm, then the sweep itself with each library. Writes $OUT/probe*.txt,
# $OUT/torch.txt and $OUT/g-*.json.  About 1 minute.
set -x
[ -x .carry/bin/dcpsim ] || { mkdir -p .carry && tar xJf .carry/dcpsim.txz -C .carry && rm .carry/dcpsim.txz; }
. scripts/device/env.sh; BIN=$PWD/.carry/bin; device_env
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
ls /usr/local/cuda/lib64/libcublasLt.so* 
PIPLT=$(python3 -c 'import nvidia, os, glob; print(" ".join(glob.glob(os.path.join(list(nvidia.__path__)[0], "**", "libcublasLt.so*"), recursive=True)))')
echo "pip: $PIPLT"
nvcc -O2 -arch=sm_90 scripts/device/fp8_gemm_probe.cu -lcublasLt -o /tmp/probe && /tmp/probe 2>&1 | tee $OUT/probe.txt
for l in $PIPLT; do LD_PRELOAD=$l /tmp/probe 2>&1 | tee -a $OUT/probe_pip.txt; done
python3 - <<'P' 2>&1 | tee $OUT/torch.txt
import torch
a=torch.randn(16,4096,device='cuda').to(torch.float8_e4m3fn)
b=torch.randn(4096,4096,device='cuda').to(torch.float8_e4m3fn).t()
s=torch.tensor(1.0,device='cuda')
print(torch.__version__, torch.version.cuda)
print(torch._scaled_mm(a,b,scale_a=s,scale_b=s,out_dtype=torch.bfloat16).shape)
P
.carry/bin/dcpsim profiles --show h100-sxm | head -3
for l in /usr/local/cuda/lib64/libcublasLt.so.13 $PIPLT; do
  DCPSIM_CUBLASLT=$l timeout 60 .carry/bin/dcpsim hw sweep --kernels gemm --gemm-dtypes fp8,bf16 --gemm-m 1,16,64 --gemm-n 4096 --gemm-k 4096 --out $OUT/g-$(basename $(dirname $l)).json 2>&1 | tail -3
done
