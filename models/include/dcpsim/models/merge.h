#pragma once
// The exact LSE merge and every delivery strategy's semantics and output placement (SPEC "The exact merge"
// and "The delivery strategies"). Inputs are the N ranks' partials; outputs are what each rank ends up
// holding, plus the assembled full [B][H][D] result for comparison against the no-DCP ground truth.
#include <cstdint>
#include <span>
#include <vector>

#include "dcpsim/models/tensor.h"
#include "dcpsim/models/types.h"

namespace dcpsim::models {

// The per-(row, head) scalar part of the merge: steps 1-4 of SPEC.
struct LseMerge {
  double lse = 0.0;             // merged L (−inf when every partial is empty)
  std::vector<double> weights;  // w_i = base^(L_i − L); exactly 0 for empty/NaN/+inf partials
};

// `accumulate` is kF32 (fp32 arithmetic, as kernels do) or kF64. Never throws for non-finite inputs.
LseMerge merge_lse(std::span<const double> lses, LseBase base, DType accumulate);

struct MergeOptions {
  Strategy strategy = Strategy::kAgRs;
  LseBase base = LseBase::kE;
  DType out_dtype = DType::kBF16;  // dtype of the partials' O and of the merged O (single final rounding)
  DType accumulate = DType::kF32;  // kF32 as real kernels, kF64 for 1e-12 exactness tests
  int valid_rows = -1;     // rows at or past this index are padding: O = 0, L = −inf; −1: all valid
  bool return_lse = true;  // fill RankOutput::lse with the merged LSE of the kept heads
};

// What rank r holds after the step: heads head_begin, head_begin + head_stride, ... below head_end of every
// row (head_stride 1: the block [head_begin, head_end); flashinfer-a2a: r, r + N, ...).
struct RankOutput {
  int rank = 0;
  int head_begin = 0;
  int head_end = 0;
  int head_stride = 1;
  std::vector<double> out;  // [B][kept()][D]
  std::vector<double> lse;  // [B][kept()] (empty unless return_lse)

  int kept() const { return (head_end - head_begin + head_stride - 1) / head_stride; }
  int head(int k) const { return head_begin + k * head_stride; }
};

struct MergeResult {
  int rows = 0;
  int heads = 0;
  int dim = 0;
  std::vector<double> out;        // [B][H][D] assembled from the ranks (AG+AR: rank 0's copy)
  std::vector<double> lse;        // [B][H] merged LSE (in the accumulate type)
  std::vector<RankOutput> ranks;  // one per rank, in rank order
};

// Merges the ranks' partials (partials[r] comes from rank r) with the strategy's arithmetic:
// - AG+RS / AG+AR: rank r scales O_r by w_r in place and rounds it to out_dtype; the N scaled partials are
//   summed (fp32, or fp64 when accumulate = kF64) and rounded once more. RS keeps heads [r·H/N, (r+1)·H/N),
//   AR all heads.
// - A2A: packs (a2a_pack.h), exchanges, unpacks, combines in the accumulate type and rounds once.
// - A2A in two calls: exchanges each owner's head block of O (output dtype) and of L (fp32) separately,
//   then combines as A2A does; owner r keeps heads [r·H/N, (r+1)·H/N).
// - direct / row-stream: the owner of each head block combines the N partials in the accumulate type and
//   rounds once.
// - flashinfer-a2a: the same arithmetic; owner r keeps heads r, r + N, ... (interleaves_heads).
// - N = 1: no correction; the result is the rank's own O and L (rows with an empty shard: O = 0, L = −inf).
// Throws InputError for: no partials, mismatched shapes across ranks, H not divisible by N for a
// head-scattering strategy, an accumulate type other than kF32/kF64, valid_rows outside [-1, B], invalid
// layouts.
MergeResult merge(std::span<const Partial> partials, const MergeOptions& options);

}  // namespace dcpsim::models
