#pragma once
// Kernel and copy timings in the style of nccl-tests: each operation (hw/ops/*.cu) says how to size, fill and
// launch itself and how many bytes it must move; one runner owns warm-up, repetitions, CUDA-event timing
// (eager or replayed from a CUDA graph) and the report. Bandwidth figures are bytes moved over the median
// time, and the fraction is against the device-copy bandwidth measured in the same run.
#include <cstdint>
#include <string>
#include <vector>

#include "dcpsim/hw/attention_impl.h"

namespace dcpsim::hw {

struct OpShape {
  int dcp = 8;                   // N (correction, pack, combine: number of partials)
  int rows = 64;                 // B
  int heads = 128;               // H
  int kv_heads = 1;              // attention
  int dim = 512;                 // D
  int qk_dim = 576;              // attention
  std::int64_t context = 32768;  // attention: tokens on this rank
  bool transposed_lse = false;
  std::int64_t out_row_pad = 0;                     // head-padded O storage (correction)
  std::int64_t copy_bytes = std::int64_t{1} << 30;  // copy: bytes per copy
  AttentionImpl attention = AttentionImpl::kAuto;   // attention: FlashInfer where it runs, else dcpsim
};

struct OpBenchConfig {
  std::string op;  // see bench_ops()
  OpShape shape;
  bool graph = false;  // time calls replayed from a CUDA graph (graph_calls per replay)
  int graph_calls = 20;
  int warmup = 10;
  int reps = 50;
  int device = 0;
  std::uint64_t seed = 1;
};

struct OpBenchResult {
  std::string op;
  std::string shape;                             // a short label of the sizes
  double median_ns = 0, min_ns = 0, max_ns = 0;  // per call
  double bytes = 0;      // bytes the operation must move (each input read once, each output written once)
  double flops = 0;      // arithmetic the operation must do (attention), else 0
  double bandwidth = 0;  // bytes / median, B/s
  double copy_bandwidth = 0;    // device copy measured in this run (read + write), B/s
  double fraction_of_copy = 0;  // bandwidth / copy_bandwidth
};

// Names of the operations: "copy", "attention", "correct", "a2a-pack", "a2a-combine", "direct".
std::vector<std::string> bench_ops();

// Measures the device-copy bandwidth first (a large cudaMemcpy D2D), then the operation. InputError for an
// unknown op or impossible shape.
OpBenchResult run_op_bench(const OpBenchConfig& config);

// The copy measurement alone (bytes read + written per second), over `bytes` per copy.
double measure_copy_bandwidth(int device, std::int64_t bytes, int reps);

}  // namespace dcpsim::hw
