#!/usr/bin/env bash
# One GPU-machine call: the kernel sweep's GPU test, the kernel tables (scripts/hw_tables.sh) and, on the
# otherwise idle CPU cores meanwhile, the long fuzz run (scripts/fuzz_long.sh). Binaries come as tarballs in
# CARRY (dcpsim + hw_tests + libraries from scripts/hw_carry.sh; fuzz_* from the fuzz build).
#   OUT=... scripts/hw_lead_tables.sh CARRY FUZZ_SECONDS
set -uo pipefail
cd "$(dirname "$0")/.."
carry=${1:?carry folder}
fuzz_seconds=${2:-300}
OUT=${OUT:-/tmp/hw-out}
W=/tmp/hw-lead
mkdir -p "$OUT" "$W/bin" "$W/fuzz"
tar xf "$carry"/bin.tar.gz -C "$W/bin"
tar xf "$carry"/fuzzers.tar.xz -C "$W/fuzz"
cp -f "$carry"/fuzzlib/* "$W/fuzz/" 2>/dev/null
export NCCL_NVLS_ENABLE=0
nccl=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))' 2>/dev/null)
export LD_LIBRARY_PATH=$W/bin:$(dirname "$(find "${nccl:-/}" -name 'libnccl.so.2' 2>/dev/null | head -1)"):${LD_LIBRARY_PATH:-}
(LD_LIBRARY_PATH=$W/fuzz nice -n 5 scripts/fuzz_long.sh "$W/fuzz" "$PWD" "$fuzz_seconds" "$W/fz" 14 \
   >"$W/fuzz_long.txt" 2>&1; echo "exit $?" >>"$W/fuzz_long.txt") &
fuzz_pid=$!
"$W/bin/dcpsim" hw devices | tee "$W/devices.txt"
"$W/bin/hw_tests" --gtest_filter='Sweep*:Cupti*' --gtest_brief=1 2>&1 | tail -5 | tee "$W/sweep_test.txt"
start=$(date +%s)
timeout 380 scripts/hw_tables.sh "$W/bin/dcpsim" "$W/tables" all h200-sxm --date "$(date -u +%F)" \
  2>"$W/sweep.err" | tee "$W/sweep.txt"
echo "sweep took $(($(date +%s) - start)) s" | tee -a "$W/sweep.txt"
tail -c 2000 "$W/sweep.err"
wait $fuzz_pid
cat "$W/fuzz_long.txt"
cp "$W"/tables/*.json "$W/fuzz_long.txt" "$W/sweep.txt" "$OUT/" 2>/dev/null
(cd "$W" && tar czf "$OUT/fuzz_logs.tgz" --exclude=corpus --exclude=seed fz 2>/dev/null)
