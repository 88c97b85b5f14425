#include "dcpsim/traces/import_phases.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>

#include <nlohmann/json.hpp>

#include "dcpsim/error.h"
#include "dcpsim/json_limits.h"
#include "dcpsim/traces/import_io.h"
#include "dcpsim/traces/phases.h"

namespace dcpsim::traces {
namespace {

// A collective within this ratio of a phase's expected buffer is that phase.
constexpr double kSizeTolerance = 4.0;

double dtype_bytes(v1::DType d) {
  switch (d) {
    case v1::DTYPE_F32:
      return 4;
    case v1::DTYPE_F64:
      return 8;
    case v1::DTYPE_BF16:
    case v1::DTYPE_F16:
      return 2;
    default:
      return 2;
  }
}

// "_allgather_base", "AllGather", "reduce_scatter" -> "allgather", "reducescatter".
std::string op_of(std::string text) {
  std::string out;
  for (char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c))) out += static_cast<char>(std::tolower(c));
  }
  if (out.size() > 4 && out.compare(out.size() - 4, 4, "base") == 0) out.erase(out.size() - 4);
  return out;
}

struct Candidate {
  std::string_view phase;
  double bytes = 0;  // the larger of the collective's input and output buffers, as the importers count it
};

// The DCP collectives the stated scenario runs for an operation, with their expected buffers (the sizes
// sim/src/strategies.cc simulates, in nccl-tests' convention).
std::vector<Candidate> candidates(const std::string& op, const v1::Scenario& s) {
  const double n = s.dcp(), rows = s.contexts_size(), h = s.heads();
  const double in = dtype_bytes(s.kv_dtype()), out = dtype_bytes(s.out_dtype());
  const bool ag = s.strategy() == v1::STRATEGY_AG_RS || s.strategy() == v1::STRATEGY_AG_AR;
  std::vector<Candidate> c;
  if (s.dcp() < 2) return c;
  if (op.find("allgather") != std::string::npos) {
    c.push_back({"query_all_gather", n * rows * std::ceil(h / n) * s.qk_dim() * in});
    if (ag) c.push_back({"lse_all_gather", n * rows * h * 4.0});
  } else if (op.find("reducescatter") != std::string::npos) {
    if (s.strategy() == v1::STRATEGY_AG_RS) c.push_back({"reduce_scatter", rows * h * s.head_dim() * out});
  } else if (op.find("allreduce") != std::string::npos) {
    if (s.strategy() == v1::STRATEGY_AG_AR) c.push_back({"all_reduce", rows * h * s.head_dim() * out});
  } else if (op.find("alltoall") != std::string::npos || op.find("sendrecv") != std::string::npos) {
    if (s.strategy() == v1::STRATEGY_A2A) {
      const double lanes = s.head_dim() + (s.out_dtype() == v1::DTYPE_F32 ? 1 : 2);
      c.push_back({"all_to_all", rows * h * lanes * out});
    }
    if (s.strategy() == v1::STRATEGY_A2A_TWO_CALL) {  // the outputs, then the LSEs
      c.push_back({"all_to_all", rows * h * s.head_dim() * out});
      c.push_back({"all_to_all_lse", rows * h * 4.0});
    }
  }
  return c;
}

std::optional<std::string> classify_collective(const v1::Event& e, const v1::Scenario& s,
                                               std::string_view last_phase) {
  const auto it = e.args().find("collective");
  const std::vector<Candidate> c = candidates(op_of(it != e.args().end() ? it->second : e.name()), s);
  if (c.empty()) return std::nullopt;
  if (e.bytes() <= 0) {  // no size in the export: an all-gather after attention is the LSE gather
    if (c.size() == 1) return std::string(c[0].phase);
    return std::string(last_phase == "attention" ? "lse_all_gather" : "query_all_gather");
  }
  const Candidate* best = nullptr;
  double best_gap = 0;
  for (const Candidate& x : c) {
    const double gap = std::fabs(std::log(double(e.bytes()) / x.bytes));
    if (best == nullptr || gap < best_gap) {
      best = &x;
      best_gap = gap;
    }
  }
  if (best_gap > std::log(kSizeTolerance)) return std::nullopt;
  return std::string(best->phase);
}

