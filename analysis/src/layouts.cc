// Layouts, the default TP, strategy tiers and skip reasons (layouts.h).
#include "dcpsim/analysis/layouts.h"

#include <algorithm>
#include <charconv>
#include <cstdio>

#include "dcpsim/checked.h"
#include "dcpsim/error.h"

namespace dcpsim::analysis {
namespace {

using models::Strategy;

// The engines' names come from their code: vLLM's ParallelConfig.dcp_comm_backend (vllm/config/parallel.py,
// Literal["ag_rs", "a2a"]; its a2a is vllm/v1/attention/ops/dcp_alltoall.py, two all_to_all_single calls) and
// SGLang's ServerArgs.dcp_comm_backend (ag_rs, a2a: one packed all-to-all, fi_a2a: FlashInfer's MNNVL
// all-to-all; sgl-project/sglang#39165 resolves the default).
const std::vector<StrategyInfo>& table() {
  static const std::vector<StrategyInfo> infos = {
      {Strategy::kAgRs,
       StrategyTier::kProduction,
       "LSE all-gather, correction, reduce-scatter of the scaled outputs",
       {{"vLLM", "--dcp-comm-backend ag_rs (dcp_comm_backend, the default)"},
        {"SGLang", "--dcp-comm-backend ag_rs (dcp_comm_backend)"}},
       "",
       "every mode"},
      {Strategy::kAgAr,
       StrategyTier::kProduction,
       "LSE all-gather, correction, all-reduce (every rank keeps every head)",
       {{"vLLM", "--dcp-comm-backend ag_rs with prefill context parallel (its all-reduce form)"}},
       "",
       "every mode"},
      {Strategy::kA2a,
       StrategyTier::kProduction,
       "one NCCL all-to-all of output and LSE packed together, then a combine",
       {{"SGLang", "--dcp-comm-backend a2a (dcp_comm_backend; the default on CUDA without fi_a2a)"}},
       "",
       "every mode"},
      {Strategy::kA2aTwoCall,
       StrategyTier::kProduction,
       "two NCCL all-to-alls, the outputs then the fp32 LSEs, then a combine",
       {{"vLLM", "--dcp-comm-backend a2a (dcp_comm_backend; two all_to_all_single calls)"}},
       "",
       "every mode"},
      {Strategy::kDirect,
       StrategyTier::kProduction,
       "one-sided NVLink stores of each head block and LSE into the owner's window, flags, combine",
       {},
       "the engines' one-sided DCP all-to-all, vLLM's direct symmetric-memory path (PR #48897: "
       "VLLM_USE_DIRECT_DCP_A2A=1 with --dcp-comm-backend a2a) and SGLang's proposed symm_a2a (#33355)",
       "every mode (NCCL windows on several GPUs)"},
      {Strategy::kRowStream,
       StrategyTier::kResearch,
       "direct delivery with each row pushed from attention's epilogue as it finishes",
       {},
       "dcpsim's research strategy",
       "emulated on one GPU only (hw run --emulate)"},
      {Strategy::kFlashInferA2a,
       StrategyTier::kProduction,
       "FlashInfer's fused DCP all-to-all and LSE merge (one cooperative kernel)",
       {{"SGLang",
         "--dcp-comm-backend fi_a2a (dcp_comm_backend; the default on Blackwell in one MNNVL "
         "domain)"}},
       "",
       "two or more GPUs (NCCL windows)"},
  };
  return infos;
}

}  // namespace

std::string_view to_string(StrategyTier t) {
  return t == StrategyTier::kProduction ? "production" : "research";
}

const StrategyInfo& strategy_info(Strategy s) {
  for (const StrategyInfo& i : table()) {
    if (i.strategy == s) return i;
  }
  throw RuntimeError("strategy_info: strategy " + std::string(models::to_string(s)) + " has no entry");
}

bool is_production(Strategy s) {
  return strategy_info(s).tier == StrategyTier::kProduction;
}

std::string engine_text(Strategy s) {
  const StrategyInfo& i = strategy_info(s);
  std::string out;
  for (const EngineSetting& e : i.engines)
    out += (out.empty() ? "" : "; ") + std::string(e.engine) + " " + std::string(e.setting);
  if (!out.empty()) return out;
  if (i.tier == StrategyTier::kResearch) return "no serving engine ships it (research)";
  return "no released engine flag yet: " + std::string(i.engine_note);
}

bool may_pick(Strategy s, bool include_research) {
  return include_research || is_production(s);
}

std::optional<std::size_t> pick_fastest(const std::vector<Strategy>& strategies,
                                        const std::vector<double>& times, bool include_research) {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < strategies.size() && i < times.size(); ++i) {
    if (!may_pick(strategies[i], include_research)) continue;
    if (!best || times[i] < times[*best]) best = i;
  }
  return best;
}

