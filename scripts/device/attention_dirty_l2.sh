#!/usr/bin/env bash
# Does an attention kernel pay for dirty L2 lines left by the kernels before it? (docs/VALIDATION.md, "Where
# rank 0's attention stands": in emulated steps rank 0's attention, the first after the previous repetition's
# merges, runs up to ~6 us slower against its price than the later ranks', more so the more bytes the step
# writes.) On one GPU, from the repository root with the carried binaries (scripts/hw_carry.sh):
#   1. the GPU test SweepGpu.AttentionAfterDirtyLinesPaysTheirWriteBack (where hw_tests was carried);
#   2. the same attention points swept with `hw sweep --attention-prelude-write B` for B in {0, 4m, 16m, 64m}
#      (a memset of B bytes before each call, outside its span), alternating nothing else: FlashInfer's MLA
#      kernel (H 32, rows 8 and 64, 4k and 32k tokens per row) and dcpsim's GQA kernel at group 8 (H 32, the
#      same rows and tokens); 3 warm-ups and 10 graph replays per point, as the tables.
# Writes $OUT/<family>-<B>.json, $OUT/summary.txt (per point: the time at each B and its excess over B = 0)
# and $OUT/attention_dirty_l2_logs.tgz. Expected GPU time: under a minute.
#   OUT=/path scripts/device/attention_dirty_l2.sh [BIN_DIR]
set -uo pipefail
. "$(dirname "$0")/env.sh"
device_job attention-dirty-l2 "${1:-}"  # BIN, OUT, W, S, say
say "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | head -1)"
if [ -x "$BIN/hw_tests" ]; then  # carried when the tree leaves room for it
  "$BIN/hw_tests" --gtest_filter='SweepGpu.AttentionAfterDirtyLinesPaysTheirWriteBack' >"$W/test.log" 2>&1
  say "test: rc=$? $(grep -E '^\[ +(OK|FAILED|SKIPPED) +\]' "$W/test.log" | head -1)"
  grep -E 'without .* ns' "$W/test.log" | head -2 | tee -a "$S"
else
  say "test: not run (no $BIN/hw_tests)"
fi
for family in "mla --attention flashinfer" "gqa:8 --attention dcpsim"; do
  set -- $family
  tag=${1%%:*}
  for bytes in 0 4m 16m 64m; do
    "$BIN/dcpsim" hw sweep --kernels attention --geometry "$@" --heads 32 --batch 8,64 --tokens 4096,32768 \
      --reps 10 --warmup 3 --attention-prelude-write "$bytes" --out "$OUT/$tag-$bytes.json" \
      >"$W/$tag-$bytes.out" 2>"$W/$tag-$bytes.err" </dev/null
    say "$tag prelude $bytes: rc=$?"
  done
done
python3 - "$OUT" <<'EOF' | tee -a "$S"
import json, os, sys
out = sys.argv[1]
for tag in ("mla", "gqa"):
    runs = {}
    for b in ("0", "4m", "16m", "64m"):
        f = os.path.join(out, f"{tag}-{b}.json")
        if not os.path.exists(f):
            continue
        for t in json.load(open(f))["tables"]:
            for p in t["points"]:
                runs.setdefault(tuple(p["at"]), {})[b] = p["median_ns"] / 1e3
    print(f"{tag}: heads, rows, tokens: us at prelude 0 / 4m / 16m / 64m (excess over 0)")
    for at, v in sorted(runs.items()):
        base = v.get("0")
        cells = [f"{v[b]:.2f}" + (f" ({v[b] - base:+.2f})" if base is not None and b != "0" else "")
                 for b in ("0", "4m", "16m", "64m") if b in v]
        print("  " + ",".join(f"{x:g}" for x in at) + ": " + " / ".join(cells))
EOF
tar czf "$OUT/attention_dirty_l2_logs.tgz" -C "$W" . 2>/dev/null
