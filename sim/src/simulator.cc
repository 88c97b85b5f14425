#include "dcpsim/sim/simulator.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

#include "dcpsim/error.h"
#include "dcpsim/models/cost.h"
#include "dcpsim/models/sharding.h"
#include "sim_engine.h"
#include "step_graph.h"
#include "trace_output.h"

namespace dcpsim::sim {
namespace {

constexpr double kAskMemoryAboveBytes = 1024.0 * 1024.0 * 1024.0;

// Bytes of memory the machine can still give this process (MemAvailable), or 0 when unknown.
double available_memory_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  double kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024.0;
  }
  return 0;
}

}  // namespace

double estimated_memory_bytes(const models::Scenario& s) {
  // Measured: DCP 1024 with the default step took 3.6 GB, growing with the square of N (all-pairs flows and
  // the per-pair activities); rows add a little per rank.
  const double n = s.dcp;
  return 256e6 + 4096.0 * n * n + 4096.0 * n * static_cast<double>(s.rows());
}

void check_memory(const models::Scenario& s) {
  const double need = estimated_memory_bytes(s);
  // Reading /proc/meminfo costs more than a small step's simulation: only steps that need a GiB ask.
  if (need < kAskMemoryAboveBytes) return;
  const double have = available_memory_bytes();
  if (have > 0 && need > have) {
    throw InputError("simulating dcp " + std::to_string(s.dcp) + " with " + std::to_string(s.rows()) +
                     " rows needs about " + std::to_string(static_cast<long long>(need / 1e6)) +
                     " MB, but this machine has " + std::to_string(static_cast<long long>(have / 1e6)) +
                     " MB available");
  }
}

