// FlashInfer's MLA decode schedule, priced in its planner's cost units (see kernel_plan.h).
#include "dcpsim/models/kernel_plan.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "dcpsim/error.h"

namespace dcpsim::models {
namespace {

int64_t div_up(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// The chunk length for a mean load of `per_cluster` tokens: small loads in a few fixed steps, larger ones
// rounded up to a multiple of 256 tokens.
int64_t chunk_tokens(int64_t per_cluster) {
  if (per_cluster <= 8) return 32;
  if (per_cluster <= 16) return 64;
  if (per_cluster <= 32) return 128;
  if (per_cluster <= 64) return 192;
  return div_up(per_cluster, 256) * 256;
}

}  // namespace

int flashinfer_mla_tile_heads(int heads) {
  if (heads < 1) throw InputError("FlashInfer MLA plan: heads must be >= 1, got " + std::to_string(heads));
  if (heads <= 64) return heads;
  return static_cast<int>(div_up(heads, 128) * 128);
}

int flashinfer_mla_table_heads(int heads) {
  const int tile = flashinfer_mla_tile_heads(heads);
  if (heads <= 64) return heads;
  return tile == 128 ? std::max(heads, 72) : tile;
}

MlaPlanCost flashinfer_mla_plan_cost(int heads, std::span<const int64_t> tokens, int sms) {
  if (heads < 1 || sms < 2 || tokens.empty()) {
    throw InputError("FlashInfer MLA plan: expected heads >= 1, sms >= 2 and at least one row, got heads " +
                     std::to_string(heads) + ", sms " + std::to_string(sms) + ", " +
                     std::to_string(tokens.size()) + " rows");
  }
  MlaPlanCost c;
  c.cluster_ctas = heads > 64 ? 2 : 1;  // one query per row: the mean packed query length is `heads`
  c.tile_heads = 64 * c.cluster_ctas;
  c.tiles_per_row = static_cast<int>(div_up(heads, c.tile_heads));
  const int clusters = sms / c.cluster_ctas;
  int64_t total = 0;
  for (int64_t n : tokens) {
    if (n < 0) throw InputError("FlashInfer MLA plan: row lengths must be >= 0, got " + std::to_string(n));
    total += n * c.tiles_per_row;
  }
  c.kv_chunk = chunk_tokens(std::max<int64_t>(div_up(total, clusters), 1));
  c.mean_tokens = double(total) / double(clusters);

  // Least-loaded cluster first (ties: the lowest index; the planner's own tie order differs, its largest
  // load does not).
  using Load = std::pair<double, int>;
  std::priority_queue<Load, std::vector<Load>, std::greater<>> heap;
  for (int i = 0; i < clusters; ++i) heap.push({0.0, i});
  std::vector<int64_t> streamed(static_cast<std::size_t>(clusters), 0);
  std::vector<int> items(static_cast<std::size_t>(clusters), 0);
  for (int64_t n : tokens) {
    c.max_chunks = std::max(c.max_chunks, static_cast<int>(div_up(n, c.kv_chunk)));
    for (int tile = 0; tile < c.tiles_per_row; ++tile) {
      if (n > c.kv_chunk) {
        // Its merge: the tile's packed rows cut among max(n · cluster CTAs / chunk, 1) merge CTAs.
        const int tile_rows = std::min(c.tile_heads, heads - tile * c.tile_heads);
        const int64_t merge_ctas = std::max<int64_t>(n * c.cluster_ctas / c.kv_chunk, 1);
        c.merge_partials = std::max(c.merge_partials, static_cast<int>(div_up(n, c.kv_chunk)));
        c.merge_rows = std::max(c.merge_rows, static_cast<int>(div_up(tile_rows, merge_ctas)));
      }
      int64_t left = n;
      do {
        auto [load, cluster] = heap.top();
        heap.pop();
        const int64_t len = std::min(left, c.kv_chunk);
        load += 2.0 * c.tile_heads + double(len);
        const auto i = static_cast<std::size_t>(cluster);
        streamed[i] += len;
        ++items[i];
        if (load > c.critical) {
          c.critical = load;
          c.critical_tokens = streamed[i];
          c.critical_items = items[i];
        }
        heap.push({load, cluster});
        left -= len;
      } while (left > 0);
    }
  }
  return c;
}

DcpsimPlan dcpsim_attention_plan(bool mla, int group, int heads, std::span<const int64_t> tokens, int sms) {
  if (heads < 1 || group < 1 || sms < 1 || tokens.empty()) {
    throw InputError(
        "dcpsim attention plan: expected heads, group and sms >= 1 and at least one row, got heads " +
        std::to_string(heads) + ", group " + std::to_string(group) + ", sms " + std::to_string(sms) + ", " +
        std::to_string(tokens.size()) + " rows");
  }
  const int64_t kv = mla ? 1 : std::max(1, heads / group);
  const int64_t head_blocks = kv * div_up(mla ? heads : group, mla ? 64 : 16);
  const int64_t tile = mla ? 32 : 64, slots = int64_t(sms) * (mla ? 1 : 2);
  int64_t longest = 0;
  for (int64_t n : tokens) {
    if (n < 0) throw InputError("dcpsim attention plan: row lengths must be >= 0, got " + std::to_string(n));
    longest = std::max(longest, n);
  }
  const int64_t tiles = std::max<int64_t>(1, div_up(longest, tile));
  const int64_t blocks = int64_t(tokens.size()) * head_blocks;
  DcpsimPlan d;
  d.splits = std::clamp<int64_t>(slots / blocks, 1, std::min<int64_t>(tiles, 1024));
  d.waves = div_up(blocks * d.splits, slots);
  d.block_tokens = div_up(tiles, d.splits) * tile;
  return d;
}

double dcpsim_attention_makespan(bool mla, int group, int heads, std::span<const int64_t> tokens, int sms,
                                 double saturating) {
  const DcpsimPlan d = dcpsim_attention_plan(mla, group, heads, tokens, sms);
  if (!(saturating >= 1.0))
    throw InputError("dcpsim attention makespan: saturating blocks must be >= 1, got " +
                     std::to_string(saturating));
  const int64_t kv = mla ? 1 : std::max(1, heads / group);
  const int64_t head_blocks = kv * div_up(mla ? heads : group, mla ? 64 : 16);
  const std::size_t slots = static_cast<std::size_t>(sms) * (mla ? 1 : 2);
  // Every running block has streamed `done` tokens since the start (they all run at one rate); a block that
  // started at done = d0 with w tokens ends at d0 + w.
  std::priority_queue<double, std::vector<double>, std::greater<>> ends;
  double done = 0.0, time = 0.0;
  auto finish_next = [&] {
    const double rate = std::min(1.0, saturating / double(ends.size()));
    time += (ends.top() - done) / rate;
    done = ends.top();
    while (!ends.empty() && ends.top() <= done) ends.pop();
  };
  for (int64_t n : tokens)
    for (int64_t h = 0; h < head_blocks; ++h)
      for (int64_t s = 0; s < d.splits; ++s) {
        if (ends.size() == slots) finish_next();
        const int64_t w = std::clamp<int64_t>(n - s * d.block_tokens, 0, d.block_tokens);
        if (w > 0) ends.push(done + double(w));  // an empty split exits at once
      }
  while (!ends.empty()) finish_next();
  return time;
}

}  // namespace dcpsim::models
