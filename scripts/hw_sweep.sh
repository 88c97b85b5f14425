#!/usr/bin/env bash
# The measured traces in traces/measured/h200/: `dcpsim hw run --emulate` for N in {2, 3, 4, 8}, every strategy,
# GQA and MLA geometries, a few batch sizes and contexts, eager and graph launches. One .pb per (geometry, N,
# batch, context, launch), each with one section per strategy; every run checks itself against the reference.
#   scripts/hw_sweep.sh DCPSIM_BINARY OUT_DIR
set -uo pipefail
bin=${1:?dcpsim binary}
out=${2:?output directory}
export NCCL_NVLS_ENABLE=0
mkdir -p "$out"
run() {
  local name=$1; shift
  if "$bin" hw run --emulate --strategy all --warmup 3 --reps 10 --seed 7 --out "$out/$name.pb" "$@" \
       >"$out/$name.txt" 2>&1; then
    echo "ok $name $(grep -c 'check passed' "$out/$name.txt") sections"
  else
    echo "FAIL $name: $(tail -1 "$out/$name.txt")"
  fi
}
for N in 2 3 4 8; do
  mla="--heads $((16 * N)) --kv-heads 1 --head-dim 512 --qk-dim 576"
  gqa="--heads $((8 * N)) --kv-heads $N --head-dim 128"
  for geo in mla gqa; do
    flags=${!geo}
    run "${geo}_n${N}_b1_ctx32k_graph" --dcp $N $flags --batch 1 --context 32k --launch graph
    run "${geo}_n${N}_b16_ctx8k_graph" --dcp $N $flags --batch 16 --context 8k --launch graph --check-rows 2
    run "${geo}_n${N}_b16_ctx8k_eager" --dcp $N $flags --batch 16 --context 8k --launch eager --check-rows 2
    run "${geo}_n${N}_b64_ctx1k_graph" --dcp $N $flags --batch 64 --context 1k --launch graph --check-rows 4 \
        --row-stamps --padded-rows 4
  done
done
