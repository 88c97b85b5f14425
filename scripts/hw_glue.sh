#!/usr/bin/env bash
# FlashInfer's attention alone against FlashInfer's attention as a decode step calls it (docs/PERFORMANCE.md,
# "What the glue costs"), one GPU. "Alone": the kernels FlashInfer's own API would launch for the call (its
# planner's plan, dense Q, the LSE in the kernel's native base: e for the Hopper MLA kernel, which can write
# either, 2 for the GQA decode). "As a step": Q in N head blocks as the query all-gather leaves it and the LSE
# in base e, so dcpsim's Q repack and LSE fix-up kernels run too. Every call replayed from a CUDA graph (5 calls
# per graph), median of 30 replays, inputs rotated past the L2; the JSON lines go to OUT.jsonl.
#   scripts/hw_glue.sh DCPSIM_BINARY OUT.jsonl [N]
set -uo pipefail
bin=${1:?dcpsim binary}
json=${2:?output .jsonl}
n=${3:-8}
export NCCL_NVLS_ENABLE=0
: >"$json"
b() { "$bin" hw bench --op attention --attention flashinfer --graph --graph-calls 5 --reps 30 --json "$json" "$@" ||
  echo "FAILED: hw bench $*"; }
"$bin" hw bench --op copy --copy-bytes 1g --reps 30 --json "$json"
mla() {  # B H context
  b --batch "$1" --heads "$2" --kv-heads 1 --head-dim 512 --qk-dim 576 --context "$3"
  b --batch "$1" --heads "$2" --kv-heads 1 --head-dim 512 --qk-dim 576 --context "$3" --q-blocks "$n"
}
gqa() {  # B context
  b --batch "$1" --heads 64 --kv-heads 8 --head-dim 128 --qk-dim 128 --context "$2" --lse-base 2
  b --batch "$1" --heads 64 --kv-heads 8 --head-dim 128 --qk-dim 128 --context "$2" --q-blocks "$n"
}
for ctx in 32k 128k; do
  for B in 1 8 64; do mla $B 128 $ctx; done
  for B in 1 8 16 32 64; do mla $B 16 $ctx; done
done
gqa 1 128k
gqa 8 8k
gqa 64 8k
