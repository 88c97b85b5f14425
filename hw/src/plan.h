#pragma once
// The shape of one measured step: sizes derived from the scenario, the phases the strategy runs in order, and
// the input generator's index maps (shared by the device fill and the host's regeneration of rows for the
// check).
#include <cstdint>
#include <string>
#include <vector>

#include "dcpsim/hw/runner.h"
#include "dcpsim/models/scenario.h"
#include "ops.h"

namespace dcpsim::hw {

enum class Phase {
  kQAllGather,
  kAttention,
  kLseAllGather,
  kCorrect,
  kReduceScatter,
  kAllReduce,
  kA2aPack,
  kAllToAll,
  kAllToAllLse,  // a2a-2call: the second all-to-all, the LSEs
  kA2aCombine,
  kDirectMerge,      // stores, flags, wait and combine in one kernel
  kFlashInferMerge,  // FlashInfer's fused DCP merge, one cooperative kernel
  kRowCombine,       // row-stream: the owner's combine, beside the attention (which pushes the rows)
};

const char* phase_name(Phase p);
bool is_collective(Phase p);

struct StepPlan {
  models::Scenario s;
  int N = 1, B = 0, rows_total = 0, H = 0, Hkv = 1, Dqk = 0, D = 0, I = 1, J = 0 /* H/N */;
  bool mla = false;
  bool gather_q = false;    // the query all-gather runs (needs N | H)
  bool row_stamps = false;  // per-row stamps (--row-stamps; always for row-stream, whose figures they are)
  AttentionImpl attention = AttentionImpl::kDcpsim;         // resolved: kFlashInfer or kDcpsim
  ops::Elem in = ops::Elem::kBF16, out = ops::Elem::kBF16;  // in: Q and K/V (Q only with kv_fp8)
  // An fp8 e4m3 KV cache (--kv-dtype fp8): K/V stored as e4m3(value / kv_scale), one per-tensor scale, a
  // power of two chosen so the generator's largest value lands just inside e4m3's range (kFp8KvScale).
  bool kv_fp8 = false;
  float kv_scale = 1.f;
  std::vector<Phase> phases;
  std::vector<std::int64_t> contexts;         // per row incl. padding rows (context 0)
  std::vector<std::int64_t> global_row_base;  // Σ of earlier rows' contexts (the generator's token index)
  std::uint64_t seed = 1;

  int valid_rows() const { return B; }
  std::size_t kv_elem_bytes() const { return kv_fp8 ? 1 : ops::elem_bytes(in); }
  std::int64_t local_len(int row, int rank) const;
  // Generator streams and element indices (see fill_hash.h): every value is value(stream, index) rounded to
  // `in`.
  std::uint64_t q_stream() const { return seed * 4 + 1; }
  std::uint64_t k_stream() const { return seed * 4 + 2; }
  std::uint64_t v_stream() const { return seed * 4 + 3; }
  std::int64_t q_index(int row, int head, int d) const;  // in the layout rank-local Q blocks are filled
  std::int64_t k_width() const { return std::int64_t(Hkv) * Dqk; }
  std::int64_t v_width() const { return std::int64_t(Hkv) * D; }
  // The merge kernels' sizes in this step: N partials of B' rows (B real) of `heads` heads (H, or J for an
  // owner's slice) of D lanes, the LSE base and the output type.
  ops::MergeDims merge_dims(int heads) const {
    return {N, rows_total, B, heads, D, s.lse_base == models::LseBase::k2, out};
  }
};

// Validates what the hardware runner can run (InputError naming the value otherwise) and derives the plan.
StepPlan make_plan(const RunConfig& config);

// Amplitude of the uniform inputs: [-√3, √3), unit variance.
inline constexpr double kInputAmplitude = 1.7320508075688772;
// The fp8 KV cache's per-tensor scale (ops.h): the largest input lands at 443 of e4m3's 448.
using ops::kFp8KvScale;

}  // namespace dcpsim::hw
