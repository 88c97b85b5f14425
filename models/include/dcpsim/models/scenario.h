#pragma once
// One DCP decode step as sim/ and hw/ both run it: group size, head geometry, the batch rows with their
// context lengths, the element types, the strategy and the launch mode. Traces carry the same fields
// (scenario_proto.h).
#include <cstdint>
#include <string>
#include <vector>

#include "dcpsim/models/types.h"

namespace dcpsim::models {

struct Scenario {
  int dcp = 1;                     // N, the DCP group size (any integer >= 1)
  int heads = 128;                 // H: query heads on a rank after the query all-gather
  int kv_heads = 1;                // H_kv: divides H (1 = MQA/MLA)
  int head_dim = 512;              // D: value head dim (512 = MLA latent, 128 = GQA)
  int qk_dim = 576;                // D_qk: query/key dim (= D for GQA; 576 for MLA)
  int interleave = 1;              // I: KV interleave size (tokens per rank per round-robin turn)
  DType kv_dtype = DType::kBF16;   // Q, K, V element type
  DType out_dtype = DType::kBF16;  // O element type
  LseBase lse_base = LseBase::kE;
  double softmax_scale = 0.0;     // 0 means 1/sqrt(qk_dim)
  std::vector<int64_t> contexts;  // one entry per batch row: that request's context length in tokens
  Strategy strategy = Strategy::kAgRs;
  LaunchMode launch = LaunchMode::kGraph;
  // The decode-attention implementation that ran or should run ("flashinfer", "dcpsim"; from a measured
  // trace's `attention` parameter): picks the attention table measured on it. Empty: the profile's first
  // table for the geometry, whichever implementation it measured.
  std::string attention_impl;
  // The merge kernels' implementation (correction, pack, combine): "" for dcpsim's own, else as a profiler
  // trace named it ("vllm-triton": vLLM's Triton correction; a trace's `merge` parameter): picks the tables
  // (and their model) measured on it.
  std::string merge_impl;
  // CUDA-graph padding: rows beyond `contexts` that the step carries through every buffer with no context (a
  // serving engine pads its batch to a captured size; `hw run --padded-rows`). The merge kernels and the
  // collectives move them like any row; attention has no work for them; no row time is reported for them.
  int padded_rows = 0;
  // Consecutive rows that read one request's KV (a speculative verify block run as k + 1 decode rows,
  // --spec-attention rows): 1 = every row its own request. A kernel that re-reads the KV per row (vLLM's
  // Triton MLA) may find the later rows' reads in the L2.
  int rows_per_kv = 1;

  int rows() const { return static_cast<int>(contexts.size()); }
  // Rows the merge kernels and collectives move: the batch and its padding.
  int merge_rows() const { return rows() + padded_rows; }
  double scale() const;
  // Throws InputError naming the first impossible field (N < 1, H_kv not dividing H, N not dividing H for a
  // head-scattering strategy, negative context, D_qk < D, ...).
  void validate() const;
  // A short human label, e.g. "dcp8 h128 d512/576 kv1 b64 ctx131072 ag-rs graph".
  std::string label() const;
};

// Batch of `rows` rows all with context `context`.
std::vector<int64_t> uniform_contexts(int rows, int64_t context);

// Parses "4096", "32k", "128K", "1m", "1M" (k = 1024, m = 1024²); throws InputError otherwise.
int64_t parse_token_count(std::string_view s);

}  // namespace dcpsim::models
