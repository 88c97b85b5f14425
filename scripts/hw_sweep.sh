#!/usr/bin/env bash
# The project's campaign of measured step sets (a new GPU's fit and held-out steps are `dcpsim hw calibrate`'s,
# scripts/device/calibrate.sh). The measured traces in traces/measured/h200/: `dcpsim hw run --emulate` for N in {2, 3, 4, 8}, every strategy,
# GQA and MLA geometries, a few batch sizes and contexts, eager and graph launches. One trace per (geometry, N,
# batch, context, launch), each with one section per strategy; every run checks itself against the reference.
# Each trace is gzip-compressed (.pb.gz, as committed; dcpsim reads it as it reads a .pb).
# With the set name `holdout`, scenarios the fit never sees: other group sizes (5, 6), head counts, batch sizes
# and contexts, PDL launches — for validating by held-out scenario (docs/VALIDATION.md). `holdout2`: a second
# such set, chosen before any model change was checked against it (N = 2, 3, 4, 7, 8; heads, rows and tokens
# off every table grid). `rows`: one rank (real, not emulated) with per-row stamps in dcpsim's attention
# kernel, for the per-row ready times within a kernel.
# `holdout3`: a third, chosen before the PDL tables were measured (PDL at N = 3 and 6, GQA partial waves).
# `holdout4`: a fourth, chosen on 2026-12-03 after the PDL savings were fitted on `pdl` and before any model
# change was checked against it: N = 3, 4, 5, 6, 7, 8; heads, rows and tokens off the fit grid; PDL, graph and
# eager.
# `pdl`: the fit set's scenarios launched with PDL (its files are the fit set's, with `pdl` for `graph`): what
# PDL saves a merge kernel in a step, for calibrating launch.pdl_* (never the held-out sets' PDL scenarios).
# Phases are timed on the GPU timeline (CUPTI) whenever it loads (`hw run --timing auto`).
# `holdout5`: a fifth, chosen on 2026-12-04 before the model of that day was checked against it.
#   scripts/hw_sweep.sh DCPSIM_BINARY OUT_DIR [fit|pdl|holdout|holdout2|holdout3|holdout4|holdout5|rows]
set -uo pipefail
bin=${1:?dcpsim binary}
out=${2:?output directory}
set_name=${3:-fit}
export NCCL_NVLS_ENABLE=0
mkdir -p "$out"
run() {
  local name=$1; shift
  if "$bin" hw run --emulate --strategy all --warmup 3 --reps 10 --seed 7 --out "$out/$name.pb" "$@" \
       >"$out/$name.txt" 2>&1; then
    gzip -9nf "$out/$name.pb"  # as committed: dcpsim reads .pb.gz as it reads .pb
    echo "ok $name $(grep -c 'check passed' "$out/$name.txt") sections"
  else
    echo "FAIL $name: $(tail -1 "$out/$name.txt")"
  fi
}
if [ "$set_name" = holdout ]; then
  for N in 5 6; do
    run "mla_n${N}_h$((24 * N))_b8_ctx24k_graph" --dcp $N --heads $((24 * N)) --kv-heads 1 --head-dim 512 \
        --qk-dim 576 --batch 8 --context 24k --launch graph --check-rows 2
    run "mla_n${N}_h$((8 * N))_b32_ctx4k_pdl" --dcp $N --heads $((8 * N)) --kv-heads 1 --head-dim 512 \
        --qk-dim 576 --batch 32 --context 4k --launch pdl --check-rows 2 --row-stamps
    run "gqa_n${N}_h$((4 * N))_b4_ctx48k_eager" --dcp $N --heads $((4 * N)) --kv-heads $N --head-dim 128 \
        --batch 4 --context 48k --launch eager --check-rows 2
    run "gqa_n${N}_h$((16 * N))_b128_ctx2k_graph" --dcp $N --heads $((16 * N)) --kv-heads $N --head-dim 128 \
        --batch 128 --context 2k --launch graph --check-rows 4 --row-stamps
  done
  run "mla_n4_h128_b8_ctx32k_graph" --dcp 4 --heads 128 --kv-heads 1 --head-dim 512 --qk-dim 576 --batch 8 \
      --context 32k --launch graph --check-rows 2
  run "mla_n2_h16_b256_ctx2k_pdl" --dcp 2 --heads 16 --kv-heads 1 --head-dim 512 --qk-dim 576 --batch 256 \
      --context 2k --launch pdl --check-rows 4
  exit 0