std::string strategy_skip_reason(const models::Scenario& s) {
  if (models::scatters_heads(s.strategy) && s.dcp > 0 && s.heads % s.dcp != 0) {
    return "gives each rank H/N of the heads: needs the heads (" + std::to_string(s.heads) +
           ") divisible by the DCP size (" + std::to_string(s.dcp) + "); ag-ar does not";
  }
  return {};
}

StrategyChoice runnable_strategies(const models::Scenario& base, const std::vector<Strategy>& requested) {
  StrategyChoice choice;
  for (const Strategy strategy : requested) {
    models::Scenario s = base;
    s.strategy = strategy;
    if (std::string why = strategy_skip_reason(s); !why.empty()) {
      choice.skipped.push_back({strategy, std::move(why)});
      continue;
    }
    s.validate();  // what no strategy can run is the caller's error
    choice.run.push_back(std::move(s));
  }
  if (choice.run.empty()) {
    std::string why;
    for (const SkippedStrategy& k : choice.skipped) why += (why.empty() ? "" : "; ") + k.reason;
    throw InputError("no requested strategy can run this scenario: " + why);
  }
  return choice;
}

// "  skipped ag-rs, a2a: <the rule>", one line per rule.
std::string skipped_text(const std::vector<SkippedStrategy>& skipped, const std::string& indent) {
  std::vector<std::pair<std::string, std::string>> by_reason;  // reason, strategies
  for (const SkippedStrategy& k : skipped) {
    auto it =
        std::find_if(by_reason.begin(), by_reason.end(), [&](const auto& e) { return e.first == k.reason; });
    if (it == by_reason.end()) it = by_reason.insert(by_reason.end(), {k.reason, ""});
    it->second += (it->second.empty() ? "" : ", ") + std::string(models::to_string(k.strategy));
  }
  std::string out;
  for (const auto& [reason, names] : by_reason) out += indent + "skipped " + names + ": " + reason + "\n";
  return out;
}

LayoutQuery LayoutQuery::of(std::optional<models::ModelPreset> model, const models::HardwareProfile& profile,
                            double gpu_memory_utilization, int pp) {
  LayoutQuery q;
  q.pp = pp;
  q.model = std::move(model);
  q.hbm_bytes = profile.gpu.hbm_capacity.si();
  q.gpu_memory_utilization = gpu_memory_utilization;
  return q;
}

double LayoutQuery::weight_bytes_per_parameter() const {
  if (bytes_per_parameter) return *bytes_per_parameter;
  return model ? model->weight_bytes_per_parameter : 0.0;
}

std::string LayoutQuery::weight_dtype_name() const {
  const double b = weight_bytes_per_parameter();
  std::string name = weight_dtype;
  if (name.empty() && model && !bytes_per_parameter)
    name = std::string(models::to_string(model->weight_dtype));
  if (name.empty()) {
    name = b == 4.0 ? "fp32" : b == 2.0 ? "bf16" : b == 1.0 ? "fp8" : b == 0.5 ? "4-bit" : "";
  }
  char bytes[64];
  char figure[32];
  std::snprintf(figure, sizeof figure, "%.3g", b);
  std::snprintf(bytes, sizeof bytes, "%s byte%s per parameter", figure,
                std::string(figure) == "1" ? "" : "s");
  return name.empty() ? std::string(bytes) : name + " (" + bytes + ")";
}

std::string gb_text(double bytes) {
  char b[64];
  std::snprintf(b, sizeof b, "%.1f GB", bytes / 1e9);
  return b;
}

std::string Layout::fit_text() const {
  if (!valid) return "not a layout: " + invalid_reason;
  if (weight_bytes_per_gpu <= 0.0) return "no weights (no model)";
  char usable[96];
  std::snprintf(usable, sizeof usable, " (HBM %.1f GB x %.2f)", hbm_bytes / 1e9, utilization);
  const std::string text = gb_text(weight_bytes_per_gpu) + " of weights per GPU" +
                           (pp > 1 ? " (the fullest of " + std::to_string(pp) + " pipeline stages) " : " ") +
                           (weights_fit ? "fit in " : "exceed ") + gb_text(usable_bytes) + usable;
  return weights_fit ? text : "does not fit: " + text;
}

