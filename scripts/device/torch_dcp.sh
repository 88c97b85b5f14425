#!/usr/bin/env bash
# On the GPU machine, from the repository root: the torch/Triton DCP step traces of
# docs/validation/torch_dcp/grid.json (scripts/device/torch_dcp_step.py), packed as $OUT/torch_dcp.tar.gz.
# About 2 minutes of GPU time on an H100.
set -euo pipefail
out=${OUT:?}/torch_dcp
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,memory.total --format=csv >"$out/device.csv"
PYTHONUNBUFFERED=1 python3 scripts/device/torch_dcp_step.py docs/validation/torch_dcp/grid.json "$out" 2>&1 |
  tee "$out/log.txt"
tar -C "${OUT}" -czf "${OUT}/torch_dcp.tar.gz" torch_dcp
rm -rf "$out"
