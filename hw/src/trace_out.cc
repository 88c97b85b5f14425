#include "trace_out.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <string>

#include "dcpsim/hw/device.h"
#include "dcpsim/models/scenario_proto.h"
#include "dcpsim/traces/provenance.h"
#include "row_stream.h"

namespace dcpsim::hw {
namespace {

namespace v1 = traces::v1;

std::vector<int> ranks_with_samples(const Samples& s) {
  std::vector<int> r;
  for (std::size_t i = 0; i < s.rank_step.size(); ++i)
    if (!s.rank_step[i].empty()) r.push_back(static_cast<int>(i));
  return r;
}

std::size_t first_merge_phase(const StepPlan& p) {
  const auto it = std::find(p.phases.begin(), p.phases.end(), Phase::kAttention);
  return static_cast<std::size_t>(it - p.phases.begin()) + 1;
}

// Emulation runs the ranks one after another, except row-stream, whose ranks run concurrently on their own
// streams (row_stream.h).
bool bulk_synchronous(const StepPlan& p, const RunConfig& c) {
  return c.mode == ProcessMode::kEmulate && !is_row_stream(p);
}

// Row-stream (concurrent ranks, the combine beside the attention): the step is the span from the earliest
// rank's first phase to the last end of any rank, the merge what of it comes after the slowest rank's
// attention.
std::vector<double> concurrent_per_rep(const StepPlan& p, const Samples& s, const std::vector<int>& ranks,
                                       std::size_t from_phase) {
  const std::size_t reps = s.rank_step[ranks[0]].size();
  std::vector<double> out(reps, 0.0);
  for (std::size_t k = 0; k < reps; ++k) {
    double first = std::numeric_limits<double>::infinity(), last = 0, attention = 0;
    for (int r : ranks)
      for (std::size_t i = 0; i < p.phases.size(); ++i) {
        const double b = s.phase_origin[r][k] + s.offset[r][i][k], e = b + s.duration[r][i][k];
        first = std::min(first, b);
        last = std::max(last, e);
        if (i + 1 == from_phase) attention = std::max(attention, e);
      }
    out[k] = from_phase > 0 ? std::max(0.0, last - attention) : last - first;
  }
  return out;
}

// Per repetition: emulation runs the ranks one after another, so a step is estimated bulk-synchronously (Σ
// over phases of the slowest rank); real ranks run concurrently, so a step is the slowest rank's span.
std::vector<double> per_rep(const StepPlan& p, const RunConfig& c, const Samples& s, std::size_t from_phase) {
  const auto ranks = ranks_with_samples(s);
  if (ranks.empty()) return {};
  const std::size_t reps = s.rank_step[ranks[0]].size();
  if (is_row_stream(p) && s.timing != Timing::kStep) return concurrent_per_rep(p, s, ranks, from_phase);
  std::vector<double> out(reps, 0.0);
  if (s.timing == Timing::kStep) {  // no phases: each rank's whole step, the slowest rank
    if (from_phase > 0) return {};
    for (std::size_t k = 0; k < reps; ++k)
      for (int r : ranks) out[k] = std::max(out[k], s.rank_step[r][k]);
    return out;
  }
  for (std::size_t k = 0; k < reps; ++k) {
    if (bulk_synchronous(p, c) || from_phase > 0) {
      for (std::size_t i = from_phase; i < p.phases.size(); ++i) {
        double m = 0;
        for (int r : ranks) m = std::max(m, s.duration[r][i][k]);
        out[k] += m;
      }
    } else {
      for (int r : ranks) out[k] = std::max(out[k], s.rank_step[r][k]);
    }
  }
  return out;
}

std::int64_t kv_bytes(const StepPlan& p, int rank) {
  std::int64_t tokens = 0;
  for (int b = 0; b < p.B; ++b) tokens += p.local_len(b, rank);
  return tokens * (p.k_width() + (p.mla ? 0 : p.v_width())) * static_cast<std::int64_t>(p.kv_elem_bytes());
}

std::int64_t phase_bytes(const StepPlan& p, Phase ph, int rank) {
  const std::int64_t B = p.rows_total, ib = ops::elem_bytes(p.in), ob = ops::elem_bytes(p.out);
  switch (ph) {
    case Phase::kQAllGather:
      return std::int64_t(p.N) * B * p.J * p.Dqk * ib;  // the receive buffer
    case Phase::kAttention:
      return kv_bytes(p, rank);
    case Phase::kLseAllGather:
      return std::int64_t(p.N) * B * p.H * 4;
    case Phase::kReduceScatter:
    case Phase::kAllReduce:
      return B * p.H * p.D * ob;  // the send buffer
    case Phase::kAllToAll:
      if (p.s.strategy == models::Strategy::kA2aTwoCall) return B * p.J * p.N * p.D * ob;
      return B * p.J * p.N * (p.D + ops::lse_lanes(p.out)) * ob;
    case Phase::kAllToAllLse:
      return B * p.J * p.N * 4;
    default:
      return 0;
  }
}

std::size_t median_rep(const std::vector<double>& steps) {
  std::vector<std::size_t> idx(steps.size());
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return steps[a] < steps[b]; });
  return idx.empty() ? 0 : idx[idx.size() / 2];
}

