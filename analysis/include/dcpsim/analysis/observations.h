#pragma once
// What calibrate fits and validate checks: measured figures (phase medians, step latency, per-row ready
// times) paired with the simulator's prediction of the same figure for the same scenario under a profile.
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dcpsim/analysis/measured.h"
#include "dcpsim/models/cost_kernels.h"
#include "dcpsim/models/profile.h"
#include "dcpsim/models/scenario.h"

namespace dcpsim::analysis {

// The simulator's figures for one scenario, in seconds.
struct Prediction {
  std::map<std::pair<int, std::string>, double> phase_s;  // (rank, phase): summed over the rank's spans
  double step_s = 0.0;
  std::vector<std::vector<double>> lse_ready_s;     // [rank][row]
  std::vector<std::vector<double>> output_ready_s;  // [rank][row]
  std::vector<double> first_begin_s;                // per rank: start of its first phase
  std::vector<double> done_s;                       // per rank: end of its last kernel
  // Kernel phases (rank, phase): priced from a measured table of the profile, or analytically (a phase with
  // several kernels is analytic when any of them is).
  std::map<std::pair<int, std::string>, models::FigureSource> phase_source;
  // Event-timed sections (MeasuredSection::event_timed): what each measured phase holds beyond its kernels
  // (profile launch.event_pair), added to every phase figure; per rank, the begin of each of its phases, so
  // a step or row gets one pair per phase before it.
  double event_pair_s = 0.0;
  double event_gap_s = 0.0;  // between two consecutive event-timed phases (profile launch.event_gap)
  std::vector<std::vector<double>> phase_begins_s;
};

// How the Predictor prices a measured section.
struct PredictOptions {
  // Trace-driven validation: every kernel phase the trace measured (attention, correction, A2A pack and
  // combine) priced from its own measured median (less the event pair's cost when event-timed); only
  // communication, launches, signals and the step's composition are simulated.
  bool measured_kernels = false;
};

// Re-simulates scenarios under one profile (sim::Simulator). Builds without SimGrid throw InputError on
// construction, naming the missing simulator.
class Predictor {
 public:
  explicit Predictor(const models::HardwareProfile& profile, PredictOptions options = {});
  ~Predictor();
  Predictor(Predictor&&) noexcept;
  // `emulated`: as the runner's --emulate measured it (sim::SimOptions::emulated_ranks); `row_stamps`: with
  // the runner's instrumented merge kernels (sim::SimOptions::row_stamps).
  Prediction predict(const models::Scenario& scenario, bool emulated = false, bool row_stamps = false) const;
  // A measured section as its runner ran it (emulated or not, rows stamped or not), its ranks arriving in the
  // order the trace shows (the rank that waited longest in the first collective arrived first), and its
  // event pairs added where it was event-timed.
  Prediction predict(const MeasuredSection& section) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

enum class ObservationKind { kPhase, kStep, kRowLse, kRowOutput };
std::string_view to_string(ObservationKind k);  // "phase" | "step" | "row_lse" | "row_output"

struct Observation {
  int section = 0;  // index into the section list it was built from
  ObservationKind kind = ObservationKind::kPhase;
  int rank = 0;  // -1: the slowest rank (phase summaries over all ranks; the step)
  std::string
      phase;     // the figure: simulator phase(s) (kPhase, "wait+combine" for a sum), else the kind's name
  int row = -1;  // kRowLse / kRowOutput
  double measured_s = 0.0;
  std::vector<std::string> sim_phases;  // kPhase: the simulator phases whose summed duration is compared
  // Step and row times measured on the GPU from each rank's first phase (the hardware runner's CUDA events
  // and %globaltimer stamps) rather than from the moment the CPUs start issuing (the simulator's step
  // origin).
  bool from_first_phase = false;
};
// What an observation is a figure of, as reports and fits group it: the phase's name, else the kind's.
std::string figure_of(const Observation& o);

struct ObservationSet {
  std::vector<Observation> observations;
  // One line per kind of figure left out and why ("12 phase medians of emulated collectives (query_gather,
  // ...): emulation replaces collectives with device-local copies").
  std::vector<std::string> excluded;
};

// The figures of `sections` that their sources measure faithfully (phase_map.h): every kernel phase; other
// phases, the step and rows only for simulated and real multi-GPU traces. Zero-length figures are left out
// (a relative error of a 0 ns phase means nothing).
ObservationSet build_observations(const std::vector<MeasuredSection>& sections, bool include_rows = true);

// With measured kernels, the kernel phases are inputs: true for an observation that is one of them.
bool is_measured_kernel_input(const MeasuredSection& section, const Observation& o);

// The prediction of one observation; NaN when the simulator has no such figure for that scenario (e.g. a
// phase the strategy does not run).
double predicted(const Prediction& p, const Observation& o);

}  // namespace dcpsim::analysis
