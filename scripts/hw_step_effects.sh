#!/usr/bin/env bash
# What a step does to its kernels that a table timing each kernel alone does not see; run on the GPU machine
# (docs/VALIDATION.md says what each part found):
#   floor     the launch floor: an empty kernel, a 2 KiB copy and the smallest correction, graph-replayed and
#             eager (hw bench)                                            -> floor.jsonl
#   prelude   the merge kernels alone, then after a device-to-device copy of 4 KiB, 256 KiB and 16 MiB (an
#             emulated collective's copies), enqueued before the call's graph and as a node inside it
#             (hw sweep --merge-prelude-copy [--prelude-copy-in-graph]) -> prelude/*.json
#   waves     dcpsim's GQA kernel at heads and rows between the table's grid values (partial last waves of
#             blocks), next to the table grid it is priced from, same call -> waves/*.json
#   OUT=... [BIN=.carry/bin] [PARTS="floor prelude waves"] scripts/hw_step_effects.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/hw-effects}
BIN=${BIN:-$PWD/.carry/bin}
PARTS=${PARTS:-floor prelude waves}
mkdir -p "$OUT/prelude" "$OUT/waves"
nccl=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))' 2>/dev/null)
export LD_LIBRARY_PATH=$BIN:$(dirname "$(find "${nccl:-/}" -name 'libnccl.so.2' 2>/dev/null | head -1)"):${LD_LIBRARY_PATH:-}
dcpsim=$BIN/dcpsim
"$dcpsim" hw devices
for part in $PARTS; do
  start=$(date +%s)
  case $part in
    floor)
      for mode in --graph "--eager-batch 20"; do
        "$dcpsim" hw bench --op empty $mode --reps 30 --json "$OUT/floor.jsonl"
        "$dcpsim" hw bench --op copy --copy-bytes 2048 $mode --reps 30 --json "$OUT/floor.jsonl"
        "$dcpsim" hw bench --op correct --dcp 2 --batch 1 --heads 8 --head-dim 128 $mode --reps 30 \
          --json "$OUT/floor.jsonl"
      done
      ;;
    prelude)
      grid=(--kernels correction,a2a_pack,a2a_combine --merge-dcp 2,4,8 --merge-batch 1,16,64 --merge-heads 24,96
        --merge-heads-per-rank 3,12,32 --merge-head-dims 128,512 --reps 15 --warmup 3)
      "$dcpsim" hw sweep "${grid[@]}" --out "$OUT/prelude/none.json"
      for bytes in 4k 256k 16m; do
        "$dcpsim" hw sweep "${grid[@]}" --merge-prelude-copy $bytes --out "$OUT/prelude/copy-$bytes.json"
        "$dcpsim" hw sweep "${grid[@]}" --merge-prelude-copy $bytes --prelude-copy-in-graph \
          --out "$OUT/prelude/graph-$bytes.json"
      done
      "$dcpsim" hw sweep "${grid[@]}" --out "$OUT/prelude/none-again.json"  # the drift over the part
      ;;
    waves)
      "$dcpsim" hw sweep --kernels attention --attention dcpsim --geometry gqa:4,gqa:8,gqa:16 \
        --heads 16,32,64,128,256 --batch 1,2,4,8,16,32,64,128,256 --tokens 512,1k,2k,4k,8k,16k \
        --reps 10 --warmup 3 --out "$OUT/waves/grid.json"
      "$dcpsim" hw sweep --kernels attention --attention dcpsim --geometry gqa:4,gqa:8,gqa:16 \
        --heads 48,80,112 --batch 12,24,40,96,160 --tokens 768,3k,12k --reps 10 --warmup 3 \
        --out "$OUT/waves/between.json"
      ;;
    *) echo "hw_step_effects.sh: unknown part '$part' (floor prelude waves)" >&2; exit 2 ;;
  esac
  echo "$part: $(($(date +%s) - start)) s"
done
