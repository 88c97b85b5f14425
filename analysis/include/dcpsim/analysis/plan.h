#pragma once
// `dcpsim plan`: for a model on G GPUs of a profile, every TP × DCP layout and merge strategy that fits, its
// KV-limited concurrency, the decode step, TPOT and tokens/s per GPU over a concurrency sweep, the Pareto
// front of tokens/s per GPU against tokens/s per user, and the best layout under an SLO in one line.
//
// A layout is TP = T GPUs per stage and P pipeline stages (--pp, default 1) per replica (G / (T × P)
// replicas serve independent requests) with a DCP group of N ranks inside the TP group (vLLM: T % N == 0).
// Its concurrency is the requests one replica decodes at once (P micro-batches of concurrency / P); the most
// it can hold is the KV capacity of its DCP group over the mean context. Per point:
//   decode step = the whole-model step (whole_model.h) of one micro-batch around one simulated attention
//   layer; TPOT = step / accept length; tokens/s per user = 1 / TPOT; tokens/s per GPU = concurrency × accept
//   length / step / (T × P).
// Research strategies (row-stream) are priced and shown apart, never picked as the answer.
#include <cstdint>
#include <string>
#include <vector>

#include "dcpsim/analysis/whole_model.h"
#include "dcpsim/models/scenario.h"
#include "dcpsim/models/types.h"

namespace dcpsim::analysis {

struct PlanOptions {
  std::string profile = "h200-sxm";
  std::string model = "deepseek-v3";
  int gpus = 8;
  std::string context = "32k";  // one length for every request, or:
  std::string requests;         // a request trace (Mooncake JSONL, Azure CSV): its contexts' distribution
  std::string concurrency = "1..4096:x2";  // per replica; capped at the KV-limited maximum (always tried)
  std::string pp = "1";                    // pipeline stages to consider (a list)
  std::string kv_dtype;                    // empty: the model's
  std::string strategies = "all";
  std::string launch = "graph";
  double slo_tpot_ms = 0;   // 0: no TPOT bound
  double slo_user_tps = 0;  // 0: no tokens/s per user bound
  WholeModelFlags whole;
};

struct PlanLayout {
  int tp = 1, dcp = 1, pp = 1, replicas = 1;
  bool fits = false;
  std::string why;  // when it does not fit
  double kv_budget_bytes = 0;
  std::int64_t kv_tokens_per_gpu = 0, kv_tokens_group = 0;
  int max_concurrency = 0;  // per replica, KV-limited
};

struct PlanPoint {
  int layout = 0;  // index into PlanResult::layouts
  models::Strategy strategy = models::Strategy::kAgRs;
  bool research = false;
  int concurrency = 1;  // per replica
  double layer_s = 0, step_s = 0, tpot_s = 0, user_tps = 0, gpu_tps = 0;
  bool pareto = false;  // on the front of its kind (shipped or research)
  bool meets_slo = true;
};

struct PlanResult {
  std::string model, profile, context_text, basis, kv_basis;
  int gpus = 0;
  double mean_context = 0;
  std::vector<PlanLayout> layouts;
  std::vector<PlanPoint> points;
  int best = -1;           // the best shipped point under the SLO (highest tokens/s per GPU), -1: none
  int best_tp_only = -1;   // the same among DCP 1 layouts
  int best_dcp = -1;       // the same among DCP > 1 layouts
  int best_research = -1;  // the best research point under the SLO
  double wall_s = 0;
  std::string answer() const;  // one line
};

// The research strategies: priced and shown apart, never the answer.
bool is_research(models::Strategy s);

// Marks the non-dominated points (higher tokens/s per user and per GPU) among those with `research` ==
// `research_kind`; returns their indices ordered by tokens/s per user.
std::vector<int> mark_pareto(std::vector<PlanPoint>& points, bool research_kind);

// Every context of a plan's requests: one fixed length, or a trace's (input + half the output: the mean
// context a request decodes at). InputError for a bad length or trace.
std::vector<std::int64_t> plan_contexts(const PlanOptions& o);
// `batch` contexts spread over the distribution (its quantiles at (i + 0.5) / batch).
std::vector<std::int64_t> batch_contexts(const std::vector<std::int64_t>& sorted_contexts, int batch);

PlanResult run_plan(const PlanOptions& o);
std::string plan_csv(const PlanResult& r);
std::string plan_table(const PlanResult& r);  // the human-readable summary

}  // namespace dcpsim::analysis
