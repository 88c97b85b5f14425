#!/usr/bin/env bash
# The attention of each held-out scenario at one rank's exact shape (heads, rows, tokens per row on the rank),
# timed alone: `hw bench` (a graph of 20 calls; Q dense, and Q in N head blocks as the step's query all-gather
# leaves it, which FlashInfer's MLA glue repacks first) and `hw sweep` (one call per replay, as the tables are
# made). Where these agree with a trace's attention phase and the simulator does not, the error is the tables'
# interpolation, not the step. Run on the GPU machine; writes OUT_DIR/bench.jsonl and OUT_DIR/sw_*.json.
#   scripts/hw_exact_shapes.sh DCPSIM_BINARY OUT_DIR
set -uo pipefail
bin=${1:?dcpsim binary}
out=${2:?output folder}
mkdir -p "$out"
: >"$out/bench.jsonl"  # one run's lines only
mla="--kv-heads 1 --head-dim 512 --qk-dim 576"
gqa="--head-dim 128 --qk-dim 128 --attention dcpsim"
bench() {  # NAME Q_BLOCKS FLAGS...
  local name=$1 q=$2; shift 2
  for blocks in $(printf '%s\n' 1 "$q" | sort -un); do
    "$bin" hw bench --op attention --graph --reps 20 --warmup 5 --q-blocks "$blocks" "$@" --json "$out/bench.jsonl" \
      >"$out/$name-q$blocks.txt" 2>&1 || echo "FAIL $name q$blocks: $(tail -1 "$out/$name-q$blocks.txt")"
  done
}
sweep() {  # NAME FLAGS...
  local name=$1; shift
  "$bin" hw sweep --out "$out/sw_$name.json" --kernels attention --reps 10 --warmup 3 "$@" >"$out/sw_$name.txt" 2>&1 ||
    echo "FAIL sweep $name: $(tail -1 "$out/sw_$name.txt")"
}
# MLA (FlashInfer): holdout3 n5, n8, n3, n6; holdout n2; holdout2 n4 (run there with dcpsim's kernel)
bench mla_h100_b40_t614 5 --heads 100 $mla --batch 40 --context 614
bench mla_h24_b96_t128 8 --heads 24 $mla --batch 96 --context 128
bench mla_h48_b20_t3072 3 --heads 48 $mla --batch 20 --context 3072
bench mla_h72_b6_t8192 6 --heads 72 $mla --batch 6 --context 8192
bench mla_h16_b256_t1024 2 --heads 16 $mla --batch 256 --context 1024
bench mla_h80_b48_t1536 4 --heads 80 $mla --batch 48 --context 1536
# GQA (dcpsim's kernel): holdout3 n3, n6, n2, n8; holdout n5; holdout2 n3
bench gqa_h96_kv6_b12_t4779 3 --heads 96 --kv-heads 6 $gqa --batch 12 --context 4779
bench gqa_h48_kv6_b20_t5120 6 --heads 48 --kv-heads 6 $gqa --batch 20 --context 5120
bench gqa_h64_kv4_b40_t2560 2 --heads 64 --kv-heads 4 $gqa --batch 40 --context 2560
bench gqa_h24_kv6_b72_t256 8 --heads 24 --kv-heads 6 $gqa --batch 72 --context 256
bench gqa_h80_kv5_b128_t410 5 --heads 80 --kv-heads 5 $gqa --batch 128 --context 410
bench gqa_h48_kv3_b96_t1024 3 --heads 48 --kv-heads 3 $gqa --batch 96 --context 1024
sweep mla_h100_b40_t614 --geometry mla --heads 100 --batch 40 --tokens 614
sweep mla_h128_b40_t614 --geometry mla --heads 128 --batch 40 --tokens 614
sweep mla_h72_b6_t8192 --geometry mla --heads 72 --batch 6 --tokens 8192
sweep mla_h80_b48_t1536 --geometry mla --heads 80 --batch 48 --tokens 1536
sweep mla_h24_b96_t128 --geometry mla --heads 24 --batch 96 --tokens 128
sweep mla_h48_b20_t3072 --geometry mla --heads 48 --batch 20 --tokens 3072
sweep mla_h16_b256_t1024 --geometry mla --heads 16 --batch 256 --tokens 1024
sweep gqa_h96_b12_t4779 --geometry gqa:16 --heads 96 --batch 12 --tokens 4779 --attention dcpsim
sweep gqa_h48_b20_t5120 --geometry gqa:8 --heads 48 --batch 20 --tokens 5120 --attention dcpsim
sweep gqa_h64_b40_t2560 --geometry gqa:16 --heads 64 --batch 40 --tokens 2560 --attention dcpsim
sweep gqa_h24_b72_t256 --geometry gqa:4 --heads 24 --batch 72 --tokens 256 --attention dcpsim
sweep gqa_h80_b128_t410 --geometry gqa:16 --heads 80 --batch 128 --tokens 410 --attention dcpsim
sweep gqa_h48_b96_t1024 --geometry gqa:16 --heads 48 --batch 96 --tokens 1024 --attention dcpsim
# Points on the committed tables' grids, to compare this GPU with the one that made them.
bench anchor_mla_h128_b64_t1024 1 --heads 128 $mla --batch 64 --context 1024
bench anchor_gqa_g8_h64_b16_t4096 1 --heads 64 --kv-heads 8 $gqa --batch 16 --context 4096
sweep anchor_mla_h128_b32_t512 --geometry mla --heads 128 --batch 32 --tokens 512
sweep anchor_gqa_g16_h64_b128_t512 --geometry gqa:16 --heads 64 --batch 128 --tokens 512 --attention dcpsim
