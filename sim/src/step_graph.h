#pragma once
// One decode step as an activity graph plus what is needed to report it: kernel and launch spans per rank and
// lane, transfers, flag-to-wait flows, phases and per-row readiness, all as references to graph nodes whose
// times are known once the graph has run.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "activity_graph.h"
#include "dcpsim/models/cost.h"
#include "dcpsim/models/scenario.h"
#include "dcpsim/sim/simulator.h"
#include "dcpsim/sim/step_result.h"
#include "dcpsim/traces/schema.h"
#include "platform.h"

namespace dcpsim::sim::detail {

// A span of simulated time from the start of `first` to the end of `last` (a kernel: its start join and its
// body; a transfer: the same node twice).
struct Span {
  int rank = 0;
  std::string lane;
  traces::v1::EventKind kind = traces::v1::EVENT_KIND_KERNEL;
  std::string name;
  NodeId first = 0;
  NodeId last = 0;
  double bytes = 0.0;
  int rows_begin = 0;
  int rows_end = 0;
  // Flags (EVENT_KIND_SIGNAL spans with an empty name): the peers they announce to, named in the trace as
  // "flag to rank F" or "flags to P ranks (F … L)".
  int flag_first = -1;
  int flag_last = -1;
  int flag_peers = 0;
};

// A transfer between GPUs (or a GPU and its NVSwitch), kept compact: a step has thousands.
struct TransferSpan {
  NodeId node = 0;
  int from_rank = 0;
  int to_rank = 0;  // -1: the NVSwitch
  int step = 0;
  std::string_view what;  // a phase name, or "flag"
  double bytes = 0.0;     // payload (not counting protocol overhead)
  bool inter_node = false;
  int peers = 0;  // a bundle into the NVSwitch: the ranks it carries blocks for (fanout.h)
};

// Where a row's readiness comes from: the end of a node plus an analytic offset (attention rows).
struct RowRef {
  NodeId node = 0;
  double offset_s = 0.0;
};

struct PhaseRef {
  std::string_view name;
  NodeId first = 0;
  NodeId last = 0;
};

struct RankNodes {
  NodeId attention_end = 0;
  NodeId done = 0;
  std::vector<PhaseRef> phases;
  std::vector<RowRef> partial_ready;
  std::vector<RowRef> lse_ready;
  std::vector<RowRef> output_ready;
};

// Hopper's L2 is two partitions, each caching for the SMs of the GPCs attached to it (NVIDIA H100 Tensor
// Core GPU Architecture whitepaper, "H100 L2 cache"): a line an SM reads back competes for about half of it.
inline constexpr double kL2Share = 0.5;
inline constexpr double kLseBytes = 4.0;  // LSEs are fp32 (SPEC)

struct StepGraph {
  StepGraph(const models::HardwareProfile& p, const models::Scenario& s, Platform& pf, int peers)
      : profile(p), scenario(s), platform(pf), peers_in_flight(peers) {}

  const models::HardwareProfile& profile;
  const models::Scenario& scenario;
  Platform& platform;
  int peers_in_flight;
  bool bundle_flows = false;  // all-pairs sends as bundles (fanout.h)
  bool pipes = true;          // ring steps and bundles as pipe transfers (activity_graph.h)
  ActivityGraph graph;
  std::vector<Span> spans;
  std::vector<TransferSpan> transfers;
  std::vector<std::pair<int, int>> flows;  // span index (a flag) -> span index (the wait it releases)
  std::vector<RankNodes> ranks;
  std::vector<PlannedCollective> collectives;
  std::vector<KernelFigure> figures;

  // Per rank: when it reaches the step (its CPU's first issue), spread over the profile's arrival skew in
  // the order StepInputs::arrival_order gives (empty: every rank at 0).
  std::vector<double> arrival_s;
  const StepInputs* inputs = nullptr;  // measured kernel durations (trace-driven validation), or none

  // A kernel's measured duration on `rank` when the run was given one (StepInputs::kernel_s).
  std::optional<double> measured(int rank, std::string_view kernel) const {
    if (inputs == nullptr || rank >= static_cast<int>(inputs->kernel_s.size())) return std::nullopt;
    const auto& m = inputs->kernel_s[static_cast<std::size_t>(rank)];
    const auto it = m.find(std::string(kernel));
    if (it == m.end()) return std::nullopt;
    return it->second;
  }
  bool emulated_ranks = false;          // SimOptions::emulated_ranks
  bool row_stamps = false;              // SimOptions::row_stamps
  std::vector<double> attention_bytes;  // per rank, once its attention is added
  // The attention model's answer for the last shard lengths priced: ranks holding the same lengths (every
  // rank of a uniform batch whose contexts N divides) are priced once.
  std::vector<int64_t> priced_local;
  models::AttentionTiming priced_attention;

