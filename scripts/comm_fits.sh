#!/usr/bin/env bash
# Re-makes every communication number of the built-in profiles from the fit data of docs/VALIDATION.md
# ("Communication: the split"): the H100 and GB200 nccl-tests tables, the SGLang one-shot all-reduce table and
# the real two-GPU fit set traces/measured/h200x2-grid. Nothing held out (traces/measured/h200x2, the B200
# table, any H200 nccl-tests data) is read. Usage: scripts/comm_fits.sh [path/to/dcpsim]
set -euo pipefail
cd "$(dirname "$0")/.."
D=${1:-build/analysis/dcpsim}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
FIX=nccl.protocol_efficiency.ll,nccl.protocol_efficiency.ll128
DATE=2026-12-06

# 1. NCCL's model numbers from steady-state nccl-tests tables (the tables themselves price what they cover).
$D calibrate --comm-tables models/tables/h100-sxm-nccl.json --profile models/profiles/h100-sxm.json --fix $FIX \
  --out "$T/h100.json" --date $DATE >/dev/null
scripts/comm_fit_to_profiles.py "$T/h100.json" "$T/h100.calibration.json" \
  "dcpsim calibrate --comm-tables models/tables/h100-sxm-nccl.json --profile h100-sxm --fix $FIX" \
  models/profiles/h100-sxm.json models/profiles/h200-sxm.json
$D calibrate --comm-tables models/tables/gb200-nccl.json --profile models/profiles/gb200-nvl72.json --fix $FIX \
  --out "$T/gb200.json" --date $DATE >/dev/null
scripts/comm_fit_to_profiles.py "$T/gb200.json" "$T/gb200.calibration.json" \
  "dcpsim calibrate --comm-tables models/tables/gb200-nccl.json --profile gb200-nvl72 --fix $FIX" \
  models/profiles/gb200-nvl72.json models/profiles/b200.json

# 2. Flag latency of one-sided exchanges from the published one-shot all-reduce (H100 = H200 NVLink 4).
python3 scripts/fit_one_sided.py ../shared/data/comm/aic_custom_allreduce_h100_sxm.csv

# 3. The in-step terms on the real two-GPU fit set, every kernel priced from its own measured phase.
ONLY=nccl.in_step_graph,nccl.in_step_eager,nccl.eager_host_issue,nccl.arrival_skew_graph,nccl.arrival_skew_eager
ONLY=$ONLY,signal.epoch_handshake,nvlink.store_bandwidth,launch.event_gap
$D calibrate --measured traces/measured/h200x2-grid/*.pb.gz --profile models/profiles/h200-sxm.json \
  --kernels measured --only $ONLY --name h200x2-comm --out models/calibrated/h200x2-comm.json --date $DATE
python3 scripts/comm_instep_to_profile.py models/calibrated/h200x2-comm.calibration.json models/profiles/h200-sxm.json
# The calibrated file lists the built-in tables by path (models/calibrated sits beside models/profiles).
python3 - <<'PY'
import json
cal = "models/calibrated/h200x2-comm.json"
d, base = json.load(open(cal)), json.load(open("models/profiles/h200-sxm.json"))
d["tables"], d["comm_tables"] = base["tables"], base["comm_tables"]
json.dump(d, open(cal, "w"), indent=2)
PY
$D profiles --show models/calibrated/h200x2-comm.json >"$T/cal.json" && cp "$T/cal.json" models/calibrated/h200x2-comm.json

# Canonical layout (what `dcpsim profiles --show` prints).
for n in b200 gb200-nvl72 h100-sxm h200-sxm; do
  $D profiles --show models/profiles/$n.json >"$T/$n.json" && cp "$T/$n.json" models/profiles/$n.json
done
