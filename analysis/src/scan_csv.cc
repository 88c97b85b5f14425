// The scan's CSV: one row per simulated scenario, formatted identically whichever worker produced it.
#ifdef DCPSIM_WITH_SIMGRID

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "dcpsim/analysis/scan.h"
#include "dcpsim/analysis/step_figures.h"
#include "dcpsim/models/cost_kernels.h"

namespace dcpsim::analysis {
namespace {

constexpr std::string_view kPhases[] = {
    sim::kPhaseQueryGather, sim::kPhaseAttention,     sim::kPhaseLseGather, sim::kPhaseCorrection,
    sim::kPhaseCollective,  sim::kPhaseLseCollective, sim::kPhasePack,      sim::kPhasePush,
    sim::kPhaseWait,        sim::kPhaseCombine};

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string context_text(const models::Scenario& s) {
  const bool uniform =
      std::all_of(s.contexts.begin(), s.contexts.end(), [&](int64_t c) { return c == s.contexts.front(); });
  return uniform ? std::to_string(s.contexts.front()) : "mixed";
}

// Longest duration of a phase over the ranks (empty when the strategy has no such phase).
std::string phase_us(const sim::StepResult& r, std::string_view phase) {
  double longest = -1.0;
  for (const sim::RankTimeline& t : r.ranks) {
    for (const sim::PhaseSpan& p : t.phases) {
      if (p.name == phase) longest = std::max(longest, p.duration_s());
    }
  }
  return longest < 0 ? "" : fixed(longest * 1e6, 6);
}

std::string plans(const sim::StepResult& r) {
  std::string out;
  for (const sim::PlannedCollective& c : r.collectives) {
    if (!out.empty()) out += ';';
    out += c.phase + "=" + std::string(models::to_string(c.plan.algorithm)) + "/" +
           std::string(models::to_string(c.plan.protocol));
  }
  return out;
}

// The kernel types priced analytically (outside the profile's tables), "correction;a2a_pack".
std::string extrapolated(const sim::StepResult& r) {
  std::vector<std::string> names;
  for (const sim::KernelFigure& f : r.kernel_figures) {
    if (f.source == models::FigureSource::kAnalytic &&
        std::find(names.begin(), names.end(), f.kernel) == names.end())
      names.push_back(f.kernel);
  }
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ";") + n;
  return out;
}

}  // namespace

std::string scan_csv_header() {
  std::string h =
      "profile,model,tp,dcp,heads,kv_heads,head_dim,qk_dim,batch,context,strategy,tier,launch,kv_dtype,"
      "out_dtype,"
      "interleave,"
      "step_latency_us,attention_end_us,merge_latency_us,merge_share,comm_us,comm_share,layers,non_attention_"
      "us,"
      "decode_step_us";
  for (std::string_view p : kPhases) h += ",phase_" + std::string(p) + "_us";
  h += ",kv_tokens_per_rank,kv_bytes_per_rank,hbm_gb,weights_gb,kv_budget_gb,weights_fit,kv_capacity_tokens_"
       "per_gpu,"
       "kv_capacity_tokens_group,kv_fits,plans,kernels_table,kernels_analytic,kernels_extrapolated";
  return h;
}

std::string scan_csv_row(const WholeModel& m, const std::string& model_name, const models::HardwareProfile& p,
                         const sim::StepResult& r, bool weights_fit) {
  const models::Scenario& s = r.scenario;
  std::int64_t tokens = 0;
  std::int64_t bytes = 0;
  for (const sim::RankTimeline& t : r.ranks) {
    tokens = std::max(tokens, t.kv_tokens);
    bytes = std::max(bytes, t.kv_bytes);
  }
  // With --spec-attention rows the attention reads each request's KV k + 1 times: the stored KV, and the
  // requests, are the reads / (k + 1).
  bytes = m.stored_of_read(bytes);
  tokens = m.stored_of_read(tokens);
  const int requests = m.requests(s);
  const std::int64_t capacity = m.kv_capacity_tokens(s);
  const double comm = communication_s(r);
  const double non_attention = m.non_attention_s(requests);

  std::string row =
      p.name + "," + (model_name.empty() ? "none" : model_name) + "," + std::to_string(m.tp()) + "," +
      std::to_string(s.dcp) + "," + std::to_string(s.heads) + "," + std::to_string(s.kv_heads) + "," +
      std::to_string(s.head_dim) + "," + std::to_string(s.qk_dim) + "," + std::to_string(requests) + "," +
      context_text(s) + "," + std::string(models::to_string(s.strategy)) + "," +
      std::string(to_string(strategy_info(s.strategy).tier)) + "," +
      std::string(models::to_string(s.launch)) + "," + std::string(models::to_string(s.kv_dtype)) + "," +
      std::string(models::to_string(s.out_dtype)) + "," + std::to_string(s.interleave);
  const double step = r.step_latency_s;
  row += "," + fixed(step * 1e6, 6) + "," + fixed(r.attention_end_s * 1e6, 6) + "," +
         fixed(r.merge_latency_s * 1e6, 6) + "," + fixed(step > 0 ? r.merge_latency_s / step : 0.0, 6) + "," +
         fixed(comm * 1e6, 6) + "," + fixed(step > 0 ? comm / step : 0.0, 6) + "," +
         std::to_string(m.layers()) + "," + fixed(non_attention * 1e6, 6) + "," +
         fixed(m.decode_step_s(step, requests) * 1e6, 6);
  for (std::string_view phase : kPhases) row += "," + phase_us(r, phase);
  row += "," + std::to_string(tokens) + "," + std::to_string(bytes) + "," + fixed(m.hbm_bytes() / 1e9, 3) +
         "," + fixed(m.weight_bytes_per_gpu() / 1e9, 3) + "," + fixed(m.kv_budget_bytes() / 1e9, 3) + "," +
         (weights_fit ? "true" : "false") + "," + std::to_string(capacity) + "," +
         std::to_string(capacity * s.dcp) + "," + (tokens <= capacity ? "true" : "false") + "," + plans(r);
  row += "," + std::to_string(r.kernel_figures_from(models::FigureSource::kTable)) + "," +
         std::to_string(r.kernel_figures_from(models::FigureSource::kAnalytic)) + "," + extrapolated(r);
  return row;
}

}  // namespace dcpsim::analysis

#endif  // DCPSIM_WITH_SIMGRID
