// Local decode attention, written like a decode kernel's math for one (row, head): scores, running max, sum
// of exponentials, normalised output and LSE — in fp64 or in fp32 arithmetic.
#include "dcpsim/models/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <string>

#include "dcpsim/error.h"
#include "dcpsim/models/dtype.h"

namespace dcpsim::models {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInfinity = std::numeric_limits<double>::infinity();

// Attention of one (row, head) over `length` keys; writes O (dim values, unrounded) and returns L.
template <typename T>
T attend(const double* q, const double* k, const double* v, std::int64_t length, std::int64_t k_stride,
         std::int64_t v_stride, int qk_dim, int dim, T scale, LseBase base, std::vector<T>& scores, T* out) {
  scores.resize(static_cast<std::size_t>(length));
  const T log_scale = base == LseBase::k2 ? static_cast<T>(std::numbers::log2e) : T(1);
  T max_score = -std::numeric_limits<T>::infinity();
  for (std::int64_t j = 0; j < length; ++j) {
    const double* kj = k + j * k_stride;
    T dot = 0;
    for (int d = 0; d < qk_dim; ++d) dot += static_cast<T>(q[d]) * static_cast<T>(kj[d]);
    scores[j] = dot * scale * log_scale;
    max_score = std::max(max_score, scores[j]);
  }
  std::fill(out, out + dim, T(0));
  T sum = 0;
  for (std::int64_t j = 0; j < length; ++j) {
    const T p = base == LseBase::k2 ? std::exp2(scores[j] - max_score) : std::exp(scores[j] - max_score);
    sum += p;
    const double* vj = v + j * v_stride;
    for (int d = 0; d < dim; ++d) out[d] += p * static_cast<T>(vj[d]);
  }
  for (int d = 0; d < dim; ++d) out[d] /= sum;
  return max_score + (base == LseBase::k2 ? std::log2(sum) : std::log(sum));
}

void check_options(const AttentionOptions& o) {
  if (o.compute != DType::kF64 && o.compute != DType::kF32) {
    throw InputError("attention compute type " + std::string(to_string(o.compute)) +
                     " is not supported (fp32 or fp64)");
  }
  if (!(o.scale >= 0.0) || !std::isfinite(o.scale)) {
    throw InputError("softmax scale " + std::to_string(o.scale) +
                     " is not allowed (finite, >= 0; 0 = 1/sqrt(D_qk))");
  }
  if (o.out_row_pad < 0)
    throw InputError("output row padding " + std::to_string(o.out_row_pad) + " is negative");
}

void check_shard(const Problem& p, const KvShard& s) {
  const auto n = static_cast<std::size_t>(p.rows);
  if (s.lengths.size() != n || s.k.size() != n || s.v.size() != n) {
    throw InputError("KV shard has " + std::to_string(s.lengths.size()) + " rows but the problem has " +
                     std::to_string(p.rows));
  }
  for (std::size_t b = 0; b < n; ++b) {
    const auto len = static_cast<std::size_t>(std::max<std::int64_t>(s.lengths[b], 0));
    if (s.lengths[b] < 0 || s.k[b].size() != len * p.kv_heads * p.qk_dim ||
        s.v[b].size() != len * p.kv_heads * p.dim) {
      throw InputError("KV shard row " + std::to_string(b) + ": length " + std::to_string(s.lengths[b]) +
                       " does not match its K/V buffers");
    }
  }
}

template <typename T>
void attend_all(const Problem& p, const KvShard& s, const AttentionOptions& o, Partial& r) {
  const double scale = o.scale > 0.0 ? o.scale : 1.0 / std::sqrt(static_cast<double>(p.qk_dim));
  const int valid_rows = o.valid_rows < 0 ? p.rows : std::min(o.valid_rows, p.rows);
  const double empty_lse = o.empty == EmptyRowMarker::kPosInfZero ? kInfinity : -kInfinity;
  const double empty_out = o.empty == EmptyRowMarker::kNegInfNaN ? kNaN : 0.0;
  const std::int64_t k_stride = static_cast<std::int64_t>(p.kv_heads) * p.qk_dim;
  const std::int64_t v_stride = static_cast<std::int64_t>(p.kv_heads) * p.dim;
  std::vector<T> scores;
  std::vector<T> out(static_cast<std::size_t>(p.dim));
  for (int b = 0; b < p.rows; ++b) {
    for (int h = 0; h < p.heads; ++h) {
      double* o_bh = r.out.data() + r.out_layout.index(b, h, 0);
      if (b >= valid_rows || s.lengths[b] == 0) {
        std::fill(o_bh, o_bh + p.dim, empty_out);
        r.lse[r.lse_layout.index(b, h)] = empty_lse;
        continue;
      }
      const int g = h / p.group_size();
      const T lse = attend<T>(&p.q[(static_cast<std::int64_t>(b) * p.heads + h) * p.qk_dim],
                              s.k[b].data() + g * p.qk_dim, s.v[b].data() + g * p.dim, s.lengths[b], k_stride,
                              v_stride, p.qk_dim, p.dim, static_cast<T>(scale), o.base, scores, out.data());
      for (int d = 0; d < p.dim; ++d) o_bh[d] = round_to(o.out_dtype, static_cast<double>(out[d]));
      r.lse[r.lse_layout.index(b, h)] = round_to(o.lse_dtype, static_cast<double>(lse));
    }
  }
}

}  // namespace

Partial local_attention(const Problem& problem, const KvShard& shard, const AttentionOptions& options) {
  problem.validate();
  check_options(options);
  check_shard(problem, shard);
  Partial r;
  r.out_layout = OutLayout::padded(problem.rows, problem.heads, problem.dim, options.out_row_pad);
  r.lse_layout = options.transposed_lse ? LseLayout::transposed(problem.rows, problem.heads)
                                        : LseLayout::dense(problem.rows, problem.heads);
  // Padding lanes hold NaN so that a consumer reading them is caught by the comparison.
  r.out.assign(static_cast<std::size_t>(r.out_layout.storage_size()), kNaN);
  r.lse.assign(static_cast<std::size_t>(r.lse_layout.storage_size()), kNaN);
  if (options.compute == DType::kF32) {
    attend_all<float>(problem, shard, options, r);
  } else {
    attend_all<double>(problem, shard, options, r);
  }
  return r;
}

Partial full_attention(const Problem& problem, const AttentionOptions& options) {
  return local_attention(problem, whole_kv(problem), options);
}

std::vector<Partial> rank_partials(const Problem& problem, int dcp, int interleave,
                                   const AttentionOptions& options) {
  if (dcp < 1) throw InputError("dcp = " + std::to_string(dcp) + " is not allowed (must be >= 1)");
  std::vector<Partial> partials;
  for (int r = 0; r < dcp; ++r) {
    partials.push_back(local_attention(problem, shard_kv(problem, r, dcp, interleave), options));
  }
  return partials;
}

AttentionOptions attention_options(const Scenario& scenario) {
  AttentionOptions o;
  o.base = scenario.lse_base;
  o.scale = scenario.scale();
  o.compute = DType::kF64;
  o.out_dtype = scenario.out_dtype;
  o.lse_dtype = scenario.out_dtype == DType::kF64 ? DType::kF64 : DType::kF32;
  return o;
}

}  // namespace dcpsim::models