void emit_events(traces::TraceSink& sink, const StepPlan& p, const RunConfig& c, const Samples& s,
                 std::size_t k) {
  const bool emulate = c.mode == ProcessMode::kEmulate;
  const bool bulk = bulk_synchronous(p, c);
  const auto ranks = ranks_with_samples(s);
  double t = 0;  // emulation: bulk-synchronous phase start
  std::vector<double> end(s.rank_step.size(), 0);
  const std::size_t phases = s.timing == Timing::kStep ? 0 : p.phases.size();
  for (int r : ranks)
    if (phases == 0) end[r] = s.rank_step[r][k];
  for (std::size_t i = 0; i < phases; ++i) {
    double slowest = 0;
    for (int r : ranks) {
      const double d = s.duration[r][i][k];
      // Real ranks: on the repetition's timeline (CUPTI: one clock for every rank; events: each rank from 0).
      const double start = bulk ? t : s.phase_origin[r][k] + s.offset[r][i][k];
      slowest = std::max(slowest, d);
      const Phase ph = p.phases[i];
      // Row-stream's combine runs beside the attention, on a second stream (as the simulator draws it).
      const char* lane = is_collective(ph) ? "comm" : ph == Phase::kRowCombine ? "stream1" : "stream0";
      v1::Event e =
          traces::make_event(r, lane, is_collective(ph) ? v1::EVENT_KIND_COLLECTIVE : v1::EVENT_KIND_KERNEL,
                             phase_name(ph), static_cast<std::int64_t>(start),
                             static_cast<std::int64_t>(start + d), phase_bytes(p, ph, r), 0, p.rows_total);
      e.set_emulated(emulate && is_collective(ph));
      sink.on_event(e);
      end[r] = std::max(end[r], start + d);
    }
    t += slowest;
  }
  for (int r : ranks) {
    const double begin = bulk || phases == 0 ? 0.0 : s.phase_origin[r][k];
    v1::Event e =
        traces::make_event(r, "step", v1::EVENT_KIND_PHASE, "step", static_cast<std::int64_t>(begin),
                           static_cast<std::int64_t>(std::max(begin, end[r])));
    sink.on_event(e);
  }
}

v1::GpuActivity::Kind activity_kind(GpuActivity::Kind k) {
  switch (k) {
    case GpuActivity::Kind::kKernel:
      return v1::GpuActivity::KIND_KERNEL;
    case GpuActivity::Kind::kMemcpy:
      return v1::GpuActivity::KIND_MEMCPY;
    case GpuActivity::Kind::kMemset:
      return v1::GpuActivity::KIND_MEMSET;
  }
  return v1::GpuActivity::KIND_UNSPECIFIED;
}

void emit_activities(traces::TraceSink& sink, const StepPlan& p, const Samples& s) {
  for (const PlacedActivity& pa : s.activities) {
    v1::GpuActivity m;
    m.set_rank(pa.rank);
    m.set_repetition(pa.rep);
    m.set_phase(pa.slot == 0 ? "prologue" : phase_name(p.phases[pa.slot - 1]));
    m.set_kind(activity_kind(pa.a.kind));
    m.set_name(pa.a.name);
    m.set_start_ns(static_cast<std::int64_t>(pa.start_ns));
    m.set_end_ns(static_cast<std::int64_t>(pa.end_ns));
    m.set_device(static_cast<int>(pa.a.device));
    m.set_stream(pa.a.stream);
    m.set_correlation_id(pa.a.correlation);
    m.set_graph_node_id(pa.a.graph_node);
    if (pa.a.kind == GpuActivity::Kind::kKernel) {
      for (int v : pa.a.grid) m.add_grid(v);
      for (int v : pa.a.block) m.add_block(v);
      m.set_registers_per_thread(pa.a.registers);
      m.set_shared_memory_bytes(pa.a.shared_bytes);
    }
    m.set_bytes(static_cast<std::int64_t>(pa.a.bytes));
    sink.on_gpu_activity(m);
  }
}

