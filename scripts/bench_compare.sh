#!/usr/bin/env bash
# Compares bench_sim binaries (two builds of the simulator, say) on one machine: runs each in turn, ROUNDS
# times (default 3), each run 3 repetitions of every benchmark the filter picks, and prints per benchmark the
# least of the medians per binary (the figure least disturbed by other work on a shared machine).
#   scripts/bench_compare.sh BENCH_SIM_A BENCH_SIM_B ...      (FILTER= a --benchmark_filter, ROUNDS=)
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: scripts/bench_compare.sh BENCH_SIM..." >&2; exit 2; }
filter=${FILTER:-'BM_Step(H200/8/64/[0-4]/0|Gb200/72/256/[0-4]/0)$'}
all=$(mktemp)
trap 'rm -f "$all"' EXIT
for _ in $(seq "${ROUNDS:-3}"); do
  for i in $(seq $#); do
    "${!i}" --benchmark_filter="$filter" --benchmark_min_time=0.3 --benchmark_repetitions=3 \
      --benchmark_report_aggregates_only=true 2>/dev/null | awk -v b="$i" '/_median/ {print b, $1, $4}' >>"$all"
  done
done
python3 - "$all" "$@" <<'PY'
import collections, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    b, name, t = line.split()
    runs[(name.replace("_median", ""), int(b))].append(float(t))
names = sorted({n for n, _ in runs}, key=lambda n: (n.startswith("BM_StepGb"), n))
bins = sys.argv[2:]
print("%-28s" % "benchmark (ms, least median)" + "".join("%14s" % ("#%d" % (i + 1)) for i in range(len(bins))))
for n in names:
    print("%-28s" % n + "".join("%14.3f" % min(runs[(n, i + 1)]) for i in range(len(bins))))
for i, b in enumerate(bins):
    print("#%d %s" % (i + 1, b))
PY
