#pragma once
// Kernel and copy timings in the style of nccl-tests: each operation (hw/ops/*.cu) says how to size, fill and
// launch itself and how many bytes it must move; one runner owns warm-up, repetitions, CUDA-event timing
// (eager or replayed from a CUDA graph) and the report. Bandwidth figures are bytes moved over the median
// time, and the fraction is against the device-copy bandwidth measured in the same run.
#include <cstdint>
#include <string>
#include <vector>

#include "dcpsim/hw/attention_impl.h"
#include "dcpsim/models/types.h"

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
  models::DType dtype = models::DType::kBF16;       // O's type (correct, combine, merge-states: bf16 or fp16)
  int variant = -1;  // correct, combine, a2a-combine: kernel variant (op_variants), -1: chosen by size
  int blocks = 0;    // direct: blocks per rank (0: as many as stay resident)
  // attention: Q in this many head blocks of H / q_blocks heads each, as the query all-gather leaves it in a
  // step (1: dense [B][H][D_qk]); and the LSE's base (FlashInfer's decode reports base 2 natively).
  int q_blocks = 1;
  bool lse_base2 = false;
  // attention: an fp8 e4m3 KV cache with one per-tensor scale, generated as `hw run --kv-dtype fp8` does (the
  // query and output bf16); FlashInfer's kernels only (InputError on dcpsim's or where FlashInfer cannot
  // run).
  bool kv_fp8 = false;
  // correct, a2a-combine: the instrumented kernels `hw run --row-stamps` runs (per-row stamps on; of the
  // short paths only the packed rows' combine takes stamps, the others fall back to the lane-group kernels).
  bool row_stamps = false;
  // correct: write into the reduce-scatter's head-block layout [N][B][H/N][D] as AG+RS does, not in place
  // (AG+AR); H must be divisible by N.
  bool rs_layout = false;
  // a2a-pack, a2a-combine: a2a-2call's layout, the LSEs in a buffer of their own (the pack writes O rows of D
  // lanes and the LSEs apart; the combine reads them so: the short-path kernel with 16-byte accesses).
  bool split_lse = false;
};

struct OpBenchConfig {
  std::string op;  // see bench_ops()
  OpShape shape;
  bool graph = false;  // time calls replayed from a CUDA graph (graph_calls per replay)
  int graph_calls = 20;
  // Eager calls: 1 times each call alone between two events (the host's launch cost included); more enqueues
  // that many calls behind a device-side delay long enough for the host to stay ahead, and reports the span
  // over the count (the GPU's time per call when launches keep up, as graph replay does).
  int eager_batch = 1;
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

// Names of the operations: "copy", "empty" (a kernel that does nothing: the launch floor), "attention",
// "correct", "a2a-pack", "a2a-combine", "combine", "direct", "merge-states-flashinfer".
std::vector<std::string> bench_ops();

// The kernel variants an operation can be asked for (OpShape::variant indexes this list); empty when it has
// none. InputError for an unknown op.
std::vector<std::string> op_variants(const std::string& op);

// Measures the device-copy bandwidth first (a large cudaMemcpy D2D), then the operation. InputError for an
// unknown op or impossible shape.
OpBenchResult run_op_bench(const OpBenchConfig& config);

// The operation alone, its fraction of copy computed against `copy_bandwidth` (for sweeps that measure the
// copy once).
OpBenchResult run_op_bench_at(const OpBenchConfig& config, double copy_bandwidth);

// One shape and dtype (config.shape) timed for each of `variants` (-1: chosen by size) in each launch mode
// (true: graph), on one set of buffers. A point that fails carries its error; a shape the operation cannot
// run fails every point.
struct OpBenchPoint {
  int variant = -1;
  bool graph = false;
  OpBenchResult result;
  std::string error;  // empty when timed
};
std::vector<OpBenchPoint> run_op_bench_points(const OpBenchConfig& config, const std::vector<int>& variants,
                                              const std::vector<bool>& graph_modes, double copy_bandwidth);

// A named grid of shapes for `op`. "decode": N in {2, 3, 4, 6, 8}, B in {1, 4, 8, 16, 17, 32, 64, 128, 256},
// H in {8, 16, 32, 64, 96, 128}, D in {128, 512}, plus N = 8, B = 1024, H = 128, D = 128; the combines
// (a2a-combine, combine, merge-states-flashinfer) keep the shapes whose H is divisible by N; "copy" gets one
// shape per distinct O size (B·H·D 16-bit elements). "small": a handful of those, for quick checks.
std::vector<OpShape> sweep_shapes(const std::string& grid, const std::string& op);

// The copy measurement alone (bytes read + written per second), over `bytes` per copy.
double measure_copy_bandwidth(int device, std::int64_t bytes, int reps);

}  // namespace dcpsim::hw
