// streamed_attention (reference_stream.h): per thread, per head a running max m, the sum of exp(s − m) and
// the accumulators Σ exp(s − m)·v and Σ exp(s − m)·|v|, rescaled once per chunk of tokens; then the threads'
// states merged exactly.
#include "dcpsim/models/reference_stream.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <string>
#include <thread>

#include "dcpsim/error.h"

namespace dcpsim::models {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// One thread's running state over its span of tokens.
struct SpanState {
  std::vector<double> max, sum, acc, abs;  // [H], [H], [H][D], [H][D]

  SpanState(int heads, int dim)
      : max(heads, kNegInf), sum(heads, 0.0), acc(std::size_t(heads) * dim, 0.0), abs(acc.size(), 0.0) {}
};

void check_shape(const KvStreamShape& s, const std::vector<double>& q) {
  const bool ok = s.heads >= 1 && s.kv_heads >= 1 && s.heads % s.kv_heads == 0 && s.dim >= 1 &&
                  s.qk_dim >= s.dim && s.tokens >= 0 && q.size() == std::size_t(s.heads) * s.qk_dim;
  if (!ok) {
    throw InputError("streamed attention: inconsistent shape (H " + std::to_string(s.heads) + ", H_kv " +
                     std::to_string(s.kv_heads) + ", D_qk " + std::to_string(s.qk_dim) + ", D " +
                     std::to_string(s.dim) + ", " + std::to_string(q.size()) + " query values)");
  }
}

// Scores of the heads [h0, h0 + g) of one KV head against a chunk's n keys: score[i][j] = scale·q_i·k_j. The
// sum over d runs in order for every (i, j), so the loop over heads vectorises without reassociating
// anything.
void chunk_scores(const KvStreamShape& s, const std::vector<double>& q_t, int kh, int g, std::int64_t n,
                  const double* k, double scale, std::vector<double>& score) {
  const std::int64_t k_row = std::int64_t(s.kv_heads) * s.qk_dim;
  std::vector<double> row(g);
  for (std::int64_t j = 0; j < n; ++j) {
    std::fill(row.begin(), row.end(), 0.0);
    const double* kj = k + j * k_row + std::int64_t(kh) * s.qk_dim;
    for (int d = 0; d < s.qk_dim; ++d) {
      const double kd = kj[d];
      const double* qd = q_t.data() + (std::size_t(d) * s.kv_heads + kh) * g;
      for (int i = 0; i < g; ++i) row[i] += qd[i] * kd;
    }
    for (int i = 0; i < g; ++i) score[std::size_t(i) * kStreamChunkTokens + j] = row[i] * scale;
  }
}

// Folds tokens [first, last) into `st`. `q_t` is the query transposed, [D_qk][H_kv][g].
void fold_span(const KvStreamShape& s, const std::vector<double>& q_t, double scale,
               const KvChunkSource& source, std::int64_t first, std::int64_t last, SpanState& st) {
  const int g = s.heads / s.kv_heads;
  const std::int64_t k_row = std::int64_t(s.kv_heads) * s.qk_dim;
  const std::int64_t v_row = s.v_in_k ? k_row : std::int64_t(s.kv_heads) * s.dim;
  const int v_head = s.v_in_k ? s.qk_dim : s.dim;  // distance between KV heads in a V row
  std::vector<double> k(std::size_t(kStreamChunkTokens * k_row));
  std::vector<double> v(s.v_in_k ? 0 : std::size_t(kStreamChunkTokens * v_row));
  std::vector<double> score(std::size_t(g) * kStreamChunkTokens),
      absv(std::size_t(kStreamChunkTokens) * s.dim);
  for (std::int64_t t0 = first; t0 < last; t0 += kStreamChunkTokens) {
    const std::int64_t n = std::min(kStreamChunkTokens, last - t0);
    source(t0, n, k.data(), s.v_in_k ? nullptr : v.data());
    const double* vs = s.v_in_k ? k.data() : v.data();
    for (int kh = 0; kh < s.kv_heads; ++kh) {
      for (std::int64_t j = 0; j < n; ++j)
        for (int d = 0; d < s.dim; ++d) absv[j * s.dim + d] = std::fabs(vs[j * v_row + kh * v_head + d]);
      chunk_scores(s, q_t, kh, g, n, k.data(), scale, score);
      for (int i = 0; i < g; ++i) {
        const int h = kh * g + i;
        const double* sc = score.data() + std::size_t(i) * kStreamChunkTokens;
        const double m = std::max(st.max[h], *std::max_element(sc, sc + n));
        double* acc = st.acc.data() + std::size_t(h) * s.dim;
        double* abs = st.abs.data() + std::size_t(h) * s.dim;
        if (m > st.max[h] && st.max[h] != kNegInf) {
          const double f = std::exp(st.max[h] - m);
          st.sum[h] *= f;
          for (int d = 0; d < s.dim; ++d) {
            acc[d] *= f;
            abs[d] *= f;
          }
        }
        st.max[h] = m;
        for (std::int64_t j = 0; j < n; ++j) {
          const double p = std::exp(sc[j] - m);
          st.sum[h] += p;
          const double* vj = vs + j * v_row + kh * v_head;
          const double* aj = absv.data() + j * s.dim;
          for (int d = 0; d < s.dim; ++d) {
            acc[d] += p * vj[d];
            abs[d] += p * aj[d];
          }
        }
      }
    }
  }
}

}  // namespace

