// The kernel-table families and the fit, PDL and held-out steps of `dcpsim hw calibrate`.
#include "dcpsim/analysis/calibration_steps.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "dcpsim/error.h"
#include "dcpsim/models/model_preset.h"

namespace dcpsim::analysis {
namespace {

// The grids, as scripts/hw_tables.sh measured the H200's tables: merge rows in 2x steps (each table read
// between them as its leave-one-out chooses, linearly or as a power law: table_loo.h), merge heads multiples
// of 24 above 16 so that every N of the grid divides them (A2A needs N | H); attention rows and
// tokens 1.33-1.5x apart, where the kernels' schedules (waves of blocks, chunks per cluster) are not smooth.
const std::vector<int> kMergeDcp = {2, 3, 4, 6, 8};
const std::vector<int> kMergeRows = {1, 2, 4, 8, 16, 32, 64, 128, 256};
const std::vector<int> kMergeHeads = {8, 16, 24, 48, 96, 192};
const std::vector<int> kMergeHeadsPerRank = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128};
const std::vector<int> kAttentionRows = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256};
const std::vector<std::int64_t> kAttentionTokens = {128,  256,  384,  512,   768,   1024,  1536,  2048,  3072,
                                                    4096, 6144, 8192, 12288, 16384, 32768, 65536, 131072};
// FlashInfer's MLA kernel cuts a row's KV into chunks of one rounded length and packs heads into 64- or
// 128-row tiles, so its time steps between grid values 1.5x apart in rows and tokens (an H100 calibrated on
// the grids above missed MLA at 7-10 rows of 2.9-4.6k tokens by 13-18%): the grids of the H200's tables,
// about 1.2-1.33x apart below 16k tokens and 64 rows.
const std::vector<int> kMlaRows = {1,  2,  3,  4,  5,  6,  8,  10, 12,  14,  16,  20,  24,
                                   28, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 256};
const std::vector<std::int64_t> kMlaTokens = {
    128,  192,  256,  320,  384,  448,  512,  640,  768,   896,   1024,  1280,  1536,  1792,  2048,
    2560, 3072, 3584, 4096, 5120, 6144, 7168, 8192, 10240, 12288, 14336, 16384, 32768, 65536, 131072};
// A layer's KV cache on one rank above this is priced analytically: 4 GB is several times what one layer of
// a 61-80-layer model holds per GPU at any batch that fits in 80-141 GB, and points near the cap are what
// make a sweep long.
constexpr double kMaxKvBytes = 4e9;

hw::KernelSweepConfig cs_sweep_base() {
  hw::KernelSweepConfig c;
  c.warmup = 3;
  c.reps = 10;
  c.merge_dcp = kMergeDcp;
  c.merge_rows = kMergeRows;
  c.merge_heads = kMergeHeads;
  c.merge_heads_per_rank = kMergeHeadsPerRank;
  c.merge_dims = {128, 512};
  c.rows = kAttentionRows;
  c.tokens = kAttentionTokens;
  c.max_kv_bytes = kMaxKvBytes;
  return c;
}

TableFamily cs_attention(const std::string& name, const std::string& prices, std::vector<hw::SweepGeometry> g,
                         std::vector<int> heads, hw::AttentionImpl impl) {
  TableFamily f{name, prices, cs_sweep_base()};
  f.sweep.kernels = {"attention"};
  f.sweep.geometries = std::move(g);
  f.sweep.heads = std::move(heads);
  f.sweep.attention = impl;
  return f;
}

TableFamily cs_merge(const std::string& name, const std::string& prices, std::vector<std::string> kernels) {
  TableFamily f{name, prices, cs_sweep_base()};
  f.sweep.kernels = std::move(kernels);
  return f;
}

}  // namespace

