#pragma once
// One rank's device state for a measured step: inputs (its Q block and KV shard, generated on the device),
// the buffers every phase reads and writes, timing events and optional row stamps.
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "device_buffer.h"
#include "gpu_timeline.h"
#include "plan.h"

namespace dcpsim::hw {

struct RowStreamRank;  // row_stream.h

// Buffers a collective names (the emulated exchange reads every rank's copy of the same buffer).
enum class Buf {
  kQLocal,
  kQAll,
  kLse,
  kLseAll,
  kO,
  kRsSend,
  kOut,
  kA2aSend,
  kA2aRecv,
  kA2aLseSend,
  kA2aLseRecv
};

// A strategy's own per-rank state (windows, pointer tables, counters), kept alive with the rank.
struct MergeState {
  virtual ~MergeState() = default;
};

struct RankState {
  int rank = 0;
  int device = 0;
  cudaStream_t stream = nullptr;
  bool owns_stream = false;

  DeviceBuffer q_local,
      q_all;          // [B'][H/N][D_qk] and [N][B'][H/N][D_qk] (no gather: q_local is [B'][H][D_qk])
  DeviceBuffer k, v;  // shard [Σ len][H_kv][D_qk], [Σ len][H_kv][D] (GQA)
  DeviceBuffer kv_offset, kv_len, global_base;  // rows start on KV pages (kv_page_tokens) for FlashInfer
  std::vector<std::int64_t> kv_offset_host;
  std::vector<int> kv_len_host;
  std::int64_t max_len = 0;
  std::unique_ptr<ops::FlashInferAttention>
      flashinfer;                           // planned in prepare_rank when p.attention is FlashInfer
  DeviceBuffer o, lse, workspace;           // local attention: [B'][H][D] out type, [B'][H] fp32
  DeviceBuffer lse_all;                     // [N][B'][H]
  DeviceBuffer rs_send;                     // AG+RS: [N][B'][H/N][D]
  DeviceBuffer out;                         // final: [B'][H/N][D] (RS, A2A, direct) or [B'][H][D] (AR)
  DeviceBuffer merged_lse;                  // [B'][H] (AG) or [B'][H/N] (A2A, direct)
  DeviceBuffer a2a_send, a2a_recv;          // [N][B'][H/N][D + P] (a2a-2call: [N][B'][H/N][D])
  DeviceBuffer a2a_lse_send, a2a_lse_recv;  // a2a-2call: [N][B'][H/N] fp32
  DeviceBuffer error;                       // merges that wait on flags: 1 + the rank whose flag never came
  std::unique_ptr<MergeState> merge;        // what else the strategy keeps (strategy_*.cc)
  // Row stamps: [0] step origin, [1] all-rows-ready after a collective; then lse_ready[B'], out_ready[B'];
  // row counters [2][B'].
  DeviceBuffer stamps, stamp_counters;
  std::unique_ptr<RowStreamRank> row_stream;  // row-stream: windows, counters, its own streams

  std::vector<cudaEvent_t> ev_begin, ev_end;  // per phase of the plan (recorded with --timing events only)
  cudaEvent_t ev_step_begin = nullptr, ev_step_end = nullptr;  // around the whole step, always
  Timing timing = Timing::kEvents;                             // what enqueue_phase records
  GpuTimeline* timeline = nullptr;                             // CUPTI: tags what this rank enqueues

  RankState() = default;
  RankState(const RankState&) = delete;
  RankState& operator=(const RankState&) = delete;
  ~RankState();

  void* buf(Buf b) const;
};

// Allocates and fills rank `rank`'s state on `device` (made current), the strategy's buffers included.
// `stream` null: the rank creates its own.
std::unique_ptr<RankState> make_rank_state(const StepPlan& p, const RunConfig& c, int rank, int device,
                                           cudaStream_t stream);

using Ranks = std::vector<std::unique_ptr<RankState>>;

}  // namespace dcpsim::hw