namespace {

// A step whose data would take longer on the profile's slowest link than the simulator's clock spans: refused
// before the run (an absurd bandwidth such as 1 MB/s NVLink; SimGrid otherwise aborts or runs off its clock).
void check_transfer_time(const models::HardwareProfile& p, const detail::Platform& platform, double bytes,
                         const std::string& what) {
  double slowest = std::min(platform.nvlink_bandwidth(), models::peer_store_bandwidth(p));
  if (platform.internode_bandwidth() > 0) slowest = std::min(slowest, platform.internode_bandwidth());
  const double seconds = bytes / slowest;
  if (!(seconds <= detail::kStepClockBudget_s)) {
    char text[320];
    std::snprintf(
        text, sizeof text,
        "%s moves up to %.3g GB per rank: %.3g s at the profile's slowest link (%.3g GB/s), beyond the "
        "%.0f s one simulation spans (check the profile's nvlink and network bandwidths)",
        what.c_str(), bytes / 1e9, seconds, slowest / 1e9, detail::kStepClockBudget_s);
    throw InputError(text);
  }
}

using detail::AttentionOut;
using detail::NodeId;
using detail::RankStream;
using detail::RowRef;
using detail::StepGraph;

int domain_size(const models::HardwareProfile& p) {
  return static_cast<int>(p.topology.gpus_per_nvlink_domain.si());
}

void check_group(const models::HardwareProfile& p, const detail::Platform& platform, int ranks) {
  if (ranks > domain_size(p) && !(p.internode.bandwidth.si() > 0)) {
    throw InputError("dcp " + std::to_string(ranks) + " exceeds the " + std::to_string(domain_size(p)) +
                     " GPUs of one NVLink domain of " + p.name +
                     ", which has no inter-node fabric (internode.bandwidth is 0)");
  }
  if (ranks > platform.gpus()) {
    throw InputError("dcp " + std::to_string(ranks) + " exceeds the " + std::to_string(platform.gpus()) +
                     " GPUs the simulator's platform holds (SimOptions::max_gpus)");
  }
}

// Whether the attention is priced as FlashInfer's kernels: named so, or, where the scenario names no
// implementation, the one its table measured (FlashInfer's MLA kernel where the profile has its table; an
// fp8 cache's attention priced from an fp8 table, which the runner measures on FlashInfer's FP8-KV kernels).
bool runs_flashinfer(const models::Scenario& s, const models::AttentionTiming& t) {
  const bool fp8_table = s.kv_dtype == models::DType::kFP8E4M3 && t.source == models::FigureSource::kTable;
  return s.attention_impl == "flashinfer" || (s.attention_impl.empty() && (t.table_one_launch || fp8_table));
}
// Whether the runner would run dcpsim's own kernels: named so, or no implementation named, a bf16/fp16 cache
// (the runner's only kernels for an fp8 one are FlashInfer's FP8-KV kernels, however it is priced) and no
// FlashInfer table. An implementation imported from a trace (vLLM's, FlashMLA's) is neither.
bool runs_dcpsim_attention(const models::Scenario& s, const models::AttentionTiming& t) {
  return s.attention_impl == "dcpsim" ||
         (s.attention_impl.empty() && s.kv_dtype != models::DType::kFP8E4M3 && !runs_flashinfer(s, t));
}

// FlashInfer reads Q with one stride per row and per head, so the gathered query (N blocks of H / N heads,
// one after another) is first copied into one dense [B, H, D_qk] array: a copy kernel at the head of the
// attention phase (as the runner's FlashInfer glue does; one row's blocks already lie back to back).
bool repacks_query(const models::Scenario& s, const models::AttentionTiming& t) {
  if (t.source == models::FigureSource::kMeasured) return false;  // the measured phase holds it
  return runs_flashinfer(s, t) && s.dcp > 1 && s.rows() > 1;
}

// What rank `r`'s attention saves under PDL (profile launch.pdl_saving_attention): dcpsim's attention
// kernels are launched with PDL, so in an emulated PDL step each later rank's attention, queued right after
// the previous rank's, is launched and its blocks scheduled while that one drains (they wait for it before
// any work) and is charged from its end. FlashInfer's kernels are launched without PDL; rank 0 follows the
// query all-gather's copies; emulated row-stream runs its ranks at once; on GPUs attention follows NCCL's
// kernel. At most half the kernel, as for the merge kernels.
double attention_pdl_saving(const StepGraph& step, int r, const models::AttentionTiming& t) {
  const std::optional<models::Quantity>& saving = step.profile.launch.pdl_saving_attention;
  if (!saving || t.source == models::FigureSource::kMeasured || !step.pdl_after_same_kernel(r) ||
      step.scenario.strategy == models::Strategy::kRowStream || !runs_dcpsim_attention(step.scenario, t))
    return 0.0;
  return std::min(saving->si(), 0.5 * t.kernel_end_s);
}

// The gap before the split-KV combine kernel of an attention priced from a table, or none (the launch mode's
// gap). A table's time is the whole operation as `hw sweep` replayed it from a CUDA graph: dcpsim's kernel,
// the graph's gap and its combine kernel. So only what the step's launch mode adds to a graph's gap is left
// to add: eager launches' longer gap (PDL's shorter one adds nothing).
std::optional<double> table_combine_gap(const models::HardwareProfile& p, models::LaunchMode mode,
                                        const models::AttentionTiming& t) {
  if (t.source != models::FigureSource::kTable) return std::nullopt;
  return std::max(0.0, models::dependent_kernel_gap(p, mode) -
                           models::dependent_kernel_gap(p, models::LaunchMode::kGraph));
}

// Attention on one rank: [the query repack,] the decode kernel, then the split-KV combine kernel when some
// row was split. The attention phase spans all of them.
AttentionOut add_attention(StepGraph& step, RankStream& stream) {
  const models::Scenario& s = step.scenario;
  const int r = stream.rank();
  std::vector<int64_t> local(s.rows());
  for (int b = 0; b < s.rows(); ++b) local[b] = models::local_length(s.contexts[b], r, s.dcp, s.interleave);
  AttentionOut att;
  if (step.priced_local.empty() || step.priced_local != local) {
    step.priced_attention = models::decode_attention_time(step.profile, models::attention_shape(s), local);
    step.priced_local = local;
  }
  att.timing = step.priced_attention;
  // A measured attention phase (trace-driven validation): the repack, the kernel and its split-KV combine as
  // one launch of the measured time, rows finishing at the same fractions of it as the model's.
  if (const std::optional<double> t = step.measured(r, "attention")) {
    const double model = att.timing.kernel_end_s + (att.timing.needs_combine ? att.timing.combine_s : 0.0);
    const double f = model > 0 ? *t / model : 0.0;
    for (double& x : att.timing.row_done_s) x *= f;
    for (double& x : att.timing.wave_end_s) x *= f;
    att.timing.kernel_end_s = *t;
    att.timing.combine_s = 0.0;
    att.timing.needs_combine = false;
    att.timing.all_rows_combined = false;
    std::fill(att.timing.row_splits.begin(), att.timing.row_splits.end(), 1);
    att.timing.source = models::FigureSource::kMeasured;
    att.timing.table_one_launch = false;
  }
  // The query all-gather (N > 1) comes just before: what its emulated copies add goes to the next kernel.
  // A PDL saving moves the kernel's work earlier by as much (after_gather below 0).
  double after_gather =
      (s.dcp > 1 ? step.after_copies_s(r) : 0.0) - attention_pdl_saving(step, r, att.timing);
  NodeId phase_start = -1;
  if (repacks_query(s, att.timing)) {
    const double bytes =
        2.0 * s.rows() * s.heads * s.qk_dim * double(models::dtype_bytes(models::query_dtype(s.kv_dtype)));
    phase_start = stream.begin("q_repack");
    const NodeId body = step.graph.exec(
        step.platform.gpu(r),
        models::memory_kernel_time(step.profile, models::MemoryKernel::kQRepack, bytes) + after_gather);
    after_gather = 0.0;
    step.graph.after(phase_start, body);
    stream.finish(body, traces::v1::EVENT_KIND_KERNEL, bytes);
    step.figures.push_back({r, "q_repack", models::FigureSource::kAnalytic});
  }
  step.figures.push_back({r, "attention", att.timing.source});
  att.start = stream.begin("attention");
  if (phase_start < 0) phase_start = att.start;
  if (after_gather != 0.0) {  // a later (earlier) start of the kernel's work: every row's time moves with it
    att.timing.kernel_end_s += after_gather;
    for (double& t : att.timing.row_done_s) t = std::max(0.0, t + after_gather);
    for (double& t : att.timing.wave_end_s) t = std::max(0.0, t + after_gather);
  }
  // FlashInfer's MLA kernel (its table's time) merges its splits in the same launch: no second kernel.
  const bool one_launch = att.timing.needs_combine && att.timing.table_one_launch;
  att.end = step.graph.exec(step.platform.gpu(r),
                            att.timing.kernel_end_s + (one_launch ? att.timing.combine_s : 0.0));
  step.graph.after(att.start, att.end);
  stream.finish(att.end, traces::v1::EVENT_KIND_KERNEL, att.timing.total_bytes);
  step.attention_bytes.resize(std::max<std::size_t>(step.attention_bytes.size(), r + 1), 0.0);
  step.attention_bytes[r] = att.timing.total_bytes;
  if (one_launch) {
    att.combine_end = att.end;
  } else if (att.timing.needs_combine) {
    att.combine_end = stream.kernel("split_kv_combine", att.timing.combine_s, att.timing.combine_bytes,
                                    table_combine_gap(step.profile, s.launch, att.timing));
    att.end = att.combine_end;
  }
  for (int b = 0; b < s.rows(); ++b) {
    if (att.timing.combined(static_cast<std::size_t>(b))) {
      att.rows.push_back({att.combine_end, 0.0});
    } else {
      att.rows.push_back({att.start, att.timing.row_done_s[b]});
    }
  }
  detail::RankNodes& rank = step.ranks[r];
  rank.attention_end = att.end;
  rank.partial_ready = att.rows;
  rank.phases.push_back({kPhaseAttention, phase_start, att.end});
  return att;
}

// Each rank's arrival at the step: the ranks spread evenly over the profile's skew in the given order.
std::vector<double> arrivals(const models::HardwareProfile& p, const models::Scenario& s, const SimOptions& o,
                             const StepInputs& in) {
  const int n = s.dcp;
  const double skew = o.emulated_ranks || n < 2 ? 0.0 : models::arrival_skew(p, s.launch);
  if (!in.arrival_order.empty() && static_cast<int>(in.arrival_order.size()) != n)
    throw InputError("arrival order must be a permutation of the " + std::to_string(n) + " ranks");
  if (!(skew > 0)) return {};
  std::vector<int> order = in.arrival_order;
  if (order.empty()) {
    for (int r = 0; r < n; ++r) order.push_back(r);
  }
  std::vector<int> seen(n, 0);
  for (int r : order) {
    if (static_cast<int>(order.size()) != n || r < 0 || r >= n || seen[r]++) {
      throw InputError("arrival order must be a permutation of the " + std::to_string(n) + " ranks");
    }
  }
  std::vector<double> at(n, 0.0);
  for (int k = 0; k < n; ++k) at[order[k]] = skew * k / (n - 1);
  return at;
}

bool bundles(const SimOptions& options, int ranks) {
  switch (options.flows) {
    case FlowGrain::kPair:
      return false;
    case FlowGrain::kBundle:
      return true;
    case FlowGrain::kAuto:
      break;
  }
  return ranks > kBundleAboveRanks;
}

void build_step(StepGraph& step, const SimOptions& options) {
  const models::Scenario& s = step.scenario;
  const int n = s.dcp;
  // Steps measured at N = 8 and 72 have 5-7 N^2 nodes and about 2.5-3.5 edges per node.
  const std::size_t n2 = std::min<std::size_t>(std::size_t(n) * std::size_t(n), std::size_t{1} << 17);
  step.graph.reserve(8 * n2 + 64 * std::size_t(n), 24 * n2 + 192 * std::size_t(n));
  step.ranks.resize(n);
  std::vector<RankStream> streams;
  for (int r = 0; r < n; ++r) streams.emplace_back(step, r);
  if (n > 1) detail::add_query_gather(step, streams, options.collective);
  std::vector<AttentionOut> att;
  for (int r = 0; r < n; ++r) att.push_back(add_attention(step, streams[r]));
  if (n == 1) {  // SPEC: no collective, no correction; the local result is the result
    step.ranks[0].lse_ready = att[0].rows;
    step.ranks[0].output_ready = att[0].rows;
    step.ranks[0].done = att[0].end;
    return;
  }
  switch (s.strategy) {
    case models::Strategy::kAgRs:
    case models::Strategy::kAgAr:
      detail::add_gather_merge(step, streams, options.collective);
      break;
    case models::Strategy::kA2a:
      detail::add_a2a_merge(step, streams, options.collective);
      break;
    case models::Strategy::kA2aTwoCall:
      detail::add_a2a_two_call_merge(step, streams, options.collective);
      break;
    case models::Strategy::kDirect:
      detail::add_direct_merge(step, streams, att);
      break;
    case models::Strategy::kRowStream:
      detail::add_row_stream_merge(step, streams, att);
      break;
    case models::Strategy::kFlashInferA2a:
      detail::add_flashinfer_merge(step, streams);
      break;
  }
}

double at(const detail::ActivityGraph& g, const RowRef& ref) {
  return g.end(ref.node) + ref.offset_s;
}

StepResult collect(const StepGraph& step) {
  const detail::ActivityGraph& g = step.graph;
  const models::Scenario& s = step.scenario;
  const double bytes_per_token = models::kv_bytes_per_token(models::attention_shape(s));
  StepResult result;
  result.scenario = s;
  result.profile = step.profile.name;
  result.triton_mla_attention = models::uses_triton_mla(step.profile, models::attention_shape(step.scenario));
  result.collectives = step.collectives;
  result.activities = g.simgrid_activities();
  result.pipe_transfers = g.pipe_transfers();
  result.graph_nodes = static_cast<std::int64_t>(g.size());
  result.graph_edges = static_cast<std::int64_t>(g.edges());
  for (int r = 0; r < s.dcp; ++r) {
    const detail::RankNodes& nodes = step.ranks[r];
    RankTimeline t;
    t.rank = r;
    for (const detail::PhaseRef& ph : nodes.phases) {
      t.phases.push_back({std::string(ph.name), g.start(ph.first), g.end(ph.last)});
    }
    t.attention_end_s = g.end(nodes.attention_end);
    t.done_s = g.end(nodes.done);
    for (int b = 0; b < s.rows(); ++b) {
      t.kv_tokens += models::local_length(s.contexts[b], r, s.dcp, s.interleave);
      t.partial_ready_s.push_back(at(g, nodes.partial_ready[b]));
      t.lse_ready_s.push_back(at(g, nodes.lse_ready[b]));
      t.output_ready_s.push_back(at(g, nodes.output_ready[b]));
    }
    t.kv_bytes = static_cast<std::int64_t>(t.kv_tokens * bytes_per_token);
    result.step_latency_s = std::max(result.step_latency_s, t.done_s);
    result.attention_end_s = std::max(result.attention_end_s, t.attention_end_s);
    result.ranks.push_back(std::move(t));
  }
  result.merge_latency_s = result.step_latency_s - result.attention_end_s;
  result.kernel_figures = step.figures;
  return result;
}

}  // namespace