Layout evaluate_layout(const LayoutQuery& q, int tp, int dcp) {
  const int pp = q.pp;
  if (tp < 1 || dcp < 1 || pp < 1) throw InputError("a layout needs TP >= 1, DCP >= 1 and PP >= 1");
  Layout l;
  l.tp = tp;
  l.dcp = dcp;
  l.pp = pp;
  l.hbm_bytes = q.hbm_bytes;
  l.utilization = q.gpu_memory_utilization;
  l.usable_bytes = q.hbm_bytes * q.gpu_memory_utilization;
  if (tp < dcp || tp % dcp != 0) {
    l.valid = false;
    l.invalid_reason = "TP " + std::to_string(tp) + " with DCP " + std::to_string(dcp) +
                       ": the DCP group is part of the TP group (vLLM needs TP >= DCP and TP % DCP == 0)";
    return l;
  }
  if (!q.model) return l;
  try {
    l.geometry = models::rank_geometry(*q.model, dcp, tp);
  } catch (const InputError& e) {
    l.valid = false;
    l.invalid_reason = e.what();
    return l;
  }
  // The weights one GPU holds as models::weight_bytes_per_gpu counts them (replicated MLA down-projections,
  // bf16 embedding, head and router; a bytes override applies to every block weight).
  models::ModelPreset m = *q.model;
  if (q.bytes_per_parameter) {
    m.weight_bytes_per_parameter = *q.bytes_per_parameter;
    m.dense_weight_dtype.reset();
  }
  l.weight_bytes_per_gpu = models::weight_bytes_per_gpu(m, tp, 0, pp);
  l.weights_fit = l.weight_bytes_per_gpu <= l.usable_bytes;
  return l;
}

LayoutChoice default_tp(const LayoutQuery& q, const std::vector<int>& dcp) {
  if (dcp.empty()) throw InputError("default TP: no DCP size given");
  const int largest = *std::max_element(dcp.begin(), dcp.end());
  LayoutChoice c;
  c.defaulted = true;
  if (!q.model) {
    c.tp = {largest};
    c.rule = "TP " + std::to_string(largest) +
             " (default: the largest DCP size; no model, so no weights to place)";
    return c;
  }
  std::string first_miss;
  for (int tp = largest; tp <= kMaxDcp; tp += largest) {
    const Layout l = evaluate_layout(q, tp, largest);
    if (!l.valid) continue;
    if (!l.weights_fit) {
      if (first_miss.empty())
        first_miss = "; TP " + std::to_string(tp) + " would hold " + gb_text(l.weight_bytes_per_gpu);
      continue;
    }
    c.tp = {tp};
    c.rule = "TP " + std::to_string(tp) + " (default: the smallest multiple of DCP " +
             std::to_string(largest) + " whose " + q.model->name + " weights fit at " +
             q.weight_dtype_name() + "; vLLM: TP >= DCP, TP % DCP == 0; --tp sets it): " + l.fit_text() +
             first_miss;
    return c;
  }
  throw InputError("no TP that is a multiple of DCP " + std::to_string(largest) + " (up to " +
                   std::to_string(kMaxDcp) + ") fits " + q.model->name + "'s weights at " +
                   q.weight_dtype_name() + " in " + gb_text(q.hbm_bytes * q.gpu_memory_utilization) +
                   " per GPU");
}

LayoutChoice choose_tp(const LayoutQuery& q, const std::vector<int>& dcp, const std::vector<int>& given) {
  if (given.empty()) return default_tp(q, dcp);
  LayoutChoice c;
  c.tp = given;
  std::string tps;
  for (int t : given) tps += (tps.empty() ? "" : ",") + std::to_string(t);
  c.rule = "TP " + tps + " (--tp)";
  if (q.model && given.size() == 1 && !dcp.empty()) {
    const Layout l = evaluate_layout(q, given.front(), *std::max_element(dcp.begin(), dcp.end()));
    c.rule += ": " + l.fit_text();
  }
  return c;
}

LayoutChoice resolve_tp(ScenarioFlags& flags, const LayoutQuery& query) {
  const auto ints = [](const std::string& value, const std::string& flag) {
    std::vector<int> out;
    if (value.empty()) return out;
    for (const std::string& item : expand_list(value, flag)) {
      int v = 0;
      const auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
      if (ec != std::errc() || p != item.data() + item.size() || v < 1 || v > kMaxDcp)
        throw InputError("--" + flag + " '" + item + "' is not an integer in [1, " + std::to_string(kMaxDcp) +
                         "]");
      out.push_back(v);
    }
    return out;
  };
  const LayoutChoice c = choose_tp(query, ints(flags.dcp, "dcp"), ints(flags.tp, "tp"));
  flags.default_tp = c.defaulted ? c.tp.front() : 0;
  return c;
}

}  // namespace dcpsim::analysis