std::vector<TableFamily> table_families(bool flashinfer) {
  std::vector<TableFamily> out;
  // Every head count the H200's tables hold (the sweep leaves out those the group does not divide): dcpsim's
  // GQA kernel blocks heads per CTA, so 56 heads of 7 KV heads is not halfway between 48 and 64 (+21-23% on
  // an H100 calibrated without it).
  const std::vector<int> gqa_heads = {16, 20, 24,  28,  32,  40,  48,  56, 64,
                                      80, 96, 112, 128, 160, 192, 224, 256};
  for (int g : {1, 4, 8, 16}) {
    out.push_back(cs_attention("attention-gqa-g" + std::to_string(g),
                               "GQA attention (dcpsim's kernel, the runner's choice for GQA) at " +
                                   std::to_string(g) +
                                   " query heads per KV head; groups between two measured ones from both",
                               {{false, g}}, gqa_heads, hw::AttentionImpl::kDcpsim));
  }
  if (flashinfer) {
    out.push_back(cs_attention(
        "attention-mla", "MLA attention on FlashInfer's kernel (the runner's choice for MLA)", {{true, 1}},
        {16, 24, 32, 48, 64, 72, 80, 96, 112, 128, 256}, hw::AttentionImpl::kFlashInfer));
    out.back().sweep.rows = kMlaRows;
    out.back().sweep.tokens = kMlaTokens;
  }
  TableFamily mla =
      cs_attention("attention-mla-dcpsim", "MLA attention on dcpsim's kernel (row stamps, row-stream)",
                   {{true, 1}}, {16, 32, 64, 128, 256}, hw::AttentionImpl::kDcpsim);
  mla.sweep.rows = {1, 2, 4, 8, 16, 32, 64, 128, 256};
  mla.sweep.tokens = {128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072};
  out.push_back(mla);
  const std::vector<std::string> all = {"correction", "a2a_pack", "a2a_combine"};
  out.push_back(cs_merge("merge", "correction, A2A pack and combine with warm inputs (steps on GPUs)", all));
  out.push_back(
      cs_merge("merge-cold", "the same with L2 evicted before each call (an emulated step's ranks)", all));
  out.back().sweep.cold_merge_inputs = true;
  out.push_back(cs_merge("merge-cold-lse",
                         "the correction cold with its gathered LSEs in L2 (emulated AG steps)",
                         {"correction"}));
  out.back().sweep.cold_merge_inputs = true;
  out.back().sweep.warm_lse = true;
  // a2a-2call's pack and combine: the LSEs apart from O, a different combine kernel (16-byte accesses) and
  // 4-6% faster than the packed layout's tables said in the H100's steps (fit set and held-out draw alike).
  // With row stamps the combine alone (the pack stamps no rows), on the lane-group kernel (the short path
  // takes no stamps).
  for (bool stamped : {false, true}) {
    for (bool cold : {false, true}) {
      out.push_back(cs_merge(std::string("merge-split") + (stamped ? "-stamped" : "") + (cold ? "-cold" : ""),
                             std::string(stamped ? "A2A combine with row stamps" : "A2A pack and combine") +
                                 " in a2a-2call's layout (LSEs apart), " + (cold ? "cold" : "warm"),
                             stamped ? std::vector<std::string>{"a2a_combine"}
                                     : std::vector<std::string>{"a2a_pack", "a2a_combine"}));
      out.back().sweep.split_lse = true;
      out.back().sweep.row_stamps = stamped;
      out.back().sweep.cold_merge_inputs = cold;
    }
  }
  out.push_back(cs_merge("merge-stamped", "correction and A2A combine with row stamps (hw run --row-stamps)",
                         {"correction", "a2a_combine"}));
  out.back().sweep.row_stamps = true;
  out.push_back(cs_merge("merge-stamped-cold", "the same cold", {"correction", "a2a_combine"}));
  out.back().sweep.row_stamps = true;
  out.back().sweep.cold_merge_inputs = true;
  // A grid inside the warm one's, so that every point has its warm twin.
  TableFamily copy =
      cs_merge("merge-after-copy",
               "not listed: the merge kernels after a 4 KiB copy node of their graph, against the "
               "warm table (launch.kernel_after_copy_node)",
               all);
  copy.sweep.merge_dcp = {2, 4, 8};
  copy.sweep.merge_rows = {1, 16, 64};
  copy.sweep.merge_heads = {16, 96};
  copy.sweep.merge_heads_per_rank = {2, 8};
  copy.sweep.merge_prelude_copy_bytes = 4096;
  copy.sweep.merge_prelude_copy_in_graph = true;
  copy.listed = false;
  out.push_back(copy);
  return out;
}

namespace {

CalibrationStep cs_grid_step(bool mla, int n, int rows, std::int64_t context, models::LaunchMode launch,
                             int check_rows, bool stamps, int padded) {
  CalibrationStep s;
  models::Scenario& sc = s.scenario;
  sc.dcp = n;
  sc.heads = mla ? 16 * n : 8 * n;
  sc.kv_heads = mla ? 1 : n;
  sc.head_dim = mla ? 512 : 128;
  sc.qk_dim = mla ? 576 : 128;
  sc.contexts = models::uniform_contexts(rows, context);
  sc.launch = launch;
  s.check_rows = check_rows;
  s.row_stamps = stamps;
  s.padded_rows = padded;
  s.name = std::string(mla ? "mla" : "gqa") + "_n" + std::to_string(n) + "_b" + std::to_string(rows) +
           "_ctx" + std::to_string(context / 1024) + "k_" + std::string(models::to_string(launch));
  return s;
}

}  // namespace

