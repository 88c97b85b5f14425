// Scenario checks and helpers: one place that decides which decode steps are possible.
#include "dcpsim/models/scenario.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "dcpsim/checked.h"
#include "dcpsim/error.h"

namespace dcpsim::models {
namespace {

void require_at_most(const char* name, long long value, long long max) {
  if (value > max) {
    throw InputError(std::string(name) + " = " + std::to_string(value) + " is above the limit of " +
                     std::to_string(max));
  }
}

// The KV bytes the whole step reads, in checked 64-bit arithmetic: every size the simulator and the runner
// derive from the scenario is at most this, so none of them overflows.
void require_sizes_fit(const Scenario& s) {
  const int64_t per_token =
      checked_mul(checked_mul(s.kv_heads, int64_t{s.qk_dim} + s.head_dim, "KV bytes"), 8, "KV bytes");
  int64_t total =
      checked_mul(checked_mul(s.rows(), s.heads, "output size"), int64_t{s.head_dim} + 2, "output size");
  total = checked_mul(checked_mul(total, s.dcp, "output size"), 8, "output size");
  for (int64_t c : s.contexts)
    total = checked_add(total, checked_mul(c, per_token, "KV bytes of a row"), "KV bytes");
  // Leave headroom for sums of a few such sizes.
  if (total > (int64_t{1} << 60)) {
    throw InputError("the step would read " + std::to_string(total) + " bytes, above the 2^60 limit");
  }
}

void require_positive(const char* name, long long value) {
  if (value < 1)
    throw InputError(std::string(name) + " = " + std::to_string(value) + " is not allowed (must be >= 1)");
}

}  // namespace

double Scenario::scale() const {
  if (softmax_scale > 0.0) return softmax_scale;
  return 1.0 / std::sqrt(static_cast<double>(qk_dim));
}

void Scenario::validate() const {
  require_at_most("dcp", dcp, kMaxDcp);
  require_at_most("heads", heads, kMaxHeads);
  require_at_most("kv_heads", kv_heads, kMaxHeads);
  require_at_most("head_dim", head_dim, kMaxHeadDim);
  require_at_most("qk_dim", qk_dim, kMaxHeadDim);
  require_at_most("interleave", interleave, 1 << 30);
  if (contexts.size() > static_cast<std::size_t>(kMaxRows)) {
    throw InputError("the batch has " + std::to_string(contexts.size()) + " rows; at most " +
                     std::to_string(kMaxRows) + " are allowed");
  }
  for (std::size_t b = 0; b < contexts.size(); ++b) {
    if (contexts[b] > kMaxTokens) {
      throw InputError("context of row " + std::to_string(b) + " = " + std::to_string(contexts[b]) +
                       " is above the limit of " + std::to_string(kMaxTokens) + " tokens");
    }
  }
  if (padded_rows < 0 || padded_rows > kMaxRows - static_cast<int>(contexts.size())) {
    throw InputError("padded_rows = " + std::to_string(padded_rows) + " must be in [0, " +
                     std::to_string(kMaxRows - static_cast<int>(contexts.size())) + "]");
  }
  require_positive("rows_per_kv", rows_per_kv);
  if (rows() % rows_per_kv != 0) {
    throw InputError("rows_per_kv = " + std::to_string(rows_per_kv) + " must divide the " +
                     std::to_string(rows()) + " rows (whole verify blocks)");
  }
  require_positive("dcp", dcp);
  require_positive("heads", heads);
  require_positive("kv_heads", kv_heads);
  require_positive("head_dim", head_dim);
  require_positive("qk_dim", qk_dim);
  require_positive("interleave", interleave);
  if (heads % kv_heads != 0) {
    throw InputError("kv_heads = " + std::to_string(kv_heads) +
                     " does not divide heads = " + std::to_string(heads));
  }
  if (qk_dim < head_dim) {
    throw InputError("qk_dim = " + std::to_string(qk_dim) +
                     " is smaller than head_dim = " + std::to_string(head_dim) + " (must be >= head_dim)");
  }
  if (!(softmax_scale >= 0.0) || !std::isfinite(softmax_scale)) {
    throw InputError("softmax_scale = " + std::to_string(softmax_scale) +
                     " is not allowed (finite, >= 0; 0 = 1/sqrt(qk_dim))");
  }
  if (out_dtype == DType::kFP8E4M3)
    throw InputError("out_dtype fp8 is not an output type (fp8 is a KV-cache type: --kv-dtype fp8)");
  if (contexts.empty()) throw InputError("the batch has no rows (need at least one context length)");
  for (std::size_t b = 0; b < contexts.size(); ++b) {
    if (contexts[b] < 0) {
      throw InputError("context of row " + std::to_string(b) + " = " + std::to_string(contexts[b]) +
                       " is negative (must be >= 0)");
    }
  }
  if (scatters_heads(strategy) && heads % dcp != 0) {
    throw InputError("heads = " + std::to_string(heads) +
                     " is not divisible by dcp = " + std::to_string(dcp) + ", which strategy " +
                     std::string(to_string(strategy)) + " needs (use ag-ar or change dcp)");
  }
  require_sizes_fit(*this);
}

std::string Scenario::label() const {
  std::string s = "dcp" + std::to_string(dcp) + " h" + std::to_string(heads) + " d" +
                  std::to_string(head_dim) + "/" + std::to_string(qk_dim) + " kv" + std::to_string(kv_heads) +
                  " b" + std::to_string(rows());
  if (padded_rows > 0) s += "+" + std::to_string(padded_rows);
  if (!contexts.empty()) {
    int64_t lo = contexts.front(), hi = contexts.front();
    for (int64_t c : contexts) {
      lo = std::min(lo, c);
      hi = std::max(hi, c);
    }
    s += " ctx" + std::to_string(lo);
    if (hi != lo) s += "-" + std::to_string(hi);
  }
  if (interleave != 1) s += " i" + std::to_string(interleave);
  s += " " + std::string(to_string(strategy)) + " " + std::string(to_string(launch));
  return s;
}

std::vector<int64_t> uniform_contexts(int rows, int64_t context) {
  if (rows < 0) throw InputError("rows = " + std::to_string(rows) + " is negative (must be >= 0)");
  if (context < 0) throw InputError("context = " + std::to_string(context) + " is negative (must be >= 0)");
  return std::vector<int64_t>(static_cast<std::size_t>(rows), context);
}

int64_t parse_token_count(std::string_view s) {
  const std::string text(s);
  auto bad = [&text]() {
    return InputError("token count '" + text +
                      "' is not a non-negative integer with an optional k or m suffix " +
                      "(e.g. 4096, 32k, 1m; k = 1024, m = 1048576)");
  };
  if (s.empty()) throw bad();
  int64_t multiplier = 1;
  const char last = s.back();
  if (last == 'k' || last == 'K') multiplier = 1024;
  if (last == 'm' || last == 'M') multiplier = 1024 * 1024;
  if (multiplier != 1) s.remove_suffix(1);
  if (s.empty()) throw bad();
  int64_t value = 0;
  for (char c : s) {
    if (c < '0' || c > '9') throw bad();
    if (value > (std::numeric_limits<int64_t>::max() - (c - '0')) / 10) throw bad();
    value = value * 10 + (c - '0');
  }
  if (value > kMaxTokens / multiplier) {
    throw InputError("token count '" + text + "' is above the limit of " + std::to_string(kMaxTokens) +
                     " tokens");
  }
  return value * multiplier;
}

}  // namespace dcpsim::models
