#include "trace_out.h"

#include <algorithm>
#include <string>

#include "dcpsim/hw/device.h"
#include "dcpsim/models/scenario_proto.h"
#include "dcpsim/traces/provenance.h"

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

// Per repetition: emulation runs the ranks one after another, so a step is estimated bulk-synchronously (Σ
// over phases of the slowest rank); real ranks run concurrently, so a step is the slowest rank's span.
std::vector<double> per_rep(const StepPlan& p, const RunConfig& c, const Samples& s, std::size_t from_phase) {
  const auto ranks = ranks_with_samples(s);
  if (ranks.empty()) return {};
  const std::size_t reps = s.rank_step[ranks[0]].size();
  std::vector<double> out(reps, 0.0);
  for (std::size_t k = 0; k < reps; ++k) {
    if (c.mode == ProcessMode::kEmulate || from_phase > 0) {
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
  return tokens * (p.k_width() + (p.mla ? 0 : p.v_width())) *
         static_cast<std::int64_t>(ops::elem_bytes(p.in));
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
      return B * p.J * p.N * (p.D + ops::lse_lanes(p.out)) * ob;
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
  const auto ranks = ranks_with_samples(s);
  double t = 0;  // emulation: bulk-synchronous phase start
  std::vector<double> end(s.rank_step.size(), 0);
  for (std::size_t i = 0; i < p.phases.size(); ++i) {
    double slowest = 0;
    for (int r : ranks) {
      const double d = s.duration[r][i][k];
      const double start = emulate ? t : s.offset[r][i][k];
      slowest = std::max(slowest, d);
      const Phase ph = p.phases[i];
      v1::Event e =
          traces::make_event(r, is_collective(ph) ? "comm" : "stream0",
                             is_collective(ph) ? v1::EVENT_KIND_COLLECTIVE : v1::EVENT_KIND_KERNEL,
                             phase_name(ph), static_cast<std::int64_t>(start),
                             static_cast<std::int64_t>(start + d), phase_bytes(p, ph, r), 0, p.rows_total);
      e.set_emulated(emulate && is_collective(ph));
      sink.on_event(e);
      end[r] = std::max(end[r], start + d);
    }
    t += slowest;
  }
  for (int r : ranks) {
    v1::Event e =
        traces::make_event(r, "step", v1::EVENT_KIND_PHASE, "step", 0, static_cast<std::int64_t>(end[r]));
    sink.on_event(e);
  }
}

void emit_rows(traces::TraceSink& sink, const StepPlan& p, const Samples& s) {
  const bool ag =
      p.N > 1 && (p.s.strategy == models::Strategy::kAgRs || p.s.strategy == models::Strategy::kAgAr);
  for (int r : ranks_with_samples(s)) {
    const auto& st = s.stamps[r];
    if (st.empty()) continue;
    const unsigned long long origin = st[0];
    auto rel = [&](unsigned long long v) { return v > origin ? static_cast<std::int64_t>(v - origin) : 0; };
    for (int b = 0; b < p.rows_total; ++b) {
      v1::RowResult row;
      row.set_row(b);
      row.set_rank(r);
      const unsigned long long out_ready = ag ? st[1] : st[2 + p.rows_total + b];
      const unsigned long long lse_ready = ag ? st[2 + b] : out_ready;
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
  const bool emulate = c.mode == ProcessMode::kEmulate;
  for (int rank : ranks_with_samples(s))
    for (std::size_t i = 0; i < p.phases.size(); ++i)
      r.phases.push_back(make_stats(rank, phase_name(p.phases[i]), s.duration[rank][i],
                                    emulate && is_collective(p.phases[i])));
  r.step_median_ns = median_of(per_rep(p, c, s, 0));
  r.merge_median_ns = median_of(per_rep(p, c, s, first_merge_phase(p)));
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
  params["row_stamps"] = c.row_stamps ? "on" : "off";
  params["attention"] = attention_impl_name(
      p.attention);  // which local-attention kernels ran  // on: kernels count finished rows (instrumented)
  sink.on_scenario(sc);

  const std::vector<double> steps = per_rep(p, c, s, 0);
  if (!steps.empty()) emit_events(sink, p, c, s, median_rep(steps));
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
  sink.on_summary(sum);
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
