#!/usr/bin/env bash
# The kernel benchmarks of docs/PERFORMANCE.md ("Hardware runner" sections), in one run on one GPU. Each line of
# output is one `dcpsim hw bench`; every result is also appended to the JSON-lines file.
#   scripts/hw_bench.sh DCPSIM_BINARY OUT.jsonl
set -uo pipefail
bin=${1:?dcpsim binary}
json=${2:?output .jsonl}
export NCCL_NVLS_ENABLE=0
: >"$json"
b() { "$bin" hw bench --json "$json" "$@" || echo "FAILED: hw bench $*"; }
# The ceiling.
b --op copy --copy-bytes 1073741824 --reps 30
b --op copy --copy-bytes 4294967296 --reps 10
# LSE correction in place: the two bandwidth shapes, an awkward one, and tiny calls replayed from a CUDA graph.
b --op correct --dcp 8 --batch 256 --heads 128 --head-dim 512 --reps 100
b --op correct --dcp 8 --batch 1024 --heads 128 --head-dim 128 --reps 100
b --op correct --dcp 3 --batch 256 --heads 128 --head-dim 512 --transposed-lse --row-pad 64 --reps 100
for B in 1 8 32; do
  b --op correct --dcp 8 --batch $B --heads 128 --head-dim 512 --graph --graph-calls 100 --reps 50
done
# Decode attention, MLA (576-wide latent, 128 heads) and GQA, on FlashInfer's kernels and on dcpsim's own.
for impl in flashinfer dcpsim; do
  for ctx in 32768 131072; do
    for B in 1 8 64; do
      b --op attention --attention $impl --batch $B --heads 128 --kv-heads 1 --head-dim 512 --qk-dim 576 --context $ctx --reps 20
    done
  done
  b --op attention --attention $impl --batch 1 --heads 16 --kv-heads 1 --head-dim 512 --qk-dim 576 --context 131072 --reps 20
  b --op attention --attention $impl --batch 8 --heads 16 --kv-heads 1 --head-dim 512 --qk-dim 576 --context 32768 --reps 20
  b --op attention --attention $impl --batch 64 --heads 64 --kv-heads 8 --head-dim 128 --qk-dim 128 --context 8192 --reps 20
  b --op attention --attention $impl --batch 8 --heads 64 --kv-heads 8 --head-dim 128 --qk-dim 128 --context 8192 --reps 20
  b --op attention --attention $impl --batch 1 --heads 64 --kv-heads 8 --head-dim 128 --qk-dim 128 --context 131072 --reps 20
done
# The other merge kernels at a DeepSeek-like decode shape.
b --op a2a-pack --dcp 8 --batch 64 --heads 128 --head-dim 512 --reps 50
b --op a2a-combine --dcp 8 --batch 64 --heads 128 --head-dim 512 --reps 50
b --op direct --dcp 8 --batch 64 --heads 128 --head-dim 512 --reps 50
b --op direct --dcp 8 --batch 8 --heads 128 --head-dim 512 --graph --graph-calls 20 --reps 20
