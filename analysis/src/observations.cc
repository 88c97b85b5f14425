// Pairing measured figures with the simulator's: which figures count, and how a prediction is looked up.
#include "dcpsim/analysis/observations.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>

#include "dcpsim/analysis/phase_map.h"
#include "dcpsim/error.h"
#include "dcpsim/models/cost_collectives_price.h"

#if DCPSIM_WITH_SIMGRID
#include "dcpsim/sim/simulator.h"
#endif

namespace dcpsim::analysis {

namespace {

// The simulator's kernel a measured kernel phase stands for (trace-driven validation), or "".
std::string measured_kernel_of(const MeasuredSection& s, const MeasuredPhase& m) {
  // The two-kernel direct merge's combine kernel polls the flags, then combines: a kernel of its own.
  if (m.measured_name == "direct_combine" && m.sim_phases.size() == 2) return "direct_combine";
  if (m.sim_phases.size() != 1) return "";
  const std::string& p = m.sim_phases.front();
  if (p == "attention" || p == "correction") return p;
  if (p == "pack") return "a2a_pack";
  if (p == "combine" && s.scenario.strategy == models::Strategy::kA2a) return "a2a_combine";
  return "";
}

// Which rank reached the step first: the one that waited longest in its first collective.
[[maybe_unused]] std::vector<int> arrival_order(const MeasuredSection& s) {
  if (s.source != traces::v1::SOURCE_HW || s.scenario.dcp < 2) return {};
  std::vector<std::pair<double, int>> waits;
  for (const MeasuredPhase& m : s.phases) {
    if (m.rank >= 0 && m.sim_phases.size() == 1 && m.sim_phases.front() == "query_gather")
      waits.push_back({-m.median_s, m.rank});
  }
  if (static_cast<int>(waits.size()) != s.scenario.dcp) return {};
  std::sort(waits.begin(), waits.end());
  std::vector<int> order;
  for (const auto& [w, r] : waits) order.push_back(r);
  return order;
}

}  // namespace

#if DCPSIM_WITH_SIMGRID
struct Predictor::Impl {
  sim::Simulator simulator;
  // As the runner ran it (--emulate, --row-stamps), keyed by those two options; each made on the first
  // section that needs it (a profile copy each: fits build a Predictor per residual evaluation).
  std::map<std::pair<bool, bool>, sim::Simulator> variants;
  PredictOptions options;

