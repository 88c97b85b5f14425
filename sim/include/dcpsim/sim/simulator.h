#pragma once
// The SimGrid simulator of one DCP decode step.
//
// Simulator::run() turns a Scenario into a graph of SimGrid activities on a platform built from the hardware
// profile: per rank, the CPU issuing each kernel (issue cost per launch mode) and the GPU stream running them
// in order (analytic durations from models/cost_kernels.h); every byte that crosses GPUs is a SimGrid
// communication (query all-gather, LSE all-gather, reduce-scatter / all-reduce / all-to-all realised step by
// step from NCCL plans, direct pushes and flag writes), so concurrent flows share link bandwidth (max-min).
//
// One SimGrid engine serves the whole process (SimGrid allows one): the first simulation creates it and
// builds every platform the process may need, after which no platform can be added. Platforms are sized for
// the NVLink domain of each built-in profile and of every Simulator constructed before that first run, with
// SimOptions::max_gpus GPUs (at least kDefaultMaxGpus). Runs are deterministic: the same scenario gives the
// same result, bit for bit, whatever ran before it in the process.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dcpsim/models/cost_collectives.h"
#include "dcpsim/models/cost_collectives_price.h"
#include "dcpsim/models/profile.h"
#include "dcpsim/models/scenario.h"
#include "dcpsim/sim/step_result.h"
#include "dcpsim/traces/trace_sink.h"

namespace dcpsim::sim {

inline constexpr int kDefaultMaxGpus = 144;

// How all-pairs sends (the all-to-all, direct and row-stream pushes) become SimGrid transfers
// (sim/src/fanout.h): one per peer, or one per window of peers_in_flight peers from the sender to the
// destination domain's NVSwitch. The two agree when the ranks enter the phase together; bundles cost
// peers_in_flight times fewer transfers. kAuto bundles above kBundleAboveRanks ranks.
enum class FlowGrain : std::uint8_t { kAuto, kPair, kBundle };
inline constexpr int kBundleAboveRanks = 16;
std::string_view to_string(FlowGrain grain);
// "auto", "pair" or "bundle"; throws InputError naming the choices otherwise.
FlowGrain parse_flow_grain(std::string_view text);

struct SimOptions {
  models::CollectiveOptions collective;  // force NCCL's algorithm / protocol (like NCCL_ALGO / NCCL_PROTO)
  int max_gpus = kDefaultMaxGpus;        // GPUs of the platform for this profile's domain size
  // Transfers a rank keeps in flight to different peers (all-to-all, direct and row-stream pushes): the k-th
  // waits for the (k − W)-th. NCCL spreads send/recv peers over a bounded set of channels, and a push
  // kernel's CTAs take peers in rounds; groups of up to W + 1 ranks (every single-node group) are not limited
  // at all.
  int peers_in_flight = 16;
  FlowGrain flows = FlowGrain::kAuto;
  // Ring and tree steps timed by dcpsim's own model of their two links instead of SimGrid transfers: the same
  // times (to rounding) at a fraction of the cost; a step in which another transfer shared those links is
  // re-run without (sim/src/activity_graph.h "Pipes"). Off: every transfer is SimGrid's (tests compare the
  // two).
  bool pipes = true;
  // Price the step as the runner's `hw run --emulate` runs it: the N ranks' kernels one after another on one
  // GPU, every rank's attention before any merge kernel. A rank's first merge kernel (correction, A2A pack)
  // then reads an output that the later ranks' attention may have pushed out of L2: when their KV bytes
  // exceed the profile's L2 size its inputs are cold (models::MergeShape::cold_inputs). Validation and
  // calibration set this for emulated traces; on real GPUs the kernel follows its own attention.
  bool emulated_ranks = false;
  // Price the merge kernels the runner runs with `hw run --row-stamps`: its correction and combine kernels
  // then stamp each row (models::MergeShape::row_stamps). Validation and calibration set this for sections
  // measured with stamps.
  bool row_stamps = false;
};

// What one run may take from a measurement instead of the model (trace-driven validation, `validate --kernels
// measured`): the order in which the ranks reached the step, and kernel durations.
struct StepInputs {
  // The ranks in the order they reach the step (first first; a permutation of 0..N-1), spread evenly over the
  // profile's arrival skew (nccl.arrival_skew_graph / _eager): the first waits the whole skew in the step's
  // first collective, the last none. Empty: rank order. Emulated steps (one GPU, one host thread) have none.
  std::vector<int> arrival_order;
  // Per rank, kernel durations to use instead of the model's, by kernel: "attention" (the whole phase: query
  // repack, decode kernel and split-KV combine as one), "correction", "a2a_pack", "a2a_combine"; a kernel not
  // listed is priced as usual. Recorded as FigureSource::kMeasured.
  std::vector<std::map<std::string, double>> kernel_s;
  // The direct merge as the runner ran it before its one-kernel protocol (the November 2026 two-GPU traces):
  // a push kernel (epoch, stores, flags) and then a combine kernel that polls the flags and combines.
  bool direct_two_kernels = false;
};

// One collective on its own, from every rank entering it to every rank leaving it (golden examples, tests,
// `dcpsim collectives`).
struct CollectiveRun {
  models::CollectivePrice price;  // where its time comes from (a measured table or NCCL's model)
  models::CollectivePlan plan;    // as realised (its analytic time is the price's)
  std::vector<double> begin_s;    // per rank: entered the collective
  std::vector<double> end_s;      // per rank: its last send and receive are done
  double time_s = 0.0;            // first entry to last exit
};

class Simulator {
 public:
  // Throws InputError for an invalid profile; RuntimeError when the engine is already running and has no
  // platform for this profile's NVLink domain size (construct such simulators before the first run).
  explicit Simulator(models::HardwareProfile profile, SimOptions options = {});