  // What rank `rank`'s kernel right after an emulated all-gather or all-to-all adds in a graph-launched step.
  // The runner's emulated collectives are device-to-device copies, and a kernel after a copy node of its
  // graph runs longer (profile launch.kernel_after_copy_node). Its emulated step is phase-major on one
  // stream (every rank's copies, then every rank's next kernel), so only rank 0's kernel follows the copies.
  // NCCL's collectives are kernels: nothing on GPUs. PDL graphs hold the same copy nodes (a kernel cannot
  // overlap a copy). Left out: emulated row-stream, whose ranks all start after the query all-gather's last
  // copy (validate compares no emulated row-stream phase).
  // `kernel`: the merge kernel's own term where the profile has one (launch.kernel_after_copy_node_<type>).
  double after_copies_s(int rank, std::optional<models::MemoryKernel> kernel = std::nullopt) const {
    if (!emulated_ranks || rank != 0 || scenario.launch == models::LaunchMode::kEager) return 0.0;
    return kernel ? profile.launch.after_copy_node_s(*kernel) : profile.launch.kernel_after_copy_node.si();
  }

  // Whether rank `rank`'s merge kernel of an emulated step is launched with PDL right after the previous
  // rank's kernel of the same kind (phase-major on one stream): it may be scheduled while that kernel runs
  // and is charged from its end, as the runner charges a phase.
  bool pdl_after_same_kernel(int rank) const {
    return emulated_ranks && rank > 0 && scenario.launch == models::LaunchMode::kPdl;
  }

  // Whether merge kernel `k` of `rank` runs under PDL right after a kernel that lets it launch early
  // (profile launch.pdl_saving): the later ranks' kernels of an emulated step's chain (correction, pack,
  // A2A combine), and the pack after its rank's attention (the first rank's in an emulated step; every
  // rank's on GPUs). The first correction and A2A combine of an emulated step follow the emulated
  // collective's copies, and on GPUs NCCL's kernels: nothing launches them early.
  bool pdl_after_kernel(int rank, models::MemoryKernel k) const {
    const auto& chain = models::kPdlChainKernels;
    if (scenario.launch != models::LaunchMode::kPdl ||
        std::find(chain.begin(), chain.end(), k) == chain.end())
      return false;
    return k == models::MemoryKernel::kA2aPack || pdl_after_same_kernel(rank);
  }

  // What an emulated step's A2A pack or combine of rank `rank` adds for dirty L2 lines (profile
  // kernel.l2_dirty_writeback): when the kernels before it wrote at least an L2's worth, every line it
  // allocates evicts a dirty one first. Before the pack of rank r: every rank's attention output and the
  // packs of ranks 0..r-1; before the combine of rank r: the emulated all-to-all's copies (each rank's
  // receive buffer) and the combines of ranks 0..r-1. Its missed bytes (the share not resident) are what
  // allocates. The correction showed none on either GPU's fit steps (docs/VALIDATION.md) and is left out.
  double dirty_writeback_s(int rank, models::MemoryKernel k, const models::MergeShape& m,
                           double resident) const {
    const std::optional<models::Quantity>& share = profile.kernel.l2_dirty_writeback;
    if (!share || share->si() <= 0 ||
        (k != models::MemoryKernel::kA2aPack && k != models::MemoryKernel::kA2aCombine))
      return 0.0;
    const double output = double(m.rows) * m.heads * m.head_dim * models::dtype_bytes(m.out_dtype);
    const double buffer = models::a2a_buffer_bytes(m);
    const double written = k == models::MemoryKernel::kA2aPack ? m.dcp * output + rank * buffer
                                                               : m.dcp * buffer + rank * output / m.dcp;
    const double l2 = profile.gpu.l2_size.si();
    if (!(l2 > 0) || written < l2) return 0.0;  // a profile without an L2 size: no residency, nothing here
    const double bytes =
        k == models::MemoryKernel::kA2aPack ? models::a2a_pack_bytes(m) : models::unpack_combine_bytes(m);
    return share->si() * (1.0 - resident) * bytes / profile.gpu.hbm_bandwidth_measured.si();
  }

