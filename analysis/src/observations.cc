// Pairing measured figures with the simulator's: which figures count, and how a prediction is looked up.
#include "dcpsim/analysis/observations.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>

#include "dcpsim/analysis/phase_map.h"
#include "dcpsim/error.h"

#if DCPSIM_WITH_SIMGRID
#include "dcpsim/sim/simulator.h"
#endif

namespace dcpsim::analysis {

#if DCPSIM_WITH_SIMGRID
struct Predictor::Impl {
  sim::Simulator simulator;
  // As the runner ran it (--emulate, --row-stamps), keyed by those two options; each made on the first
  // section that needs it (a profile copy each: fits build a Predictor per residual evaluation).
  std::map<std::pair<bool, bool>, sim::Simulator> variants;
};

Predictor::Predictor(const models::HardwareProfile& profile)
    : impl_(std::make_unique<Impl>(Impl{sim::Simulator(profile), {}})) {}

Prediction Predictor::predict(const MeasuredSection& section) const {
  return predict(section.scenario, section.source == traces::v1::SOURCE_EMULATED, section.row_stamps);
}

Prediction Predictor::predict(const models::Scenario& scenario, bool emulated, bool row_stamps) const {
  const sim::Simulator* simulator = &impl_->simulator;
  if (emulated || row_stamps) {
    auto it = impl_->variants.find({emulated, row_stamps});
    if (it == impl_->variants.end()) {
      sim::SimOptions o;
      o.emulated_ranks = emulated;
      o.row_stamps = row_stamps;
      it = impl_->variants.try_emplace({emulated, row_stamps}, impl_->simulator.profile(), o).first;
    }
    simulator = &it->second;
  }
  const sim::StepResult r = simulator->run(scenario);
  Prediction p;
  p.step_s = r.step_latency_s;
  for (const sim::RankTimeline& rank : r.ranks) {
    double first = rank.done_s;
    for (const sim::PhaseSpan& span : rank.phases) {
      p.phase_s[{rank.rank, span.name}] += span.duration_s();
      first = std::min(first, span.begin_s);
    }
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

Predictor::Predictor(const models::HardwareProfile&) {
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

double predicted(const Prediction& p, const Observation& o) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  switch (o.kind) {
    case ObservationKind::kStep: {
      if (!o.from_first_phase) return p.step_s;
      double worst = 0.0;  // the slowest rank's step from its own first phase, as the runner reports it
      for (std::size_t r = 0; r < p.done_s.size(); ++r)
        worst = std::max(worst, p.done_s[r] - p.first_begin_s[r]);
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
      return worst;
    }
    case ObservationKind::kRowLse:
    case ObservationKind::kRowOutput: {
      const auto& table = o.kind == ObservationKind::kRowLse ? p.lse_ready_s : p.output_ready_s;
      if (o.rank < 0 || o.rank >= static_cast<int>(table.size())) return nan;
      const auto& rows = table[o.rank];
      if (o.row < 0 || o.row >= static_cast<int>(rows.size())) return nan;
      return rows[o.row] - (o.from_first_phase ? p.first_begin_s[o.rank] : 0.0);
    }
  }
  return nan;
}

}  // namespace dcpsim::analysis