  // Simulates one decode step. Throws InputError for an invalid scenario (Scenario::validate(), a group
  // larger than the platform, a group beyond one NVLink domain on a profile without an inter-node fabric) and
  // RuntimeError when some rank did not finish. With a sink, emits one trace section: the scenario, events
  // per rank and lane, flows from each flag to the wait it releases, row results, phase summaries and the
  // summary.
  StepResult run(const models::Scenario& scenario, traces::TraceSink* sink = nullptr) const;
  // The same with measured inputs (StepInputs); throws InputError for an arrival order that is not a
  // permutation of the ranks or a negative kernel duration.
  StepResult run(const models::Scenario& scenario, const StepInputs& inputs,
                 traces::TraceSink* sink = nullptr) const;

  // Realises one collective on `ranks` ranks, priced as models::price_collective prices `call` (default:
  // nccl-tests' steady state); rank r enters at entry_s[r] (all at 0 when empty).
  CollectiveRun run_collective(models::Collective collective, int ranks, double bytes_per_rank,
                               const std::vector<double>& entry_s = {},
                               const models::CollectiveCall& call = {}) const;

  // Builds the SimGrid platforms now instead of at the first run. A process that then forks workers (scans)
  // hands each a ready engine whose clock has never moved.
  void prepare() const;

  const models::HardwareProfile& profile() const { return profile_; }
  const SimOptions& options() const { return options_; }

 private:
  models::HardwareProfile profile_;
  SimOptions options_;
};

// The trace header for simulated traces: provenance (version, git sha, argv, time, host) plus the profile's
// name, key numbers and whole JSON text.
traces::v1::Header sim_trace_header(const models::HardwareProfile& profile,
                                    std::vector<std::string> argv = {});

// The memory a simulation of `scenario` needs (an estimate from measurements, growing with N^2), and the
// check Simulator::run makes before it starts: InputError when the machine has less available.
double estimated_memory_bytes(const models::Scenario& scenario);
void check_memory(const models::Scenario& scenario);

}  // namespace dcpsim::sim