  Prediction run(const models::Scenario& scenario, bool emulated, bool row_stamps,
                 const sim::StepInputs& inputs);
};

Predictor::Predictor(const models::HardwareProfile& profile, PredictOptions options)
    : impl_(std::make_unique<Impl>(Impl{sim::Simulator(profile), {}, options})) {}

Prediction Predictor::predict(const MeasuredSection& section) const {
  const bool emulated = section.source == traces::v1::SOURCE_EMULATED;
  const double pair = section.event_timed ? models::event_pair_time(impl_->simulator.profile()) : 0.0;
  sim::StepInputs inputs;
  inputs.arrival_order = arrival_order(section);
  for (const MeasuredPhase& m : section.phases)
    inputs.direct_two_kernels |= m.measured_name == "direct_write";
  if (impl_->options.measured_kernels) {
    inputs.kernel_s.resize(static_cast<std::size_t>(section.scenario.dcp));
    for (const MeasuredPhase& m : section.phases) {
      const std::string kernel = measured_kernel_of(section, m);
      if (kernel.empty() || m.rank < 0 || m.rank >= section.scenario.dcp) continue;
      inputs.kernel_s[static_cast<std::size_t>(m.rank)][kernel] = std::max(0.0, m.median_s - pair);
    }
  }
  Prediction p = impl_->run(section.scenario, emulated, section.row_stamps, inputs);
  p.event_pair_s = pair;
  p.event_gap_s = section.event_timed ? models::event_gap_time(impl_->simulator.profile()) : 0.0;
  return p;
}

Prediction Predictor::predict(const models::Scenario& scenario, bool emulated, bool row_stamps) const {
  return impl_->run(scenario, emulated, row_stamps, sim::StepInputs{});
}

Prediction Predictor::Impl::run(const models::Scenario& scenario, bool emulated, bool row_stamps,
                                const sim::StepInputs& inputs) {
  const sim::Simulator* chosen = &simulator;
  if (emulated || row_stamps) {
    auto it = variants.find({emulated, row_stamps});
    if (it == variants.end()) {
      sim::SimOptions o;
      o.emulated_ranks = emulated;
      o.row_stamps = row_stamps;
      it = variants.try_emplace({emulated, row_stamps}, simulator.profile(), o).first;
    }
    chosen = &it->second;
  }
  const sim::StepResult r = chosen->run(scenario, inputs);
  Prediction p;
  p.step_s = r.step_latency_s;
  for (const sim::RankTimeline& rank : r.ranks) {
    double first = rank.done_s;
    std::vector<double> begins;
    for (const sim::PhaseSpan& span : rank.phases) {
      p.phase_s[{rank.rank, span.name}] += span.duration_s();
      first = std::min(first, span.begin_s);
      begins.push_back(span.begin_s);
    }
    p.phase_begins_s.push_back(begins);
    p.lse_ready_s.push_back(rank.lse_ready_s);
    p.output_ready_s.push_back(rank.output_ready_s);
    p.first_begin_s.push_back(first);
    p.done_s.push_back(rank.done_s);
  }
  for (const sim::KernelFigure& f : r.kernel_figures) {
    // The simulator's kernel names → the phase that holds the kernel.
    const std::string phase = f.kernel == "a2a_pack"                                      ? "pack"
                              : f.kernel == "a2a_combine" || f.kernel == "direct_combine" ? "combine"
                                                                                          : f.kernel;
    auto [it, fresh] = p.phase_source.try_emplace({f.rank, phase}, f.source);
    if (!fresh && f.source == models::FigureSource::kAnalytic) it->second = f.source;
  }
  return p;
}
#else
struct Predictor::Impl {};

Predictor::Predictor(const models::HardwareProfile&, PredictOptions) {
  throw InputError(
      "calibrate and validate re-simulate every scenario, but this dcpsim was built without the "
      "SimGrid simulator (configure with -DDCPSIM_WITH_SIMGRID=ON)");
}

Prediction Predictor::predict(const models::Scenario&, bool, bool) const {
  return {};
}
Prediction Predictor::predict(const MeasuredSection&) const {
  return {};
}
#endif

Predictor::~Predictor() = default;
Predictor::Predictor(Predictor&&) noexcept = default;

std::string figure_of(const Observation& o) {
  return o.kind == ObservationKind::kPhase ? o.phase : std::string(to_string(o.kind));
}

std::string_view to_string(ObservationKind k) {
  switch (k) {
    case ObservationKind::kPhase:
      return "phase";
    case ObservationKind::kStep:
      return "step";
    case ObservationKind::kRowLse:
      return "row_lse";
    case ObservationKind::kRowOutput:
      return "row_output";
  }
  return "?";
}

namespace {

// An idle gap inside a phase above this is the GPU waiting for its host: queued kernels launched eagerly
// follow each other after 1.4 us (median; p90 1.9 us) on the H200 timelines (scripts/timeline_fit.py).
constexpr double kHostBoundGap = 4e-6;

std::string join(const std::set<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

ObservationSet build_observations(const std::vector<MeasuredSection>& sections, bool include_rows) {
  ObservationSet set;
  std::set<std::string> unfaithful;
  int unfaithful_count = 0, zero_count = 0, step_rows_skipped = 0, shared_gpu_count = 0, host_bound_count = 0;
  for (int i = 0; i < static_cast<int>(sections.size()); ++i) {
    const MeasuredSection& s = sections[i];
    // Emulated row-stream runs its ranks concurrently on the one GPU, so even its kernels share the SMs and
    // HBM with N − 1 others: none of its phases is one rank's.
    const bool shared_gpu =
        s.source == traces::v1::SOURCE_EMULATED && s.scenario.strategy == models::Strategy::kRowStream;
    // An emulated eager step issues every rank's work from the runner's one host thread, which falls behind
    // the GPU wherever it launches many short operations (each emulated collective is N copies per rank):
    // the next rank's kernels then wait on the GPU for their launch. A real rank's host issues its own
    // work only, which the simulator models; such a phase measures the emulator's host instead.
    const bool shared_host =
        s.source == traces::v1::SOURCE_EMULATED && s.scenario.launch == models::LaunchMode::kEager;
    for (const MeasuredPhase& m : s.phases) {
      if (shared_gpu) {
        ++shared_gpu_count;
      } else if (!measures_faithfully(s.source, m.sim_phases)) {
        unfaithful.insert(m.phase);
        ++unfaithful_count;
      } else if (shared_host && m.largest_inner_gap_s > kHostBoundGap) {
        ++host_bound_count;
      } else if (m.median_s <= 0) {
        ++zero_count;
      } else {
        set.observations.push_back(
            {i, ObservationKind::kPhase, m.rank, m.phase, -1, m.median_s, m.sim_phases});
      }
    }
    if (!step_is_faithful(s.source)) {
      step_rows_skipped += (s.step_s ? 1 : 0) + static_cast<int>(s.rows.size());
      continue;
    }
    // The hardware runner times a step on each GPU from its first phase; the simulator from the CPUs' first
    // issue. Simulated traces keep the simulator's origin.
    const bool gpu_clock = s.source == traces::v1::SOURCE_HW;
    if (s.step_s && *s.step_s > 0)
      set.observations.push_back({i, ObservationKind::kStep, -1, "step", -1, *s.step_s, {}, gpu_clock});
    if (!include_rows) continue;
    for (const MeasuredRow& r : s.rows) {
      if (r.lse_ready_s > 0) {
        set.observations.push_back(
            {i, ObservationKind::kRowLse, r.rank, "row_lse", r.row, r.lse_ready_s, {}, gpu_clock});
      }
      if (r.output_ready_s > 0) {
        set.observations.push_back(
            {i, ObservationKind::kRowOutput, r.rank, "row_output", r.row, r.output_ready_s, {}, gpu_clock});
      }
    }
  }
  if (unfaithful_count > 0) {
    set.excluded.push_back(std::to_string(unfaithful_count) + " phase medians of emulated communication (" +
                           join(unfaithful) +
                           "): emulation runs every rank on one GPU and replaces collectives, pushes and "
                           "waits with device-local copies, so only kernel phases are compared");
  }
  if (shared_gpu_count > 0) {
    set.excluded.push_back(std::to_string(shared_gpu_count) +
                           " phase medians of emulated row-stream steps: their ranks run at once on one GPU, "
                           "so every kernel shares it with the others");
  }
  if (host_bound_count > 0) {
    set.excluded.push_back(
        std::to_string(host_bound_count) +
        " phase medians of emulated eager steps whose GPU waited for the runner's one host "
        "thread inside the phase (an idle gap over " +
        std::to_string(static_cast<int>(kHostBoundGap * 1e6)) +
        " us between its activities on the GPU timeline): they time the emulator's host, which a real rank "
        "does not share");
  }
  if (step_rows_skipped > 0) {
    set.excluded.push_back(
        std::to_string(step_rows_skipped) +
        " step latencies and per-row ready times of emulated traces: the emulated step runs every "
        "rank on one GPU (one after another, or sharing it for row-stream)");
  }
  if (zero_count > 0) {
    set.excluded.push_back(std::to_string(zero_count) + " phase medians of 0 ns (no relative error exists)");
  }
  return set;
}

bool is_measured_kernel_input(const MeasuredSection& section, const Observation& o) {
  if (o.kind != ObservationKind::kPhase) return false;
  for (const MeasuredPhase& m : section.phases) {
    if (m.rank == o.rank && m.sim_phases == o.sim_phases) return !measured_kernel_of(section, m).empty();
  }
  return false;
}

double predicted(const Prediction& p, const Observation& o) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  switch (o.kind) {
    case ObservationKind::kStep: {
      if (!o.from_first_phase) return p.step_s;
      double worst = 0.0;  // the slowest rank's step from its own first phase, as the runner reports it
      for (std::size_t r = 0; r < p.done_s.size(); ++r) {
        const double pairs = r < p.phase_begins_s.size() ? double(p.phase_begins_s[r].size()) : 0.0;
        worst = std::max(worst, p.done_s[r] - p.first_begin_s[r] + pairs * p.event_pair_s +
                                    std::max(0.0, pairs - 1) * p.event_gap_s);
      }
      return worst;
    }
    case ObservationKind::kPhase: {
      const int ranks = static_cast<int>(p.lse_ready_s.size());
      // A figure over all ranks is compared with the slowest rank's: the step waits for it.
      double worst = nan;
      for (int r = o.rank < 0 ? 0 : o.rank; r < (o.rank < 0 ? ranks : o.rank + 1); ++r) {
        double sum = 0.0;
        for (const std::string& phase : o.sim_phases) {
          auto it = p.phase_s.find({r, phase});
          if (it == p.phase_s.end()) {
            sum = nan;
            break;
          }
          sum += it->second;
        }
        if (!std::isnan(sum)) worst = std::isnan(worst) ? sum : std::max(worst, sum);
      }
      return worst + p.event_pair_s;
    }
    case ObservationKind::kRowLse:
    case ObservationKind::kRowOutput: {
      const auto& table = o.kind == ObservationKind::kRowLse ? p.lse_ready_s : p.output_ready_s;
      if (o.rank < 0 || o.rank >= static_cast<int>(table.size())) return nan;
      const auto& rows = table[o.rank];
      if (o.row < 0 || o.row >= static_cast<int>(rows.size())) return nan;
      double pairs =
          0.0;  // one event pair (and gap after the first) per phase begun before the row was ready
      if (o.rank < static_cast<int>(p.phase_begins_s.size())) {
        for (double b : p.phase_begins_s[o.rank]) pairs += b < rows[o.row] ? 1.0 : 0.0;
      }
      return rows[o.row] - (o.from_first_phase ? p.first_begin_s[o.rank] : 0.0) + pairs * p.event_pair_s +
             std::max(0.0, pairs - 1) * p.event_gap_s;
    }
  }
  return nan;
}

}  // namespace dcpsim::analysis
