#!/usr/bin/env bash
# Issue 36 on one GPU: `hw run` at DCP's own scale in bounded memory. Runs, from the repository root with the
# carried binaries (.carry/bin/dcpsim, .carry/bin/hw_tests; scripts/hw_carry.sh builds them):
#   - the issue's command (B = 1, N = 8 emulated, MLA H = 128, one KV head, D = 512, D_qk = 576, ag-rs, graph)
#     at 1M and 4M tokens, and a GQA case (H = 64, eight KV heads, D = 128) at 1M and 4M, each under
#     /usr/bin/time -v (or, where it is missing, python's resource.getrusage of the child), with --json and
#     --memory-report: exactness, peak host RSS (target <= 8 GB at 1M), device memory estimated vs measured
#     (target: within 25 %), and a 4M run within one GPU's memory;
#   - a run far too large for the device (MLA at 128M tokens: 147 GB of KV), which must be refused in one line
#     with exit 2 before anything is allocated;
#   - the GPU tests LongContext.* (hw_tests).
# Everything lands in $OUT/long_context.tgz (logs, JSON figures) and $OUT/summary.txt.
# Expected GPU time: about 2 minutes (each run's GPU work takes under a second; the host's streamed fp64
# reference of the checked row takes ~5-10 s at 1M and ~20-40 s at 4M on 16 cores), well under 8 minutes.
#   OUT=/path scripts/device/long_context.sh [BIN_DIR]
set -uo pipefail
. "$(dirname "$0")/env.sh"
device_job long-context "${1:-}"  # BIN, OUT, W, S, say; NCCL from PyTorch's wheel
save() { tar czf "$OUT/long_context.tgz" -C "$W" . 2>/dev/null; }

# Peak RSS of a command: /usr/bin/time -v when present, else the child's ru_maxrss from python.
measure() {  # log, command...
  local log=$1
  shift
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -v "$@" >"$log" 2>&1
  else
    python3 - "$@" >"$log" 2>&1 <<'EOF'
import resource, subprocess, sys
rc = subprocess.call(sys.argv[1:])
print(f"\tMaximum resident set size (kbytes): {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}")
print(f"\tExit status: {rc}")
sys.exit(rc)
EOF
  fi
}

say "# $(date -u +%FT%TZ) $("$BIN/dcpsim" hw devices 2>&1 | head -3 | tr '\n' ' ')"
say "# /usr/bin/time: $([ -x /usr/bin/time ] && echo present || echo 'missing: python getrusage')"
MLA=(--heads 128 --kv-heads 1 --head-dim 512 --qk-dim 576)
GQA=(--heads 64 --kv-heads 8 --head-dim 128 --qk-dim 128)
run() {  # name, context, geometry...
  local name=$1 ctx=$2
  shift 2
  local start=$SECONDS
  measure "$W/$name.log" timeout 300 "$BIN/dcpsim" hw run --emulate --strategy ag-rs --dcp 8 --batch 1 \
    --context "$ctx" --launch graph --json "$W/$name.json" --memory-report "$@"
  local rc=$?
  local rss
  rss=$(grep -E 'Maximum resident set size' "$W/$name.log" | grep -oE '[0-9]+$')
  say "$name rc=$rc wall=$((SECONDS - start))s peak_rss=$(awk -v k="${rss:-0}" 'BEGIN{printf "%.2f GB", k*1024/1e9}')" \
    "| $(grep -E 'check (passed|FAILED)' "$W/$name.log" | sed 's/^ *//' | cut -c1-110)" \
    "| $(grep -oE 'memory\.[a-z_]+ [0-9.]+' "$W/$name.log" | tr '\n' ' ')"
  grep -E 'rror|refus' "$W/$name.log" | head -3 | tee -a "$S"
  save
}
run mla_1m 1000000 "${MLA[@]}"
run gqa_1m 1000000 "${GQA[@]}"
run mla_4m 4000000 "${MLA[@]}"
run gqa_4m 4000000 "${GQA[@]}"

# Far too large: refused in one line, exit 2, before any allocation (and quickly).
start=$SECONDS
timeout 120 "$BIN/dcpsim" hw run --emulate --strategy ag-rs --dcp 8 --batch 1 --context 128m "${MLA[@]}" \
  >"$W/too_large.out" 2>"$W/too_large.err"
say "too_large rc=$? (expect 2) wall=$((SECONDS - start))s stderr_lines=$(wc -l <"$W/too_large.err"): $(head -c 300 "$W/too_large.err")"
save

start=$SECONDS
timeout 420 "$BIN/hw_tests" --gtest_brief=1 --gtest_filter='LongContext.*' >"$W/hw_tests.log" 2>&1
say "hw_tests LongContext rc=$? wall=$((SECONDS - start))s $(grep -E '^\[  (PASSED|FAILED)' "$W/hw_tests.log" | tr '\n' ' ')"
grep -E 'Failure|Expected|Which is|estimated' "$W/hw_tests.log" | head -12 | tee -a "$S"
save
cp "$S" "$W/" && save
