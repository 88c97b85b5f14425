#pragma once
// Local decode attention on one rank's KV shard, returning the locally normalised output and its
// log-sum-exp (SPEC "Local attention"): s_j = scale·q·k_j, L = log Σ exp(s_j) (base 2:
// log2 Σ 2^(s_j·log2 e)), O = Σ exp(s_j − L)·v_j.
#include <cstdint>
#include <vector>

#include "dcpsim/models/problem.h"
#include "dcpsim/models/sharding.h"
#include "dcpsim/models/tensor.h"
#include "dcpsim/models/types.h"

namespace dcpsim::models {

// What a rank reports for a row whose shard is empty (local length 0) or that is padding (row >= valid_rows).
enum class EmptyRowMarker {
  kNegInfNaN,   // LSE −inf, O = NaN: split-KV partial convention; NaN proves a merge never reads it
  kNegInfZero,  // LSE −inf, O = 0
  kPosInfZero,  // LSE +inf, O = 0: the FlashAttention convention
};

struct AttentionOptions {
  LseBase base = LseBase::kE;
  double scale = 0.0;             // softmax scale; 0 means 1/sqrt(D_qk)
  DType compute = DType::kF64;    // kF64 or kF32: arithmetic used for scores, exponentials and sums
  DType out_dtype = DType::kF64;  // O is rounded once to this type
  DType lse_dtype = DType::kF64;  // L is rounded to this type (kernels emit fp32)
  EmptyRowMarker empty = EmptyRowMarker::kNegInfNaN;
  int valid_rows = -1;           // rows at or past this index are padding (masked as empty); −1: all valid
  bool transposed_lse = false;   // store L as [H][B]
  std::int64_t out_row_pad = 0;  // extra elements after each row of O (head-padded storage)
};

// Attention over `shard` for every row and head of `problem`. Throws InputError on a shape mismatch or an
// unsupported compute type.
Partial local_attention(const Problem& problem, const KvShard& shard, const AttentionOptions& options);

// Attention over the whole KV cache: the no-DCP ground truth a DCP merge must reproduce.
Partial full_attention(const Problem& problem, const AttentionOptions& options);

// Shards `problem` over `dcp` ranks with `interleave` and runs local attention on each: one Partial per rank.
std::vector<Partial> rank_partials(const Problem& problem, int dcp, int interleave,
                                   const AttentionOptions& options);

// The attention options a scenario implies for its ranks: its base, scale and output dtype, an fp32 LSE
// (fp64 when the output is fp64) and fp64 arithmetic, i.e. an exact kernel whose only errors are its stores.
AttentionOptions attention_options(const Scenario& scenario);

}  // namespace dcpsim::models
