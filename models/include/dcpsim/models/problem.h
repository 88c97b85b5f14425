#pragma once
// A decode attention problem: the query rows of one step and every row's full KV cache (before sharding),
// generated deterministically from a seed so that the CPU reference and a GPU run see the same numbers.
#include <cstdint>
#include <vector>

#include "dcpsim/models/scenario.h"

namespace dcpsim::models {

struct Problem {
  int rows = 0;                        // B
  int heads = 0;                       // H
  int kv_heads = 1;                    // H_kv; query head h reads kv head h / (H / H_kv)
  int qk_dim = 0;                      // D_qk
  int dim = 0;                         // D
  std::vector<std::int64_t> contexts;  // S_b per row
  std::vector<double> q;               // [B][H][D_qk]
  std::vector<std::vector<double>> k;  // per row b: [S_b][H_kv][D_qk]
  std::vector<std::vector<double>> v;  // per row b: [S_b][H_kv][D]

  int group_size() const { return heads / kv_heads; }
  double q_at(int row, int head, int d) const {
    return q[(static_cast<std::int64_t>(row) * heads + head) * qk_dim + d];
  }
  // Throws InputError on inconsistent extents (H_kv not dividing H, D_qk < D, wrong buffer sizes).
  void validate() const;
};

struct GenerateOptions {
  std::uint64_t seed = 1;
  DType input_dtype = DType::kBF16;  // Q, K, V are rounded to this type (kF64: no rounding; fp8: K and V,
                                     // Q to bf16)
  double q_std = 1.0;                // standard deviation of Q entries (larger spreads the scores further)
  double kv_std = 1.0;               // standard deviation of K and V entries
};

// Q, K, V with i.i.d. entries uniform on [-√3·std, √3·std), from a SplitMix64 stream seeded by `seed`
// (portable: the same numbers on every platform and standard library). Shapes from the scenario (heads,
// kv_heads, qk_dim, head_dim, contexts). Throws InputError when the scenario is invalid.
Problem generate_problem(const Scenario& scenario, const GenerateOptions& options);

// Lower-level form: explicit geometry.
Problem generate_problem(int heads, int kv_heads, int qk_dim, int dim,
                         const std::vector<std::int64_t>& contexts, const GenerateOptions& options);

}  // namespace dcpsim::models
