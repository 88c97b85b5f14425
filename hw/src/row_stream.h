#pragma once
// The row-streaming merge in the step runner (docs/SPEC.md "row-stream"). Each rank's attention (dcpsim's
// kernel) pushes every finished row's O and LSE from its epilogue into its owners' receive windows with a
// per-row flag, and each owner's combine, a bounded persistent grid on a stream of its own at the greatest
// priority, merges rows as their flags arrive; once every producer is done a tail grid of the same kernel,
// as large as the device allows, takes the rows the streaming grid has not reached.
//
// Emulation (N logical ranks on one device) runs the ranks concurrently: every rank has its own attention
// and combine streams forked from the step's stream, and dcpsim's attention is launched in row chunks taken
// round-robin over the ranks (each round about half a wave of the device), so the block scheduler, which
// starts kernels in launch order, keeps the logical ranks in step as N devices would be. The streaming
// combines are launched after the producers and together hold at most 1/16 of the device's
// multiprocessors, so they can never starve the attention they wait for; the tail combines wait for every
// rank's attention (on several devices: for the local attention, then for the flags). The windows are plain
// device buffers addressed through a table of peer pointers (RowPush), the interface NCCL's device-API window
// pointers will fill for several devices.
#include <cstdint>
#include <vector>

#include "dcpsim/hw/runner.h"
#include "device_buffer.h"
#include "exchange.h"
#include "plan.h"
#include "rank_state.h"
#include "timing.h"

namespace dcpsim::hw {

struct RowStreamRank {
  DeviceBuffer win_o, win_lse, win_flags;   // this rank's windows, both parities (row_stream_layout.h)
  DeviceBuffer counters;                    // [0] the epoch, then this rank's push counters [B'][N]
  DeviceBuffer error;                       // int[2]: 1 + the rank whose row never came, the row
  DeviceBuffer claim;                       // the combines' item counter, zeroed each step
  DeviceBuffer probe;                       // --row-probe: [items][kProbeSlots] stage times, zeroed each step
  DeviceBuffer dst_o, dst_lse, dst_flags;   // [2N] the owners' windows as this rank addresses them
  ops::RowPush push;                        // the target, rows from 0
  int splits = 1;                           // dcpsim's attention: split count of the whole batch
  std::vector<std::pair<int, int>> chunks;  // row ranges of its attention launches
  int device = 0;
  std::vector<cudaStream_t> attention_streams;
  cudaStream_t combine_stream = nullptr;    // the streaming combine grid
  cudaStream_t tail_stream = nullptr;       // the tail grid, started when every rank's attention has ended
  std::vector<cudaEvent_t> attention_done;  // one per attention stream
  cudaEvent_t fork = nullptr, combine_done = nullptr, tail_done = nullptr;
  // The early tail (RowCombineArgs::early): its stream (the device's least priority; the attention streams
  // run one level above where the device has one), its end, and, on rank 0 for the whole device, the producer
  // blocks' start counter, their number per step (0: no early tail) and the event that triggers once the
  // step's last attention launch has begun every block.
  cudaStream_t early_stream = nullptr;
  cudaEvent_t early_done = nullptr;
  DeviceBuffer producers;
  unsigned long long producers_per_step = 0;
  cudaEvent_t last_launch_started = nullptr;

  RowStreamRank() = default;
  RowStreamRank(const RowStreamRank&) = delete;
  RowStreamRank& operator=(const RowStreamRank&) = delete;
  ~RowStreamRank();
};

// Row-stream with more than one rank (N = 1 is plain attention).
bool is_row_stream(const StepPlan& p);

// Allocates every rank's windows, counters, streams and events, its output and merged LSE, and the owners'
// pointer tables (emulation: all on one device).
void setup_row_stream(const StepPlan& p, const RunConfig& c, Ranks& ranks);

// One emulated step of every rank: prologues and the query all-gather on the step's stream, then the ranks'
// attention (interleaved chunks, pushing) and combines on their own streams, joined back into the step's
// stream. Events, CUPTI tags and PDL as for the other strategies.
void enqueue_row_stream_step(const StepPlan& p, const RunConfig& c, Ranks& ranks, Exchange& ex,
                             bool capturing);

// RuntimeError naming the rank, the missing rank and the row when an owner's combine timed out.
void check_row_stream_error(const RankState& r, std::int64_t timeout_ms);

// Figures of the last measured repetition on the GPU timeline (CUPTI only; empty otherwise): each row's
// output ready time after the slowest rank's attention ended (min, median, p90, max over ranks and real
// rows, µs), and per repetition the last combine's end after it (median).
std::vector<std::pair<std::string, double>> row_stream_figures(const StepPlan& p, const Samples& s);

// Whether the early tail ran (row_stream.early_tail, 1 or 0) and, where it did, the producer blocks it
// counts on per step against those that began, on average over every step so far (equal unless the count is
// wrong: the gate would then open early, or never).
std::vector<std::pair<std::string, double>> row_stream_early_figures(const Ranks& ranks);

// --row-probe: every combine item of the last measured step (RowProbeItem), and figures summarising them per
// grid (streaming, early, tail): the median and the longest of each stage, µs, and each grid's first
// claim and last store after the slowest rank's attention ended.
std::vector<RowProbeItem> row_stream_probe(const StepPlan& p, const Ranks& ranks, const Samples& s);
std::vector<std::pair<std::string, double>> row_probe_figures(const std::vector<RowProbeItem>& items);

}  // namespace dcpsim::hw
