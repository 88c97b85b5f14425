// dcpsim hw sweep: time the runner's kernels over full grids of shapes and write a measured kernel table file
// (dcpsim-kernel-tables/1) that profiles carry (models/profiles/README.md).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "dcpsim/analysis/calibration_plan.h"
#include "dcpsim/analysis/scenario_flags.h"
#include "dcpsim/dates.h"
#include "dcpsim/error.h"
#include "dcpsim/hw/gemm_sweep.h"
#include "dcpsim/hw/sweep.h"
#include "dcpsim/models/kernel_table.h"
#include "dcpsim/models/scenario.h"
#include "dcpsim/traces/output_file.h"

namespace dcpsim::cli {
namespace {

struct SweepFlags {
  std::string kernels = "attention,correction,a2a_pack,a2a_combine";
  std::string geometries = "mla,gqa:8";
  std::string heads = "16,32,64,128,256";
  std::string rows = "1,4,16,64,256";
  std::string tokens = "128,512,2k,8k,32k,128k";
  std::string merge_dcp = "2,3,4,6,8";
  std::string merge_rows = "1,4,16,64,256";
  std::string merge_heads = "8,16,32,64,128";
  std::string merge_heads_per_rank = "1,2,4,8,16,32";
  std::string merge_dims = "128,512";
  double max_kv_gb = 48;
  std::string attention = "auto";
  std::string kv_dtype = "bf16";
  std::string merge_inputs = "warm";
  std::string merge_prelude = "0";
  double merge_prelude_busy_us = 0;
  std::string merge_prelude_copy = "0";
  std::string attention_prelude_write = "0";
  bool merge_prelude_copy_in_graph = false;
  bool warm_lse = false;
  bool pdl = false;
  int pdl_chain = 0;  // 0: not given (the config's default)
  bool row_stamps = false;
  bool split_lse = false;
  std::string gemm_dtypes = "bf16,fp8";
  std::string gemm_m = "1,2,4,8,16,32,64,128,256,512,1024,2048,4096";
  std::string gemm_n = "256,512,1024,2048,3072,4096,7168,8192,16384";
  std::string gemm_k = "256,512,1024,2048,3072,4096,7168,8192,16384";
  int warmup = 5, reps = 20, device = 0;
  std::string date, out;
  std::string profile = "h200-sxm";  // whose analytic kernel times --dry-run's estimate uses
  bool dry_run = false;
};

std::vector<int> int_list(const std::string& value, const std::string& flag) {
  std::vector<int> out;
  for (const std::string& item : analysis::split_list(value, flag)) {
    const std::int64_t v = models::parse_token_count(item);  // plain integers, k/m suffixes allowed
    if (v < 1 || v > 1 << 20) throw InputError(flag + " '" + item + "': expected an integer in [1, 1048576]");
    out.push_back(static_cast<int>(v));
  }
  return out;
}

hw::KernelSweepConfig to_config(const SweepFlags& f, const std::string& command) {
  hw::KernelSweepConfig c;
  c.kernels = analysis::split_list(f.kernels, "--kernels");
  std::erase(c.kernels, std::string("gemm"));  // the GEMM family is swept on its own (gemm_config)
  for (const std::string& k : c.kernels) (void)models::parse_table_kernel(k);
  c.geometries.clear();
  for (const std::string& g : analysis::split_list(f.geometries, "--geometry"))
    c.geometries.push_back(hw::parse_sweep_geometry(g));
  c.heads = int_list(f.heads, "--heads");
  c.rows = int_list(f.rows, "--batch");
  c.tokens.clear();
  for (const std::string& t : analysis::split_list(f.tokens, "--tokens")) {
    c.tokens.push_back(models::parse_token_count(t));
    if (c.tokens.back() < 1) throw InputError("--tokens '" + t + "': expected at least one token");
  }
  c.merge_dcp = int_list(f.merge_dcp, "--merge-dcp");
  c.merge_rows = int_list(f.merge_rows, "--merge-batch");
  c.merge_heads = int_list(f.merge_heads, "--merge-heads");
  c.merge_heads_per_rank = int_list(f.merge_heads_per_rank, "--merge-heads-per-rank");
  c.merge_dims = int_list(f.merge_dims, "--merge-head-dims");
  c.cold_merge_inputs = f.merge_inputs == "cold";
  if (!(f.merge_prelude_busy_us >= 0 && f.merge_prelude_busy_us <= 1e6))
    throw InputError("kernel sweep: --merge-prelude-busy must be in [0, 1e6] us");
  c.merge_prelude_busy_us = f.merge_prelude_busy_us;
  // One word touched per 64 KiB: 0 (none) or at least 64 KiB.
  const std::string prelude_error = "--merge-prelude '" + f.merge_prelude +
                                    "' is not 0 or a byte count in [64k, 2^40] (64k, 256m, 16g; k = 1024)";
  if (f.merge_prelude != "0") {
    try {
      c.merge_prelude_bytes = parse_byte_count(f.merge_prelude, "--merge-prelude");
    } catch (const InputError&) {
      throw InputError(prelude_error);
    }
    if (c.merge_prelude_bytes < (std::int64_t{64} << 10)) throw InputError(prelude_error);
  }
  if (f.merge_prelude_copy != "0")
    c.merge_prelude_copy_bytes = parse_byte_count(f.merge_prelude_copy, "--merge-prelude-copy");
  c.merge_prelude_copy_in_graph = f.merge_prelude_copy_in_graph;
  if (f.attention_prelude_write != "0") {
    c.attention_prelude_write_bytes =
        parse_byte_count(f.attention_prelude_write, "--attention-prelude-write");
    // More than an L2 holds adds nothing (a GPU's L2 is at most a few hundred MB); the buffer is on the
    // device.
    if (c.attention_prelude_write_bytes > (std::int64_t{4} << 30))
      throw InputError("kernel sweep: --attention-prelude-write '" + f.attention_prelude_write +
                       "' is over 4g: no L2 holds that many dirty bytes");
    if (std::find(c.kernels.begin(), c.kernels.end(), "attention") == c.kernels.end())
      throw InputError(
          "kernel sweep: --attention-prelude-write shapes the attention's calls; give --kernels "
          "with attention");
  }
  c.warm_lse = f.warm_lse;
  c.pdl = f.pdl;
  if (f.pdl_chain != 0) {
    if (!f.pdl) throw InputError("kernel sweep: --pdl-chain needs --pdl");
    c.pdl_chain = f.pdl_chain;
  }
  if (c.warm_lse && !c.cold_merge_inputs)
    throw InputError(
        "kernel sweep: --warm-lse reads the LSEs back after the eviction of --merge-inputs cold");
  if (c.merge_prelude_copy_in_graph && c.merge_prelude_copy_bytes == 0)
    throw InputError("kernel sweep: --prelude-copy-in-graph needs --merge-prelude-copy BYTES > 0");
  if (c.cold_merge_inputs &&
      (c.merge_prelude_bytes > 0 || c.merge_prelude_busy_us > 0 || c.merge_prelude_copy_bytes > 0))
    throw InputError(
        "kernel sweep: --merge-prelude, --merge-prelude-busy and --merge-prelude-copy shape warm "
        "inputs; --merge-inputs cold already evicts them");
  c.row_stamps = f.row_stamps;
  c.split_lse = f.split_lse;
  if (!(f.max_kv_gb > 0) || f.max_kv_gb > 1e4) throw InputError("--max-kv-gb must be in (0, 10000]");
  c.max_kv_bytes = f.max_kv_gb * 1e9;
  c.attention = hw::parse_attention_impl(f.attention);
  const std::string kv_error =
      "--kv-dtype '" + f.kv_dtype + "': attention is swept with bf16 or fp8 (e4m3) KV";
  try {
    c.kv_dtype = models::parse_dtype(f.kv_dtype);
  } catch (const InputError&) {
    throw InputError(kv_error);
  }
  if (c.kv_dtype != models::DType::kBF16 && c.kv_dtype != models::DType::kFP8E4M3) throw InputError(kv_error);
  if (c.kv_dtype == models::DType::kFP8E4M3 && f.kernels.find("gemm") != std::string::npos)
    throw InputError("--kv-dtype fp8 sweeps attention alone (--kernels attention); GEMMs take --gemm-dtypes");
  c.warmup = f.warmup;
  c.reps = f.reps;
  c.device = f.device;
  if (!f.date.empty() && !is_calendar_date(f.date))
    throw InputError("--date '" + f.date + "': expected a date YYYY-MM-DD");
  c.date = f.date;
  c.command = command;
  return c;
}

bool wants_gemm(const SweepFlags& f) {
  const auto k = analysis::split_list(f.kernels, "--kernels");
  return std::find(k.begin(), k.end(), "gemm") != k.end();
}

hw::GemmSweepConfig gemm_config(const SweepFlags& f, const std::string& command) {
  hw::GemmSweepConfig g;
  g.dtypes = analysis::split_list(f.gemm_dtypes, "--gemm-dtypes");
  g.m = int_list(f.gemm_m, "--gemm-m");
  g.n = int_list(f.gemm_n, "--gemm-n");
  g.k = int_list(f.gemm_k, "--gemm-k");
  g.warmup = f.warmup, g.reps = f.reps, g.device = f.device, g.date = f.date, g.command = command;
  return g;
}

void run_sweep(const SweepFlags& f, const std::string& command) {
  const hw::KernelSweepConfig c = to_config(f, command);
  const bool gemm = wants_gemm(f);
  const hw::GemmSweepConfig g = gemm_config(f, command);
  const int gemm_points = gemm ? hw::gemm_sweep_points(g) : 0;  // checks the grid before any device work
  const int points = (c.kernels.empty() ? 0 : hw::kernel_sweep_points(c)) + gemm_points;
  if (f.dry_run) {
    const double estimate = analysis::sweep_estimate_s(c, models::load_profile(f.profile));
    std::printf(
        "%d points; about %s on a GPU like %s's (its analytic kernel times plus the H200's per-point "
        "overheads); nothing timed (--dry-run)\n",
        points, analysis::minutes_seconds(estimate).c_str(), f.profile.c_str());
    return;
  }
  if (f.out.empty()) throw InputError("--out is required (the kernel table file to write)");
  traces::check_output_paths({}, {{"--out", f.out}});
  require_gpu();
  int skipped = 0;
  models::KernelTables tables;
  if (!c.kernels.empty()) {
    tables = hw::run_kernel_sweep(c, [&](const hw::SweepProgress& p) {
      if (p.skipped) ++skipped;
      std::fprintf(stderr, "\r[%d/%d %3d%%] %-60.60s%s", p.done, p.total, 100 * p.done / std::max(p.total, 1),
                   p.point.c_str(), p.skipped ? " (skipped)" : "");
      if (p.done == p.total) std::fprintf(stderr, "\n");
    });
  }
  if (gemm) {
    models::KernelTables t = hw::run_gemm_sweep(g, [&](const hw::GemmSweepProgress& p) {
      std::fprintf(stderr, "\r[gemm %d/%d %3d%%] %-40.40s", p.done, p.total,
                   100 * p.done / std::max(p.total, 1), p.point.c_str());
      if (p.done == p.total) std::fprintf(stderr, "\n");
    });
    if (tables.tables.empty()) tables.provenance = t.provenance;
    for (models::KernelTable& k : t.tables) tables.tables.push_back(std::move(k));
  }
  traces::write_file_atomically(f.out, models::kernel_tables_json(tables));
  std::size_t n = 0;
  for (const models::KernelTable& t : tables.tables) n += t.points.size();
  std::printf("wrote %s: %zu tables, %zu points (%d skipped); %s\n", f.out.c_str(), tables.tables.size(), n,
              skipped, tables.provenance.clocks.c_str());
}

}  // namespace

void add_hw_sweep_command(CLI::App& hw_cmd, int argc, char** argv) {
  auto f = std::make_shared<SweepFlags>();
  auto command = std::make_shared<std::string>();
  for (int i = 0; i < argc; ++i) *command += (i ? " " : "") + std::string(i == 0 ? "dcpsim" : argv[i]);
  CLI::App* s = hw_cmd.add_subcommand(
      "sweep", "Time the kernels over full grids of shapes and write a measured kernel table file");
  s->add_option("--out", f->out, "kernel table file to write (dcpsim-kernel-tables/1 JSON)");
  s->add_option("--gemm-dtypes", f->gemm_dtypes,
                "gemm: weight types, bf16 and fp8 (per-tensor scales, cuBLASLt)")
      ->capture_default_str();
  s->add_option("--gemm-m", f->gemm_m, "gemm: rows m (tokens of the step)")->capture_default_str();
  s->add_option("--gemm-n", f->gemm_n, "gemm: output features n")->capture_default_str();
  s->add_option("--gemm-k", f->gemm_k, "gemm: input features k")->capture_default_str();
  s->add_option("--kernels", f->kernels,
                "kernels to sweep: attention, correction, a2a_pack, a2a_combine, gemm (cuBLASLt BF16/FP8)")
      ->capture_default_str();
  s->add_option("--geometry", f->geometries, "attention geometries: mla, gqa:G (G query heads per KV head)")
      ->capture_default_str();
  s->add_option("--heads", f->heads, "attention: query heads on the rank (list)")->capture_default_str();
  s->add_option("--batch", f->rows, "attention: rows (list)")->capture_default_str();
  s->add_option("--tokens", f->tokens, "attention: KV tokens per row on the rank (list; k = 1024)")
      ->capture_default_str();
  s->add_option("--merge-dcp", f->merge_dcp, "merge kernels: N (list)")->capture_default_str();
  s->add_option("--merge-batch", f->merge_rows, "merge kernels: rows (list)")->capture_default_str();
  s->add_option("--merge-heads", f->merge_heads, "correction: heads on the rank, H (list)")
      ->capture_default_str();
  s->add_option("--merge-heads-per-rank", f->merge_heads_per_rank,
                "a2a_pack, a2a_combine: heads of one owner's slice, H / N (list; measured at H = N x each)")
      ->capture_default_str();
  s->add_option("--merge-inputs", f->merge_inputs,
                "merge kernels' inputs: warm (in L2 as after the kernel that wrote them) or cold "
                "(L2 flushed before each call, as in an emulated step; tables keyed \"... cold\")")
      ->check(CLI::IsMember({"warm", "cold"}))
      ->capture_default_str();
  s->add_option("--merge-prelude", f->merge_prelude,
                "warm merge inputs: before each call (outside its span) touch one word per 64 KiB of this "
                "many bytes of scratch, evicting the address translations a step's attention would, while "
                "bringing at most bytes / 512 into L2; 0: each call alone; the table keys do not change (the "
                "provenance's command says it) (bytes: 0, 64k, 256m, 16g; k = 1024)")
      ->capture_default_str();
  s->add_option(
       "--merge-prelude-busy", f->merge_prelude_busy_us,
       "merge kernels: before each call every SM chains FMAs for this many microseconds (outside the "
       "call's span), as after a step's attention; 0: none")
      ->capture_default_str();
  s->add_option(
       "--merge-prelude-copy", f->merge_prelude_copy,
       "merge kernels: before each call a device-to-device copy of this many bytes (outside the call's "
       "span), as an emulated collective's copies come before a step's merge kernel; 0: none (bytes: 0, "
       "64k, 16m; k = 1024)")
      ->capture_default_str();
  s->add_option("--attention-prelude-write", f->attention_prelude_write,
                "attention: before each call (outside its span) a memset of this many bytes of scratch, "
                "left dirty in L2, so the call's KV stream writes them back, as after kernels that wrote "
                "that much (the previous layer, an emulated step's previous repetition); the table keys do "
                "not change (the provenance's command says it); 0: none (bytes: 0, 8m, 32m; k = 1024)")
      ->capture_default_str();
  s->add_flag("--prelude-copy-in-graph", f->merge_prelude_copy_in_graph,
              "merge kernels: the --merge-prelude-copy copy is a node of each call's graph, just before its "
              "kernel (as in an emulated step's graph); the span counts kernels only");
  s->add_flag("--warm-lse", f->warm_lse,
              "with --merge-inputs cold: the correction's LSEs read back into L2 after the eviction, as the "
              "emulated LSE all-gather leaves them (tables keyed \"... cold lse\")");
  s->add_flag(
      "--pdl", f->pdl,
      "merge kernels (give --kernels without attention): every point is also timed as the last of a "
      "chain of calls of the same kernel (three; --pdl-chain), all launched with PDL, charged from its "
      "predecessor's end (as an "
      "emulated step's later ranks under --launch pdl; with --merge-inputs cold each call reads its own "
      "inputs, all evicted first; tables keyed \"... pdl\"; needs CUPTI)");
  s->add_option(
       "--pdl-chain", f->pdl_chain,
       "with --pdl: calls in the chain, the last one timed (2 to 16, default 3; cold inputs: at most 3)")
      ->check(CLI::Range(2, 16));
  s->add_flag("--row-stamps", f->row_stamps,
              "correction, a2a_combine: the instrumented kernels `hw run --row-stamps` runs (per-row stamps "
              "on; tables keyed \"... stamped\")");
  s->add_flag("--split-lse", f->split_lse,
              "a2a_pack, a2a_combine: a2a-2call's layout, the LSEs in buffers of their own (the combine's "
              "short path with 16-byte accesses; tables keyed \"... split\")");
  s->add_option("--merge-head-dims", f->merge_dims, "merge kernels: value head dims (128, 512)")
      ->capture_default_str();
  s->add_option("--max-kv-gb", f->max_kv_gb, "skip attention points whose KV cache exceeds this (GB)")
      ->capture_default_str();
  s->add_option("--attention", f->attention,
                "attention kernel: flashinfer, dcpsim or auto (FlashInfer for MLA, dcpsim for GQA; always "
                "FlashInfer for --kv-dtype fp8)")
      ->capture_default_str();
  s->add_option("--kv-dtype", f->kv_dtype,
                "attention's KV cache: bf16, or fp8 (e4m3, one per-tensor scale, generated as `hw run "
                "--kv-dtype fp8` does; the query and output bf16). fp8 runs on FlashInfer's FP8-KV kernels "
                "only, MLA on Hopper sm_90a and GQA decode (G in 1, 2, 3, 4, 6, 8, 16), with --kernels "
                "attention; its tables are keyed \"mla qk576 d512 fp8 flashinfer\", \"gqa qk128 d128 g8 fp8 "
                "flashinfer\", which price an fp8 scenario's attention (bf16 tables never do)")
      ->capture_default_str();
  s->add_option("--warmup", f->warmup, "warm-up calls per point")->capture_default_str();
  s->add_option("--reps", f->reps, "timed graph replays per point")->capture_default_str();
  s->add_option("--device", f->device, "device ordinal")->capture_default_str();
  s->add_option("--date", f->date, "date for the provenance, YYYY-MM-DD (default: today, UTC)");
  s->add_flag("--dry-run", f->dry_run,
              "check the grid, count its points and estimate its time; time nothing");
  s->add_option("--profile", f->profile, "--dry-run: the profile whose kernel times the estimate uses")
      ->capture_default_str();
  s->callback([f, command] { run_sweep(*f, *command); });
}

}  // namespace dcpsim::cli
