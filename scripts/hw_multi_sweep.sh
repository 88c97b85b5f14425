#!/usr/bin/env bash
# Real multi-GPU measurements (one thread per GPU, NCCL collectives, direct merge over NVLink peer access):
# every strategy, N = 2..GPUs, B in {1, 8, 64, 256}, H in {16, 64, 128}, D in {128 (GQA), 512 (MLA)}, eager and
# graph launch. One .pb per (N, geometry, B, launch) with one section per strategy; every run checks itself
# against the fp64 reference and the script records failures.
#   scripts/hw_multi_sweep.sh DCPSIM_BINARY OUT_DIR [N ...]     (default N: 2)
set -uo pipefail
bin=${1:?dcpsim binary}
out=${2:?output directory}
shift 2
ns=${*:-2}
export NCCL_NVLS_ENABLE=0
mkdir -p "$out"
for N in $ns; do
  devices=$(seq -s, 0 $((N - 1)))
  for H in 16 64 128; do
    for D in 128 512; do
      if [ "$D" = 512 ]; then geo="--kv-heads 1 --head-dim 512 --qk-dim 576"; else geo="--kv-heads 1 --head-dim 128"; fi
      for B in 1 8 64 256; do
        for launch in eager graph; do
          name="n${N}_h${H}_d${D}_b${B}_ctx4k_${launch}"
          if "$bin" hw run --dcp "$N" --devices "$devices" --heads "$H" $geo --batch "$B" --context 4k \
               --launch "$launch" --strategy all --warmup 3 --reps 20 --seed 11 --check-rows 2 \
               --out "$out/$name.pb" --json "$out/$name.json" >"$out/$name.txt" 2>&1; then
            echo "ok $name"
          else
            echo "FAIL $name: $(tail -1 "$out/$name.txt")"
          fi
        done
      done
    done
  done
done
