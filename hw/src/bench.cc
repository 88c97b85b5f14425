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
#include "ops.h"
#include "timing.h"

namespace dcpsim::hw {
namespace {

using Factory = std::function<std::unique_ptr<ops::BenchOp>(const OpShape&, std::uint64_t)>;

const std::map<std::string, Factory>& factories() {
  static const std::map<std::string, Factory> f = {
      {"copy", ops::make_copy_bench},
      {"empty", ops::make_empty_bench},
      {"touch", ops::make_touch_bench},
      {"attention", ops::make_attention_bench},
      {"correct", ops::make_correct_bench},
      {"a2a-pack", ops::make_a2a_pack_bench},
      {"a2a-combine", ops::make_a2a_combine_bench},
      {"combine", ops::make_combine_bench},
      {"direct", ops::make_direct_bench},
      {"merge-states-flashinfer", ops::make_merge_states_flashinfer_bench}};
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
  if (!c.graph && c.eager_batch > 1) {
    // Behind a delay the host outruns: the span of `eager_batch` back-to-back calls as the GPU runs them.
    const long long delay_ns = 100000 + 5000LL * c.eager_batch;
    for (int i = 0; i < c.warmup; ++i) op.launch(call++, stream);
    for (int i = 0; i < c.reps; ++i) {
      ops::launch_delay(delay_ns, stream);
      DCPSIM_CUDA(cudaEventRecord(ev.a, stream));
      for (int k = 0; k < c.eager_batch; ++k) op.launch(call++, stream);
      DCPSIM_CUDA(cudaEventRecord(ev.b, stream));
      wait_stream(stream, 60, nullptr);
      t.push_back(ev.elapsed_ns() / c.eager_batch);
    }
    return t;
  }
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
BenchStamps::BenchStamps(int rows, bool on) {
  if (!on) return;
  stamps_ = DeviceBuffer(std::size_t(rows) * sizeof(unsigned long long));
  counters_ = DeviceBuffer(std::size_t(rows) * sizeof(unsigned int));
  DCPSIM_CUDA(cudaMemset(counters_.get(), 0, counters_.bytes()));
}

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

std::vector<std::string> op_variants(const std::string& op) {
  if (factories().count(op) == 0) throw InputError("--op '" + op + "' is not an operation");
  if (op == "correct") return ops::correct_variants();
  if (op == "combine" || op == "a2a-combine") return ops::combine_variants();
  if (op == "direct") return ops::direct_variants();
  return {};
}

OpBenchResult run_op_bench_at(const OpBenchConfig& c, double copy_bandwidth) {
  const auto it = factories().find(c.op);
  if (it == factories().end()) {
    std::string names;
    for (const auto& n : bench_ops()) names += (names.empty() ? "" : ", ") + n;
    throw InputError("--op '" + c.op + "' is not an operation (" + names + ")");
  }
  if (c.reps < 1 || c.warmup < 0) throw InputError("--reps must be >= 1 and --warmup >= 0");
  if (c.eager_batch < 1) throw InputError("--eager-batch must be >= 1");
  const auto variants = op_variants(c.op);
  if (c.shape.variant < -1 || c.shape.variant >= static_cast<int>(variants.size()))
    throw InputError("--variant: " + c.op + " has " + std::to_string(variants.size()) + " variants");
  if (device_count() <= c.device) throw RuntimeError("no CUDA device " + std::to_string(c.device) + " here");
  OpBenchResult r;
  r.op = c.op;
  r.copy_bandwidth = copy_bandwidth;
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
  r.fraction_of_copy = copy_bandwidth > 0 ? r.bandwidth / copy_bandwidth : 0;
  return r;
}

OpBenchResult run_op_bench(const OpBenchConfig& c) {
  if (factories().count(c.op) == 0) return run_op_bench_at(c, 0);  // the unknown-op error
  if (device_count() <= c.device) throw RuntimeError("no CUDA device " + std::to_string(c.device) + " here");
  return run_op_bench_at(c, measure_copy_bandwidth(c.device, std::int64_t{1} << 30, 20));
}

std::vector<OpBenchPoint> run_op_bench_points(const OpBenchConfig& c, const std::vector<int>& variants,
                                              const std::vector<bool>& graph_modes, double copy_bandwidth) {
  std::vector<OpBenchPoint> points;
  for (int v : variants)
    for (bool g : graph_modes) {
      OpBenchPoint p;
      p.variant = v;
      p.graph = g;
      points.push_back(p);
    }
  const auto it = factories().find(c.op);
  const auto names = it == factories().end() ? std::vector<std::string>{} : op_variants(c.op);
  std::unique_ptr<ops::BenchOp> op;
  cudaStream_t stream = nullptr;
  try {
    if (it == factories().end()) throw InputError("--op '" + c.op + "' is not an operation");
    for (int v : variants)
      if (v < -1 || v >= static_cast<int>(names.size()))
        throw InputError("--variant: " + c.op + " has " + std::to_string(names.size()) + " variants");
    DCPSIM_CUDA(cudaSetDevice(c.device));
    op = it->second(c.shape, c.seed);
    DCPSIM_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  } catch (const std::exception& e) {
    for (auto& p : points) p.error = e.what();
    return points;
  }
  for (auto& p : points) {
    try {
      OpBenchConfig pc = c;
      pc.graph = p.graph;
      op->set_variant(p.variant);
      const std::vector<double> t = time_calls(*op, pc, stream);
      OpBenchResult& r = p.result;
      r.op = c.op;
      r.shape = op->label();
      r.median_ns = median_of(t);
      r.min_ns = *std::min_element(t.begin(), t.end());
      r.max_ns = *std::max_element(t.begin(), t.end());
      r.bytes = op->bytes();
      r.flops = op->flops();
      r.bandwidth = r.bytes / (r.median_ns * 1e-9);
      r.copy_bandwidth = copy_bandwidth;
      r.fraction_of_copy = copy_bandwidth > 0 ? r.bandwidth / copy_bandwidth : 0;
    } catch (const std::exception& e) {
      p.error = e.what();
    }
  }
  cudaStreamDestroy(stream);
  return points;
}

std::vector<OpShape> sweep_shapes(const std::string& grid, const std::string& op) {
  if (factories().count(op) == 0) throw InputError("--op '" + op + "' is not an operation");
  struct P {
    int n, b, h, d;
  };
  std::vector<P> points;
  if (grid == "decode") {
    for (int n : {2, 3, 4, 6, 8})
      for (int b : {1, 4, 8, 16, 17, 32, 64, 128, 256})
        for (int h : {8, 16, 32, 64, 96, 128})
          for (int d : {128, 512}) points.push_back({n, b, h, d});
    points.push_back({8, 1024, 128, 128});
  } else if (grid == "small") {
    points = {{2, 1, 8, 128}, {6, 17, 96, 512}, {8, 32, 128, 512}, {4, 40, 32, 128}, {3, 17, 96, 128}};
  } else {
    throw InputError("--sweep '" + grid + "' is not a grid (decode, small)");
  }
  const bool combine = op == "combine" || op == "a2a-combine" || op == "merge-states-flashinfer";
  std::vector<OpShape> shapes;
  std::vector<std::int64_t> copy_sizes, touch_keys;
  for (const P& p : points) {
    if (combine && p.h % p.n != 0) continue;
    OpShape s;
    s.dcp = p.n;
    s.rows = p.b;
    s.heads = p.h;
    s.dim = p.d;
    if (op == "copy") {
      s.copy_bytes = std::int64_t(p.b) * p.h * p.d * 2;
      if (std::find(copy_sizes.begin(), copy_sizes.end(), s.copy_bytes) != copy_sizes.end()) continue;
      copy_sizes.push_back(s.copy_bytes);
    }
    if (op == "touch") {  // N does not enter: each (B, H, D) once
      const std::int64_t key = (std::int64_t(p.b) * 4096 + p.h) * 4096 + p.d;
      if (std::find(touch_keys.begin(), touch_keys.end(), key) != touch_keys.end()) continue;
      touch_keys.push_back(key);
    }
    shapes.push_back(s);
    if (op == "empty") break;  // one launch floor: the shape does not matter
  }
  return shapes;
}

}  // namespace dcpsim::hw