std::vector<CalibrationStep> fit_steps() {
  using models::LaunchMode;
  std::vector<CalibrationStep> out;
  for (int n : {2, 3, 4, 8}) {
    for (bool mla : {true, false}) {
      out.push_back(cs_grid_step(mla, n, 1, 32768, LaunchMode::kGraph, -1, false, 0));
      out.push_back(cs_grid_step(mla, n, 16, 8192, LaunchMode::kGraph, 2, false, 0));
      out.push_back(cs_grid_step(mla, n, 16, 8192, LaunchMode::kEager, 2, false, 0));
      out.push_back(cs_grid_step(mla, n, 64, 1024, LaunchMode::kGraph, 4, true, 4));
    }
  }
  return out;
}

std::vector<CalibrationStep> pdl_steps() {
  using models::LaunchMode;
  std::vector<CalibrationStep> out;
  for (int n : {2, 3, 4, 8}) {
    for (bool mla : {true, false}) {
      out.push_back(cs_grid_step(mla, n, 16, 8192, LaunchMode::kPdl, 2, false, 0));
      out.push_back(cs_grid_step(mla, n, 64, 1024, LaunchMode::kPdl, 4, true, 4));
    }
  }
  return out;
}

namespace {

// Uniform in [0, 1) from the generator's raw bits: std::uniform_real_distribution is not the same sequence
// in every standard library, and the held-out list must be.
double cs_unit(std::mt19937_64& rng) {
  return double(rng() >> 11) * 0x1.0p-53;
}

struct CsGrids {
  std::set<int> rows;             // every rows value of any table
  std::set<std::int64_t> tokens;  // every tokens value of an attention table
};

CsGrids cs_grids_of(const std::vector<TableFamily>& families) {
  CsGrids g;
  for (const TableFamily& f : families) {
    const bool att =
        std::find(f.sweep.kernels.begin(), f.sweep.kernels.end(), "attention") != f.sweep.kernels.end();
    if (att) {
      g.rows.insert(f.sweep.rows.begin(), f.sweep.rows.end());
      g.tokens.insert(f.sweep.tokens.begin(), f.sweep.tokens.end());
    }
    if (!att || f.sweep.kernels.size() > 1)
      g.rows.insert(f.sweep.merge_rows.begin(), f.sweep.merge_rows.end());
  }
  return g;
}

// A rank's tokens lie on a grid value: the ranks hold ctx / N or one more.
bool cs_tokens_on_grid(const CsGrids& g, std::int64_t context, int n) {
  return g.tokens.count(context / n) > 0 || g.tokens.count((context + n - 1) / n) > 0;
}

struct CsModel {
  const char* preset;
  const char* tag;
  std::vector<int> tp;  // the tensor parallel sizes deployments use
};

std::string cs_tokens_label(std::int64_t context) {
  return context % 1024 == 0 ? std::to_string(context / 1024) + "k" : std::to_string(context);
}

}  // namespace