fi
mla="--kv-heads 1 --head-dim 512 --qk-dim 576"
if [ "$set_name" = holdout2 ]; then
  run mla_n3_h96_b24_ctx12k_graph --dcp 3 --heads 96 $mla --batch 24 --context 12k --launch graph --check-rows 2
  run mla_n7_h56_b12_ctx40k_eager --dcp 7 --heads 56 $mla --batch 12 --context 40k --launch eager --check-rows 2
  run mla_n8_h192_b4_ctx96k_graph --dcp 8 --heads 192 $mla --batch 4 --context 96k --launch graph --check-rows 2
  run mla_n2_h128_b2_ctx100k_graph --dcp 2 --heads 128 $mla --batch 2 --context 100k --launch graph
  run mla_n4_h80_b48_ctx6k_pdl --dcp 4 --heads 80 $mla --batch 48 --context 6k --launch pdl --check-rows 2 \
      --row-stamps
  run gqa_n3_h48_b96_ctx3k_graph --dcp 3 --heads 48 --kv-heads 3 --head-dim 128 --batch 96 --context 3k \
      --launch graph --check-rows 4 --row-stamps
  run gqa_n7_h56_b8_ctx20k_graph --dcp 7 --heads 56 --kv-heads 7 --head-dim 128 --batch 8 --context 20k \
      --launch graph --check-rows 2
  run gqa_n4_h32_b24_ctx64k_eager --dcp 4 --heads 32 --kv-heads 8 --head-dim 128 --batch 24 --context 64k \
      --launch eager --check-rows 2
  exit 0
fi
if [ "$set_name" = holdout3 ]; then
  # Chosen before the PDL tables were measured or any model change was checked against it: PDL at several N,
  # GQA group sizes 4, 8 and 16 at partial waves, heads, rows and tokens off every table grid.
  run mla_n3_h48_b20_ctx9k_pdl --dcp 3 --heads 48 $mla --batch 20 --context 9k --launch pdl --check-rows 2
  run mla_n6_h72_b6_ctx48k_pdl --dcp 6 --heads 72 $mla --batch 6 --context 48k --launch pdl --check-rows 2
  run mla_n5_h100_b40_ctx3k_graph --dcp 5 --heads 100 $mla --batch 40 --context 3k --launch graph --check-rows 2
  run mla_n8_h24_b96_ctx1k_eager --dcp 8 --heads 24 $mla --batch 96 --context 1k --launch eager --check-rows 2
  run gqa_n6_h48_b20_ctx30k_pdl --dcp 6 --heads 48 --kv-heads 6 --head-dim 128 --batch 20 --context 30k \
      --launch pdl --check-rows 2
  run gqa_n2_h64_b40_ctx5k_graph --dcp 2 --heads 64 --kv-heads 4 --head-dim 128 --batch 40 --context 5k \
      --launch graph --check-rows 2
  run gqa_n8_h24_b72_ctx2k_graph --dcp 8 --heads 24 --kv-heads 6 --head-dim 128 --batch 72 --context 2k \
      --launch graph --check-rows 2
  run gqa_n3_h96_b12_ctx14k_pdl --dcp 3 --heads 96 --kv-heads 6 --head-dim 128 --batch 12 --context 14k \
      --launch pdl --check-rows 2
  exit 0
fi
if [ "$set_name" = holdout4 ]; then
  run mla_n5_h80_b24_ctx16k_pdl --dcp 5 --heads 80 $mla --batch 24 --context 16k --launch pdl --check-rows 2
  run mla_n7_h112_b6_ctx64k_graph --dcp 7 --heads 112 $mla --batch 6 --context 64k --launch graph --check-rows 2
  run mla_n3_h36_b128_ctx2k_eager --dcp 3 --heads 36 $mla --batch 128 --context 2k --launch eager --check-rows 4
  run mla_n8_h64_b32_ctx12k_pdl --dcp 8 --heads 64 $mla --batch 32 --context 12k --launch pdl --check-rows 2
  run gqa_n6_h72_b48_ctx6k_pdl --dcp 6 --heads 72 --kv-heads 6 --head-dim 128 --batch 48 --context 6k \
      --launch pdl --check-rows 2
  run gqa_n5_h40_b10_ctx40k_graph --dcp 5 --heads 40 --kv-heads 5 --head-dim 128 --batch 10 --context 40k \
      --launch graph --check-rows 2
  run gqa_n3_h48_b64_ctx3k_eager --dcp 3 --heads 48 --kv-heads 3 --head-dim 128 --batch 64 --context 3k \
      --launch eager --check-rows 4
  run gqa_n4_h96_b160_ctx1k_graph --dcp 4 --heads 96 --kv-heads 8 --head-dim 128 --batch 160 --context 1k \
      --launch graph --check-rows 4
  exit 0
