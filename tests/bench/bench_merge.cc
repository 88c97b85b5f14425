// CPU reference merge throughput: (row, head) pairs merged per second for each strategy and a few decode
// shapes. Partials are generated directly (random O in the output dtype, fp32 LSEs with some empty shards) so
// the benchmark measures the merge alone, not local attention.
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <benchmark/benchmark.h>

#include "dcpsim/models/dtype.h"
#include "dcpsim/models/merge.h"

namespace {

using namespace dcpsim::models;

std::vector<Partial> random_partials(int ranks, int rows, int heads, int dim, DType out) {
  std::mt19937_64 rng(12345);
  std::uniform_real_distribution<double> value(-2.0, 2.0), lse(-4.0, 12.0);
  std::vector<Partial> parts;
  for (int r = 0; r < ranks; ++r) {
    Partial p{OutLayout::dense(rows, heads, dim), {}, LseLayout::dense(rows, heads), {}};
    p.out.resize(static_cast<std::size_t>(p.out_layout.storage_size()));
    for (double& x : p.out) x = round_to(out, value(rng));
    p.lse.resize(static_cast<std::size_t>(p.lse_layout.storage_size()));
    for (double& l : p.lse)
      l = (rng() % 16 == 0) ? -std::numeric_limits<double>::infinity() : round_to(DType::kF32, lse(rng));
    parts.push_back(std::move(p));
  }
  return parts;
}

// Args: strategy index, N, B, H, D. Output dtype bf16, fp32 accumulation (what the kernels do).
void BM_Merge(benchmark::State& state) {
  const Strategy strategy = all_strategies()[static_cast<std::size_t>(state.range(0))];
  const int ranks = static_cast<int>(state.range(1)), rows = static_cast<int>(state.range(2));
  const int heads = static_cast<int>(state.range(3)), dim = static_cast<int>(state.range(4));
  const std::vector<Partial> parts = random_partials(ranks, rows, heads, dim, DType::kBF16);
  MergeOptions options;
  options.strategy = strategy;
  options.out_dtype = DType::kBF16;
  for (auto _ : state) {
    MergeResult m = merge(parts, options);
    benchmark::DoNotOptimize(m.out.data());
  }
  state.SetItemsProcessed(state.iterations() * rows * heads);
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(ranks) * rows * heads *
                          (dim * 2 + 4));
  state.SetLabel(std::string(to_string(strategy)) + " N=" + std::to_string(ranks) +
                 " B=" + std::to_string(rows) + " H=" + std::to_string(heads) + " D=" + std::to_string(dim));
}

void shapes(benchmark::internal::Benchmark* b) {
  for (int strategy : {0, 2, 3}) {  // ag-rs, a2a, direct (ag-ar and row-stream share their arithmetic)
    for (int ranks : {2, 8}) {
      for (int dim : {128, 512}) b->Args({strategy, ranks, 64, 128, dim});
    }
  }
}

BENCHMARK(BM_Merge)->Apply(shapes)->Unit(benchmark::kMillisecond);

}  // namespace
