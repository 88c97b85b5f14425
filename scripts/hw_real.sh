#!/usr/bin/env bash
# Measured (not emulated) traces on every GPU of one host: one thread per GPU, NCCL collectives, the direct merge
# over peer access. N = the number of visible GPUs (or $1). Output: OUT_DIR/*.pb plus each run's printout.
#   scripts/hw_real.sh DCPSIM_BINARY OUT_DIR [N]
set -uo pipefail
bin=${1:?dcpsim binary}
out=${2:?output directory}
export NCCL_NVLS_ENABLE=0   # never NVLink multicast on a shared machine
N=${3:-$(nvidia-smi -L | wc -l)}
devs=$(seq -s, 0 $((N - 1)))
mkdir -p "$out"
nvidia-smi topo -m >"$out/topology.txt" 2>&1
run() {
  local name=$1; shift
  if "$bin" hw run --devices "$devs" --dcp "$N" --strategy all --warmup 5 --reps 20 --seed 7 --out "$out/$name.pb" \
       "$@" >"$out/$name.txt" 2>&1; then
    echo "ok $name $(grep -c 'check passed' "$out/$name.txt") sections"
  else
    echo "FAIL $name: $(tail -1 "$out/$name.txt")"
  fi
}
mla="--heads $((16 * N)) --kv-heads 1 --head-dim 512 --qk-dim 576"
gqa="--heads $((8 * N)) --kv-heads $N --head-dim 128"
for geo in mla gqa; do
  flags=${!geo}
  run "${geo}_n${N}_b1_ctx32k_graph" $flags --batch 1 --context 32k --launch graph
  run "${geo}_n${N}_b16_ctx8k_graph" $flags --batch 16 --context 8k --launch graph --check-rows 2
  run "${geo}_n${N}_b16_ctx8k_eager" $flags --batch 16 --context 8k --launch eager --check-rows 2
  run "${geo}_n${N}_b64_ctx1k_graph" $flags --batch 64 --context 1k --launch graph --check-rows 4 --row-stamps \
      --padded-rows 4
done
