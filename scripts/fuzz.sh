#!/usr/bin/env bash
# Runs one libFuzzer target for SECONDS on a fresh copy of its seed corpus (from tests/data and the committed
# traces) and prints the executions it made. Usage: fuzz.sh BINARY NAME SECONDS SOURCE_DIR CORPUS_ROOT
set -euo pipefail
bin=$1 name=$2 seconds=$3 src=$4 root=$5
corpus=$root/$name
rm -rf "$corpus" && mkdir -p "$corpus"
data=$src/tests/data
case $name in
  trace_reader) for f in gqa_n2_b16_ctx8k_graph gqa_n2_b1_ctx32k_graph; do
      zcat "$src/traces/measured/h200/$f.pb.gz" >"$corpus/$f.pb"; done ;;
  profile) cp "$src"/models/profiles/*.json "$corpus"/ && zcat "$src"/models/tables/h100-sxm-attention-mla-dcpsim.json.gz >"$corpus"/t.json ;;
  merge_json) printf '{"lse":[[[0.5,1e8]],[[-inf_,2]]],"out":[[[[1,2],[3,4]]],[[[5,6],[7,8]]]]}' | sed 's/-inf_/"-inf"/' >"$corpus"/p.json ;;
  mooncake) cp "$data"/mooncake_conversation_trace.head20.jsonl "$corpus"/ ;;
  # head closes the pipe early: zcat's SIGPIPE is expected, a seed file with rows is what counts.
  azure) zcat "$data"/AzureLLMInferenceTrace_code.csv.gz | head -50 >"$corpus"/a.csv || [ -s "$corpus"/a.csv ] ;;
  kineto) zcat "$data"/kineto_simple_add.json.gz >"$corpus"/k.json ;;
  nsys) zcat "$data"/nsys_saxpy.reduced.sqlite.gz >"$corpus"/n.sqlite ;;
  contexts) printf '1024\n32k, 1m\n# comment\n7\n' >"$corpus"/c.txt ;;
  nccl_tests) cp "$data"/nccl-tests/*.log "$corpus"/ && cp "$src"/models/tables/gb200-nccl.json "$corpus"/ ;;
esac
log=$root/$name.log
"$bin" -max_total_time="$seconds" -max_len=1048576 -timeout=20 -rss_limit_mb=4096 -print_final_stats=1 \
  "$corpus" >"$log" 2>&1 || { tail -40 "$log"; exit 1; }
grep -E "stat::number_of_executed_units|Done [0-9]+ runs" "$log" | tail -2