void emit_rows(traces::TraceSink& sink, const StepPlan& p, const Samples& s) {
  const bool ag =
      p.N > 1 && (p.s.strategy == models::Strategy::kAgRs || p.s.strategy == models::Strategy::kAgAr);
  for (int r : ranks_with_samples(s)) {
    const auto& st = s.stamps[r];
    if (st.empty()) continue;
    const unsigned long long origin = st[0];
    const double shift = s.stamp_origin[r];
    auto rel = [&](unsigned long long v) {
      return static_cast<std::int64_t>(shift + (v > origin ? static_cast<double>(v - origin) : 0.0));
    };
    for (int b = 0; b < p.rows_total; ++b) {
      v1::RowResult row;
      row.set_row(b);
      row.set_rank(r);
      // Row-stream's combine stamps both: every rank's flag of the row seen, and the row written.
      const unsigned long long out_ready = ag ? st[1] : st[2 + p.rows_total + b];
      const unsigned long long lse_ready = ag || is_row_stream(p) ? st[2 + b] : out_ready;
      row.set_lse_ready_ns(rel(lse_ready));
      row.set_output_ready_ns(rel(out_ready));
      sink.on_row_result(row);
    }
  }
}

void add_summary(v1::PhaseSummary& m, const PhaseStats& st) {
  m.set_rank(st.rank);
  m.set_phase(st.phase);
  m.set_median_ns(st.median_ns);
  m.set_min_ns(st.min_ns);
  m.set_max_ns(st.max_ns);
  m.set_repetitions(static_cast<int>(st.samples_ns.size()));
  for (double v : st.samples_ns) m.add_samples_ns(v);
}

}  // namespace

RunResult summarize(const StepPlan& p, const RunConfig& c, const Samples& s) {
  RunResult r;
  r.timing = s.timing;
  const bool emulate = c.mode == ProcessMode::kEmulate;
  const auto ranks = ranks_with_samples(s);
  if (s.timing != Timing::kStep)
    for (int rank : ranks)
      for (std::size_t i = 0; i < p.phases.size(); ++i)
        r.phases.push_back(make_stats(rank, phase_name(p.phases[i]), s.duration[rank][i],
                                      emulate && is_collective(p.phases[i])));
  r.step_median_ns = median_of(per_rep(p, c, s, 0));
  r.merge_median_ns = median_of(per_rep(p, c, s, first_merge_phase(p)));
  std::vector<double> outer;
  for (int rank : ranks)
    for (std::size_t k = 0; k < s.outer_step[rank].size(); ++k) {
      if (outer.size() <= k) outer.resize(k + 1, 0.0);
      outer[k] = std::max(outer[k], s.outer_step[rank][k]);
    }
  r.outer_step_median_ns = median_of(outer);
  return r;
}

