// `dcpsim plan` output (plan.h): the one-line answer, the CSV and the table.
#include <cstdio>
#include <string>

#include "dcpsim/analysis/plan.h"

namespace dcpsim::analysis {
namespace {

std::string layout_text(const PlanLayout& l) {
  return "TP" + std::to_string(l.tp) + (l.pp > 1 ? " PP" + std::to_string(l.pp) : "") +
         (l.dcp > 1 ? " DCP" + std::to_string(l.dcp) : "") +
         (l.replicas > 1 ? " x" + std::to_string(l.replicas) : "");
}

std::string strategy_text(const PlanLayout& l, const PlanPoint& p) {
  return l.dcp == 1 ? std::string("-") : std::string(models::to_string(p.strategy));
}

std::string point_text(const PlanResult& r, int i) {
  const PlanPoint& p = r.points[i];
  const PlanLayout& l = r.layouts[p.layout];
  char b[256];
  std::snprintf(b, sizeof b,
                "%s%s%s at concurrency %d per replica: TPOT %.2f ms, %.0f tokens/s per GPU, %.1f "
                "per user",
                layout_text(l).c_str(), l.dcp > 1 ? " " : "",
                l.dcp > 1 ? std::string(models::to_string(p.strategy)).c_str() : "", p.concurrency,
                p.tpot_s * 1e3, p.gpu_tps, p.user_tps);
  return b;
}

}  // namespace

std::string PlanResult::answer() const {
  if (best < 0) return "no shipped layout meets the SLO (see the table for the closest)";
  std::string out = "best: " + point_text(*this, best);
  if (best_tp_only >= 0 && best_dcp >= 0) {
    const double dcp = points[best_dcp].gpu_tps, tp = points[best_tp_only].gpu_tps;
    char b[160];
    std::snprintf(b, sizeof b, "; %s by %.2fx in tokens/s per GPU under the SLO (best TP-only: %s)",
                  dcp > tp ? "DCP beats TP alone" : "TP alone beats DCP", dcp > tp ? dcp / tp : tp / dcp,
                  layout_text(layouts[points[best_tp_only].layout]).c_str());
    out += b;
  }
  return out;
}

std::string plan_csv(const PlanResult& r) {
  std::string out =
      "model,profile,gpus,tp,dcp,pp,replicas,strategy,research,concurrency,max_concurrency,kv_tokens_per_gpu,"
      "kv_tokens_group,layer_us,step_ms,tpot_ms,tokens_per_s_user,tokens_per_s_gpu,pareto,meets_slo,best\n";
  for (std::size_t i = 0; i < r.points.size(); ++i) {
    const PlanPoint& p = r.points[i];
    const PlanLayout& l = r.layouts[p.layout];
    char b[512];
    std::snprintf(
        b, sizeof b, "%s,%s,%d,%d,%d,%d,%d,%s,%s,%d,%d,%lld,%lld,%.3f,%.4f,%.4f,%.3f,%.3f,%s,%s,%s\n",
        r.model.c_str(), r.profile.c_str(), r.gpus, l.tp, l.dcp, l.pp, l.replicas,
        strategy_text(l, p).c_str(), p.research ? "true" : "false", p.concurrency, l.max_concurrency,
        static_cast<long long>(l.kv_tokens_per_gpu), static_cast<long long>(l.kv_tokens_group),
        p.layer_s * 1e6, p.step_s * 1e3, p.tpot_s * 1e3, p.user_tps, p.gpu_tps, p.pareto ? "true" : "false",
        p.meets_slo ? "true" : "false", int(i) == r.best ? "true" : "false");
    out += b;
  }
  return out;
}

std::string plan_table(const PlanResult& r) {
  std::string out;
  char b[512];
  std::snprintf(b, sizeof b, "%s on %d x %s, context %s (mean %.0f tokens)\n", r.model.c_str(), r.gpus,
                r.profile.c_str(), r.context_text.c_str(), r.mean_context);
  out += b;
  out += "  KV budget per GPU: " + r.kv_basis + "\n  non-attention: " + r.basis + "\n\n";
  std::snprintf(b, sizeof b, "  %-16s %13s %10s %14s  %s\n", "layout", "KV tok/GPU", "max conc.",
                "KV tok/group",
                "best shipped under the SLO: strategy x concurrency, TPOT ms, tok/s/GPU (research apart)");
  out += b;
  for (std::size_t li = 0; li < r.layouts.size(); ++li) {
    const PlanLayout& l = r.layouts[li];
    std::snprintf(b, sizeof b, "  %-16s %13lld %10d %14lld  ", layout_text(l).c_str(),
                  static_cast<long long>(l.kv_tokens_per_gpu), l.max_concurrency,
                  static_cast<long long>(l.kv_tokens_group));
    out += b;
    if (!l.fits) {
      out += "does not fit: " + l.why + "\n";
      continue;
    }
    int best = -1, research = -1;
    for (std::size_t i = 0; i < r.points.size(); ++i) {
      const PlanPoint& p = r.points[i];
      if (p.layout != int(li) || !p.meets_slo) continue;
      int& slot = p.research ? research : best;
      if (slot < 0 || p.gpu_tps > r.points[slot].gpu_tps) slot = static_cast<int>(i);
    }
    const auto text = [&](int i) {
      const PlanPoint& p = r.points[i];
      std::snprintf(b, sizeof b, "%s x%d, %.1f, %.0f", strategy_text(l, p).c_str(), p.concurrency,
                    p.tpot_s * 1e3, p.gpu_tps);
      return std::string(b);
    };
    out += best < 0 ? std::string("none meets the SLO") : text(best);
    if (research >= 0) out += "   (" + text(research) + "*)";
    out += "\n";
  }
  out += "  (* research strategy: on hardware only emulated on one GPU; never picked as the answer)\n\n";
  out += r.answer() + "\n";
  if (r.best_research >= 0) {
    const PlanPoint& p = r.points[r.best_research];
    std::snprintf(b, sizeof b,
                  "research (not deployable today): %s at concurrency %d: TPOT %.2f ms, %.0f tokens/s "
                  "per GPU\n",
                  std::string(models::to_string(p.strategy)).c_str(), p.concurrency, p.tpot_s * 1e3,
                  p.gpu_tps);
    out += b;
  }
  return out;
}

}  // namespace dcpsim::analysis
