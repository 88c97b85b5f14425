#include "timing.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "cuda_check.h"
#include "dcpsim/error.h"

namespace dcpsim::hw {

void Samples::resize(int ranks, std::size_t phases) {
  duration.assign(ranks, std::vector<std::vector<double>>(phases));
  offset.assign(ranks, std::vector<std::vector<double>>(phases));
  rank_step.assign(ranks, {});
  stamps.assign(ranks, {});
}

void Samples::collect(const RankState& r) {
  const std::size_t n = r.ev_begin.size();
  float ms = 0;
  for (std::size_t i = 0; i < n; ++i) {
    DCPSIM_CUDA(cudaEventElapsedTime(&ms, r.ev_begin[i], r.ev_end[i]));
    duration[r.rank][i].push_back(ms * 1e6);
    DCPSIM_CUDA(cudaEventElapsedTime(&ms, r.ev_begin[0], r.ev_begin[i]));
    offset[r.rank][i].push_back(ms * 1e6);
  }
  DCPSIM_CUDA(cudaEventElapsedTime(&ms, r.ev_begin[0], r.ev_end[n - 1]));
  rank_step[r.rank].push_back(ms * 1e6);
  if (r.stamps.get() != nullptr)
    stamps[r.rank] = download<unsigned long long>(r.stamps, r.stamps.bytes() / 8);
}

void wait_stream(cudaStream_t stream, double timeout_s, const std::atomic<bool>* abort) {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    const cudaError_t e = cudaStreamQuery(stream);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) throw_cuda(e, "cudaStreamQuery (step)", __FILE__, __LINE__);
    if (abort != nullptr && abort->load()) throw RuntimeError("step abandoned: another rank failed");
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (waited > timeout_s)
      throw RuntimeError("step did not finish within " + std::to_string(static_cast<int>(timeout_s)) +
                         " s (a collective or a flag never completed)");
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

void run_repetitions(cudaStream_t stream, bool graph, int warmup, int reps, double timeout_s,
                     const std::atomic<bool>* abort, const std::function<void(bool)>& enqueue,
                     const std::function<void()>& after_any, const std::function<void()>& after_rep) {
  auto step = [&](const std::function<void()>& launch, bool measured) {
    launch();
    wait_stream(stream, timeout_s, abort);
    after_any();
    if (measured) after_rep();
  };
  if (!graph) {
    for (int i = 0; i < warmup + reps; ++i) step([&] { enqueue(false); }, i >= warmup);
    return;
  }
  step([&] { enqueue(false); }, false);  // loads modules and checks the step once before it is captured
  cudaGraph_t g = nullptr;
  cudaGraphExec_t exec = nullptr;
  DCPSIM_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  try {
    enqueue(true);
  } catch (...) {
    cudaStreamEndCapture(stream, &g);
    if (g) cudaGraphDestroy(g);
    throw;
  }
  DCPSIM_CUDA(cudaStreamEndCapture(stream, &g));
  const cudaError_t inst = cudaGraphInstantiate(&exec, g, 0);
  cudaGraphDestroy(g);
  if (inst != cudaSuccess) throw_cuda(inst, "cudaGraphInstantiate", __FILE__, __LINE__);
  try {
    for (int i = 0; i < warmup + reps; ++i)
      step([&] { DCPSIM_CUDA(cudaGraphLaunch(exec, stream)); }, i >= warmup);
  } catch (...) {
    cudaGraphExecDestroy(exec);
    throw;
  }
  DCPSIM_CUDA(cudaGraphExecDestroy(exec));
}

void check_direct_error(const RankState& r, std::int64_t timeout_ms) {
  if (r.error.get() == nullptr) return;
  const int e = download<int>(r.error, 1)[0];
  if (e != 0)
    throw RuntimeError("direct merge: rank " + std::to_string(r.rank) + " waited " +
                       std::to_string(timeout_ms) + " ms for the flag of rank " + std::to_string(e - 1) +
                       " and gave up (raise --direct-timeout-ms if the ranks are merely slow)");
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

PhaseStats make_stats(int rank, const std::string& phase, std::vector<double> samples, bool emulated) {
  PhaseStats s;
  s.rank = rank;
  s.phase = phase;
  s.emulated = emulated;
  if (!samples.empty()) {
    s.median_ns = median_of(samples);
    s.min_ns = *std::min_element(samples.begin(), samples.end());
    s.max_ns = *std::max_element(samples.begin(), samples.end());
  }
  s.samples_ns = std::move(samples);
  return s;
}

}  // namespace dcpsim::hw
