#include "dcpsim/sim/report.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "dcpsim/error.h"

namespace dcpsim::sim {
namespace {

std::string us(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%10.3f", seconds * 1e6);
  return buf;
}

std::string plan_text(const PlannedCollective& c) {
  const models::CollectivePlan& plan = c.plan;
  char buf[256];
  if (c.source == models::FigureSource::kTable) {
    std::snprintf(buf, sizeof buf,
                  "%s/%s, %d steps of %.0f B per rank, measured table %.3f us (model %.3f us)",
                  std::string(models::to_string(plan.algorithm)).c_str(),
                  std::string(models::to_string(plan.protocol)).c_str(), plan.steps,
                  plan.bytes_per_step_per_rank, plan.analytic_time_s * 1e6, (c.model_s + c.in_step_s) * 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%s/%s, %d steps of %.0f B per rank, analytic %.3f us",
                  std::string(models::to_string(plan.algorithm)).c_str(),
                  std::string(models::to_string(plan.protocol)).c_str(), plan.steps,
                  plan.bytes_per_step_per_rank, plan.analytic_time_s * 1e6);
  }
  return buf;
}

// Phase durations over ranks, in the order the phases first appear.
std::vector<std::pair<std::string, std::vector<double>>> phase_durations(const StepResult& r) {
  std::vector<std::pair<std::string, std::vector<double>>> out;
  for (const RankTimeline& t : r.ranks) {
    for (const PhaseSpan& p : t.phases) {
      auto it = std::find_if(out.begin(), out.end(), [&](const auto& e) { return e.first == p.name; });
      if (it == out.end()) it = out.insert(out.end(), {p.name, {}});
      it->second.push_back(p.duration_s());
    }
  }
  return out;
}

nlohmann::json spread_json(const Spread& s) {
  return {{"min_us", s.min * 1e6}, {"median_us", s.median * 1e6}, {"max_us", s.max * 1e6}};
}

// What priced an fp8 cache's attention: the profile's fp8-KV tables (`hw sweep --kv-dtype fp8`; a bf16
// table never prices it, the key holds the KV type), the measurement being validated, or the model reading
// 1-byte KV, which FlashInfer 0.7.2's FP8-KV kernels do not reach on Hopper.
std::string fp8_note(const StepResult& r) {
  int modelled = 0, ranks = 0, tables = 0;
  for (const KernelFigure& f : r.kernel_figures) {
    if (f.kernel != "attention") continue;
    ++ranks;
    modelled += f.source == models::FigureSource::kAnalytic;
    tables += f.source == models::FigureSource::kTable;
  }
  const std::string optimistic =
      "FlashInfer 0.7.2's fp8-KV kernels measured 1.2-3.2x slower than bf16 on an H100, so this attention is "
      "optimistic on Hopper (docs/VALIDATION.md)";
  if (modelled == 0 && ranks > 0)
    return tables > 0 ? "  fp8 KV cache: attention from the profile's fp8-KV tables (measured)\n"
                      : "  fp8 KV cache: attention as measured\n";
  if (modelled == ranks && r.triton_mla_attention)
    return "  fp8 KV cache: attention modelled as vLLM's Triton MLA kernel reading 1-byte KV and "
           "dequantising it "
           "per CTA (the profile's attention.triton_mla: its grid from PR #40750's source, its rate fitted "
           "on "
           "published end-to-end steps, docs/VALIDATION.md)\n";
  if (modelled == ranks)
    return "  fp8 KV cache: attention modelled as its kernel reading 1-byte KV (no fp8-KV table covers "
           "it); " +
           optimistic + "\n";
  return "  fp8 KV cache: attention of " + std::to_string(ranks - modelled) + " of " + std::to_string(ranks) +
         " ranks from fp8-KV tables or measured; the other ranks' modelled as reading 1-byte KV (outside the "
         "tables): " +
         optimistic + "\n";
}

}  // namespace

Spread spread(std::vector<double> values) {
  if (values.empty()) return {};
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  const double median = n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
  return {values.front(), median, values.back()};
}

std::string format_summary(const StepResult& r) {
  std::string out = "dcpsim simulate: " + r.profile + ", " + r.scenario.label() + "\n";
  out += "  one attention layer: step latency " + us(r.step_latency_s) + " us   attention done at" +
         us(r.attention_end_s) + " us   merge adds" + us(r.merge_latency_s) + " us\n";
  for (const PlannedCollective& c : r.collectives) out += "  " + c.phase + ": " + plan_text(c) + "\n";
  if (r.bundled_flows) {
    out +=
        "  flows: bundled (a window of peers, or a round of ring steps, per SimGrid transfer; --flows pair "
        "for one per peer and step)\n";
  }
  if (!r.kernel_figures.empty()) {
    out += "  kernel times: " + r.kernel_figures_text() +
           (r.kernel_figures_from(models::FigureSource::kAnalytic) > 0
                ? " -- analytic figures are outside the profile's measured tables (extrapolated)\n"
                : "\n");
  }
  if (r.scenario.kv_dtype == models::DType::kFP8E4M3) out += fp8_note(r);
  out += "\n  phase (us over ranks)      min     median        max\n";
  for (const auto& [name, durations] : phase_durations(r)) {
    const Spread s = spread(durations);
    char line[128];
    std::snprintf(line, sizeof line, "  %-16s %10.3f %10.3f %10.3f\n", name.c_str(), s.min * 1e6,
                  s.median * 1e6, s.max * 1e6);
    out += line;
  }
  out += "\n  rank   KV tokens   lse ready min/median/max (us)        output ready min/median/max (us)\n";
  for (const RankTimeline& t : r.ranks) {
    const Spread l = spread(t.lse_ready_s);
    const Spread o = spread(t.output_ready_s);
    char line[192];
    std::snprintf(line, sizeof line, "  %4d %11lld   %10.3f %10.3f %10.3f    %10.3f %10.3f %10.3f\n", t.rank,
                  static_cast<long long>(t.kv_tokens), l.min * 1e6, l.median * 1e6, l.max * 1e6, o.min * 1e6,
                  o.median * 1e6, o.max * 1e6);
    out += line;
  }
  return out;
}

nlohmann::json summary_json(const StepResult& r) {
  nlohmann::json j;
  j["profile"] = r.profile;
  j["scenario"] = r.scenario.label();
  j["flows"] = r.bundled_flows ? "bundle" : "pair";
  j["step_latency_us"] = r.step_latency_s * 1e6;
  j["attention_end_us"] = r.attention_end_s * 1e6;
  j["merge_latency_us"] = r.merge_latency_s * 1e6;
  j["simgrid_activities"] = r.activities;
  j["pipe_transfers"] = r.pipe_transfers;
  j["kernel_figures"] = {{"table", r.kernel_figures_from(models::FigureSource::kTable)},
                         {"analytic", r.kernel_figures_from(models::FigureSource::kAnalytic)},
                         {"figures", nlohmann::json::array()}};
  for (const KernelFigure& f : r.kernel_figures) {
    j["kernel_figures"]["figures"].push_back(
        {{"rank", f.rank}, {"kernel", f.kernel}, {"source", models::to_string(f.source)}});
  }
  for (const PlannedCollective& c : r.collectives) {
    j["collectives"].push_back({{"phase", c.phase},
                                {"algorithm", models::to_string(c.plan.algorithm)},
                                {"protocol", models::to_string(c.plan.protocol)},
                                {"steps", c.plan.steps},
                                {"bytes_per_step_per_rank", c.plan.bytes_per_step_per_rank},
                                {"analytic_us", c.plan.analytic_time_s * 1e6},
                                {"source", c.source == models::FigureSource::kTable ? "table" : "model"},
                                {"in_step_us", c.in_step_s * 1e6}});
  }
  for (const auto& [name, durations] : phase_durations(r)) j["phases"][name] = spread_json(spread(durations));
  for (const RankTimeline& t : r.ranks) {
    nlohmann::json rank = {{"rank", t.rank},
                           {"kv_tokens", t.kv_tokens},
                           {"kv_bytes", t.kv_bytes},
                           {"attention_end_us", t.attention_end_s * 1e6},
                           {"done_us", t.done_s * 1e6},
                           {"lse_ready", spread_json(spread(t.lse_ready_s))},
                           {"output_ready", spread_json(spread(t.output_ready_s))}};
    for (const PhaseSpan& p : t.phases) {
      rank["phases"].push_back({{"name", p.name}, {"begin_us", p.begin_s * 1e6}, {"end_us", p.end_s * 1e6}});
    }
    j["ranks"].push_back(std::move(rank));
  }
  return j;
}

}  // namespace dcpsim::sim
