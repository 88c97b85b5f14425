// run_step (runner.h): builds the ranks, runs the repetitions in the chosen process mode, checks the merged
// output against the reference and reports (trace_out.cc writes the trace section).
#include "dcpsim/hw/runner.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <exception>
#include <thread>

#include "check.h"
#include "cuda_check.h"
#include "dcpsim/error.h"
#include "dcpsim/hw/device.h"
#include "dcpsim/memory_budget.h"
#include "exchange.h"
#include "footprint.h"
#include "nccl_window.h"
#include "plan.h"
#include "rank_state.h"
#include "row_stream.h"
#include "step.h"
#include "timing.h"
#include "trace_out.h"

namespace dcpsim::hw {
namespace {

double step_timeout_s(const RunConfig& c) {
  return 120.0 + 4.0 * static_cast<double>(c.direct_timeout_ms) / 1000.0;
}

void require_devices(const std::vector<int>& devices) {
  const int n = device_count();
  if (n == 0) throw RuntimeError("no CUDA device is visible (hw run needs a GPU)");
  for (int d : devices)
    if (d < 0 || d >= n)
      throw InputError("--devices " + std::to_string(d) + " is not a device here (0.." +
                       std::to_string(n - 1) + ")");
}

struct Run {
  Ranks ranks;
  Samples samples;
  std::vector<RankOutputs> outputs;
  std::unique_ptr<GpuTimeline> timeline;  // CUPTI, when the phases are timed on the GPU timeline
  std::vector<int> devices;               // the devices this process uses
  std::vector<double> used_before;        // device memory in use before the run allocated anything
  double device_peak = 0;                 // the most the run added on one device (sampled)

