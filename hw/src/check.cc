// The exactness gate of `hw run`: the merged output every rank holds is compared with the fp64 no-DCP
// reference (models::full_attention) on sampled rows, regenerated on the host from the same counter-based
// inputs.
//
// Tolerance per element, from the roundings SPEC allows: the kernels round P to the input type for the P·V
// product (≤ 4·u_in of the weighted mean of |V|), AG strategies round each scaled partial and every partial
// sum of the reduction ((N + 2)·u_out), fp32-accumulating strategies round once (2·u_out); the scale of all
// of these is A = Σ_j p_j·|v_j| (attention with |V|), which bounds every partial sum.
//
// An fp8 KV cache (--kv-dtype fp8): the reference attends over what the cache holds, each K/V value rounded to
// e4m3 after the per-tensor scale, scale · round_to(e4m3, value / scale) (models/dtype.h, saturating as the
// device's __NV_SATFINITE conversion), so the e4m3 rounding of K/V is in the truth, not in the tolerance; the
// kernels then compute on those values dequantized to bf16 (exact: the scale is a power of two), and P is
// rounded to bf16 for P·V, so u_in is bf16's.
#include "check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <future>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "cuda_check.h"
#include "dcpsim/models/attention.h"
#include "dcpsim/models/dtype.h"
#include "dcpsim/models/reference.h"
#include "fill_hash.h"
#include "host_convert.h"
#include "step.h"

