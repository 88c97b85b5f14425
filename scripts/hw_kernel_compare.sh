#!/usr/bin/env bash
# The merge kernels against their peers on one GPU, all shapes of a grid in one process each: dcpsim's
# correction (kernel chosen by size, bf16 and fp16, CUDA-graph replay and eager) against a Triton kernel written
# like vLLM's correct_attn_out (scripts/hw_triton_correction.py), dcpsim's combine against FlashInfer's
# MergeStates (which also merges N states into one output), the packed all-to-all combine, same-size device
# copies, the empty kernel and the touch kernel (O read and written back: the least a correction costs); then the
# table (scripts/hw_kernel_table.py). JSON lines and the table go to OUTDIR.
#   scripts/hw_kernel_compare.sh DCPSIM_BINARY OUTDIR [decode|small] [--variants]
# --variants also times the main kernel variants of the correction and the combine at every point, to show which
# wins where (the size tables in hw/ops/lse_correct.cu and a2a_combine.cu come from such a run).
set -uo pipefail
bin=${1:?dcpsim binary}
out=${2:?output folder}
grid=${3:-decode}
variants=${4:-}
here=$(cd "$(dirname "$0")" && pwd)
export NCCL_NVLS_ENABLE=0
mkdir -p "$out"
sweep() {
  local name=$1
  shift
  local t0=$SECONDS
  "$bin" hw bench --sweep "$grid" --json "$out/$name.jsonl" "$@" || echo "FAILED: hw bench --sweep $grid $*"
  echo "  ($name: $((SECONDS - t0)) s)"
}
cvar=auto
mvar=auto
avar=auto
if [ "$variants" = --variants ]; then
  cvar=auto,g1,g4s,f1,f2,f4,s1,s2,s4
  mvar=auto,g1,g2,f1,f2
  avar=auto,g1,g2,p4,p8
fi
sweep copy --op copy --dtype bf16
sweep empty --op empty --dtype bf16
sweep touch --op touch --dtype bf16
sweep correct --op correct --dtype bf16,fp16 --variant $cvar
t0=$SECONDS
python3 "$here/hw_triton_correction.py" "$out/triton.jsonl" --grid "$grid" || echo "FAILED: hw_triton_correction.py"
echo "  (triton: $((SECONDS - t0)) s)"
sweep merge_states --op merge-states-flashinfer --dtype bf16,fp16
sweep combine --op combine --dtype bf16,fp16 --variant $mvar
sweep a2a_combine --op a2a-combine --dtype bf16,fp16 --variant $avar
python3 "$here/hw_kernel_table.py" "$out" --markdown "$out/table.md"
