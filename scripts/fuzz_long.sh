#!/usr/bin/env bash
# A long run of every parser's libFuzzer target, several processes per target sharing one corpus, for
# SECONDS; prints one line per target with the executions summed over its processes and the findings.
# Seeds are those of scripts/fuzz.sh, except two cut down so that an execution stays cheap: a Kineto trace
# of a few events of each category, and the Nsight SQLite with at most 12 rows per table.
#   scripts/fuzz_long.sh FUZZ_BIN_DIR SOURCE_DIR SECONDS WORK_DIR [CORES] [TARGET=WEIGHT ...]
# FUZZ_BIN_DIR holds fuzz_<name> binaries (build-fuzz/tests/fuzz). The cores are shared out by weight (every
# target by default, the slow parsers weighted up; or only the TARGET=WEIGHT pairs given). Exit 1 when any
# process found something.
set -uo pipefail
bins=${1:?fuzzer folder} src=${2:?source folder} seconds=${3:?seconds} work=${4:?work folder}
cores=${5:-$(nproc)}
shift $(($# < 5 ? $# : 5))
mkdir -p "$work"
targets=(trace_reader profile merge_json mooncake azure kineto nsys contexts)
# Processes per target: the slow parsers (SQLite, JSON traces) get more of the cores.
declare -A weight=([nsys]=4 [kineto]=3 [trace_reader]=2 [profile]=2 [merge_json]=1 [mooncake]=1 [azure]=1
  [contexts]=1)
if (($# > 0)); then
  targets=() weight=()
  for pair in "$@"; do
    targets+=("${pair%%=*}")
    weight[${pair%%=*}]=${pair#*=}
  done
fi
total_weight=0
for t in "${targets[@]}"; do total_weight=$((total_weight + weight[$t])); done
for t in "${targets[@]}"; do
  corpus=$work/$t/corpus
  rm -rf "$work/$t" && mkdir -p "$corpus"
  case $t in
    kineto)
      zcat "$src"/tests/data/kineto_simple_add.json.gz | python3 -c '
import json, sys
d = json.load(sys.stdin)
seen = {}
keep = []
for e in d["traceEvents"]:
    c = e.get("cat")
    if seen.get(c, 0) < 3:
        seen[c] = seen.get(c, 0) + 1
        keep.append(e)
d["traceEvents"] = keep
json.dump(d, sys.stdout)' >"$corpus"/k.json ;;
    nsys)
      zcat "$src"/tests/data/nsys_saxpy.reduced.sqlite.gz >"$corpus"/n.sqlite
      python3 - "$corpus"/n.sqlite <<'EOF'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
for (t,) in list(c.execute("select name from sqlite_master where type='table'")):
    c.execute(f'delete from "{t}" where rowid not in (select rowid from "{t}" limit 12)')
c.commit()
c.execute("pragma page_size=512")
c.execute("vacuum")
c.close()
EOF
      ;;
    *)  # the same seeds as the CI run (scripts/fuzz.sh), made by running it for one second
      "$src"/scripts/fuzz.sh "$bins/fuzz_$t" "$t" 1 "$src" "$work/seed" >/dev/null 2>&1
      cp "$work/seed/$t"/* "$corpus"/ 2>/dev/null ;;
  esac
  n=$((weight[$t] * cores / total_weight))
  ((n < 1)) && n=1
  for ((i = 0; i < n; i++)); do
    ASAN_OPTIONS=detect_leaks=0 "$bins/fuzz_$t" -max_total_time="$seconds" -max_len=262144 -timeout=20 \
      -rss_limit_mb=4096 -print_final_stats=1 -seed=$((1000 * i + 17)) "$corpus" >"$work/$t/log.$i" 2>&1 &
  done
done
wait
status=0
for t in "${targets[@]}"; do
  runs=0 found=0
  for log in "$work/$t"/log.*; do
    r=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | awk '{print $2}')
    runs=$((runs + ${r:-0}))
    if grep -qE 'ERROR: (AddressSanitizer|UndefinedBehaviorSanitizer|libFuzzer)|runtime error:|==[0-9]+== ?ERROR|uncaught' "$log"; then
      found=$((found + 1))
      status=1
      grep -m5 -E 'ERROR|runtime error|uncaught' "$log"
    fi
  done
  echo "fuzz_$t: $runs executions in ${seconds} s over $(ls "$work/$t"/log.* | wc -l) processes, $found findings, corpus $(ls "$work/$t/corpus" | wc -l) inputs"
done
exit $status
