// Deterministic problem generation. The generator is written out (SplitMix64, then an affine map to a uniform
// interval) instead of using <random> distributions, whose output differs between standard libraries.
#include "dcpsim/models/problem.h"

#include <cmath>
#include <string>

#include "dcpsim/error.h"
#include "dcpsim/models/dtype.h"

namespace dcpsim::models {
namespace {

class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform on [-√3·std, √3·std): mean 0, standard deviation `std`.
  double uniform(double std) {
    const double u = static_cast<double>(next() >> 11) * 0x1.0p-53;
    return (2.0 * u - 1.0) * std::sqrt(3.0) * std;
  }

 private:
  std::uint64_t state_;
};

void fill(std::vector<double>& v, std::int64_t count, SplitMix64& rng, double std, DType type) {
  v.resize(static_cast<std::size_t>(count));
  for (double& x : v) x = round_to(type, rng.uniform(std));
}

}  // namespace

void Problem::validate() const {
  if (rows < 0 || heads < 1 || kv_heads < 1 || dim < 1 || qk_dim < dim) {
    throw InputError("problem: impossible geometry rows=" + std::to_string(rows) +
                     " heads=" + std::to_string(heads) + " kv_heads=" + std::to_string(kv_heads) +
                     " dim=" + std::to_string(dim) + " qk_dim=" + std::to_string(qk_dim) +
                     " (need heads, kv_heads, dim >= 1 and qk_dim >= dim)");
  }
  if (heads % kv_heads != 0) {
    throw InputError("problem: kv_heads = " + std::to_string(kv_heads) +
                     " does not divide heads = " + std::to_string(heads));
  }
  const auto n = static_cast<std::size_t>(rows);
  if (contexts.size() != n || k.size() != n || v.size() != n) {
    throw InputError("problem: " + std::to_string(rows) + " rows but " + std::to_string(contexts.size()) +
                     " contexts, " + std::to_string(k.size()) + " K and " + std::to_string(v.size()) +
                     " V buffers");
  }
  if (q.size() != n * static_cast<std::size_t>(heads) * static_cast<std::size_t>(qk_dim)) {
    throw InputError("problem: Q holds " + std::to_string(q.size()) +
                     " values, expected rows x heads x qk_dim");
  }
  for (std::size_t b = 0; b < n; ++b) {
    const auto s = static_cast<std::size_t>(contexts[b]);
    if (contexts[b] < 0 || k[b].size() != s * kv_heads * qk_dim || v[b].size() != s * kv_heads * dim) {
      throw InputError("problem: row " + std::to_string(b) + " has context " + std::to_string(contexts[b]) +
                       " but K/V buffers of " + std::to_string(k[b].size()) + "/" +
                       std::to_string(v[b].size()) + " values");
    }
  }
}

Problem generate_problem(int heads, int kv_heads, int qk_dim, int dim,
                         const std::vector<std::int64_t>& contexts, const GenerateOptions& options) {
  Problem p;
  p.rows = static_cast<int>(contexts.size());
  p.heads = heads;
  p.kv_heads = kv_heads;
  p.qk_dim = qk_dim;
  p.dim = dim;
  p.contexts = contexts;
  p.k.resize(contexts.size());
  p.v.resize(contexts.size());
  if (heads < 1 || kv_heads < 1 || dim < 1 || qk_dim < dim || heads % kv_heads != 0) p.validate();  // throws
  for (std::int64_t c : contexts) {
    if (c < 0) throw InputError("problem: context " + std::to_string(c) + " is negative (must be >= 0)");
  }
  SplitMix64 rng(options.seed);
  // An fp8 KV cache (scale 1: the generated values lie well inside e4m3's range) with a 16-bit query.
  fill(p.q, static_cast<std::int64_t>(p.rows) * heads * qk_dim, rng, options.q_std,
       query_dtype(options.input_dtype));
  for (int b = 0; b < p.rows; ++b) {
    fill(p.k[b], contexts[b] * kv_heads * qk_dim, rng, options.kv_std, options.input_dtype);
    fill(p.v[b], contexts[b] * kv_heads * dim, rng, options.kv_std, options.input_dtype);
  }
  p.validate();
  return p;
}

Problem generate_problem(const Scenario& scenario, const GenerateOptions& options) {
  scenario.validate();
  return generate_problem(scenario.heads, scenario.kv_heads, scenario.qk_dim, scenario.head_dim,
                          scenario.contexts, options);
}

}  // namespace dcpsim::models
