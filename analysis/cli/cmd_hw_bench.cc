// dcpsim hw bench: one operation's timing against the device-copy bandwidth (nccl-tests style), or, with
// --sweep, a grid of shapes × dtypes × kernel variants × launch modes in one process, one JSON line per
// point.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "dcpsim/analysis/scenario_flags.h"
#include "dcpsim/error.h"
#include "dcpsim/hw/bench.h"
#include "dcpsim/models/types.h"
#include "dcpsim/traces/output_file.h"

namespace dcpsim::cli {
namespace {

struct BenchFlags {
  hw::OpBenchConfig c;
  std::string json, attention = "auto", dtype = "bf16", variant = "auto", sweep, modes = "graph,eager";
  std::string context = "32k", copy_bytes = "1g", lse_base = "e";
  double min_fraction = 0;
  CLI::Option* reps = nullptr;
  CLI::Option* warmup = nullptr;
};

// Everything the flags decide, checked before any device is touched.
void check_flags(BenchFlags& f) {
  f.c.shape.context = models::parse_token_count(f.context);
  f.c.shape.copy_bytes = parse_byte_count(f.copy_bytes, "--copy-bytes");
  f.c.shape.attention = hw::parse_attention_impl(f.attention);
  f.c.shape.lse_base2 = models::parse_lse_base(f.lse_base) == models::LseBase::k2;
  const auto ops = hw::bench_ops();
  if (std::find(ops.begin(), ops.end(), f.c.op) == ops.end()) {
    std::string names;
    for (const auto& n : ops) names += (names.empty() ? "" : ", ") + n;
    throw InputError("--op '" + f.c.op + "' is not an operation (" + names + ")");
  }
  if (f.c.reps < 1 || f.c.warmup < 0) throw InputError("--reps must be >= 1 and --warmup >= 0");
  const hw::OpShape& s = f.c.shape;
  if (s.dcp < 1 || s.rows < 1 || s.heads < 1 || s.kv_heads < 1 || s.dim < 1 || s.qk_dim < 1 || f.c.device < 0)
    throw InputError("--dcp, --batch, --heads, --kv-heads, --head-dim, --qk-dim must be >= 1, --device >= 0");
  if (s.q_blocks < 1 || s.heads % s.q_blocks != 0)
    throw InputError("--q-blocks " + std::to_string(s.q_blocks) + " must be >= 1 and divide --heads " +
                     std::to_string(s.heads));
}

// "auto" → {-1}; "all" → every variant; else names from op_variants (comma-separated).
std::vector<int> parse_variants(const std::string& op, const std::string& value) {
  const std::vector<std::string> names = hw::op_variants(op);
  if (value == "auto") return {-1};
  std::vector<int> out;
  if (value == "all") {
    out.push_back(-1);
    for (int i = 0; i < static_cast<int>(names.size()); ++i) out.push_back(i);
    return out;
  }
  for (const auto& item : analysis::split_list(value, "variant")) {
    if (item == "auto") {
      out.push_back(-1);
      continue;
    }
    int found = -1;
    for (int i = 0; i < static_cast<int>(names.size()); ++i)
      if (names[i] == item) found = i;
    if (found < 0) {
      std::string list = "auto, all";
      for (const auto& n : names) list += ", " + n;
      throw InputError("--variant '" + item + "' is not a variant of " + op + " (" + list + ")");
    }
    out.push_back(found);
  }
  return out;
}

std::string variant_name(const std::string& op, int v) {
  return v < 0 ? "auto" : hw::op_variants(op)[std::size_t(v)];
}

nlohmann::json result_json(const hw::OpBenchResult& r, bool graph) {
  return {{"op", r.op},
          {"shape", r.shape},
          {"graph", graph},
          {"median_ns", r.median_ns},
          {"min_ns", r.min_ns},
          {"max_ns", r.max_ns},
          {"bytes", r.bytes},
          {"flops", r.flops},
          {"bandwidth", r.bandwidth},
          {"copy_bandwidth", r.copy_bandwidth},
          {"fraction_of_copy", r.fraction_of_copy}};
}

void run_single(const BenchFlags& f) {
  hw::OpBenchConfig c = f.c;
  c.shape.dtype = models::parse_dtype(f.dtype);
  const std::vector<int> variants = parse_variants(c.op, f.variant);
  if (variants.size() != 1) throw InputError("--variant: one variant without --sweep");
  c.shape.variant = variants.front();
  if (c.op == "attention")  // an impossible --attention flashinfer fails before any device work
    hw::resolve_attention_impl(c.shape.attention,
                               {c.shape.heads, c.shape.kv_heads, c.shape.qk_dim, c.shape.dim});
  if (!f.json.empty()) traces::check_output_paths({}, {{"--json", f.json}});
  require_gpu();
  const hw::OpBenchResult r = hw::run_op_bench(c);
  std::printf("%-12s %-48s %10.2f us (min %.2f, max %.2f)  %8.1f GB/s  %5.1f%% of copy %.1f GB/s%s\n",
              r.op.c_str(), r.shape.c_str(), r.median_ns / 1e3, r.min_ns / 1e3, r.max_ns / 1e3,
              r.bandwidth / 1e9, 100 * r.fraction_of_copy, r.copy_bandwidth / 1e9,
              c.graph ? "  [graph]" : "");
  if (r.flops > 0) std::printf("%-12s %.1f TFLOP/s\n", "", r.flops / (r.median_ns * 1e-9) / 1e12);
  if (!f.json.empty()) {
    nlohmann::json j = result_json(r, c.graph);
    j["dtype"] = f.dtype;
    j["variant"] = variant_name(c.op, c.shape.variant);
    std::ofstream out(f.json, std::ios::app);
    if (!out) throw InputError("--json '" + f.json + "' cannot be written");
    out << j.dump() << "\n";
  }
  if (f.min_fraction > 0 && r.fraction_of_copy < f.min_fraction)
    throw RuntimeError(r.op + ": " + std::to_string(100 * r.fraction_of_copy) +
                       "% of copy bandwidth is below " + std::to_string(100 * f.min_fraction) + "%");
}

// Every point of the grid; a point that fails (an operation that cannot run a shape) is written with its
// error and the sweep goes on. Lines go to `<json>.partial` as they come and the file is renamed when
// complete.
void run_sweep(const BenchFlags& f) {
  if (f.json.empty()) throw InputError("--sweep needs --json (one JSON line per point)");
  traces::check_output_paths({}, {{"--json", f.json}});
  hw::OpBenchConfig base = f.c;
  if (f.reps->count() == 0) base.reps = 15;
  if (f.warmup->count() == 0) base.warmup = 3;
  base.eager_batch = base.graph_calls;
  const std::vector<hw::OpShape> shapes = hw::sweep_shapes(f.sweep, base.op);
  const std::vector<int> variants = parse_variants(base.op, f.variant);
  std::vector<models::DType> dtypes;
  for (const auto& d : analysis::split_list(f.dtype, "dtype")) dtypes.push_back(models::parse_dtype(d));
  std::vector<bool> modes;
  for (const auto& m : analysis::split_list(f.modes, "modes")) {
    if (m != "graph" && m != "eager") throw InputError("--modes '" + m + "' is not graph or eager");
    modes.push_back(m == "graph");
  }
  require_gpu();
  const double copy_bw = hw::measure_copy_bandwidth(base.device, std::int64_t{1} << 30, 20);
  const std::string partial = f.json + ".partial";
  std::ofstream out(partial, std::ios::trunc);
  if (!out) throw InputError("--json '" + f.json + "' cannot be written");
  int done = 0, failed = 0;
  for (const hw::OpShape& shape : shapes)
    for (models::DType dtype : dtypes) {
      hw::OpBenchConfig c = base;
      c.shape = shape;
      c.shape.dtype = dtype;
      for (const hw::OpBenchPoint& p : hw::run_op_bench_points(c, variants, modes, copy_bw)) {
        nlohmann::json j = {{"op", c.op},
                            {"variant", variant_name(c.op, p.variant)},
                            {"dtype", std::string(models::to_string(dtype))},
                            {"graph", p.graph},
                            {"N", shape.dcp},
                            {"B", shape.rows},
                            {"H", shape.heads},
                            {"D", shape.dim}};
        if (c.op == "copy") j["copy_bytes"] = shape.copy_bytes;
        if (p.error.empty()) {
          j.update(result_json(p.result, p.graph));
          ++done;
        } else {
          j["error"] = p.error;
          ++failed;
        }
        out << j.dump() << "\n" << std::flush;
      }
    }
  out.close();
  std::filesystem::rename(partial, f.json);
  std::printf("%s sweep %s: %d points timed, %d failed (copy %.1f GB/s) -> %s\n", base.op.c_str(),
              f.sweep.c_str(), done, failed, copy_bw / 1e9, f.json.c_str());
}

}  // namespace

// "65536", "64k", "256m", "1g" (k = 1024) -> bytes; InputError naming the flag otherwise.
std::int64_t parse_byte_count(const std::string& text, const std::string& flag) {
  std::string digits = text;
  std::int64_t unit = 1;
  if (!digits.empty()) {
    const char last = static_cast<char>(std::tolower(static_cast<unsigned char>(digits.back())));
    if (last == 'k' || last == 'm' || last == 'g') {
      unit = last == 'k' ? 1024 : last == 'm' ? 1024 * 1024 : std::int64_t{1} << 30;
      digits.pop_back();
    }
  }
  std::int64_t v = 0;
  const auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (digits.empty() || ec != std::errc() || p != digits.data() + digits.size() || v < 1 ||
      v > (std::int64_t{1} << 40) / unit) {
    throw InputError(flag + " '" + text +
                     "' is not a byte count in [1, 2^40] (65536, 64k, 256m, 1g; k = 1024)");
  }
  return v * unit;
}

void add_hw_bench(CLI::App& hw_cmd) {
  auto f = std::make_shared<BenchFlags>();
  hw::OpBenchConfig& c = f->c;
  CLI::App* b = hw_cmd.add_subcommand("bench", "Time one operation against the device-copy bandwidth");
  b->add_option(
       "--op", c.op,
       "copy, empty, touch (O read and written back: a correction's floor), attention, correct, a2a-pack, "
       "a2a-combine, combine, direct, merge-states-flashinfer")
      ->required();
  b->add_option("--dcp", c.shape.dcp, "N")->capture_default_str();
  b->add_option("--batch", c.shape.rows, "B")->capture_default_str();
  b->add_option("--heads", c.shape.heads, "H")->capture_default_str();
  b->add_option("--kv-heads", c.shape.kv_heads, "H_kv (attention)")->capture_default_str();
  b->add_option("--head-dim", c.shape.dim, "D")->capture_default_str();
  b->add_option("--qk-dim", c.shape.qk_dim, "D_qk (attention)")->capture_default_str();
  b->add_option("--context", f->context, "tokens per row on this rank (attention): 4096, 32k, 1m (k = 1024)")
      ->capture_default_str();
  b->add_flag("--transposed-lse", c.shape.transposed_lse, "LSE stored [H][B] (correct)");
  b->add_flag(
      "--rs-layout", c.shape.rs_layout,
      "correct: write the reduce-scatter's head-block layout, as AG+RS does (default: in place, as AG+AR)");
  b->add_option("--row-pad", c.shape.out_row_pad, "extra elements per O row (correct)")
      ->capture_default_str();
  b->add_option("--copy-bytes", f->copy_bytes, "bytes per copy (copy): 65536, 64k, 256m, 1g (k = 1024)")
      ->capture_default_str();
  b->add_option("--blocks", c.shape.blocks, "blocks per rank (direct; 0: as many as stay resident)")
      ->capture_default_str();
  b->add_option("--attention", f->attention, "attention: flashinfer, dcpsim or auto")->capture_default_str();
  b->add_option("--q-blocks", c.shape.q_blocks,
                "attention: Q in this many head blocks, as a step's query all-gather leaves it (1: dense)")
      ->capture_default_str();
  b->add_option("--lse-base", f->lse_base, "attention: the LSE's base, e or 2")->capture_default_str();
  b->add_option("--dtype", f->dtype, "O's type for correct and the combines: bf16 or fp16 (--sweep: a list)")
      ->capture_default_str();
  b->add_option(
       "--variant", f->variant,
       "kernel variant (correct, combine, a2a-combine: auto chosen by size; direct: chunk, the default, "
       "grid or chunk-sys): auto, a name, or with --sweep all or a list")
      ->capture_default_str();
  b->add_flag("--graph", c.graph, "time calls replayed from a CUDA graph");
  b->add_option("--graph-calls", c.graph_calls, "calls per graph (--sweep: also calls per eager batch)")
      ->capture_default_str();
  b->add_option("--eager-batch", c.eager_batch,
                "eager calls timed together behind a device-side delay (1: each call alone)")
      ->capture_default_str();
  f->warmup = b->add_option("--warmup", c.warmup, "warm-up calls")->capture_default_str();
  f->reps = b->add_option("--reps", c.reps, "measured calls (or graph replays; --sweep default 15)")
                ->capture_default_str();
  b->add_option("--device", c.device, "device ordinal")->capture_default_str();
  b->add_option("--sweep", f->sweep,
                "time a grid of shapes instead of one: decode (N 2-8, B 1-256, H 8-128, D 128/512) or small")
      ->check(CLI::IsMember({"decode", "small"}));
  b->add_option("--modes", f->modes, "--sweep: graph, eager or both")->capture_default_str();
  b->add_option("--json", f->json,
                "append the result as one JSON line to this file (--sweep: write one line per point)");
  b->add_option("--min-fraction", f->min_fraction, "exit 1 when bandwidth / copy bandwidth falls below this");
  b->callback([f] {
    check_flags(*f);
    if (f->sweep.empty())
      run_single(*f);
    else
      run_sweep(*f);
  });
}

}  // namespace dcpsim::cli