void emit_section(traces::TraceSink& sink, const StepPlan& p, const RunConfig& c, const Samples& s,
                  const RunResult& result) {
  v1::Scenario sc = models::to_proto(p.s);
  sc.set_padded_rows(c.padded_rows);
  sc.set_name(p.s.label());
  auto& params = *sc.mutable_params();
  params["mode"] = c.mode == ProcessMode::kEmulate   ? "emulate"
                   : c.mode == ProcessMode::kThreads ? "threads"
                                                     : "mpi";
  params["warmup"] = std::to_string(c.warmup);
  params["reps"] = std::to_string(c.reps);
  params["seed"] = std::to_string(c.seed);
  params["check"] = result.check.summary;
  params["row_stamps"] = p.row_stamps ? "on" : "off";  // on: kernels count finished rows (instrumented)
  if (is_row_stream(p) && c.mode == ProcessMode::kEmulate)
    params["emulation"] =
        "ranks run concurrently on their own streams (attention in row chunks interleaved over the ranks, "
        "each owner's combine beside it); events are placed on the GPU timeline";
  params["attention"] = attention_impl_name(p.attention);  // which local-attention kernels ran
  if (p.kv_fp8) {  // the scenario's kv_dtype says fp8; how the values were quantized
    char scale[32];
    std::snprintf(scale, sizeof scale, "%.9g", p.kv_scale);
    params["kv_cache"] = std::string("fp8 e4m3, one per-tensor scale ") + scale + " for K and V; query bf16";
  }
  // What the phase figures were measured with: "cupti" (the GPU timeline), "cuda-events" (events around each
  // phase; short phases read long), "step" (only each rank's whole step).
  params["timing"] = timing_name(s.timing);
  if (!result.timing_note.empty()) params["timing_note"] = result.timing_note;
  const std::vector<double> steps = per_rep(p, c, s, 0);
  const std::size_t shown = steps.empty() ? 0 : median_rep(steps);
  if (s.timing == Timing::kCupti) {
    params["timeline"] = "cupti activity records; events show repetition " + std::to_string(shown) +
                         "; rows aligned through the prologue's %globaltimer stamp kernel";
    params["timeline_repetition"] = std::to_string(shown);
    params["timeline_records_dropped"] = std::to_string(s.dropped);
    params["timeline_unplaced"] = std::to_string(s.unplaced);
    params["timeline_timestamps"] = s.hardware_timestamps ? "hardware" : "software";
    if (c.mode == ProcessMode::kMpi) params["timeline_ranks"] = "rank 0's process only";
  }
  sink.on_scenario(sc);

  if (!steps.empty()) emit_events(sink, p, c, s, shown);
  emit_rows(sink, p, s);
  for (const PhaseStats& st : result.phases) {
    v1::PhaseSummary m;
    add_summary(m, st);
    sink.on_phase_summary(m);
  }
  for (const auto& [name, from] :
       {std::pair{"step", std::size_t{0}}, std::pair{"merge", first_merge_phase(p)}}) {
    v1::PhaseSummary m;
    add_summary(m, make_stats(-1, name, per_rep(p, c, s, from), false));
    sink.on_phase_summary(m);
  }
  v1::Summary sum;
  sum.set_step_latency_ns(result.step_median_ns);
  sum.set_merge_latency_ns(result.merge_median_ns);
  for (int r = 0; r < p.N; ++r) sum.add_kv_bytes_per_rank(kv_bytes(p, r));
  auto& v = *sum.mutable_values();
  v["check_passed"] = result.check.passed ? 1 : 0;
  v["check_rel_l2"] = result.check.rel_l2;
  v["check_max_abs"] = result.check.max_abs;
  v["check_worst_bound_ratio"] = result.check.worst_bound;
  v["check_lse_max_err"] = result.check.lse_max_abs;
  v["check_rows"] = result.check.rows_checked;
  v["outer_step_median_ns"] = result.outer_step_median_ns;
  for (const auto& [name, value] : result.figures) v[name] = value;
  if (s.timing != Timing::kStep) {
    // Idle GPU time before each phase (launch gap; waits on other ranks included), median over repetitions,
    // slowest rank.
    for (std::size_t i = 1; i < p.phases.size(); ++i) {
      double worst = 0;
      for (int r : ranks_with_samples(s))
        if (i < s.gap[r].size() && !s.gap[r][i].empty()) worst = std::max(worst, median_of(s.gap[r][i]));
      v[std::string("gap_before.") + phase_name(p.phases[i]) + "_ns"] = worst;
    }
  }
  sink.on_summary(sum);
  emit_activities(sink, p, s);
}

traces::v1::Header measured_header(ProcessMode mode, const std::vector<int>& devices,
                                   const std::vector<std::string>& argv) {
  v1::Header h =
      traces::make_header(mode == ProcessMode::kEmulate ? v1::SOURCE_EMULATED : v1::SOURCE_HW, argv);
  const SoftwareVersions sv = software_versions();
  h.set_cuda_runtime_version(sv.cuda_runtime);
  h.set_cuda_driver_version(sv.cuda_driver);
  h.set_nccl_version(sv.nccl);
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const DeviceInfo d = device_info(devices[i]);
    v1::Device* m = h.add_devices();
    m->set_index(d.index);
    m->set_rank(mode == ProcessMode::kEmulate ? -1 : static_cast<int>(i));
    m->set_name(d.name);
    m->set_uuid(d.uuid);
    m->set_pci_bus_id(d.pci_bus_id);
    m->set_sm_count(d.sm_count);
    m->set_memory_bytes(d.memory_bytes);
    m->set_compute_capability_major(d.cc_major);
    m->set_compute_capability_minor(d.cc_minor);
    m->set_host_name(h.host_name());
  }
  if (mode == ProcessMode::kEmulate)
    (*h.mutable_notes())["emulation"] =
        "N logical ranks on one device, run one after another; collectives are device-local copies and "
        "reductions (events marked emulated); step latency = sum over phases of the slowest rank";
  return h;
}

}  // namespace dcpsim::hw
