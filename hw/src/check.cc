// The exactness gate of `hw run`: the merged output every rank holds is compared with the fp64 no-DCP
// reference (models::streamed_attention: attention over the whole KV cache, streamed) on sampled rows,
// regenerated on the host from the same counter-based inputs.
//
// Tolerance per element, from the roundings SPEC allows: the kernels round P to the input type for the P·V
// product (≤ 4·u_in of the weighted mean of |V|), AG strategies round each scaled partial and every partial
// sum of the reduction ((N + 2)·u_out), fp32-accumulating strategies round once (2·u_out); the scale of all
// of these is A = Σ_j p_j·|v_j| (attention with |V|), which bounds every partial sum.
//
// An fp8 KV cache (--kv-dtype fp8): the reference attends over what the cache holds, each K/V value rounded
// to e4m3 after the per-tensor scale, scale · round_to(e4m3, value / scale) (models/dtype.h, saturating as
// the device's __NV_SATFINITE conversion), so the e4m3 rounding of K/V is in the truth, not in the tolerance;
// the kernels then compute on those values dequantized to bf16 (exact: the scale is a power of two), and P is
// rounded to bf16 for P·V, so u_in is bf16's.
#include "check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "cuda_check.h"
#include "dcpsim/models/attention.h"
#include "dcpsim/models/dtype.h"
#include "dcpsim/models/reference.h"
#include "dcpsim/models/reference_stream.h"
#include "fill_hash.h"
#include "host_convert.h"
#include "step.h"