std::string_view to_string(FlowGrain grain) {
  switch (grain) {
    case FlowGrain::kAuto:
      return "auto";
    case FlowGrain::kPair:
      return "pair";
    case FlowGrain::kBundle:
      return "bundle";
  }
  return "?";
}

FlowGrain parse_flow_grain(std::string_view text) {
  for (FlowGrain g : {FlowGrain::kAuto, FlowGrain::kPair, FlowGrain::kBundle}) {
    if (text == to_string(g)) return g;
  }
  throw InputError("flows: '" + std::string(text) + "' is not one of auto, pair, bundle");
}

int StepResult::kernel_figures_from(models::FigureSource source) const {
  int n = 0;
  for (const KernelFigure& f : kernel_figures) n += f.source == source;
  return n;
}

std::string StepResult::kernel_figures_text() const {
  std::vector<std::string> analytic;
  for (const KernelFigure& f : kernel_figures) {
    if (f.source == models::FigureSource::kAnalytic &&
        std::find(analytic.begin(), analytic.end(), f.kernel) == analytic.end())
      analytic.push_back(f.kernel);
  }
  std::string out = std::to_string(kernel_figures_from(models::FigureSource::kTable)) + " table, " +
                    std::to_string(kernel_figures_from(models::FigureSource::kAnalytic)) + " analytic";
  if (analytic.empty()) return out;
  out += " (";
  for (std::size_t i = 0; i < analytic.size(); ++i) out += (i ? " " : "") + analytic[i];
  return out + ")";
}