bool allowed_phase(const std::string& phase) {
  return phase == "none" || (is_step_phase(phase) && phase != "step" && phase != "merge");
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

const std::vector<KernelPhaseRule>& builtin_kernel_phases() {
  // More specific texts first: PyTorch's copy of FlashAttention and FlashMLA both contain "flash_fwd".
  static const std::vector<KernelPhaseRule> rules = {
      {"_correct_attn_cp_out_kernel", "correction", "vLLM vllm/v1/attention/ops/common.py (DCP AG+RS/AG+AR)",
       "vllm-triton"},
      {"pytorch_flash::flash_fwd", "attention",
       "PyTorch aten/src/ATen/native/transformers/cuda/flash_attn: SDPA's flash backend (FlashAttention-2), "
       "its split-KV kernel and combine",
       "torch-flash"},
      {"fmha_cutlassF", "attention", "PyTorch SDPA's memory-efficient backend (cutlass fMHA)",
       "torch-efficient"},
      {"fort_native_sdpa", "attention", "PyTorch SDPA's cuDNN backend (cuDNN's generated SDPA kernels)",
       "torch-cudnn"},
      {"BatchMLAPageAttentionHopperKernel", "attention",
       "FlashInfer include/flashinfer/attention/hopper (MLA)", "flashinfer"},
      {"BatchMLAPagedAttentionKernel", "attention", "FlashInfer include/flashinfer/attention/mla.cuh",
       "flashinfer"},
      {"BatchDecodeWithPagedKVCacheKernel", "attention",
       "FlashInfer attention/decode.cuh (and its MLA forms)", "flashinfer"},
      {"BatchPrefillWithPagedKVCacheKernel", "attention",
       "FlashInfer attention/prefill.cuh (tensor-core decode)", "flashinfer"},
      {"MergeState", "attention", "FlashInfer attention/cascade.cuh: merges split-KV partials of one rank",
       "flashinfer"},
      {"merge_attn_states_kernel", "attention", "vLLM csrc/attention/merge_attn_states.cu", "vllm"},
      {"flash_fwd_splitkv_mla", "attention", "FlashMLA: flash_fwd_splitkv_mla_kernel and its combine kernel",
       "flashmla"},
      {"flash_fwd_mla", "attention", "FlashMLA: flash_fwd_mla_combine_kernel", "flashmla"},
      {"FlashAttnFwdSm90", "attention", "FlashAttention-3 (hopper/): vllm-flash-attn's FA3 forward", "fa3"},
      {"FlashAttnFwdCombine", "attention", "FlashAttention-3: the split-KV combine", "fa3"},
      {"flash_fwd_splitkv", "attention", "FlashAttention-2 (vllm-flash-attn): split-KV kernel and combine",
       "fa2"},
      {"flash_fwd_kernel", "attention", "FlashAttention-2 (vllm-flash-attn)", "fa2"},
      {"_fwd_grouped_kernel_stage1", "attention", "vLLM triton_decode_attention.py (MLA/GQA decode)",
       "vllm-triton-decode"},
      {"_fwd_kernel_stage1", "attention", "vLLM triton_decode_attention.py", "vllm-triton-decode"},
      {"_fwd_kernel_stage2", "attention", "vLLM triton_decode_attention.py (split reduction)",
       "vllm-triton-decode"},
      {"paged_attention_v", "attention", "vLLM csrc/attention/paged_attention_v1/v2 kernels", "vllm-paged"},
  };
  return rules;
}

void record_implementations(const std::map<std::string, std::string>& implementations,
                            v1::Scenario& scenario) {
  auto& params = *scenario.mutable_params();
  for (const auto& [phase, impl] : implementations) {
    std::string key = "impl.";  // appended, not "impl." + phase: GCC 12 -O3 misreads that (-Wrestrict)
    key += phase;
    params[key] = impl;
    if (phase == "attention") params["attention"] = impl;
    if ((phase == "correction" || phase == "pack" || phase == "combine") && !params.contains("merge"))
      params["merge"] = impl;
  }
}

std::vector<KernelPhaseRule> read_phase_rules(const std::filesystem::path& path) {
  InputFile file(path);
  const std::string where = path.string();
  const auto doc = parse_json_checked<nlohmann::ordered_json>(file.stream(), where);
  file.check();
  if (!doc.is_object()) {
    throw InputError(where + ": a phase map is a JSON object {\"kernel name text\": \"phase\", ...}, not " +
                     std::string(doc.type_name()));
  }
  std::vector<KernelPhaseRule> rules;
  for (const auto& [text, value] : doc.items()) {
    if (text.empty()) throw InputError(where + ": an empty kernel name text matches every kernel");
    const auto* phase = &value;
    std::string implementation;
    if (value.is_object()) {
      for (const auto& [key, v] : value.items()) {
        if (key != "phase" && key != "implementation")
          throw InputError(where + ": \"" + text + "\": unknown field '" + key + "' (phase, implementation)");
        if (key == "implementation" && (!v.is_string() || v.get<std::string>().empty()))
          throw InputError(where + ": \"" + text + "\": implementation must be a non-empty name");
      }
      if (!value.contains("phase")) throw InputError(where + ": \"" + text + "\": no phase");
      phase = &value["phase"];
      if (value.contains("implementation")) implementation = value["implementation"].get<std::string>();
    }
    if (!phase->is_string()) {
      throw InputError(where + ": \"" + text + "\": the phase is " + std::string(phase->type_name()) +
                       ", expected a phase name");
    }
    const std::string name = phase->get<std::string>();
    if (!allowed_phase(name)) {
      std::string known;
      for (const StepPhase& p : step_phases()) {
        if (p.name != "step" && p.name != "merge") known += std::string(p.name) + ", ";
      }
      throw InputError(where + ": \"" + text + "\": '" + name + "' is no phase (one of " + known + "none)");
    }
    rules.push_back({text, name, where, implementation});
  }
  return rules;
}

PhaseClassification classify_phases(std::vector<v1::Event*>& events, const v1::Scenario& scenario, int rank,
                                    const std::vector<KernelPhaseRule>& user_rules) {
  PhaseClassification out;
  struct Open {
    std::string phase;
    std::int64_t start = 0;
    std::int64_t end = 0;
  };
  std::map<std::string, Open> open;  // per lane: the occurrence being extended
  std::map<std::string, std::vector<double>> durations;
  std::map<std::string, std::map<std::string, int>> impl_counts;  // phase -> implementation -> kernels
  std::string last_phase;
  auto close = [&](Open& o) {
    if (!o.phase.empty()) durations[o.phase].push_back(double(o.end - o.start));
    o.phase.clear();
  };
  for (v1::Event* e : events) {
    const bool gpu = e->lane().rfind("stream", 0) == 0;
    if (!gpu || (e->kind() != v1::EVENT_KIND_KERNEL && e->kind() != v1::EVENT_KIND_COLLECTIVE)) continue;
    std::optional<std::string> phase;
    std::string impl;
    for (const KernelPhaseRule& r : user_rules) {
      if (e->name().find(r.contains) != std::string::npos) {
        phase = r.phase;
        impl = r.implementation;
        break;
      }
    }
    if (!phase && e->kind() == v1::EVENT_KIND_COLLECTIVE) {
      phase = classify_collective(*e, scenario, last_phase);
      if (!phase) phase = "none";
    }
    if (!phase) {
      for (const KernelPhaseRule& r : builtin_kernel_phases()) {
        if (e->name().find(r.contains) != std::string::npos) {
          phase = r.phase;
          impl = r.implementation;
          break;
        }
      }
    }
    if (phase && *phase != "none" && !impl.empty()) {
      ++impl_counts[*phase][impl];
      (*e->mutable_args())["implementation"] = impl;
    }
    Open& o = open[e->lane()];
    if (!phase || *phase == "none") {
      close(o);
      ++out.unmapped[e->name()];
      continue;
    }
    (*e->mutable_args())["phase"] = *phase;
    last_phase = *phase;
    if (o.phase == *phase) {
      o.end = std::max(o.end, e->end_ns());
    } else {
      close(o);
      o = Open{*phase, e->start_ns(), e->end_ns()};
    }
  }
  for (auto& [lane, o] : open) close(o);
  for (const auto& [phase, counts] : impl_counts) {
    const auto most = std::max_element(counts.begin(), counts.end(),
                                       [](const auto& a, const auto& b) { return a.second < b.second; });
    out.implementations[phase] = most->first;
  }
  for (const StepPhase& p : step_phases()) {
    const auto it = durations.find(std::string(p.name));
    if (it == durations.end()) continue;
    const std::vector<double>& d = it->second;
    v1::PhaseSummary s;
    s.set_rank(rank);
    s.set_phase(std::string(p.name));
    s.set_median_ns(median_of(d));
    s.set_min_ns(*std::min_element(d.begin(), d.end()));
    s.set_max_ns(*std::max_element(d.begin(), d.end()));
    s.set_repetitions(static_cast<int>(std::min<std::size_t>(d.size(), 1u << 30)));
    for (double v : d) s.add_samples_ns(v);
    out.summaries.push_back(std::move(s));
  }
  return out;
}

}  // namespace dcpsim::traces
