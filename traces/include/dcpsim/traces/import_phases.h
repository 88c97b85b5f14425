#pragma once
// Which step phase (traces/phases.h) an imported kernel belongs to, so that a user's own profile (vLLM under
// the PyTorch profiler, Nsight Systems) carries phase summaries that `dcpsim validate`, `calibrate` and
// `tables` compare with the model.
//
// A kernel is classified by, in order:
//   1. the user's rules (ImportOptions::phase_rules, `dcpsim import --phase-map FILE`): the first whose text
//      occurs in the kernel's name;
//   2. NCCL collectives by operation and size against the stated scenario: an all-gather is the query
//      all-gather or the LSE all-gather (ag-rs, ag-ar), whichever's buffer (the larger of input and output,
//      as nccl-tests counts it) is nearest in ratio, within 4x; a reduce-scatter is reduce_scatter under
//      ag-rs, an all-reduce all_reduce under ag-ar, an all-to-all or send/recv all_to_all under a2a; a
//      collective of another size or of an operation the strategy does not run (tensor parallelism's
//      all-reduce) is no DCP phase. Without sizes (an export that has none), an all-gather after attention is
//      the LSE's;
//   3. the built-in table below (builtin_kernel_phases()): kernel names of vLLM, FlashInfer, FlashMLA and
//      FlashAttention as their sources spell them;
//   4. otherwise no phase (the MLP, MoE, norms, copies of the model): counted, not summarised.
// Consecutive kernels of one phase on one stream (attention and its split-KV merge) are one occurrence,
// timed from the first's start to the last's end. Each phase gets a PhaseSummary for the imported rank:
// median, min, max over its occurrences, with every occurrence as a sample; each classified event carries
// args.phase.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "dcpsim/traces/schema.h"

namespace dcpsim::traces {

struct KernelPhaseRule {
  std::string contains;  // occurs in the kernel name (case sensitive)
  std::string phase;     // a phase of the step vocabulary, or "none" for a kernel of no DCP phase
  std::string source;    // where the name comes from (built-in rules)
  // The implementation the kernel belongs to, as kernel tables key it ("flashmla", "fa2", "fa3",
  // "flashinfer", "torch-flash", "vllm-triton", ...; kernel_implementations() lists the built-in ones); ""
  // when unknown.
  std::string implementation = {};
};

// The built-in rules, in the order they are tried.
const std::vector<KernelPhaseRule>& builtin_kernel_phases();

// A rules file: a JSON object {"kernel name text": "phase", ...} or, naming the implementation too,
// {"kernel name text": {"phase": "attention", "implementation": "my-attention"}, ...}, tried in the file's
// order. InputError naming the file and the entry for a phase outside the vocabulary (or an aggregate), an
// empty text or implementation, an unknown field, or bad JSON.
std::vector<KernelPhaseRule> read_phase_rules(const std::filesystem::path& path);

struct PhaseClassification {
  std::vector<v1::PhaseSummary> summaries;       // one per phase found, in vocabulary order
  std::map<std::string, std::int64_t> unmapped;  // kernel name -> count, for kernels of no phase
  // Phase -> the implementation most of its kernels belong to (phases whose kernels name none are absent).
  std::map<std::string, std::string> implementations;
};

// The scenario parameters an import records the implementations under: "attention" (the key the
// simulator's attention tables are chosen by, as `hw run` records it), "merge" (the merge kernels':
// correction, pack, combine) and "impl.<phase>" for every phase.
void record_implementations(const std::map<std::string, std::string>& implementations,
                            v1::Scenario& scenario);

// Classifies `events` (time-ordered GPU and CPU events of one rank; only kernel and collective events on GPU
// lanes take part), sets args.phase on those that belong to a phase, and summarises the phases.
PhaseClassification classify_phases(std::vector<v1::Event*>& events, const v1::Scenario& scenario, int rank,
                                    const std::vector<KernelPhaseRule>& user_rules);

}  // namespace dcpsim::traces
