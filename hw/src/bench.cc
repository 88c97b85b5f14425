// The operation benchmark runner (bench.h): warm-up, repetitions timed with CUDA events (eager calls, or
// `graph_calls` calls captured in one CUDA graph and replayed), medians, bytes over time, and the fraction of
// the device-copy bandwidth measured in the same run.
#include "dcpsim/hw/bench.h"

#include <algorithm>
#include <functional>
#include <map>

#include "bench_op.h"
#include "cuda_check.h"
#include "dcpsim/error.h"
#include "dcpsim/hw/device.h"
#include "timing.h"

namespace dcpsim::hw {
namespace {

using Factory = std::function<std::unique_ptr<ops::BenchOp>(const OpShape&, std::uint64_t)>;

const std::map<std::string, Factory>& factories() {
  static const std::map<std::string, Factory> f = {{"copy", ops::make_copy_bench},
                                                   {"attention", ops::make_attention_bench},
                                                   {"correct", ops::make_correct_bench},
                                                   {"a2a-pack", ops::make_a2a_pack_bench},
                                                   {"a2a-combine", ops::make_a2a_combine_bench},
                                                   {"direct", ops::make_direct_bench}};
  return f;
}

struct Events {
  cudaEvent_t a = nullptr, b = nullptr;
  Events() {
    DCPSIM_CUDA(cudaEventCreate(&a));
    DCPSIM_CUDA(cudaEventCreate(&b));
  }
  ~Events() {
    cudaEventDestroy(a);
    cudaEventDestroy(b);
  }
  double elapsed_ns() const {
    float ms = 0;
    DCPSIM_CUDA(cudaEventElapsedTime(&ms, a, b));
    return ms * 1e6;
  }
};

// Per-call times of `reps` repetitions.
std::vector<double> time_calls(ops::BenchOp& op, const OpBenchConfig& c, cudaStream_t stream) {
  Events ev;
  std::vector<double> t;
  int call = 0;
  if (!c.graph) {
    for (int i = 0; i < c.warmup; ++i) op.launch(call++, stream);
    for (int i = 0; i < c.reps; ++i) {
      DCPSIM_CUDA(cudaEventRecord(ev.a, stream));
      op.launch(call++, stream);
      DCPSIM_CUDA(cudaEventRecord(ev.b, stream));
      wait_stream(stream, 60, nullptr);
      t.push_back(ev.elapsed_ns());
    }
    return t;
  }
  if (c.graph_calls < 1) throw InputError("--graph-calls must be >= 1");
  op.launch(call++, stream);  // module load before capture
  wait_stream(stream, 60, nullptr);
  cudaGraph_t g = nullptr;
  cudaGraphExec_t exec = nullptr;
  DCPSIM_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < c.graph_calls; ++i) op.launch(call++, stream);
  DCPSIM_CUDA(cudaStreamEndCapture(stream, &g));
  DCPSIM_CUDA(cudaGraphInstantiate(&exec, g, 0));
  cudaGraphDestroy(g);
  for (int i = 0; i < c.warmup; ++i) DCPSIM_CUDA(cudaGraphLaunch(exec, stream));
  for (int i = 0; i < c.reps; ++i) {
    DCPSIM_CUDA(cudaEventRecord(ev.a, stream));
    DCPSIM_CUDA(cudaGraphLaunch(exec, stream));
    DCPSIM_CUDA(cudaEventRecord(ev.b, stream));
    wait_stream(stream, 60, nullptr);
    t.push_back(ev.elapsed_ns() / c.graph_calls);
  }
  cudaGraphExecDestroy(exec);
  return t;
}

}  // namespace

namespace ops {
int rotation_sets(double bytes_per_set) {
  int dev = 0, l2 = 0;
  DCPSIM_CUDA(cudaGetDevice(&dev));
  DCPSIM_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  if (bytes_per_set <= 0) return 1;
  return std::clamp(static_cast<int>(3.0 * l2 / bytes_per_set) + 1, 1, 8);
}
}  // namespace ops

std::vector<std::string> bench_ops() {
  std::vector<std::string> names;
  for (const auto& [name, f] : factories()) names.push_back(name);
  return names;
}

double measure_copy_bandwidth(int device, std::int64_t bytes, int reps) {
  OpBenchConfig c;
  c.op = "copy";
  c.device = device;
  c.shape.copy_bytes = bytes;
  c.reps = reps;
  c.warmup = 3;
  DCPSIM_CUDA(cudaSetDevice(device));
  auto op = ops::make_copy_bench(c.shape, c.seed);
  cudaStream_t stream = nullptr;
  DCPSIM_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::vector<double> t;
  try {
    t = time_calls(*op, c, stream);
  } catch (...) {
    cudaStreamDestroy(stream);
    throw;
  }
  cudaStreamDestroy(stream);
  return op->bytes() / (median_of(t) * 1e-9);
}

OpBenchResult run_op_bench(const OpBenchConfig& c) {
  const auto it = factories().find(c.op);
  if (it == factories().end()) {
    std::string names;
    for (const auto& n : bench_ops()) names += (names.empty() ? "" : ", ") + n;
    throw InputError("--op '" + c.op + "' is not an operation (" + names + ")");
  }
  if (c.reps < 1 || c.warmup < 0) throw InputError("--reps must be >= 1 and --warmup >= 0");
  if (device_count() <= c.device) throw RuntimeError("no CUDA device " + std::to_string(c.device) + " here");
  OpBenchResult r;
  r.op = c.op;
  r.copy_bandwidth = measure_copy_bandwidth(c.device, std::int64_t{1} << 30, 20);
  DCPSIM_CUDA(cudaSetDevice(c.device));
  auto op = it->second(c.shape, c.seed);
  cudaStream_t stream = nullptr;
  DCPSIM_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::vector<double> t;
  try {
    t = time_calls(*op, c, stream);
  } catch (...) {
    cudaStreamDestroy(stream);
    throw;
  }
  cudaStreamDestroy(stream);
  r.shape = op->label();
  r.median_ns = median_of(t);
  r.min_ns = *std::min_element(t.begin(), t.end());
  r.max_ns = *std::max_element(t.begin(), t.end());
  r.bytes = op->bytes();
  r.flops = op->flops();
  r.bandwidth = r.bytes / (r.median_ns * 1e-9);
  r.fraction_of_copy = r.bandwidth / r.copy_bandwidth;
  return r;
}

}  // namespace dcpsim::hw