namespace dcpsim::hw {
namespace {

constexpr int kCachedRows = 64;  // rows of truth kept across the strategies of one --strategy all run

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

// The fp64 truth of one row: O [H][D] and L [H], and A [H][D], attention with |V| (the bound's scale).
struct RowTruth {
  std::vector<double> o, l, abs;
};

// Streams the row's whole KV cache (unsharded), regenerated chunk by chunk from the counter-based inputs,
// through an online softmax on every core: the host holds O(threads × H × D), never the row's K/V (4.6 GB of
// doubles at 1M tokens for MLA; once per thread, that was 138 GB on a 16-core host).
RowTruth row_truth(const StepPlan& p, int row) {
  std::vector<double> q(std::size_t(p.H) * p.Dqk);
  for (int h = 0; h < p.H; ++h)
    for (int d = 0; d < p.Dqk; ++d)
      q[std::size_t(h) * p.Dqk + d] = q_value(p, p.q_stream(), p.q_index(row, h, d));
  const std::int64_t base = p.global_row_base[row], kw = p.k_width(), vw = p.v_width();
  const auto source = [&](std::int64_t first, std::int64_t count, double* k, double* v) {
    for (std::int64_t t = 0; t < count; ++t) {
      const std::int64_t token = base + first + t;
      for (std::int64_t e = 0; e < kw; ++e) k[t * kw + e] = kv_value(p, p.k_stream(), token * kw + e);
      if (v != nullptr)
        for (std::int64_t e = 0; e < vw; ++e) v[t * vw + e] = kv_value(p, p.v_stream(), token * vw + e);
    }
  };
  const models::KvStreamShape shape{p.H, p.Hkv, p.Dqk, p.D, p.contexts[row], p.mla};
  models::StreamedRow r =
      models::streamed_attention(shape, q, p.s.scale(), p.s.lse_base, source, reference_threads());
  return {std::move(r.o), std::move(r.lse), std::move(r.abs)};
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
  if (cache.size() >= kCachedRows) cache.clear();
  cache.emplace(key, t);
  return t;
}

}  // namespace

int reference_threads() {
  const unsigned cores = std::thread::hardware_concurrency();
  return static_cast<int>(std::clamp(cores == 0 ? 1u : cores, 1u, 64u));
}

double check_host_bytes(const StepPlan& p, int check_rows) {
  const double rows = static_cast<double>(checked_rows(p, check_rows).size());
  const double hd = double(p.H) * p.D;
  const double truth = 8.0 * (2 * hd + p.H);  // one RowTruth
  const models::KvStreamShape shape{p.H, p.Hkv, p.Dqk, p.D, 0, p.mla};
  // The cache keeps up to kCachedRows rows (across a --strategy all run); the outputs and the compared values
  // of the checked rows: every rank's kept heads, AR keeps all H on every rank.
  const double kept = p.s.strategy == models::Strategy::kAgAr ? double(p.N) : 1.0;
  const double outputs = 8.0 * rows * (kept * hd + kept * p.H) + 2 * 8.0 * rows * kept * hd;
  return models::streamed_attention_bytes(shape, reference_threads()) +
         std::min<double>(rows + 1, kCachedRows + 1) * truth + outputs;
}

std::vector<int> checked_rows(const StepPlan& p, int check_rows) {
  std::vector<int> rows;
  const int want = check_rows < 0 ? (p.B <= 16 ? p.B : 4) : std::min(check_rows, p.B);
  for (int i = 0; i < want; ++i)
    rows.push_back(want == 1 ? 0 : int((std::int64_t(i) * (p.B - 1)) / (want - 1)));
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  if (p.rows_total > p.B) rows.push_back(p.rows_total - 1);  // a padding row must come out empty
  return rows;
}

CheckResult check_outputs(const StepPlan& p, const RunConfig& c, const std::vector<RankOutputs>& outputs) {
  const std::vector<int> rows = checked_rows(p, c.check_rows);

  const bool ag =
      p.N > 1 && (p.s.strategy == models::Strategy::kAgRs || p.s.strategy == models::Strategy::kAgAr);
  const double u_in = models::unit_roundoff(p.kv_fp8 ? models::DType::kBF16 : p.s.kv_dtype),
               u_out = models::unit_roundoff(p.s.out_dtype);
  const double coeff = 4 * u_in + (ag ? p.N + 2 : 2) * u_out + 64 * std::ldexp(1.0, -24);

  CheckResult r;
  std::vector<double> got, want;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const int row = rows[i];
    const bool padding = row >= p.B;
    RowTruth t;
    if (!padding) t = cached_truth(p, row);
    for (const RankOutputs& ro : outputs) {
      for (int j = 0; j < ro.heads; ++j) {
        const int h = ro.head_begin + j * ro.head_stride;
        if (!ro.lse.empty()) {
          const double gl = ro.lse[i * ro.heads + j];
          const double tl = padding ? -std::numeric_limits<double>::infinity() : t.l[h];
          if (std::isinf(tl) || std::isinf(gl) || std::isnan(gl)) {
            if (!(gl == tl)) ++r.mismatched_nonfinite;
          } else {
            r.lse_max_abs = std::max(r.lse_max_abs, std::fabs(gl - tl) / std::max(1.0, std::fabs(tl)));
          }
        }
        for (int d = 0; d < p.D; ++d) {
          const double g = ro.out[(i * ro.heads + j) * p.D + d];
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

RankOutputs download_outputs(const StepPlan& p, const RankState& rank, const std::vector<int>& rows) {
  DCPSIM_CUDA(cudaSetDevice(rank.device));
  DCPSIM_CUDA(cudaStreamSynchronize(rank.stream));
  const FinalOutput f = final_output(p, rank);
  RankOutputs o;
  o.head_begin = f.head_begin;
  o.heads = f.heads;
  o.head_stride = f.head_stride;
  const std::size_t row_bytes = std::size_t(f.heads) * p.D * ops::elem_bytes(p.out);
  std::vector<std::uint8_t> bytes(row_bytes);
  std::vector<float> lse(f.heads);
  for (int row : rows) {
    const auto* src = static_cast<const std::uint8_t*>(f.out->get()) + std::size_t(row) * row_bytes;
    DCPSIM_CUDA(cudaMemcpy(bytes.data(), src, row_bytes, cudaMemcpyDeviceToHost));
    const std::vector<double> values = from_device_bytes(p.out, bytes);
    o.out.insert(o.out.end(), values.begin(), values.end());
    if (f.lse == nullptr) continue;
    const float* l = f.lse->as<float>() + std::size_t(row) * f.lse_row_stride + f.lse_offset;
    DCPSIM_CUDA(cudaMemcpy(lse.data(), l, lse.size() * sizeof(float), cudaMemcpyDeviceToHost));
    o.lse.insert(o.lse.end(), lse.begin(), lse.end());
  }
  return o;
}

}  // namespace dcpsim::hw
