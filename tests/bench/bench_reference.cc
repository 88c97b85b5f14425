// The streamed fp64 reference `hw run` checks one row against (models::streamed_attention): tokens per second
// of an MLA row (H = 128, one KV head, D_qk = 576, D = 512) and a GQA row (H = 64, eight KV heads, D = 128),
// the keys regenerated per chunk as the runner's check does (a SplitMix64 hash per element). Results in
// docs/PERFORMANCE.md, "Memory".
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "dcpsim/models/reference_stream.h"

namespace {

using dcpsim::models::KvStreamShape;

double hashed(std::uint64_t i) {
  i += 0x9e3779b97f4a7c15ull;
  i = (i ^ (i >> 30)) * 0xbf58476d1ce4e5b9ull;
  i = (i ^ (i >> 27)) * 0x94d049bb133111ebull;
  i ^= i >> 31;
  return static_cast<double>(i >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

void run(benchmark::State& state, KvStreamShape shape) {
  shape.tokens = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  const std::vector<double> q(std::size_t(shape.heads) * shape.qk_dim, 0.05);
  const std::int64_t kw = std::int64_t(shape.kv_heads) * shape.qk_dim,
                     vw = std::int64_t(shape.kv_heads) * shape.dim;
  const auto source = [&](std::int64_t first, std::int64_t count, double* k, double* v) {
    for (std::int64_t i = 0; i < count * kw; ++i) k[i] = hashed(std::uint64_t(first * kw + i));
    if (v != nullptr)
      for (std::int64_t i = 0; i < count * vw; ++i)
        v[i] = hashed(std::uint64_t(first * vw + i) + (1ull << 60));
  };
  for (auto _ : state) {
    auto row =
        dcpsim::models::streamed_attention(shape, q, 0.0, dcpsim::models::LseBase::kE, source, threads);
    benchmark::DoNotOptimize(row.lse.data());
  }
  state.SetItemsProcessed(state.iterations() * shape.tokens);
}

void BM_StreamedMla(benchmark::State& state) {
  run(state, KvStreamShape{128, 1, 576, 512, 0, true});
}
void BM_StreamedGqa(benchmark::State& state) {
  run(state, KvStreamShape{64, 8, 128, 128, 0, false});
}

}  // namespace

BENCHMARK(BM_StreamedMla)
    ->Args({1 << 16, 1})
    ->Args({1 << 16, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_StreamedGqa)
    ->Args({1 << 16, 1})
    ->Args({1 << 16, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
