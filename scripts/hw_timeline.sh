#!/usr/bin/env bash
# What the instruments cost and what they read, on the GPU machine: the same emulated steps timed three ways —
# `--timing step` (two CUDA events around each rank's whole step, nothing else: the baseline), `--timing events`
# (CUDA events around every phase) and `--timing cupti` (the GPU timeline from CUPTI activity records) — each
# with eager launches, CUDA-graph replay and programmatic dependent launch; then Nsight Compute's own kernel
# durations for one of them, to set beside the timeline's.
#   scripts/hw_timeline.sh DCPSIM_BINARY OUT_DIR
set -uo pipefail
bin=${1:?dcpsim binary}
out=${2:?output directory}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
scen_a="--emulate --dcp 4 --heads 64 --kv-heads 1 --head-dim 512 --qk-dim 576 --batch 8 --context 16k --strategy ag-rs"
scen_b="--emulate --dcp 8 --heads 128 --kv-heads 1 --head-dim 512 --qk-dim 576 --batch 64 --context 8k --strategy a2a"
scen_c="--emulate --dcp 2 --heads 16 --kv-heads 2 --head-dim 128 --batch 16 --context 8k --strategy direct"
printf '%-6s %-6s %-12s %12s %12s  %s\n' scen launch timing step_us outer_us "phase medians of rank 0 (us)"
for s in a b c; do
  v=scen_$s
  for launch in eager graph pdl; do
    for timing in step events cupti; do
      log="$out/timing_${s}_${launch}_${timing}.txt"
      "$bin" hw run ${!v} --launch "$launch" --timing "$timing" --warmup 5 --reps 30 --seed 3 \
        --json "$out/timing_${s}_${launch}_${timing}.json" >"$log" 2>&1 || { echo "FAIL $log: $(tail -1 "$log")"; continue; }
      python3 - "$out/timing_${s}_${launch}_${timing}.json" "$s" "$launch" "$timing" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))[0]
ph = " ".join(f"{p['phase']}={p['median_ns']/1e3:.2f}" for p in r.get("phases", []) if p["rank"] == 0)
print(f"{sys.argv[2]:<6} {sys.argv[3]:<6} {sys.argv[4]:<12} {r['step_median_ns']/1e3:12.2f} {r['outer_step_median_ns']/1e3:12.2f}  {ph}")
PY
    done
  done
done
# Nsight Compute's gpu__time_duration for scenario a's kernels (eager), beside the timeline's figures above.
if command -v ncu >/dev/null; then
  ncu --clock-control none --metrics gpu__time_duration.sum --csv \
    "$bin" hw run $scen_a --launch eager --timing step --warmup 0 --reps 3 --seed 3 >"$out/ncu_a.csv" 2>"$out/ncu_a.err"
  python3 - "$out/ncu_a.csv" <<'PY'
import csv, sys, statistics, collections, re
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
if not rows:
    print("ncu: no rows"); sys.exit()
h = rows[0]; k = h.index("Kernel Name"); v = h.index("Metric Value"); u = h.index("Metric Unit")
d = collections.defaultdict(list)
for r in rows[1:]:
    val = float(r[v].replace(",", ""))
    scale = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}[r[u]]
    d[re.sub(r"[<(].*", "", r[k])].append(val * scale)
for name, xs in sorted(d.items()):
    print(f"ncu {name:<32} n={len(xs):3d} median {statistics.median(xs):8.2f} us")
PY
fi