  // A merge kernel's time (table or analytic), recorded as a figure of `rank`; `after_copies`: it follows a
  // collective the runner emulates with copies (after_copies_s).
  double price(int rank, models::MemoryKernel k, models::MergeShape m, bool after_copies = false) {
    if (const std::optional<double> t = measured(rank, models::to_string(k))) {
      figures.push_back({rank, std::string(models::to_string(k)), models::FigureSource::kMeasured});
      return *t;
    }
    // Correction and the A2A combine stamp rows and have stamped tables; the pack stamps none, and the direct
    // merge's stamped kernel has no table (`hw sweep --row-stamps` times those two only).
    m.row_stamps =
        row_stamps && (k == models::MemoryKernel::kCorrection || k == models::MemoryKernel::kA2aCombine);
    // The merge kernels an emulated step runs phase-major, rank after rank.
    const bool rank_by_rank = k == models::MemoryKernel::kCorrection || k == models::MemoryKernel::kA2aPack ||
                              k == models::MemoryKernel::kA2aCombine;
    // Under PDL after a kernel that lets it launch early: the graph-replayed price less the profile's
    // launch.pdl_saving for the kernel type where it has one (measured on steps). Else the " pdl" tables
    // where the profile has them (`hw sweep --pdl`: the last of a chain of calls), else as without; never
    // the A2A combine's: in a step it gains nothing under PDL (docs/hw/2026-12-03/pdl_vs_graph), though its
    // sweep gains 160 ns.
    const std::optional<models::Quantity>& saving = profile.launch.pdl_saving[static_cast<std::size_t>(k)];
    const bool saves = saving && pdl_after_kernel(rank, k);
    m.pdl = !saving && (k == models::MemoryKernel::kCorrection || k == models::MemoryKernel::kA2aPack) &&
            pdl_after_same_kernel(rank);
    models::KernelPrice price = models::merge_kernel_price(profile, k, m);
    if (emulated_ranks && rank_by_rank) {
      // Bytes through the L2 between this kernel's inputs being written and it reading them. Correction and
      // pack read their rank's attention output: the later ranks' attention ran in between. The A2A combine
      // reads the blocks the emulated all-to-all copied to its rank, rank after rank: the later ranks'
      // blocks were copied in between (each copy reads its source and writes its destination). Then the
      // earlier ranks' kernels of this phase. A line survives them with probability exp(−bytes / L2) (random
      // replacement, over the share of the L2 one SM's lines compete for); the kernel's time moves from the
      // cold table's towards the warm one's with it.
      double through = 0.0;
      if (k == models::MemoryKernel::kA2aCombine) {
        through =
            (m.dcp - 1 - rank) * 2 * models::a2a_buffer_bytes(m) + rank * models::unpack_combine_bytes(m);
      } else {
        for (std::size_t s = static_cast<std::size_t>(rank) + 1; s < attention_bytes.size(); ++s)
          through += attention_bytes[s];
        through += rank * (k == models::MemoryKernel::kCorrection ? models::correction_bytes(m)
                                                                  : models::a2a_pack_bytes(m));
      }
      const double l2 = profile.gpu.l2_size.si() * kL2Share;
      const double resident = l2 > 0 ? std::exp(-through / l2) : 0.0;
      models::MergeShape cold_shape = m;
      cold_shape.cold_inputs = true;
      // Under PDL the cold " pdl cold" table where the profile has one (merge_kernel_price falls back to the
      // plain cold one).
      // The correction's gathered LSEs were copied just before it by the emulated all-gather: in L2.
      cold_shape.warm_lse = k == models::MemoryKernel::kCorrection;
      const models::KernelPrice cold = models::merge_kernel_price(profile, k, cold_shape);
      price.seconds = cold.seconds - (cold.seconds - price.seconds) * resident;
      if (cold.source != price.source) price.source = models::FigureSource::kAnalytic;
      price.seconds += dirty_writeback_s(rank, k, m, resident);
    }
    // An emulated graph-launched step's merge kernel (profile launch.graph_saving), and under PDL after a
    // kernel that lets it launch early its PDL saving on top; at most half the kernel together: a saving is
    // launch and ramp, never the kernel's own work. Real steps' kernels follow NCCL's, where no graph
    // saving was measured.
    const std::optional<models::Quantity>& in_graph =
        profile.launch.graph_saving[static_cast<std::size_t>(k)];
    const double saved =
        (emulated_ranks && rank_by_rank && in_graph && scenario.launch != models::LaunchMode::kEager
             ? in_graph->si()
             : 0.0) +
        (saves ? saving->si() : 0.0);
    price.seconds -= std::min(saved, 0.5 * price.seconds);
    figures.push_back({rank, std::string(models::to_string(k)), price.source});
    return price.seconds + (after_copies ? after_copies_s(rank, k) : 0.0);
  }

