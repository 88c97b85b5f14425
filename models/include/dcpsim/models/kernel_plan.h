#pragma once
// How the attention kernels dcpsim prices from tables divide a batch among the SMs: their schedules, which
// the table interpolation follows between measured shapes (cost_attention.cc).
//
// FlashInfer's MLA decode kernel, from the algorithm its planner publishes
// (MLAPlan in include/flashinfer/attention/scheduler.cuh, flashinfer-python 0.7.2.post1 as
// scripts/fetch_flashinfer.sh pins it): query heads go in 64-row CTA tiles, or 128-row tiles of two-CTA
// clusters once a row has more than 64 of them; every (row, tile) is cut into KV chunks of one length (a
// rounded share of the batch's tokens per cluster); chunks go one by one to the least-loaded cluster. The
// kernel is persistent: its time follows the most loaded cluster and, where rows are split into many chunks,
// the partials it then merges per row; both move in steps between the shapes a table measured, and the
// attention table's interpolation follows them (cost_attention.cc).
#include <cstdint>
#include <span>

namespace dcpsim::models {

struct MlaPlanCost {
  int cluster_ctas = 1;         // CTAs per cluster: 2 once a row's heads exceed one 64-row tile
  int tile_heads = 64;          // query heads per cluster tile
  int tiles_per_row = 1;        // ceil(heads / tile_heads)
  int64_t kv_chunk = 0;         // KV tokens per chunk (the planner's kv_len_limit)
  double critical = 0.0;        // the most loaded cluster's cost: per chunk, 2 · tile_heads + its tokens
  int64_t critical_tokens = 0;  // the KV tokens that cluster streams
  int critical_items = 0;       // the chunks that cluster runs
  double mean_tokens = 0.0;     // KV tokens streamed per cluster, all clusters together
  int max_chunks = 1;           // the most chunks of one row: the partials the kernel merges for it
  // The merge stage after the grid barrier (split rows only; 0 without one): the most partials one merged
  // row reads, and the most packed (row, head) rows one merge CTA handles.
  int merge_partials = 0;
  int merge_rows = 0;
};

// The plan for one query per row, `tokens[b]` KV tokens in row b (0: an empty row, one chunk of no tokens),
// on `sms` SMs. InputError for heads < 1, sms < 2, no rows or a negative length.
MlaPlanCost flashinfer_mla_plan_cost(int heads, std::span<const int64_t> tokens, int sms);

// The heads FlashInfer's MLA kernel computes for `heads` query heads: H itself up to one 64-head tile (one
// CTA per tile; the table measures 16, 32 and 64), whole 128-head cluster tiles above (H = 144 computes what
// H = 256 does).
int flashinfer_mla_tile_heads(int heads);

// Where a table of FlashInfer's MLA kernel is read for `heads`: H itself up to 128 (one CTA per 64-head tile
// up to 64, one two-CTA cluster above; H = 80 on one H200 takes 15% less than H = 128, so the tile alone does
// not price it), but at least 72 above 64 (the first two-CTA value such a table holds: the schedule changes
// between 64 and 65, and nothing is interpolated across that); whole 128-head cluster tiles above 128. A
// table measured at 64 and 128 alone (before 2026-12-02, evening) is then read between them for H = 72-127.
int flashinfer_mla_table_heads(int heads);

// dcpsim's split kernel (hw/ops/attention.cu: attention_splits, launch_split): one grid of rows × head blocks
// × splits; head blocks of 64 MLA heads or of 16 query heads of one KV head; KV tiles of 32 (MLA) or 64 (GQA)
// tokens; 1 (MLA) or 2 (GQA) blocks resident per SM; as many splits of the longest row's tiles as fill the
// SMs once (at least 1, at most the tiles). Every row then goes through the split combine, which reads
// `splits` partials per (row, head).
struct DcpsimPlan {
  int64_t splits = 1;
  int64_t waves = 1;         // blocks / resident slots, rounded up
  int64_t block_tokens = 0;  // KV tokens one block streams (its share of the longest row)
};
// `mla`: the 576-wide latent (one KV head); else GQA with `group` query heads per KV head. InputError for
// heads < 1, group < 1, sms < 1, no rows or a negative length.
DcpsimPlan dcpsim_attention_plan(bool mla, int group, int heads, std::span<const int64_t> tokens, int sms);

// The same kernel's time on rows of any lengths, in units of one block streaming one KV token alone: its
// blocks start in launch order (splits, then head blocks, then rows) as resident slots free, each streaming
// its split of its row; the running blocks share the kernel's bandwidth, none faster than one block alone
// (`saturating`: how many blocks the kernel's bandwidth feeds at one block's most, >= 1). Uniform rows run
// in whole waves; with a few long rows among short ones, the long rows' blocks outlast the others and then
// stream alone. InputError as dcpsim_attention_plan, or for saturating < 1.
double dcpsim_attention_makespan(bool mla, int group, int heads, std::span<const int64_t> tokens, int sms,
                                 double saturating);

}  // namespace dcpsim::models