  void sample_device() {
    for (std::size_t i = 0; i < devices.size(); ++i)
      device_peak = std::max(device_peak, device_used_bytes(devices[i]) - used_before[i]);
  }
};

// The devices a run uses, checked, and their memory in use before it allocates anything (the context
// included, which the estimate leaves out).
void start_devices(const StepPlan& p, const RunConfig& c, Run& run) {
  if (c.mode == ProcessMode::kMpi) return;
  if (c.mode == ProcessMode::kEmulate) {
    run.devices = {c.devices.empty() ? 0 : c.devices.front()};
  } else {
    if (static_cast<int>(c.devices.size()) != p.N)
      throw InputError("--devices lists " + std::to_string(c.devices.size()) + " devices; --dcp " +
                       std::to_string(p.N) + " needs one per rank (or --emulate)");
    run.devices = c.devices;
  }
  require_devices(run.devices);
  for (int d : run.devices) run.used_before.push_back(device_used_bytes(d));
}

// The memory figures of the run: the estimates made before it, what it held at its peak.
void memory_figures(const Footprint& f, const Run& run, RunResult& result) {
  const double peak_rss = memory::peak_rss_bytes();
  memory::note_measured("device", run.device_peak);
  result.figures.push_back({"memory.device_estimate_gb", f.device_bytes / 1e9});
  result.figures.push_back({"memory.device_measured_gb", run.device_peak / 1e9});
  result.figures.push_back({"memory.device_allocated_peak_gb", static_cast<double>(DeviceBytes::peak) / 1e9});
  result.figures.push_back({"memory.host_estimate_gb", f.host_bytes / 1e9});
  result.figures.push_back({"memory.host_peak_rss_gb", peak_rss / 1e9});
}

// Resolves --timing: CUPTI when asked for (an error when it cannot start) or when automatic (a one-line
// notice and CUDA events when it cannot).
void start_timing(const RunConfig& c, Run& run, std::string& note) {
  Timing t = c.timing;
  if (t == Timing::kAuto || t == Timing::kCupti) {
    std::string why;
    run.timeline = GpuTimeline::start(&why);
    if (!run.timeline) {
      if (t == Timing::kCupti) throw RuntimeError("--timing cupti: " + why);
      note = "CUPTI unavailable (" + why + "); phases timed with CUDA events";
      std::fprintf(stderr, "notice: %s\n", note.c_str());
    }
    t = run.timeline ? Timing::kCupti : Timing::kEvents;
  }
  run.samples.timing = t;
}

void attach_timing(Run& run, RankState& r) {
  r.timing = run.samples.timing;
  r.timeline = run.timeline.get();
}

void finish_timing(const StepPlan& p, const RunConfig& c, Run& run) {
  if (run.timeline) timeline_samples(p, c, *run.timeline, run.samples);
}

void run_emulated(const StepPlan& p, const RunConfig& c, Run& run) {
  const int dev = run.devices.front();
  DCPSIM_CUDA(cudaSetDevice(dev));
  cudaStream_t stream = nullptr;
  DCPSIM_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  struct StreamGuard {
    cudaStream_t s;
    ~StreamGuard() { cudaStreamDestroy(s); }
  } guard{stream};
  for (int r = 0; r < p.N; ++r) {
    run.ranks.push_back(make_rank_state(p, c, r, dev, stream));
    prepare_rank(p, *run.ranks.back());
    attach_timing(run, *run.ranks.back());
  }
  connect_ranks(p, c, run.ranks, {true, {}, nullptr});
  run.sample_device();
  EmulatedExchange ex(run.ranks);
  run.samples.resize(p.N, p.phases.size());
  auto enqueue = [&](bool capturing) {
    if (enqueue_whole_step(p, c, run.ranks, ex, capturing)) return;  // concurrent ranks (row-stream)
    for (auto& r : run.ranks) enqueue_prologue(p, c, *r, capturing);
    for (std::size_t i = 0; i < p.phases.size(); ++i)  // phase-major: every rank's inputs exist before a pull
      for (auto& r : run.ranks) enqueue_phase(p, c, i, *r, ex, capturing);
  };
  auto after_any = [&] {
    for (auto& r : run.ranks) {
      check_direct_error(*r, c.direct_timeout_ms);
      check_row_stream_error(*r, c.direct_timeout_ms);
    }
  };
  auto after_rep = [&] {
    for (auto& r : run.ranks) run.samples.collect(*r);
  };
  run_repetitions(stream, p.s.launch != models::LaunchMode::kEager, c.warmup, c.reps, step_timeout_s(c),
                  nullptr, run.timeline.get(), 0, enqueue, after_any, after_rep);
  run.sample_device();
  for (auto& r : run.ranks) run.outputs.push_back(download_outputs(p, *r, checked_rows(p, c.check_rows)));
}

void run_threads(const StepPlan& p, const RunConfig& c, Run& run) {
  for (int r = 0; r < p.N; ++r) {
    run.ranks.push_back(make_rank_state(p, c, r, c.devices[r], nullptr));
    prepare_rank(p, *run.ranks.back());
    attach_timing(run, *run.ranks.back());
  }
  std::vector<ncclComm_t> comms(p.N);
  DCPSIM_NCCL(ncclCommInitAll(comms.data(), p.N, c.devices.data()));
  NcclExchange ex(comms);
  NcclWindows windows;  // declared after the communicators' owner: deregistered before they are destroyed
  connect_ranks(p, c, run.ranks, {false, comms, &windows});
  run.sample_device();
  run.samples.resize(p.N, p.phases.size());

  std::atomic<bool> failed{false};
  std::vector<std::exception_ptr> errors(p.N);
  std::vector<std::thread> threads;
  for (int r = 0; r < p.N; ++r) {
    threads.emplace_back([&, r] {
      try {
        RankState& rank = *run.ranks[r];
        DCPSIM_CUDA(cudaSetDevice(rank.device));
        auto enqueue = [&](bool capturing) {
          enqueue_prologue(p, c, rank, capturing);
          for (std::size_t i = 0; i < p.phases.size(); ++i) enqueue_phase(p, c, i, rank, ex, capturing);
        };
        run_repetitions(
            rank.stream, p.s.launch != models::LaunchMode::kEager, c.warmup, c.reps, step_timeout_s(c),
            &failed, run.timeline.get(), r, enqueue, [&] { check_direct_error(rank, c.direct_timeout_ms); },
            [&] { run.samples.collect(rank); });
      } catch (...) {
        errors[r] = std::current_exception();
        failed = true;
      }
    });
  }
  for (auto& t : threads) t.join();
  if (failed) {
    windows.abandon();
    ex.abort();
  }
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  run.sample_device();
  for (auto& r : run.ranks) run.outputs.push_back(download_outputs(p, *r, checked_rows(p, c.check_rows)));
}

}  // namespace

RunResult run_step(const RunConfig& config, traces::TraceSink* sink) {
  const StepPlan p = make_plan(config);
  if (config.check_rows == 0 || config.check_rows < -1)
    throw InputError("--check-rows " + std::to_string(config.check_rows) +
                     " must be >= 1 (or -1 for automatic)");
  Run run;
  start_devices(p, config, run);
  // Before anything is allocated: refuse, in one line, what this machine cannot hold.
  const Footprint footprint = estimate_footprint(p, config);
  require_footprint(footprint, config, config.mode == ProcessMode::kEmulate ? p.N : 1);
  std::string note;
  start_timing(config, run, note);
  switch (config.mode) {
    case ProcessMode::kEmulate:
      run_emulated(p, config, run);
      break;
    case ProcessMode::kThreads:
      run_threads(p, config, run);
      break;
    case ProcessMode::kMpi:
      run_mpi(p, config, run.samples, run.outputs, run.timeline.get());
      break;
  }
  if (config.mode != ProcessMode::kMpi) finish_timing(p, config, run);
  RunResult result = summarize(p, config, run.samples);
  result.timing_note = note;
  result.check = check_outputs(p, config, run.outputs);
  memory_figures(footprint, run, result);
  if (is_row_stream(p)) {
    result.figures = row_stream_figures(p, run.samples);
    for (auto& f : row_stream_early_figures(run.ranks)) result.figures.push_back(std::move(f));
    if (config.row_probe) {
      result.row_probe = row_stream_probe(p, run.ranks, run.samples);
      for (auto& f : row_probe_figures(result.row_probe)) result.figures.push_back(std::move(f));
    }
  }
  if (sink != nullptr) emit_section(*sink, p, config, run.samples, result);
  return result;
}

}  // namespace dcpsim::hw
