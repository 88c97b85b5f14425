// The exact merge and the strategies' arithmetic. Every strategy computes the same weights; they differ in
// where rounding to the output dtype happens (AG: per scaled partial and after the sum;
// A2A/direct/FlashInfer's fused merge: once) and in which heads each rank keeps.
#include "dcpsim/models/merge.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

#include "dcpsim/error.h"
#include "dcpsim/models/a2a_pack.h"
#include "dcpsim/models/dtype.h"

namespace dcpsim::models {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Converts to the accumulation type; through round_to so an out-of-range double becomes ±inf, never UB.
template <typename T>
T to(double x) {
  if constexpr (std::is_same_v<T, float>) {
    return static_cast<float>(round_to(DType::kF32, x));
  } else {
    return x;
  }
}

template <typename T>
T exp_base(T x, LseBase base) {
  return base == LseBase::k2 ? std::exp2(x) : std::exp(x);
}
template <typename T>
T log_base(T x, LseBase base) {
  return base == LseBase::k2 ? std::log2(x) : std::log(x);
}

// SPEC steps 1-4 for one (row, head). Writes one weight per partial and returns L (−inf if all are empty).
// The weights are normalised by their max-shifted sum, w_i = exp(L_i − M) / Σ_j exp(L_j − M) with M = max
// L_i, never exp(L_i − L): L = M + log Σ rounds (at 1e8 in fp32 it equals M and every weight would be 1),
// while the shifted differences L_i − M are exact, so the weights sum to 1 for any finite LSE. An LSE beyond
// T's range keeps its double value, so the shift stays finite (the returned L is then ±inf in T).
template <typename T>
T merge_lse_into(std::span<const double> lses, LseBase base, std::span<double> weights) {
  auto sanitised = [](double l) {
    if (std::isnan(l) || l == kInf) return -kInf;
    const double t = static_cast<double>(to<T>(l));
    return std::isinf(t) ? l : t;
  };
  double m = -kInf;
  for (double l : lses) m = std::max(m, sanitised(l));
  std::fill(weights.begin(), weights.end(), 0.0);
  if (m == -kInf) return -std::numeric_limits<T>::infinity();
  T sum = 0;
  for (double l : lses) {
    if (const double s = sanitised(l); s != -kInf) sum += exp_base<T>(to<T>(s - m), base);
  }
  for (std::size_t i = 0; i < lses.size(); ++i) {
    const double s = sanitised(lses[i]);
    if (s == -kInf) continue;
    const T w = exp_base<T>(to<T>(s - m), base) / sum;
    weights[i] = std::isnan(w) ? 0.0 : static_cast<double>(w);
  }
  return to<T>(m) + log_base<T>(sum, base);
}

struct Plan {
  int ranks = 0;
  int rows = 0;
  int heads = 0;
  int dim = 0;
  int valid_rows = 0;
  int block = 0;  // heads per rank for scattering strategies
};

Plan check(std::span<const Partial> partials, const MergeOptions& o) {
  if (partials.empty()) throw InputError("merge needs at least one rank's partial (got none)");
  if (o.accumulate != DType::kF32 && o.accumulate != DType::kF64) {
    throw InputError("merge accumulate type " + std::string(to_string(o.accumulate)) +
                     " is not allowed (fp32 or fp64)");
  }
  const OutLayout& first = partials[0].out_layout;
  Plan plan{static_cast<int>(partials.size()), first.rows, first.heads, first.dim, first.rows, first.heads};
  for (std::size_t r = 0; r < partials.size(); ++r) {
    partials[r].validate();
    const OutLayout& l = partials[r].out_layout;
    if (l.rows != plan.rows || l.heads != plan.heads || l.dim != plan.dim) {
      throw InputError("rank " + std::to_string(r) + " partial is [" + std::to_string(l.rows) + "][" +
                       std::to_string(l.heads) + "][" + std::to_string(l.dim) + "] but rank 0's is [" +
                       std::to_string(plan.rows) + "][" + std::to_string(plan.heads) + "][" +
                       std::to_string(plan.dim) + "]");
    }
  }
  if (o.valid_rows < -1 || o.valid_rows > plan.rows) {
    throw InputError("valid_rows = " + std::to_string(o.valid_rows) + " is outside [0, " +
                     std::to_string(plan.rows) + "] (or -1 for all rows)");
  }
  if (o.valid_rows >= 0) plan.valid_rows = o.valid_rows;
  if (scatters_heads(o.strategy)) {
    if (plan.heads % plan.ranks != 0) {
      throw InputError("heads = " + std::to_string(plan.heads) + " is not divisible by the " +
                       std::to_string(plan.ranks) + " ranks, which strategy " +
                       std::string(to_string(o.strategy)) + " needs (use ag-ar)");
    }
    plan.block = plan.heads / plan.ranks;
  }
  return plan;
}

// One owner's combine of heads [head_begin, head_end) of `parts` (direct, row-stream, and A2A after
// unpacking): fp32/fp64 accumulation of the non-zero-weight partials, a single rounding to the output dtype.
template <typename T>
RankOutput combine(std::span<const Partial> parts, int head_begin, int head_end, const Plan& plan,
                   const MergeOptions& o, int head_stride = 1) {
  RankOutput r{0, head_begin, head_end, head_stride, {}, {}};
  const int kept = r.kept();
  r.out.assign(static_cast<std::size_t>(plan.rows) * kept * plan.dim, 0.0);
  r.lse.assign(static_cast<std::size_t>(plan.rows) * kept, -kInf);
  std::vector<double> lses(parts.size()), weights(parts.size());
  std::vector<T> acc(static_cast<std::size_t>(plan.dim));
  for (int b = 0; b < plan.valid_rows; ++b) {
    for (int k = 0; k < kept; ++k) {
      const int h = r.head(k);
      for (std::size_t i = 0; i < parts.size(); ++i) lses[i] = parts[i].l(b, h);
      const T lse = merge_lse_into<T>(lses, o.base, weights);
      std::fill(acc.begin(), acc.end(), T(0));
      for (std::size_t i = 0; i < parts.size(); ++i) {
        if (weights[i] == 0.0) continue;  // never read: an empty shard's O may be NaN
        const T w = static_cast<T>(weights[i]);
        const double* o_i = parts[i].out.data() + parts[i].out_layout.index(b, h, 0);
        for (int d = 0; d < plan.dim; ++d) acc[d] += w * to<T>(o_i[d]);
      }
      double* out = r.out.data() + (static_cast<std::int64_t>(b) * kept + k) * plan.dim;
      for (int d = 0; d < plan.dim; ++d) out[d] = round_to(o.out_dtype, static_cast<double>(acc[d]));
      r.lse[static_cast<std::size_t>(b) * kept + k] = static_cast<double>(lse);
    }
  }
  return r;
}

// AG+RS / AG+AR: after the LSE all-gather every rank knows all weights; each scales its own O_r in place
// (stored in the output dtype), then the collective sums the N scaled partials into [B][H][D] (and L).
template <typename T>
void all_gather_sum(std::span<const Partial> parts, const Plan& plan, const MergeOptions& o,
                    std::vector<double>& out, std::vector<double>& lse) {
  const std::size_t cells = static_cast<std::size_t>(plan.rows) * plan.heads;
  std::vector<double> weights(cells * plan.ranks, 0.0), lses(plan.ranks);
  lse.assign(cells, -kInf);
  for (int b = 0; b < plan.valid_rows; ++b) {
    for (int h = 0; h < plan.heads; ++h) {
      const std::size_t cell = static_cast<std::size_t>(b) * plan.heads + h;
      for (int i = 0; i < plan.ranks; ++i) lses[i] = parts[i].l(b, h);
      const std::span<double> w(weights.data() + cell * plan.ranks, plan.ranks);
      lse[cell] = static_cast<double>(merge_lse_into<T>(lses, o.base, w));
    }
  }
  std::vector<T> acc(cells * plan.dim, T(0));
  for (int i = 0; i < plan.ranks; ++i) {
    for (std::size_t cell = 0; cell < cells; ++cell) {
      const double weight = weights[cell * plan.ranks + i];
      if (weight == 0.0) continue;
      const T w = static_cast<T>(weight);
      const int b = static_cast<int>(cell / plan.heads), h = static_cast<int>(cell % plan.heads);
      const double* o_i = parts[i].out.data() + parts[i].out_layout.index(b, h, 0);
      T* a = acc.data() + cell * plan.dim;
      for (int d = 0; d < plan.dim; ++d) {
        a[d] += to<T>(round_to(o.out_dtype, static_cast<double>(w * to<T>(o_i[d]))));
      }
    }
  }
  out.resize(acc.size());
  for (std::size_t k = 0; k < acc.size(); ++k) out[k] = round_to(o.out_dtype, static_cast<double>(acc[k]));
}

// What owner `owner` receives from one source in a2a-2call's two exchanges: that source's block of the
// owner's heads, O in the output dtype ([B][H/N][D]) and the LSE in fp32 ([B][H/N]; fp64 for kF64 outputs).
// As the sending kernel does, rows past valid_rows travel empty (LSE −inf) and O is zero wherever the LSE is
// not finite.
Partial two_call_block(const Partial& source, int owner, const Plan& plan, const MergeOptions& o) {
  Partial p{OutLayout::dense(plan.rows, plan.block, plan.dim),
            std::vector<double>(static_cast<std::size_t>(plan.rows) * plan.block * plan.dim, 0.0),
            LseLayout::dense(plan.rows, plan.block),
            std::vector<double>(static_cast<std::size_t>(plan.rows) * plan.block, -kInf)};
  for (int b = 0; b < plan.valid_rows; ++b) {
    for (int j = 0; j < plan.block; ++j) {
      const int h = owner * plan.block + j;
      // fp32 as the kernels send it; kF64 outputs (reference only) keep the fp64 LSE, as the packed A2A does.
      const double l = o.out_dtype == DType::kF64 ? source.l(b, h) : round_to(DType::kF32, source.l(b, h));
      p.lse[p.lse_layout.index(b, j)] = l;
      if (!std::isfinite(l)) continue;
      for (int d = 0; d < plan.dim; ++d)
        p.out[p.out_layout.index(b, j, d)] = round_to(o.out_dtype, source.o(b, h, d));
    }
  }
  return p;
}

// Head block [begin, end) of a full [B][H][D] tensor (and of its [B][H] LSE).
RankOutput slice(const std::vector<double>& out, const std::vector<double>& lse, const Plan& plan, int rank,
                 int begin, int end) {
  const int kept = end - begin;
  RankOutput r{rank,
               begin,
               end,
               1,
               std::vector<double>(static_cast<std::size_t>(plan.rows) * kept * plan.dim),
               std::vector<double>(static_cast<std::size_t>(plan.rows) * kept)};
  for (int b = 0; b < plan.rows; ++b) {
    const std::size_t src = static_cast<std::size_t>(b) * plan.heads + begin;
    const std::size_t dst = static_cast<std::size_t>(b) * kept;
    std::copy_n(out.begin() + src * plan.dim, kept * plan.dim, r.out.begin() + dst * plan.dim);
    std::copy_n(lse.begin() + src, kept, r.lse.begin() + dst);
  }
  return r;
}

// Writes each rank's head block back into the full [B][H][D] / [B][H] result.
void assemble(MergeResult& m, const Plan& plan) {
  m.out.assign(static_cast<std::size_t>(plan.rows) * plan.heads * plan.dim, 0.0);
  m.lse.assign(static_cast<std::size_t>(plan.rows) * plan.heads, -kInf);
  for (const RankOutput& r : m.ranks) {
    const int kept = r.kept();
    for (int b = 0; b < plan.rows; ++b) {
      for (int k = 0; k < kept; ++k) {
        const std::size_t dst = static_cast<std::size_t>(b) * plan.heads + r.head(k);
        const std::size_t src = static_cast<std::size_t>(b) * kept + k;
        std::copy_n(r.out.begin() + src * plan.dim, plan.dim, m.out.begin() + dst * plan.dim);
        m.lse[dst] = r.lse[src];
      }
    }
  }
}

template <typename T>
void run_strategy(std::span<const Partial> parts, const Plan& plan, const MergeOptions& o, MergeResult& m) {
  if (o.strategy == Strategy::kAgRs || o.strategy == Strategy::kAgAr) {
    all_gather_sum<T>(parts, plan, o, m.out, m.lse);
    const bool all_reduce = o.strategy == Strategy::kAgAr;
    for (int r = 0; r < plan.ranks; ++r) {
      const int begin = all_reduce ? 0 : r * plan.block;
      m.ranks.push_back(slice(m.out, m.lse, plan, r, begin, all_reduce ? plan.heads : begin + plan.block));
    }
    return;
  }
  if (o.strategy == Strategy::kA2a) {
    std::vector<A2aBuffer> send;
    for (const Partial& p : parts) send.push_back(pack_a2a(p, plan.ranks, o.out_dtype));
    const std::vector<A2aBuffer> received = all_to_all(send);
    for (int r = 0; r < plan.ranks; ++r) {
      std::vector<Partial> unpacked;
      for (int n = 0; n < plan.ranks; ++n) unpacked.push_back(unpack_a2a(received[r], n));
      RankOutput out = combine<T>(unpacked, 0, plan.block, plan, o);
      out.head_begin = r * plan.block;
      out.head_end = out.head_begin + plan.block;
      m.ranks.push_back(std::move(out));
    }
  } else if (o.strategy == Strategy::kA2aTwoCall) {  // the outputs' and the LSEs' exchanges, then the combine
    for (int r = 0; r < plan.ranks; ++r) {
      std::vector<Partial> received;
      for (int n = 0; n < plan.ranks; ++n) received.push_back(two_call_block(parts[n], r, plan, o));
      RankOutput out = combine<T>(received, 0, plan.block, plan, o);
      out.head_begin = r * plan.block;
      out.head_end = out.head_begin + plan.block;
      m.ranks.push_back(std::move(out));
    }
  } else if (interleaves_heads(o.strategy)) {  // flashinfer-a2a: owner r reads heads r, r + N, ...
    for (int r = 0; r < plan.ranks; ++r)
      m.ranks.push_back(combine<T>(parts, r, r + (plan.block - 1) * plan.ranks + 1, plan, o, plan.ranks));
  } else {  // direct, row-stream: the owner reads every rank's block of its heads
    for (int r = 0; r < plan.ranks; ++r)
      m.ranks.push_back(combine<T>(parts, r * plan.block, (r + 1) * plan.block, plan, o));
  }
  for (int r = 0; r < plan.ranks; ++r) m.ranks[r].rank = r;
  assemble(m, plan);
}

// N = 1: no collective and no correction. Only empty (or padding) rows change: they become O = 0, L = −inf.
void single_rank(const Partial& p, const Plan& plan, const MergeOptions& o, MergeResult& m) {
  m.out.assign(static_cast<std::size_t>(plan.rows) * plan.heads * plan.dim, 0.0);
  m.lse.assign(static_cast<std::size_t>(plan.rows) * plan.heads, -kInf);
  for (int b = 0; b < plan.valid_rows; ++b) {
    for (int h = 0; h < plan.heads; ++h) {
      const double l = p.l(b, h);
      if (std::isnan(l) || l == kInf || l == -kInf) continue;
      const std::size_t cell = static_cast<std::size_t>(b) * plan.heads + h;
      m.lse[cell] = o.accumulate == DType::kF32 ? round_to(DType::kF32, l) : l;
      for (int d = 0; d < plan.dim; ++d) m.out[cell * plan.dim + d] = round_to(o.out_dtype, p.o(b, h, d));
    }
  }
  m.ranks.push_back(slice(m.out, m.lse, plan, 0, 0, plan.heads));
}

}  // namespace

LseMerge merge_lse(std::span<const double> lses, LseBase base, DType accumulate) {
  if (accumulate != DType::kF32 && accumulate != DType::kF64) {
    throw InputError("merge accumulate type " + std::string(to_string(accumulate)) +
                     " is not allowed (fp32 or fp64)");
  }
  LseMerge r{0.0, std::vector<double>(lses.size())};
  r.lse = accumulate == DType::kF32 ? static_cast<double>(merge_lse_into<float>(lses, base, r.weights))
                                    : merge_lse_into<double>(lses, base, r.weights);
  return r;
}

MergeResult merge(std::span<const Partial> partials, const MergeOptions& options) {
  const Plan plan = check(partials, options);
  MergeResult m{plan.rows, plan.heads, plan.dim, {}, {}, {}};
  if (plan.ranks == 1) {
    single_rank(partials[0], plan, options, m);
  } else if (options.accumulate == DType::kF32) {
    run_strategy<float>(partials, plan, options, m);
  } else {
    run_strategy<double>(partials, plan, options, m);
  }
  if (!options.return_lse) {
    for (RankOutput& r : m.ranks) r.lse.clear();
  }
  return m;
}

}  // namespace dcpsim::models
