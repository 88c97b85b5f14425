// `dcpsim plan` (plan.h): layouts, the concurrency sweep on one SimGrid engine, the Pareto fronts and the
// answer under the SLO.
#include "dcpsim/analysis/plan.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <map>
#include <numeric>

#include "dcpsim/analysis/baseline.h"
#include "dcpsim/analysis/layouts.h"
#include "dcpsim/analysis/requests.h"
#include "dcpsim/analysis/scenario_flags.h"
#include "dcpsim/error.h"
#include "dcpsim/models/cost_kernels.h"
#ifdef DCPSIM_WITH_SIMGRID
#include "dcpsim/sim/simulator.h"
#endif

namespace dcpsim::analysis {
namespace {

#ifdef DCPSIM_WITH_SIMGRID  // the sweep's helpers: run_plan (below) needs the simulator
constexpr int kMaxConcurrency = 1 << 16;

// A --baseline the fit refuses: the command's error, never one layout's "why" (which would hide it).
struct BaselineRejected {
  std::exception_ptr error;
};

std::vector<int> divisors(int n) {
  std::vector<int> out;
  for (int d = 1; d <= n; ++d)
    if (n % d == 0) out.push_back(d);
  return out;
}

// The concurrencies to simulate for a layout: the sweep's values below its KV-limited maximum, and the
// maximum itself.
std::vector<int> sweep_for(const std::vector<int>& sweep, int max_concurrency) {
  std::vector<int> out;
  for (const int c : sweep)
    if (c <= max_concurrency) out.push_back(c);
  if (max_concurrency >= 1 && (out.empty() || out.back() != max_concurrency)) out.push_back(max_concurrency);
  return out;
}

// Which strategies a layout runs: none for DCP 1 (no merge; priced as one), else the chosen ones whose head
// rule the layout meets.
std::vector<models::Strategy> strategies_for(const std::vector<models::Strategy>& chosen,
                                             const PlanLayout& l) {
  if (l.dcp == 1) return {models::Strategy::kAgAr};
  return chosen;
}
#endif  // DCPSIM_WITH_SIMGRID

}  // namespace

bool is_research(models::Strategy s) {
  return !is_production(s);  // layouts.h: what serving engines ship
}

std::vector<int> mark_pareto(std::vector<PlanPoint>& points, bool research_kind) {
  std::vector<int> front;
  for (std::size_t i = 0; i < points.size(); ++i) {
    PlanPoint& p = points[i];
    if (p.research != research_kind) continue;
    p.pareto = std::none_of(points.begin(), points.end(), [&](const PlanPoint& q) {
      return q.research == research_kind && q.user_tps >= p.user_tps && q.gpu_tps >= p.gpu_tps &&
             (q.user_tps > p.user_tps || q.gpu_tps > p.gpu_tps);
    });
    if (p.pareto) front.push_back(static_cast<int>(i));
  }
  std::sort(front.begin(), front.end(),
            [&](int a, int b) { return points[a].user_tps < points[b].user_tps; });
  return front;
}

std::vector<std::int64_t> plan_contexts(const PlanOptions& o) {
  std::vector<std::int64_t> out;
  if (o.requests.empty()) {
    out.push_back(models::parse_token_count(o.context));
    if (out.front() < 1) throw InputError("--context must be at least 1 token");
    return out;
  }
  for (const Request& r : read_requests(o.requests)) out.push_back(r.input_tokens + r.output_tokens / 2);
  if (out.empty()) throw InputError("--requests '" + o.requests + "' holds no requests");
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::int64_t> batch_contexts(const std::vector<std::int64_t>& sorted, int batch) {
  std::vector<std::int64_t> out;
  for (int i = 0; i < batch; ++i) {
    const double q = (i + 0.5) / batch;
    out.push_back(sorted[std::min(sorted.size() - 1, static_cast<std::size_t>(q * double(sorted.size())))]);
  }
  return out;
}

#ifdef DCPSIM_WITH_SIMGRID
PlanResult run_plan(const PlanOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  if (o.gpus < 1 || o.gpus > 4096) throw InputError("--gpus must be in [1, 4096]");
  if (!(o.slo_tpot_ms >= 0) || !(o.slo_user_tps >= 0) || !std::isfinite(o.slo_tpot_ms) ||
      !std::isfinite(o.slo_user_tps))
    throw InputError("--slo-* must be finite numbers >= 0");
  const models::HardwareProfile profile = models::load_profile(o.profile);
  models::ModelPreset model = models::load_model(o.model);
  if (!o.whole.weight_dtype.empty())
    model = model.with_weight_dtype(models::parse_weight_dtype(o.whole.weight_dtype));
  const models::DType kv = o.kv_dtype.empty() ? model.kv_cache_dtype : models::parse_dtype(o.kv_dtype);
  if (kv == models::DType::kF64 || kv == models::DType::kF32)
    throw InputError("--kv-dtype: bf16, fp16 or fp8");
  const std::vector<models::Strategy> chosen = parse_strategy_list(o.strategies, "strategy");
  const models::LaunchMode launch = models::parse_launch_mode(o.launch);
  std::vector<int> sweep;
  for (const std::string& c : expand_list(o.concurrency, "concurrency")) {
    const int v = parse_list_int(c, "concurrency", 1, kMaxConcurrency);
    sweep.push_back(v);
  }
  std::sort(sweep.begin(), sweep.end());
  std::vector<int> pps;
  for (const std::string& v : expand_list(o.pp, "pp")) {
    const int p = parse_list_int(v, "pp", 1, 64);
    if (o.gpus % p != 0) throw InputError("--pp values must divide --gpus (and be <= 64)");
    pps.push_back(p);
  }
  const std::vector<std::int64_t> contexts = plan_contexts(o);
  (void)WholeModel(model, profile, 1, o.whole);  // flag values checked before any work

  PlanResult r;
  r.model = model.name;
  r.profile = profile.name;
  r.gpus = o.gpus;
  r.mean_context = std::accumulate(contexts.begin(), contexts.end(), 0.0) / double(contexts.size());
  r.context_text =
      o.requests.empty() ? o.context : o.requests + " (" + std::to_string(contexts.size()) + " requests)";

  const int domain = static_cast<int>(profile.topology.gpus_per_nvlink_domain.si());
  sim::SimOptions so;
  so.max_gpus = std::max(so.max_gpus, std::min(o.gpus, 1 << 10));
  const sim::Simulator simulator(profile, so);
  const LayerTime layer = [&](const models::Scenario& s) { return simulator.run(s).step_latency_s; };
  std::map<std::pair<int, int>, WholeModel> wholes;  // per (TP, PP), anchored on a baseline when given

  for (const int pp : pps) {
    for (const int tp : divisors(o.gpus / pp)) {
      for (const int dcp : divisors(tp)) {
        PlanLayout l;
        l.tp = tp, l.dcp = dcp, l.pp = pp, l.replicas = o.gpus / (tp * pp);
        try {
          // layouts.h decides which layouts serving engines run and whether the weights fit.
          const Layout ev =
              evaluate_layout(LayoutQuery::of(model, profile, o.whole.gpu_memory_utilization, pp), tp, dcp);
          if (!ev.valid) throw InputError(ev.invalid_reason);
          if (!ev.weights_fit) {  // the row says "does not fit: 169.1 GB of weights per GPU exceed ..."
            std::string why = ev.fit_text();
            if (why.rfind("does not fit: ", 0) == 0) why.erase(0, 14);
            throw InputError(why);
          }
          if (dcp > domain && !(profile.internode.bandwidth.si() > 0))
            throw InputError("DCP group beyond one NVLink domain");
          auto it = wholes.find({tp, pp});
          if (it == wholes.end()) {
            WholeModelFlags f = o.whole;
            f.pp = pp;
            it = wholes.try_emplace({tp, pp}, model, profile, tp, f).first;
            try {
              anchor(it->second, f, kv, layer);
            } catch (const InputError&) {
              throw BaselineRejected{std::current_exception()};  // the user's --baseline, not this layout
            }
          }
          const WholeModel& w = it->second;
          l.kv_budget_bytes = w.kv_budget_bytes();
          const models::Scenario g = layout_scenario(model, dcp, tp, 1, 1, models::Strategy::kAgAr, kv);
          l.kv_tokens_per_gpu = w.kv_capacity_tokens(g);
          l.kv_tokens_group = l.kv_tokens_per_gpu * dcp;
          l.max_concurrency = static_cast<int>(
              std::min<double>(kMaxConcurrency, std::floor(double(l.kv_tokens_group) / r.mean_context)));
          l.fits = w.kv_budget_bytes() > 0 && l.max_concurrency >= 1;
          if (!l.fits)
            l.why = w.kv_budget_bytes() > 0 ? "KV too small for one request" : "weights do not fit";
          if (l.fits && r.kv_basis.empty()) {  // the smallest TP that fits: what the table's first rows show
            r.kv_basis = w.kv_budget_basis();
            r.basis = w.non_attention_basis();
          }
        } catch (const BaselineRejected& b) {
          std::rethrow_exception(b.error);
        } catch (const InputError& e) {
          l.why = e.what();
        }
        r.layouts.push_back(l);
      }
    }
  }

  for (std::size_t li = 0; li < r.layouts.size(); ++li) {
    const PlanLayout& l = r.layouts[li];
    if (!l.fits) continue;
    const WholeModel& w = wholes.at({l.tp, l.pp});
    for (const models::Strategy strategy : strategies_for(chosen, l)) {
      for (const int c : sweep_for(sweep, l.max_concurrency)) {
        const int rows = w.micro_batch(c);  // one micro-batch's requests (all of them without PP)
        models::Scenario s = layout_scenario(model, l.dcp, l.tp, rows, 1, strategy, kv);
        s.contexts = batch_contexts(contexts, rows);
        s.launch = launch;
        s = w.attention_scenario(s);
        try {
          s.validate();
        } catch (const InputError&) {
          break;  // the head rule fails for every concurrency alike
        }
        PlanPoint p;
        p.layout = static_cast<int>(li);
        p.strategy = strategy;
        p.research = is_research(strategy);
        p.concurrency = c;
        p.layer_s = simulator.run(s).step_latency_s;
        p.step_s = w.decode_step_s(p.layer_s, rows);
        p.tpot_s = w.tpot_s(p.step_s);
        p.user_tps = 1.0 / p.tpot_s;
        p.gpu_tps = c * w.accept_length() / p.step_s / (l.tp * l.pp);
        p.meets_slo = (o.slo_tpot_ms <= 0 || p.tpot_s * 1e3 <= o.slo_tpot_ms) &&
                      (o.slo_user_tps <= 0 || p.user_tps >= o.slo_user_tps);
        r.points.push_back(p);
      }
    }
  }
  if (r.points.empty())
    throw InputError("plan: no layout of " + model.name + " fits " + std::to_string(o.gpus) + " GPUs of " +
                     profile.name);
  mark_pareto(r.points, false);
  mark_pareto(r.points, true);
  const auto better = [&](int best, std::size_t i) {
    return best < 0 || r.points[i].gpu_tps > r.points[best].gpu_tps;
  };
  for (std::size_t i = 0; i < r.points.size(); ++i) {
    const PlanPoint& p = r.points[i];
    if (!p.meets_slo) continue;
    if (p.research) {
      if (better(r.best_research, i)) r.best_research = static_cast<int>(i);
      continue;
    }
    if (better(r.best, i)) r.best = static_cast<int>(i);
    int& side = r.layouts[p.layout].dcp == 1 ? r.best_tp_only : r.best_dcp;
    if (better(side, i)) side = static_cast<int>(i);
  }
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}
#endif  // DCPSIM_WITH_SIMGRID

}  // namespace dcpsim::analysis