  int add_span(Span span) {
    spans.push_back(std::move(span));
    return static_cast<int>(spans.size() - 1);
  }
};

// A rank's CPU and GPU stream: the CPU issues kernels one after another (issue cost per launch mode); a
// kernel starts once issued plus the launch latency, and not before its predecessor on the stream ended plus
// the dependent-kernel gap (models/cost_launch.h).
class RankStream {
 public:
  RankStream(StepGraph& step, int rank, std::string lane = "stream0");

  // Issues the next kernel and returns the node at which it starts; finish() with its last node. `gap`: the
  // time from the previous kernel's end to this one's start when it is already queued (default: the launch
  // mode's dependent-kernel gap); `issue`: the host time of this launch (default: the launch mode's).
  NodeId begin(std::string_view name, std::optional<double> gap = std::nullopt,
               std::optional<double> issue = std::nullopt);
  // When the stream reaches its next launch: the previous kernel's end and the host's previous issue (an
  // event recorded before the launch fires then), or the rank's arrival for the first. Call before begin().
  NodeId reached();
  void finish(NodeId end, traces::v1::EventKind kind = traces::v1::EVENT_KIND_KERNEL, double bytes = 0.0);
  // A kernel whose body is one execution of `seconds` on the rank's GPU; returns its end.
  NodeId kernel(std::string_view name, double seconds, double bytes = 0.0,
                std::optional<double> gap = std::nullopt);

  NodeId last_end() const { return last_end_; }
  int rank() const { return rank_; }
  // Shares the CPU with another stream of the same rank (its launches go through one issue queue).
  void share_cpu_with(RankStream& other) { cpu_ = other.cpu_; }

 private:
  NodeId arrival();  // a latency node for the rank's arrival, or -1 when it arrives at 0

  StepGraph& step_;
  int rank_;
  std::string lane_;
  std::shared_ptr<NodeId> cpu_;  // the last launch's end (the CPU is sequential)
  NodeId last_end_ = -1;
  NodeId open_begin_ = -1;
  std::string open_name_;
};

// NCCL collectives realised from a plan: rank r's part starts at begin[r]; returns each rank's end.
std::vector<NodeId> add_collective(StepGraph& step, const models::CollectivePlan& plan,
                                   const std::vector<NodeId>& begin, std::string_view what);

// The step's kernels around attention. Each adds its phases, row readiness and `done` to step.ranks.
struct AttentionOut {
  models::AttentionTiming timing;
  NodeId start = 0;          // attention kernel start
  NodeId end = 0;            // attention done, split-KV combine included
  NodeId combine_end = -1;   // split-KV combine kernel end (-1 when none)
  std::vector<RowRef> rows;  // per row: its final partial exists
};
void add_query_gather(StepGraph& step, std::vector<RankStream>& streams,
                      const models::CollectiveOptions& options);
void add_gather_merge(StepGraph& step, std::vector<RankStream>& streams,
                      const models::CollectiveOptions& options);
// a2a-2call: the pack kernel in its split form, the outputs' all-to-all, then the LSEs' on the same stream
// (vLLM issues both on one communicator: NCCL runs them one after the other), and the combine.
void add_a2a_two_call_merge(StepGraph& step, std::vector<RankStream>& streams,
                            const models::CollectiveOptions& options);
void add_a2a_merge(StepGraph& step, std::vector<RankStream>& streams,
                   const models::CollectiveOptions& options);
void add_direct_merge(StepGraph& step, std::vector<RankStream>& streams,
                      const std::vector<AttentionOut>& att);
void add_row_stream_merge(StepGraph& step, std::vector<RankStream>& streams,
                          const std::vector<AttentionOut>& att);
void add_flashinfer_merge(StepGraph& step, std::vector<RankStream>& streams);

}  // namespace dcpsim::sim::detail