fi
if [ "$set_name" = holdout5 ]; then
  # Chosen on 2026-12-04 before this model was checked against them: N = 2, 3, 4, 6, 8; MLA heads per owner
  # 15, 8, 20, 12; GQA groups 16, 6, 5 and 10 (none a measured group but 16); rows and tokens off the grids;
  # PDL, graph and eager.
  run mla_n4_h60_b12_ctx20k_pdl --dcp 4 --heads 60 $mla --batch 12 --context 20k --launch pdl --check-rows 2
  run mla_n6_h48_b40_ctx5k_graph --dcp 6 --heads 48 $mla --batch 40 --context 5k --launch graph --check-rows 2
  run mla_n2_h40_b64_ctx3k_eager --dcp 2 --heads 40 $mla --batch 64 --context 3k --launch eager --check-rows 4
  run mla_n8_h96_b3_ctx80k_pdl --dcp 8 --heads 96 $mla --batch 3 --context 80k --launch pdl
  run gqa_n4_h64_b28_ctx14k_pdl --dcp 4 --heads 64 --kv-heads 4 --head-dim 128 --batch 28 --context 14k \
      --launch pdl --check-rows 2
  run gqa_n6_h36_b80_ctx2k_graph --dcp 6 --heads 36 --kv-heads 6 --head-dim 128 --batch 80 --context 2k \
      --launch graph --check-rows 4
  run gqa_n8_h40_b6_ctx56k_eager --dcp 8 --heads 40 --kv-heads 8 --head-dim 128 --batch 6 --context 56k \
      --launch eager --check-rows 2
  run gqa_n3_h60_b36_ctx7k_graph --dcp 3 --heads 60 --kv-heads 6 --head-dim 128 --batch 36 --context 7k \
      --launch graph --check-rows 2
  exit 0
fi
if [ "$set_name" = rows ]; then
  # One rank: no collective to emulate, so these are real single-GPU steps (source hw).
  one() {
    local name=$1; shift
    if "$bin" hw run --dcp 1 --strategy ag-rs --warmup 3 --reps 10 --seed 7 --row-stamps --attention dcpsim \
         --out "$out/$name.pb" "$@" >"$out/$name.txt" 2>&1; then
      gzip -9nf "$out/$name.pb"  # as committed: dcpsim reads .pb.gz as it reads .pb
    echo "ok $name $(grep -c 'check passed' "$out/$name.txt") sections"
    else
      echo "FAIL $name: $(tail -1 "$out/$name.txt")"
    fi
  }
  one mla_n1_h128_b64_ctx8k_graph --heads 128 $mla --batch 64 --context 8k --launch graph --check-rows 4
  one mla_n1_h32_b160_ctx4k_graph --heads 32 $mla --batch 160 --context 4k --launch graph --check-rows 4
  one mla_n1_h16_b40_ctx20k_eager --heads 16 $mla --batch 40 --context 20k --launch eager --check-rows 2
  one gqa_n1_h32_b96_ctx6k_graph --heads 32 --kv-heads 8 --head-dim 128 --batch 96 --context 6k --launch graph \
      --check-rows 4
  one gqa_n1_h64_b200_ctx2k_graph --heads 64 --kv-heads 8 --head-dim 128 --batch 200 --context 2k \
      --launch graph --check-rows 4
  exit 0
fi
if [ "$set_name" = pdl ]; then
  for N in 2 3 4 8; do
    mla="--heads $((16 * N)) --kv-heads 1 --head-dim 512 --qk-dim 576"
    gqa="--heads $((8 * N)) --kv-heads $N --head-dim 128"
    for geo in mla gqa; do
      flags=${!geo}
      run "${geo}_n${N}_b1_ctx32k_pdl" --dcp $N $flags --batch 1 --context 32k --launch pdl
      run "${geo}_n${N}_b16_ctx8k_pdl" --dcp $N $flags --batch 16 --context 8k --launch pdl --check-rows 2
      run "${geo}_n${N}_b64_ctx1k_pdl" --dcp $N $flags --batch 64 --context 1k --launch pdl --check-rows 4 \
          --row-stamps --padded-rows 4
    done
  done
  exit 0
fi
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