namespace dcpsim::hw {
namespace {

// The query as the runner stores it (bf16 beside an fp8 cache).
double q_value(const StepPlan& p, std::uint64_t stream, std::int64_t index) {
  const float f =
      static_cast<float>(ops::fill_value(stream, static_cast<std::uint64_t>(index), kInputAmplitude));
  return models::round_to(p.kv_fp8 ? models::DType::kBF16 : p.s.kv_dtype, static_cast<double>(f));
}

// A K/V value as the cache holds it; an fp8 cache's dequantized (the division by a power of two is exact
// in float, as on the device).
double kv_value(const StepPlan& p, std::uint64_t stream, std::int64_t index) {
  const float f =
      static_cast<float>(ops::fill_value(stream, static_cast<std::uint64_t>(index), kInputAmplitude));
  if (!p.kv_fp8) return models::round_to(p.s.kv_dtype, static_cast<double>(f));
  const double scale = p.kv_scale;
  return scale * models::round_to(models::DType::kFP8E4M3, static_cast<double>(f / p.kv_scale));
}

// Heads [h0, h1) of row `row` as a one-row reference problem over the whole KV cache (unsharded); for GQA the
// range covers whole KV-head groups and only their KV heads are built.
models::Problem row_problem(const StepPlan& p, int row, int h0, int h1) {
  const int g = p.H / p.Hkv;
  const int kv0 = p.Hkv == 1 ? 0 : h0 / g, kv1 = p.Hkv == 1 ? 1 : h1 / g;
  models::Problem q;
  q.rows = 1;
  q.heads = h1 - h0;
  q.kv_heads = kv1 - kv0;
  q.qk_dim = p.Dqk;
  q.dim = p.D;
  const std::int64_t S = p.contexts[row];
  q.contexts = {S};
  q.q.resize(std::size_t(q.heads) * p.Dqk);
  for (int h = h0; h < h1; ++h)
    for (int d = 0; d < p.Dqk; ++d)
      q.q[std::size_t(h - h0) * p.Dqk + d] = q_value(p, p.q_stream(), p.q_index(row, h, d));
  const int kw = q.kv_heads * p.Dqk, vw = q.kv_heads * p.D;
  std::vector<double> k(std::size_t(S) * kw), v(std::size_t(S) * vw);
  const std::int64_t base = p.global_row_base[row];
  for (std::int64_t t = 0; t < S; ++t) {
    for (int e = 0; e < kw; ++e)
      k[t * kw + e] = kv_value(p, p.k_stream(), (base + t) * p.k_width() + std::int64_t(kv0) * p.Dqk + e);
    for (int kh = 0; kh < q.kv_heads; ++kh)
      for (int d = 0; d < p.D; ++d)
        v[t * vw + kh * p.D + d] =
            p.mla ? k[t * kw + kh * p.Dqk + d]
                  : kv_value(p, p.v_stream(), (base + t) * p.v_width() + std::int64_t(kv0 + kh) * p.D + d);
  }
  q.k = {std::move(k)};
  q.v = {std::move(v)};
  return q;
}

// The fp64 truth of one row: O [H][D] and L [H], and A [H][D], attention with |V| (the bound's scale).
struct RowTruth {
  std::vector<double> o, l, abs;
};

void truth_of_heads(const StepPlan& p, int row, int h0, int h1, RowTruth& t) {
  models::Problem prob = row_problem(p, row, h0, h1);
  models::AttentionOptions o;
  o.base = p.s.lse_base;
  o.scale = p.s.scale();
  o.compute = models::DType::kF64;
  o.out_dtype = models::DType::kF64;
  o.lse_dtype = models::DType::kF64;
  o.empty = models::EmptyRowMarker::kNegInfZero;
  const models::Partial truth = models::full_attention(prob, o);
  for (auto& x : prob.v[0]) x = std::fabs(x);
  const models::Partial abs = models::full_attention(prob, o);
  for (int h = h0; h < h1; ++h) {
    t.l[h] = truth.l(0, h - h0);
    for (int d = 0; d < p.D; ++d) {
      t.o[std::size_t(h) * p.D + d] = truth.o(0, h - h0, d);
      t.abs[std::size_t(h) * p.D + d] = abs.o(0, h - h0, d);
    }
  }
}

// Split over head ranges (whole KV-head groups) so a long row uses every core.
RowTruth row_truth(const StepPlan& p, int row) {
  RowTruth t;
  t.o.resize(std::size_t(p.H) * p.D);
  t.abs.resize(t.o.size());
  t.l.resize(p.H);
  const int g = p.H / p.Hkv, unit = p.Hkv == 1 ? 1 : g;
  const int units = p.H / unit;
  const int parts = std::max(1, std::min<int>(units, static_cast<int>(std::thread::hardware_concurrency())));
  std::vector<std::future<void>> f;
  for (int i = 0; i < parts; ++i) {
    const int h0 = (units * i / parts) * unit, h1 = (units * (i + 1) / parts) * unit;
    if (h1 > h0)
      f.push_back(std::async(std::launch::async, [&, h0, h1] { truth_of_heads(p, row, h0, h1, t); }));
  }
  for (auto& x : f) x.get();
  return t;
}

// The same inputs give the same truth for every strategy of a `--strategy all` run: keep the rows computed.
std::string truth_key(const StepPlan& p, int row) {
  std::string k = std::to_string(p.seed) + "/" + std::to_string(p.H) + "/" + std::to_string(p.Hkv) + "/" +
                  std::to_string(p.Dqk) + "/" + std::to_string(p.D) + "/" + std::to_string(p.contexts[row]) +
                  "/" + std::to_string(p.global_row_base[row]) + "/" + std::to_string(row) + "/" +
                  std::to_string(p.rows_total) + "/" + std::to_string(p.gather_q ? p.J : 0) + "/" +
                  std::string(models::to_string(p.s.lse_base)) + "/" +
                  std::string(models::to_string(p.s.kv_dtype)) + "/" + std::to_string(p.s.scale());
  return k;
}

RowTruth cached_truth(const StepPlan& p, int row) {
  static std::mutex mu;
  static std::map<std::string, RowTruth> cache;
  const std::string key = truth_key(p, row);
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  RowTruth t = row_truth(p, row);
  std::lock_guard<std::mutex> lock(mu);
  if (cache.size() > 64) cache.clear();
  cache.emplace(key, t);
  return t;
}

std::vector<int> pick_rows(const StepPlan& p, int check_rows) {
  std::vector<int> rows;
  const int want = check_rows < 0 ? (p.B <= 16 ? p.B : 4) : std::min(check_rows, p.B);
  for (int i = 0; i < want; ++i)
    rows.push_back(want == 1 ? 0 : int((std::int64_t(i) * (p.B - 1)) / (want - 1)));
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  if (p.rows_total > p.B) rows.push_back(p.rows_total - 1);  // a padding row must come out empty
  return rows;
}

}  // namespace

CheckResult check_outputs(const StepPlan& p, const RunConfig& c, const std::vector<RankOutputs>& outputs) {
  const std::vector<int> rows = pick_rows(p, c.check_rows);

  const bool ag =
      p.N > 1 && (p.s.strategy == models::Strategy::kAgRs || p.s.strategy == models::Strategy::kAgAr);
  const double u_in = models::unit_roundoff(p.kv_fp8 ? models::DType::kBF16 : p.s.kv_dtype),
               u_out = models::unit_roundoff(p.s.out_dtype);
  const double coeff = 4 * u_in + (ag ? p.N + 2 : 2) * u_out + 64 * std::ldexp(1.0, -24);

  CheckResult r;
  std::vector<double> got, want;
  for (int row : rows) {
    const bool padding = row >= p.B;
    RowTruth t;
    if (!padding) t = cached_truth(p, row);
    for (const RankOutputs& ro : outputs) {
      for (int j = 0; j < ro.heads; ++j) {
        const int h = ro.head_begin + j * ro.head_stride;
        if (!ro.lse.empty()) {
          const double gl = ro.lse[std::size_t(row) * ro.lse_row_stride + ro.lse_offset + j];
          const double tl = padding ? -std::numeric_limits<double>::infinity() : t.l[h];
          if (std::isinf(tl) || std::isinf(gl) || std::isnan(gl)) {
            if (!(gl == tl)) ++r.mismatched_nonfinite;
          } else {
            r.lse_max_abs = std::max(r.lse_max_abs, std::fabs(gl - tl) / std::max(1.0, std::fabs(tl)));
          }
        }
        for (int d = 0; d < p.D; ++d) {
          const double g = ro.out[(std::size_t(row) * ro.heads + j) * p.D + d];
          const double w = padding ? 0.0 : t.o[std::size_t(h) * p.D + d];
          const double bound = padding ? 0.0 : coeff * t.abs[std::size_t(h) * p.D + d] + 1e-30;
          got.push_back(g);
          want.push_back(w);
          const double err = std::fabs(g - w);
          if (std::isnan(err) || (padding && err != 0)) {
            ++r.mismatched_nonfinite;
          } else if (!padding) {
            r.worst_bound = std::max(r.worst_bound, err / bound);
          }
        }
      }
    }
  }
  const models::ErrorStats s = models::compare(got, want);
  r.rows_checked = static_cast<int>(rows.size());
  r.rel_l2 = s.rel_l2;
  r.max_abs = s.max_abs;
  r.mismatched_nonfinite += s.mismatched_nonfinite;
  r.passed = r.worst_bound <= 1.0 && r.lse_max_abs <= 1e-4 && r.mismatched_nonfinite == 0;
  char line[320];
  std::snprintf(line, sizeof line,
                "check %s: %d rows, rel_l2 %.3e, max_abs %.3e, worst err/bound %.3f, lse max err %.2e, "
                "non-finite mismatches %lld",
                r.passed ? "passed" : "FAILED", r.rows_checked, r.rel_l2, r.max_abs, r.worst_bound,
                r.lse_max_abs, static_cast<long long>(r.mismatched_nonfinite));
  r.summary = line;
  return r;
}

RankOutputs download_outputs(const StepPlan& p, const RankState& rank) {
  DCPSIM_CUDA(cudaSetDevice(rank.device));
  DCPSIM_CUDA(cudaStreamSynchronize(rank.stream));
  const FinalOutput f = final_output(p, rank);
  RankOutputs o;
  o.head_begin = f.head_begin;
  o.heads = f.heads;
  o.head_stride = f.head_stride;
  o.lse_offset = f.lse_offset;
  o.lse_row_stride = f.lse_row_stride;
  const std::size_t count = std::size_t(p.rows_total) * f.heads * p.D;
  o.out = from_device_bytes(p.out, download<std::uint8_t>(*f.out, count * ops::elem_bytes(p.out)));
  if (f.lse != nullptr)
    o.lse = to_doubles(download<float>(*f.lse, std::size_t(p.rows_total) * f.lse_row_stride));
  return o;
}

}  // namespace dcpsim::hw