std::vector<CalibrationStep> holdout_steps(const std::vector<TableFamily>& families, std::uint64_t seed,
                                           int count) {
  if (count < 1) throw InputError("held-out steps: count must be >= 1");
  const CsGrids grids = cs_grids_of(families);
  const std::vector<CsModel> models = {{"deepseek-v3", "dsv3", {8, 16}},
                                       {"llama-3.1-70b", "llama70b", {8, 16}},
                                       {"kimi-k2", "kimi", {8, 16}},
                                       {"qwen3-235b-a22b", "qwen235b", {8, 16}}};
  // N takes 3, 5 and 7 first and more often than the grid's own sizes; launches rotate.
  const std::vector<int> dcp_cycle = {3, 5, 7, 2, 4, 6, 8, 5, 3, 7, 6, 2, 8, 4, 7, 5};
  const std::vector<models::LaunchMode> launches = {models::LaunchMode::kGraph, models::LaunchMode::kPdl,
                                                    models::LaunchMode::kEager};
  std::mt19937_64 rng(seed);
  std::vector<CalibrationStep> out;
  for (int i = 0; static_cast<int>(out.size()) < count; ++i) {
    if (i > 1000 * count) throw RuntimeError("held-out steps: no draw off the grids (grids too dense?)");
    const int n = dcp_cycle[out.size() % dcp_cycle.size()];
    // The slot's model, or the next one that has a TP dividing its heads (and KV heads) x N: Qwen3's 4 KV
    // heads allow no N of 5 or 7 at TP 8 or 16.
    const CsModel* m = nullptr;
    models::ModelPreset preset;
    std::vector<std::pair<int, models::RankGeometry>> options;
    for (std::size_t k = 0; k < models.size() && options.empty(); ++k) {
      m = &models[(out.size() + k) % models.size()];
      preset = models::load_model(m->preset);
      for (int tp : m->tp) {
        try {
          const models::RankGeometry g = models::rank_geometry(preset, n, tp);
          if (g.heads % n == 0 && g.heads % g.kv_heads == 0) options.push_back({tp, g});  // A2A needs N | H
        } catch (const InputError&) {
        }
      }
    }
    if (options.empty()) throw RuntimeError("held-out steps: no model geometry for N = " + std::to_string(n));
    const auto& [tp, geo] = options[static_cast<std::size_t>(rng() % options.size())];
    // Rows log-uniform in [2, 200], contexts in [4k, 300k], both off every grid.
    const int rows = static_cast<int>(std::lround(std::exp(std::log(2.0) + cs_unit(rng) * std::log(100.0))));
    const auto context =
        static_cast<std::int64_t>(std::lround(std::exp(std::log(4096.0) + cs_unit(rng) * std::log(75.0))));
    if (grids.rows.count(rows) > 0 || cs_tokens_on_grid(grids, context, n)) continue;
    // A rank's layer of KV within what one layer holds per GPU (the sweeps' cap), and every rank's shard
    // together within a tenth of an 80 GB GPU (the emulation holds them all).
    const double kv_per_token =
        preset.mla() ? double(geo.qk_dim) * 2 : double(geo.kv_heads) * (geo.qk_dim + geo.head_dim) * 2;
    const double rank_kv = double(rows) * double(context) / n * kv_per_token;
    if (rank_kv > 2e9 || rank_kv * n > 8e9 || double(context) / n > 131072) continue;
    CalibrationStep s;
    models::Scenario& sc = s.scenario;
    sc.dcp = n;
    sc.heads = geo.heads;
    sc.kv_heads = geo.kv_heads;
    sc.head_dim = geo.head_dim;
    sc.qk_dim = geo.qk_dim;
    sc.contexts = models::uniform_contexts(rows, context);
    sc.launch = launches[out.size() % launches.size()];
    sc.validate();
    s.check_rows = 2;
    s.origin = std::string(m->preset) + " tp" + std::to_string(tp);
    s.name = std::string(m->tag) + "_n" + std::to_string(n) + "_h" + std::to_string(geo.heads) + "_b" +
             std::to_string(rows) + "_ctx" + cs_tokens_label(context) + "_" +
             std::string(models::to_string(sc.launch));
    out.push_back(std::move(s));
  }
  return out;
}

std::string on_table_grid(const CalibrationStep& step, const std::vector<TableFamily>& families) {
  const CsGrids g = cs_grids_of(families);
  const models::Scenario& s = step.scenario;
  std::string out;
  if (g.rows.count(s.rows()) > 0) out += "rows " + std::to_string(s.rows()) + " on a table grid";
  if (!s.contexts.empty() && cs_tokens_on_grid(g, s.contexts.front(), s.dcp))
    out += std::string(out.empty() ? "" : "; ") + "per-rank tokens on the attention grid";
  return out;
}

std::string step_flags(const CalibrationStep& step) {
  const models::Scenario& s = step.scenario;
  std::string out = "--dcp " + std::to_string(s.dcp) + " --heads " + std::to_string(s.heads) +
                    " --kv-heads " + std::to_string(s.kv_heads) + " --head-dim " +
                    std::to_string(s.head_dim) + " --qk-dim " + std::to_string(s.qk_dim) + " --batch " +
                    std::to_string(s.rows()) + " --context " +
                    std::to_string(s.contexts.empty() ? 0 : s.contexts.front()) + " --launch " +
                    std::string(models::to_string(s.launch));
  if (step.check_rows >= 0) out += " --check-rows " + std::to_string(step.check_rows);
  if (step.row_stamps) out += " --row-stamps";
  if (step.padded_rows > 0) out += " --padded-rows " + std::to_string(step.padded_rows);
  return out;
}

}  // namespace dcpsim::analysis
