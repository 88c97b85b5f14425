#!/usr/bin/env bash
# The project's measurement campaign for the kernel tables a built-in profile carries (models/tables/), made
# with `dcpsim hw sweep` over full grids and timed on the GPU timeline; run on the GPU machine. A user (or a
# new GPU) does not need it: `dcpsim hw calibrate --out my-gpu.json` measures every family the simulator reads
# and writes a validated profile (README "Calibrate your own GPU"). Merge rows step by 2x (read between them
# linearly or as a power law, as each table's leave-one-out chooses: table_loo.h), attention's more finely; merge
# heads are multiples of 24 above 16 so that every N of the grid divides
# them (A2A needs N | H). One file per kernel family, so that one can be re-made alone:
#   OUT_DIR/<prefix>-attention.json  attention: GQA (1, 4, 8, 16 query heads per KV head), dcpsim's kernel
#   OUT_DIR/<prefix>-attention-mla.json  attention: MLA, FlashInfer's kernel
#   OUT_DIR/<prefix>-attention-dcpsim.json  MLA on dcpsim's own kernel (row stamps, row-stream)
#   OUT_DIR/<prefix>-merge.json      correction, A2A pack and unpack-combine at value head dims 128 and 512
#   OUT_DIR/<prefix>-merge-cold.json the merge kernels with L2 flushed before each call (--merge-inputs cold)
#   OUT_DIR/<prefix>-merge-cold-lse.json the correction cold, its gathered LSEs read back (--warm-lse)
#   OUT_DIR/<prefix>-merge-stamped[-cold].json  correction and A2A combine as `hw run --row-stamps` runs them
#   OUT_DIR/<prefix>-merge[-stamped]-pdl[-cold].json  the merge kernels alone and as the third of three
#                                    calls under PDL, point by point (--pdl), warm and with the calls' own
#                                    inputs evicted
#   scripts/hw_tables.sh DCPSIM_BINARY OUT_DIR attention|merge|stamped|pdl|all PROFILE [extra hw sweep flags]
#   (PROFILE: the file prefix, the profile's name: h200-sxm, h100-sxm, ...)
set -uo pipefail
bin=${1:?dcpsim binary}
out=${2:?output folder}
which=${3:?part: attention merge stamped pdl all}
case $which in attention|merge|stamped|pdl|all) ;; *) echo "hw_tables.sh: unknown part '$which' (attention merge stamped pdl all)" >&2; exit 2 ;; esac
prefix=${4:?the profile name the files are prefixed with (h200-sxm, h100-sxm, ...)}
shift $(($# < 4 ? $# : 4))
mkdir -p "$out"
status=0
if [ "$which" = all ] || [ "$which" = attention ]; then
  # The kernels' schedules (waves of dcpsim's blocks, FlashInfer's chunks per cluster) are not smooth between
  # neighbours 1.5x apart: GQA heads at 17 counts from 16 to 256 (a group's heads only where they divide: the
  # sweep skips the rest), rows by 1.5x, tokens by 1.33-1.5x (2x above 16k); FlashInfer's MLA rows at 26 counts
  # (1.14-1.33x apart from 6 up) and tokens at 30 (1.14-1.5x apart up to 16k). FlashInfer's MLA kernel is read at its heads up to 128 and at 128-head
  # tiles above (the sweep refuses other counts), so MLA has its own file.
  "$bin" hw sweep --out "$out/$prefix-attention.json" --kernels attention \
    --geometry gqa:1,gqa:4,gqa:8,gqa:16 --heads 16,20,24,28,32,40,48,56,64,80,96,112,128,160,192,224,256 \
    --batch 1,2,3,4,6,8,12,16,24,32,48,64,96,128,192,256 \
    --tokens 128,256,384,512,768,1k,1536,2k,3k,4k,6k,8k,12k,16k,32k,64k,128k --reps 10 --warmup 3 "$@" || status=1
  "$bin" hw sweep --out "$out/$prefix-attention-mla.json" --kernels attention \
    --geometry mla --heads 16,24,32,48,64,72,80,96,112,128,256 \
    --batch 1,2,3,4,5,6,8,10,12,14,16,20,24,28,32,40,48,56,64,80,96,112,128,160,192,256 \
    --tokens 128,192,256,320,384,448,512,640,768,896,1k,1280,1536,1792,2k,2560,3k,3584,4k,5k,6k,7k,8k,10k,12k,14k,16k,32k,64k,128k \
    --reps 10 --warmup 3 "$@" || status=1
fi
if [ "$which" = all ] || [ "$which" = attention ]; then
  # dcpsim's own MLA kernel: what runs where FlashInfer cannot (row stamps, row-stream).
  "$bin" hw sweep --out "$out/$prefix-attention-dcpsim.json" --kernels attention --attention dcpsim \
    --geometry mla --heads 16,32,64,128,256 --batch 1,2,4,8,16,32,64,128,256 \
    --tokens 128,256,512,1k,2k,4k,8k,16k,32k,64k,128k --reps 10 --warmup 3 "$@" || status=1
fi
if [ "$which" = all ] || [ "$which" = merge ]; then
  "$bin" hw sweep --out "$out/$prefix-merge.json" --kernels correction,a2a_pack,a2a_combine \
    --merge-dcp 2,3,4,6,8 --merge-batch 1,2,4,8,16,32,64,128,256 --merge-heads 8,16,24,48,96,192 \
    --merge-heads-per-rank 1,2,3,4,6,8,12,16,24,32,48,64,96,128 --merge-head-dims 128,512 --reps 10 --warmup 3 "$@" ||
    status=1
  # The same grid with L2 flushed before each call: what an emulated step's first merge kernel reads.
  "$bin" hw sweep --out "$out/$prefix-merge-cold.json" --kernels correction,a2a_pack,a2a_combine \
    --merge-dcp 2,3,4,6,8 --merge-batch 1,2,4,8,16,32,64,128,256 --merge-heads 8,16,24,48,96,192 \
    --merge-heads-per-rank 1,2,3,4,6,8,12,16,24,32,48,64,96,128 --merge-head-dims 128,512 --merge-inputs cold \
    --reps 10 --warmup 3 "$@" || status=1
  # The correction cold but its LSEs in L2: an emulated step's LSE all-gather copies them just before it.
  "$bin" hw sweep --out "$out/$prefix-merge-cold-lse.json" --kernels correction \
    --merge-dcp 2,3,4,6,8 --merge-batch 1,2,4,8,16,32,64,128,256 --merge-heads 8,16,24,48,96,192 \
    --merge-head-dims 128,512 --merge-inputs cold --warm-lse --reps 10 --warmup 3 "$@" || status=1
fi
if [ "$which" = all ] || [ "$which" = stamped ]; then
  # The instrumented correction and combine (per-row stamps: the kernels stamped sections ran), warm and cold.
  for inputs in warm cold; do
    suffix=$([ $inputs = cold ] && echo -cold)
    "$bin" hw sweep --out "$out/$prefix-merge-stamped$suffix.json" --kernels correction,a2a_combine --row-stamps \
      --merge-dcp 2,3,4,6,8 --merge-batch 1,2,4,8,16,32,64,128,256 --merge-heads 8,16,24,48,96,192 \
      --merge-heads-per-rank 1,2,3,4,6,8,12,16,24,32,48,64,96,128 --merge-head-dims 128,512 --merge-inputs $inputs \
      --reps 10 --warmup 3 "$@" || status=1
  done
fi
if [ "$which" = all ] || [ "$which" = pdl ]; then
  # Each point alone and as the third of three calls of its kind under PDL, alternating: the plain kernels,
  # then the stamped ones `hw run --row-stamps` runs; warm, then each call on its own inputs, all evicted (the
  # plain correction's gathered LSEs read back, as the emulated all-gather leaves them; the stamped cold tables
  # have no such variant).
  grid=(--merge-dcp 2,3,4,6,8 --merge-batch 1,2,4,8,16,32,64,128,256 --merge-heads 8,16,24,48,96,192
    --merge-heads-per-rank 1,2,3,4,6,8,12,16,24,32,48,64,96,128 --merge-head-dims 128,512 --reps 10 --warmup 3)
  "$bin" hw sweep --out "$out/$prefix-merge-pdl.json" --kernels correction,a2a_pack,a2a_combine --pdl \
    "${grid[@]}" "$@" || status=1
  "$bin" hw sweep --out "$out/$prefix-merge-stamped-pdl.json" --kernels correction,a2a_combine --row-stamps \
    --pdl "${grid[@]}" "$@" || status=1
  "$bin" hw sweep --out "$out/$prefix-merge-pdl-cold.json" --kernels correction,a2a_pack,a2a_combine --pdl \
    --merge-inputs cold --warm-lse "${grid[@]}" "$@" || status=1
  "$bin" hw sweep --out "$out/$prefix-merge-stamped-pdl-cold.json" --kernels correction,a2a_combine \
    --row-stamps --pdl --merge-inputs cold "${grid[@]}" "$@" || status=1
fi
exit $status
