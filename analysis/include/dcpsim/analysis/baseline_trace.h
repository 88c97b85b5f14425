#pragma once
// A baseline from the user's own profiler trace of their serving engine: a Kineto (PyTorch profiler) JSON, an
// Nsight Systems SQLite export or an already imported dcpsim trace of one GPU decoding. The importers
// (traces/import_kineto.h, import_nsys.h) mark each kernel with its step phase: attention (vLLM's,
// FlashInfer's, FlashMLA's, FlashAttention's kernel names), the DCP merge phases (the correction kernel, the
// query and LSE all-gathers, the output collectives, sized against the stated layout), and every other kernel
// — the projections, MoE, TP all-reduces, norms, sampler — is the step's non-attention time.
//
// Steps: the attention occurrences (an attention kernel and its split-KV combine are one) come `layers` to a
// decode step; the step boundary is put where the GPU idles longest between layers (the host's scheduling,
// input preparation and sampling between two CUDA-graph replays). Per step, over the window from one step's
// first attention to the next's:
//   period       the step's wall time (TPOT × accept length at steady state);
//   busy         the union of the GPU's kernels, copies and collectives;
//   attention    the attention occurrences; merge: the DCP phases;
//   other        busy − attention − merge: the non-attention kernels;
//   idle         period − busy: the per-step overhead outside the GPU's work.
// The medians over the steps found are the baseline's measured figures.
#include <filesystem>
#include <string>

#include "dcpsim/models/scenario.h"
#include "dcpsim/traces/trace_collector.h"

namespace dcpsim::analysis {

struct TraceSteps {
  std::string path;
  int rank = 0;
  int layers = 0;       // attention occurrences per decode step
  int occurrences = 0;  // attention occurrences found
  int steps = 0;        // whole decode steps measured
  double period_s = 0, busy_s = 0, attention_s = 0, merge_s = 0, other_s = 0, idle_s = 0;  // medians
  double period_spread = 0;  // (p90 − p10) / median of the periods: how steady the steps were
  // "64 decode steps (61 attention layers each) in t.json: 24.10 ms = attention 3.21 + merge 0 + other
  // kernels 19.90 + GPU idle 0.99 ms (medians)".
  std::string text() const;
};

// The decode steps of the lowest rank's GPU timeline in `trace` (its first section), `layers` attention
// occurrences to a step. InputError naming `where` when fewer than two whole steps are found.
TraceSteps measure_trace_steps(const traces::Trace& trace, int layers, const std::string& where);

// Imports `path` (Kineto JSON[.gz], Nsight SQLite[.gz] by its name, or a dcpsim .pb[.gz]) with `scenario` as
// the layout it ran (for the DCP collectives' sizes) and measures its steps. InputError for a file the
// importers refuse or without enough steps.
TraceSteps baseline_trace_steps(const std::filesystem::path& path, const models::Scenario& scenario,
                                int layers);

}  // namespace dcpsim::analysis
