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
#include "plan.h"
#include "rank_state.h"

namespace dcpsim::hw {

struct Samples {
  // [rank][phase][rep]: duration and start offset from the rank's first phase, ns.
  std::vector<std::vector<std::vector<double>>> duration, offset;
  std::vector<std::vector<double>> rank_step;           // [rank][rep]: first phase begin -> last phase end
  std::vector<std::vector<unsigned long long>> stamps;  // [rank]: row stamps of the last repetition

  void resize(int ranks, std::size_t phases);
  void collect(const RankState& r);  // after the step synchronised
};

// Waits for `stream`; RuntimeError after `timeout_s`, or as soon as `abort` turns true (another rank failed).
void wait_stream(cudaStream_t stream, double timeout_s, const std::atomic<bool>* abort);

// Runs `warmup` + `reps` steps on `stream`: `enqueue(capturing)` puts one step on the stream; `after_rep`
// runs after each measured step has finished, `after_any` after every step (warm-up included).
void run_repetitions(cudaStream_t stream, bool graph, int warmup, int reps, double timeout_s,
                     const std::atomic<bool>* abort, const std::function<void(bool)>& enqueue,
                     const std::function<void()>& after_any, const std::function<void()>& after_rep);

// Throws RuntimeError when the rank's direct-merge combine timed out waiting for a flag.
void check_direct_error(const RankState& r, std::int64_t timeout_ms);

PhaseStats make_stats(int rank, const std::string& phase, std::vector<double> samples, bool emulated);
double median_of(std::vector<double> v);

}  // namespace dcpsim::hw
