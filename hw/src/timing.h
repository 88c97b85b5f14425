#pragma once
// Repetitions and their timings: eager launches or CUDA-graph replay, a bounded wait for each step (a step
// that never finishes is a RuntimeError, not a hang), and the per-rank, per-phase samples read from CUDA
// events.
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

#include "dcpsim/hw/runner.h"
#include "gpu_timeline.h"
#include "plan.h"
#include "rank_state.h"

namespace dcpsim::hw {

// One GPU activity of a measured repetition, placed: which rank enqueued it, in which phase slot (0: the
// prologue, i + 1: phase i), and its times relative to the repetition's origin (its earliest activity).
struct PlacedActivity {
  GpuActivity a;
  int rep = 0, rank = 0, slot = 0;
  double start_ns = 0, end_ns = 0;
};

struct Samples {
  Timing timing = Timing::kEvents;
  // [rank][phase][rep]: duration and start offset from the rank's first phase, ns.
  std::vector<std::vector<std::vector<double>>> duration, offset;
  std::vector<std::vector<std::vector<double>>> gap;    // [rank][phase][rep]: idle GPU time before the phase
  std::vector<std::vector<double>> rank_step;           // [rank][rep]: first phase begin -> last phase end
  std::vector<std::vector<double>> outer_step;          // [rank][rep]: the step between its two CUDA events
  std::vector<std::vector<unsigned long long>> stamps;  // [rank]: row stamps of the last repetition
  // CUPTI places every time of a repetition on one timeline whose origin is the repetition's earliest GPU
  // activity (any rank, prologue included). [rank][rep]: where the rank's first phase starts on it.
  std::vector<std::vector<double>> phase_origin;
  // [rank]: where the prologue's stamp kernel started on the last repetition's timeline; a row stamp v lies
  // at stamp_origin + (v − stamps[0]). 0 with CUDA events (rows then count from the stamp itself).
  std::vector<double> stamp_origin;
  std::vector<PlacedActivity> activities;   // CUPTI: every activity of the measured repetitions
  std::uint64_t dropped = 0, unplaced = 0;  // CUPTI records lost; activities no enqueue claimed
  bool hardware_timestamps = false;         // CUPTI read kernel times from the GPU's event system

  void resize(int ranks, std::size_t phases);
  void collect(const RankState& r);  // after the step synchronised
  // CUPTI: fills the figures above from the activities of the whole run (`warmup` + `reps` repetitions).
  // Ranks with no activity at all (other MPI processes) keep no samples.
  void from_timeline(const StepPlan& p, int rank_count, std::vector<GpuActivity> activities, int warmup,
                     int reps);
};

// Flushes the timeline and replaces the phase figures of `s` with the GPU timeline's (the outer step events
// and row stamps are kept).
void timeline_samples(const StepPlan& p, const RunConfig& c, GpuTimeline& t, Samples& s);

// The repetition being enqueued by this thread (set by run_repetitions; kTemplateRep for the eager pass that
// precedes a graph capture).
inline constexpr int kTemplateRep = 0x7ffffff0;
int current_rep();
// The phase slot tagging a graph replay: its activities are placed by position against the template pass.
inline constexpr int kGraphSlot = 0xffff;

// Waits for `stream`; RuntimeError after `timeout_s`, or as soon as `abort` turns true (another rank failed).
void wait_stream(cudaStream_t stream, double timeout_s, const std::atomic<bool>* abort);

// Runs `warmup` + `reps` steps on `stream`: `enqueue(capturing)` puts one step on the stream; `after_rep`
// runs after each measured step has finished, `after_any` after every step (warm-up included).
// With a timeline, each step's work is tagged with its repetition (graph replays by `tag_rank`).
void run_repetitions(cudaStream_t stream, bool graph, int warmup, int reps, double timeout_s,
                     const std::atomic<bool>* abort, GpuTimeline* timeline, int tag_rank,
                     const std::function<void(bool)>& enqueue, const std::function<void()>& after_any,
                     const std::function<void()>& after_rep);

// Throws RuntimeError when the rank's direct-merge combine timed out waiting for a flag.
void check_direct_error(const RankState& r, std::int64_t timeout_ms);

PhaseStats make_stats(int rank, const std::string& phase, std::vector<double> samples, bool emulated);
double median_of(std::vector<double> v);

}  // namespace dcpsim::hw
