#include "dcpsim/traces/phases.h"

#include <algorithm>
#include <utility>

namespace dcpsim::traces {
namespace {

// Old name -> current name. Only exact names: "query_gather step 3 to rank 1" (a transfer) is not renamed.
constexpr std::pair<std::string_view, std::string_view> kLegacy[] = {
    {"q_allgather", "query_all_gather"},           // hardware runner before the common vocabulary
    {"lse_allgather", "lse_all_gather"},           // hardware runner
    {"correct", "correction"},                     // hardware runner
    {"direct_push", "direct_write"},               // simulator
    {"unpack_combine", "a2a_combine"},             // simulator
    {"row_combine", "row_stream_combine"},         // hardware runner
    {"flashinfer_dcp_merge", "flashinfer_merge"},  // simulator
};

}  // namespace

const std::vector<StepPhase>& step_phases() {
  static const std::vector<StepPhase> phases = {
      {"query_all_gather", "all (N > 1)",
       "NCCL all-gather of every TP rank's query heads, before attention (SPEC \"What a rank must also get "
       "right\")"},
      {"q_repack", "all, FlashInfer's MLA kernel at N > 1 and B > 1",
       "copies the gathered query into the one dense array FlashInfer's MLA kernel reads; the attention "
       "phase summary includes it (the runner's GPU timeline names its kernel repack_q_kernel)",
       false},
      {"attention", "all",
       "local attention over the rank's KV shard; its phase summary includes q_repack and split_kv_combine"},
      {"split_kv_combine", "all", "the split-KV combine kernel after attention, when a row was split", false},
      {"lse_all_gather", "ag-rs, ag-ar", "NCCL all-gather of the [B,H] fp32 LSEs"},
      {"correction", "ag-rs, ag-ar", "each rank scales its O_r in place by its merge weight"},
      {"reduce_scatter", "ag-rs", "NCCL reduce-scatter over heads: [B,H/N,D] on each rank"},
      {"all_reduce", "ag-ar", "NCCL all-reduce: [B,H,D] on every rank"},
      {"a2a_pack", "a2a, a2a-2call",
       "packs [N][B][H/N][D+P]: each destination's heads with the LSE (a2a-2call: O to [N][B][H/N][D], the "
       "LSE "
       "to [N][B][H/N])"},
      {"all_to_all", "a2a, a2a-2call", "NCCL all-to-all of the packed buffer (a2a-2call: of the outputs)"},
      {"all_to_all_lse", "a2a-2call", "the second NCCL all-to-all: the fp32 LSEs"},
      {"a2a_combine", "a2a, a2a-2call", "unpacks the N partials and combines them in fp32"},
      {"direct_merge", "direct",
       "one kernel per rank: stores its head blocks and LSEs into the owners' NCCL windows over NVLink, "
       "publishes a flag per owner, waits for the peers' flags and combines in fp32"},
      {"flashinfer_merge", "flashinfer-a2a",
       "FlashInfer's fused DCP merge (comm/dcp_lse_reduce.cuh): packed stores, flags, wait and merge in one "
       "cooperative kernel per rank"},
      {"direct_write", "direct (traces of the two-kernel merge)",
       "wrote the head blocks and LSEs straight into the owners' buffers over NVLink, then the flags"},
      {"direct_combine", "direct (traces of the two-kernel merge)",
       "the owner polled for the N flags (the wait), then combined in fp32"},
      {"row_stream_push", "row-stream",
       "the attention kernel pushes each group of rows as it finishes (no kernel of its own)", false},
      {"row_stream_combine", "row-stream",
       "persistent combine kernel: waits for each row group's partials and combines them", false},
      {"step", "all", "aggregate: a rank's whole step (measured phase summaries, rank -1)"},
      {"merge", "all", "aggregate: from the first merge phase to the end of the step (measured, rank -1)"},
  };
  return phases;
}

bool is_step_phase(std::string_view name) {
  const auto& phases = step_phases();
  return std::any_of(phases.begin(), phases.end(), [&](const StepPhase& p) { return p.name == name; });
}

std::string_view current_phase_name(std::string_view name) {
  for (const auto& [old_name, current] : kLegacy) {
    if (name == old_name) return current;
  }
  return name;
}

void rename_legacy_phases(v1::Record& record) {
  auto rename = [](std::string* text) {
    const std::string_view current = current_phase_name(*text);
    if (current != *text) *text = std::string(current);
  };
  switch (record.body_case()) {
    case v1::Record::kEvent: {
      const v1::EventKind kind = record.event().kind();
      if (kind == v1::EVENT_KIND_KERNEL || kind == v1::EVENT_KIND_COLLECTIVE || kind == v1::EVENT_KIND_LAUNCH)
        rename(record.mutable_event()->mutable_name());
      break;
    }
    case v1::Record::kPhaseSummary:
      rename(record.mutable_phase_summary()->mutable_phase());
      break;
    case v1::Record::kGpuActivity:
      rename(record.mutable_gpu_activity()->mutable_phase());
      break;
    case v1::Record::kSummary: {
      auto& values = *record.mutable_summary()->mutable_values();
      std::vector<std::pair<std::string, double>> renamed;
      for (auto it = values.begin(); it != values.end();) {
        const std::string& key = it->first;
        constexpr std::string_view kPrefix = "gap_before.", kSuffix = "_ns";
        if (key.size() > kPrefix.size() + kSuffix.size() && key.rfind(kPrefix, 0) == 0 &&
            key.compare(key.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0) {
          const std::string phase = key.substr(kPrefix.size(), key.size() - kPrefix.size() - kSuffix.size());
          const std::string_view current = current_phase_name(phase);
          if (current != phase) {
            renamed.emplace_back(std::string(kPrefix) + std::string(current) + std::string(kSuffix),
                                 it->second);
            it = values.erase(it);
            continue;
          }
        }
        ++it;
      }
      for (auto& [key, value] : renamed) values[key] = value;
      break;
    }
    default:
      break;
  }
}

}  // namespace dcpsim::traces
