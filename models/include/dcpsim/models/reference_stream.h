#pragma once
// The fp64 truth of one query row over a KV cache of any length, in bounded memory: the keys and values are
// produced chunk by chunk by a callback (the runner regenerates its counter-based inputs) and folded in with
// an online softmax, so the memory held is O(threads × heads × D) whatever the context. Each thread takes a
// contiguous span of tokens; the spans' states are merged exactly as DCP merges ranks (SPEC "The exact
// merge"). The result equals full_attention() with fp64 arithmetic up to fp64 rounding.
#include <cstdint>
#include <functional>
#include <vector>

#include "dcpsim/models/types.h"

namespace dcpsim::models {

struct KvStreamShape {
  int heads = 0;            // H: query head h reads KV head h / (H / H_kv)
  int kv_heads = 1;         // H_kv
  int qk_dim = 0;           // D_qk
  int dim = 0;              // D
  std::int64_t tokens = 0;  // the row's context length
  bool v_in_k = false;      // MLA: V is the first D lanes of K (no separate V)
};

// Fills k [count][H_kv][D_qk] and, unless v_in_k, v [count][H_kv][D] with tokens [first, first + count).
// Called from several threads at once, each with its own buffers.
using KvChunkSource = std::function<void(std::int64_t first, std::int64_t count, double* k, double* v)>;

struct StreamedRow {
  std::vector<double> o;    // [H][D]
  std::vector<double> lse;  // [H], in the requested base; −inf for an empty row (o = 0 then)
  std::vector<double> abs;  // [H][D]: attention with |V| (the scale of the kernels' rounding bounds)
};

// `q` is [H][D_qk]; `scale` the softmax scale (0: 1/sqrt(D_qk)); `threads` >= 1 (capped by the tokens).
// Throws InputError on inconsistent shapes.
StreamedRow streamed_attention(const KvStreamShape& shape, const std::vector<double>& q, double scale,
                               LseBase base, const KvChunkSource& source, int threads);

// Tokens per chunk, and the bytes streamed_attention holds at its peak (its states, chunk buffers and the
// result), for memory estimates.
inline constexpr std::int64_t kStreamChunkTokens = 256;
double streamed_attention_bytes(const KvStreamShape& shape, int threads);

}  // namespace dcpsim::models