StreamedRow streamed_attention(const KvStreamShape& s, const std::vector<double>& q, double scale,
                               LseBase base, const KvChunkSource& source, int threads) {
  check_shape(s, q);
  if (!(scale >= 0) || !std::isfinite(scale)) throw InputError("streamed attention: bad softmax scale");
  if (scale == 0) scale = 1.0 / std::sqrt(static_cast<double>(s.qk_dim));
  const std::int64_t chunks = (s.tokens + kStreamChunkTokens - 1) / kStreamChunkTokens;
  const int spans = static_cast<int>(std::clamp<std::int64_t>(threads, 1, std::max<std::int64_t>(chunks, 1)));
  std::vector<SpanState> states(spans, SpanState(s.heads, s.dim));
  const int g = s.heads / s.kv_heads;
  std::vector<double> q_t(q.size());  // [D_qk][H_kv][g]
  for (int h = 0; h < s.heads; ++h)
    for (int d = 0; d < s.qk_dim; ++d)
      q_t[(std::size_t(d) * s.kv_heads + h / g) * g + h % g] = q[std::size_t(h) * s.qk_dim + d];
  // Spans of whole chunks, so every thread's chunks are full but its last.
  auto edge = [&](int i) { return std::min(s.tokens, chunks * i / spans * kStreamChunkTokens); };
  std::vector<std::thread> pool;
  std::vector<std::exception_ptr> errors(spans);
  if (spans == 1) fold_span(s, q_t, scale, source, 0, s.tokens, states[0]);
  for (int i = 0; spans > 1 && i < spans; ++i) {
    pool.emplace_back([&, i] {
      try {
        fold_span(s, q_t, scale, source, edge(i), edge(i + 1), states[i]);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  }
  for (auto& t : pool) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);

  StreamedRow r{std::vector<double>(std::size_t(s.heads) * s.dim, 0.0), std::vector<double>(s.heads, kNegInf),
                std::vector<double>(std::size_t(s.heads) * s.dim, 0.0)};
  const double to_base = base == LseBase::k2 ? std::numbers::log2e : 1.0;
  for (int h = 0; h < s.heads; ++h) {
    double m = kNegInf;
    for (const SpanState& st : states) m = std::max(m, st.max[h]);
    if (m == kNegInf) continue;  // no token: O = 0, L = −inf
    double sum = 0;
    for (const SpanState& st : states) {
      if (st.max[h] == kNegInf) continue;  // an empty span's weight is 0, never multiplied
      const double w = std::exp(st.max[h] - m);
      sum += w * st.sum[h];
      for (int d = 0; d < s.dim; ++d) {
        r.o[std::size_t(h) * s.dim + d] += w * st.acc[std::size_t(h) * s.dim + d];
        r.abs[std::size_t(h) * s.dim + d] += w * st.abs[std::size_t(h) * s.dim + d];
      }
    }
    for (int d = 0; d < s.dim; ++d) {
      r.o[std::size_t(h) * s.dim + d] /= sum;
      r.abs[std::size_t(h) * s.dim + d] /= sum;
    }
    r.lse[h] = (m + std::log(sum)) * to_base;
  }
  return r;
}

double streamed_attention_bytes(const KvStreamShape& s, int threads) {
  const double hd = double(s.heads) * s.dim;
  const double state = 8.0 * (2 * hd + 2.0 * s.heads);
  const double g = double(s.heads) / std::max(1, s.kv_heads);
  const double chunk =
      8.0 * kStreamChunkTokens *
      (double(s.kv_heads) * s.qk_dim + (s.v_in_k ? 0.0 : double(s.kv_heads) * s.dim) + s.dim + g);
  const int spans = std::max(1, threads);
  return spans * (state + chunk) + 8.0 * (2 * hd + s.heads);
}

}  // namespace dcpsim::models