const PhaseSpan* StepResult::phase(int rank, std::string_view name) const {
  if (rank < 0 || rank >= static_cast<int>(ranks.size())) return nullptr;
  for (const PhaseSpan& p : ranks[rank].phases) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

Simulator::Simulator(models::HardwareProfile profile, SimOptions options)
    : profile_(std::move(profile)), options_(options) {
  // To the simulator an inter-node bandwidth of 0 means "no inter-node fabric": groups must fit one domain.
  models::HardwareProfile checked = profile_;
  if (checked.internode.bandwidth.value == 0) checked.internode.bandwidth.value = 1;
  models::validate_profile(checked, profile_.name);
  if (options_.max_gpus < 1) {
    throw InputError("simulator: max_gpus must be >= 1, got " + std::to_string(options_.max_gpus));
  }
  if (options_.peers_in_flight < 1) {
    throw InputError("simulator: peers_in_flight must be >= 1, got " +
                     std::to_string(options_.peers_in_flight));
  }
  detail::SimEngine::instance().reserve(domain_size(profile_), options_.max_gpus);
}

void Simulator::prepare() const {
  detail::SimEngine::instance().platform(domain_size(profile_));
}

StepResult Simulator::run(const models::Scenario& scenario, traces::TraceSink* sink) const {
  return run(scenario, StepInputs{}, sink);
}

StepResult Simulator::run(const models::Scenario& scenario, const StepInputs& inputs,
                          traces::TraceSink* sink) const {
  scenario.validate();
  for (const auto& rank : inputs.kernel_s) {
    for (const auto& [kernel, seconds] : rank) {
      if (!(seconds >= 0) || seconds > 10.0)
        throw InputError("measured " + kernel + " duration " + std::to_string(seconds) +
                         " s is not in [0, 10]");
    }
  }
  check_memory(scenario);
  detail::SimEngine& engine = detail::SimEngine::instance();
  detail::Platform& platform = engine.platform(domain_size(profile_));
  check_group(profile_, platform, scenario.dcp);
  platform.configure(profile_, scenario.dcp);
  // What one rank may send in a step, generously: its query rows and every output and LSE row, to each peer.
  const double row_bytes = 4.0 * scenario.heads * (scenario.qk_dim + scenario.head_dim + 1);
  check_transfer_time(profile_, platform, row_bytes * scenario.rows() * scenario.dcp, "the step");

  for (bool pipes : {options_.pipes, false}) {
    StepGraph step(profile_, scenario, platform, options_.peers_in_flight);
    step.bundle_flows = bundles(options_, scenario.dcp);
    step.pipes = pipes;
    step.emulated_ranks = options_.emulated_ranks;
    step.row_stamps = options_.row_stamps;
    step.arrival_s = arrivals(profile_, scenario, options_, inputs);
    step.inputs = &inputs;
    build_step(step, options_);
    step.graph.run(engine);
    // A pipe's links were shared with a transfer it does not model: simulate the step with SimGrid alone.
    if (!step.graph.pipes_exact()) continue;
    StepResult result = collect(step);
    result.bundled_flows = step.bundle_flows;
    if (sink != nullptr) detail::emit_trace(step, result, *sink);
    return result;
  }
  throw RuntimeError("a step without pipes reported a shared pipe");  // unreachable: no pipes, no sharing
}

CollectiveRun Simulator::run_collective(models::Collective collective, int ranks, double bytes_per_rank,
                                        const std::vector<double>& entry_s,
                                        const models::CollectiveCall& call) const {
  if (!entry_s.empty() && static_cast<int>(entry_s.size()) != ranks) {
    throw InputError("run_collective: " + std::to_string(entry_s.size()) + " entry times for " +
                     std::to_string(ranks) + " ranks");
  }
  models::Scenario s;
  s.dcp = ranks;
  detail::SimEngine& engine = detail::SimEngine::instance();
  detail::Platform& platform = engine.platform(domain_size(profile_));
  check_group(profile_, platform, ranks);
  platform.configure(profile_, ranks);
  check_transfer_time(profile_, platform, 2.0 * bytes_per_rank * ranks, "the collective");

  StepGraph step(profile_, s, platform, options_.peers_in_flight);
  step.bundle_flows = bundles(options_, ranks);
  step.pipes = options_.pipes;  // one collective alone: nothing else shares its links
  CollectiveRun run;
  run.price =
      models::price_collective(profile_, collective, ranks, bytes_per_rank, options_.collective, call);
  run.plan = models::plan_with_time(run.price.plan, run.price.time_s);
  std::vector<NodeId> begin;
  for (int r = 0; r < ranks; ++r) begin.push_back(step.graph.latency(entry_s.empty() ? 0.0 : entry_s[r]));
  const std::vector<NodeId> end =
      detail::add_collective(step, run.plan, begin, models::to_string(collective));
  step.graph.run(engine);
  if (!step.graph.pipes_exact()) throw RuntimeError("run_collective: a pipe shared its links");
  double first = 0.0;
  for (int r = 0; r < ranks; ++r) {
    run.begin_s.push_back(step.graph.end(begin[r]));
    run.end_s.push_back(step.graph.end(end[r]));
    first = r == 0 ? run.begin_s[r] : std::min(first, run.begin_s[r]);
    run.time_s = std::max(run.time_s, run.end_s[r]);
  }
  run.time_s -= first;
  return run;
}

}  // namespace dcpsim::sim
