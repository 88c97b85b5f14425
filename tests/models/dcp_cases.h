#pragma once
// Shared by the merge tests: randomised DCP problems (N from 1 to 9, MLA and GQA geometries, contexts from 0
// to a few thousand, some shorter than N) kept small enough that the whole suite stays fast under sanitizers,
// and the per-element error bound that the 16-bit strategies must meet.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "dcpsim/models/attention.h"
#include "dcpsim/models/dtype.h"
#include "dcpsim/models/merge.h"

namespace dcpsim::models::testing {

inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct DcpCase {
  int dcp = 1;
  int heads = 1;
  int kv_heads = 1;
  int qk_dim = 64;
  int dim = 64;
  int interleave = 1;
  std::vector<std::int64_t> contexts;
  std::uint64_t seed = 1;

  std::string describe() const {
    std::string s = "N=" + std::to_string(dcp) + " H=" + std::to_string(heads) +
                    " Hkv=" + std::to_string(kv_heads) + " D=" + std::to_string(dim) + "/" +
                    std::to_string(qk_dim) + " I=" + std::to_string(interleave) + " ctx=";
    for (auto c : contexts) s += std::to_string(c) + ",";
    return s + " seed=" + std::to_string(seed);
  }
  Problem problem(DType input = DType::kBF16) const {
    return generate_problem(heads, kv_heads, qk_dim, dim, contexts, GenerateOptions{seed, input, 1.5});
  }
};

// Work per case (multiply-adds of one attention pass) is kept under `budget`.
inline std::vector<DcpCase> random_cases(int count, std::uint64_t seed, double budget = 3e5) {
  std::mt19937_64 rng(seed);
  auto pick = [&rng](int lo, int hi) {
    return lo + static_cast<int>(rng() % static_cast<std::uint64_t>(hi - lo + 1));
  };
  const int dims[] = {64, 128, 192, 512};
  const int interleaves[] = {1, 2, 16, 64};
  std::vector<DcpCase> cases;
  for (int i = 0; i < count; ++i) {
    DcpCase c;
    c.seed = rng();
    c.dcp = 1 + i % 9;
    c.dim = dims[pick(0, 3)];
    const bool mla = c.dim == 512 && pick(0, 1) == 0;
    c.qk_dim = mla ? 576 : c.dim;
    c.interleave = interleaves[pick(0, 3)];
    const int rows = pick(1, 3);
    for (int b = 0; b < rows; ++b) {
      switch (pick(0, 3)) {
        case 0:
          c.contexts.push_back(pick(0, c.dcp - 1));
          break;  // shorter than N: empty shards
        case 1:
          c.contexts.push_back(pick(0, 3 * c.interleave * c.dcp));
          break;
        default:
          c.contexts.push_back(pick(0, 3000));
          break;
      }
    }
    std::int64_t tokens = 1;
    for (auto s : c.contexts) tokens += s;
    const double per_head = static_cast<double>(tokens) * (c.qk_dim + c.dim);
    // Every 5th case has heads not divisible by N (only AG+AR applies); others use a multiple of N up to 128.
    const int max_k = std::max(1, std::min(128 / c.dcp, static_cast<int>(budget / (per_head * c.dcp))));
    c.heads = c.dcp * pick(1, max_k);
    if (i % 5 == 4 && c.dcp > 1) c.heads += 1;
    std::vector<int> divisors;
    for (int g = 1; g <= c.heads; ++g) {
      if (c.heads % g == 0) divisors.push_back(g);
    }
    c.kv_heads = mla ? 1 : divisors[pick(0, static_cast<int>(divisors.size()) - 1)];
    // Shrink the contexts if even the smallest head count is over budget.
    const double work = per_head * c.heads;
    if (work > budget) {
      for (auto& s : c.contexts) s = static_cast<std::int64_t>(static_cast<double>(s) * budget / work);
    }
    cases.push_back(c);
  }
  return cases;
}

// Fixed shapes the random draw rarely reaches under its budget: long contexts (thousands of tokens), H = 128,
// MLA 512/576 with many heads, N = 9 with H not a power of two.
inline std::vector<DcpCase> edge_cases() {
  return {
      DcpCase{3, 3, 1, 64, 64, 1, {3500, 2}, 101},      DcpCase{7, 7, 7, 64, 64, 64, {2900}, 102},
      DcpCase{8, 128, 8, 64, 64, 2, {0, 5, 37}, 103},   DcpCase{4, 128, 1, 576, 512, 16, {7, 3}, 104},
      DcpCase{9, 126, 2, 128, 128, 1, {8, 1, 20}, 105},
  };
}

inline AttentionOptions exact_options(LseBase base = LseBase::kE) {
  AttentionOptions o;
  o.base = base;
  o.out_dtype = DType::kF64;
  o.lse_dtype = DType::kF64;
  return o;
}

// Error bound for one element of a 16-bit merged output, from fp64 partials (O*_i, L*_i) and the strategy:
//   u·|ref|                  the final rounding to the output dtype,
//   + u·S                    each partial O_i stored in the output dtype (S = Σ w_i·|O*_i|),
//   + u·S (AG+RS / AG+AR)    each scaled partial w_i·O_i rounded to the output dtype before the sum,
//   + (ε_w + N·2^-24)·S      fp32 weights from fp32 LSEs and fp32 accumulation,
// with ε_w = 2^-24·(4·max|L_i| + 16) for the rounding of L_i to fp32 and of exp/log; doubled for safety.
// Below the normal range a rounding errs by up to half the smallest subnormal η (absolute, not relative:
// fp16's η = 2^-25 matters for small outputs), once per stored value: (N + 2)·η covers every store.
inline double element_bound(DType out, Strategy strategy, double ref, double s, double max_abs_lse,
                            int ranks) {
  const double u = unit_roundoff(out);
  const double eta = out == DType::kF16 ? std::ldexp(1.0, -25) : std::ldexp(1.0, -134);
  const double eps_w = std::ldexp(1.0, -24) * (4.0 * max_abs_lse + 16.0);
  const double per_term = accumulates_in_fp32(strategy) ? u : 2.0 * u;
  return u * std::fabs(ref) + 2.0 * (per_term + eps_w + ranks * std::ldexp(1.0, -24)) * s + (ranks + 2) * eta;
}

inline MergeOptions merge_options(Strategy strategy, DType out, DType accumulate,
                                  LseBase base = LseBase::kE) {
  MergeOptions o;
  o.strategy = strategy;
  o.out_dtype = out;
  o.accumulate = accumulate;
  o.base = base;
  return o;
}

}  // namespace dcpsim::models::testing
