#pragma once
// One benchmarkable operation (nccl-tests style): it sizes and fills its buffers from a shape, says how many
// bytes it must move and how much arithmetic it must do, and launches one call. The shared runner
// (src/bench.cc) owns warm-up, repetitions, CUDA-event timing, graph capture and the report. Operations keep
// several input sets and rotate through them when one set would fit in L2, so a timing is of device memory,
// not of the cache.
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>

#include "dcpsim/hw/bench.h"
#include "device_buffer.h"
#include "ops.h"

namespace dcpsim::hw::ops {

class BenchOp {
 public:
  virtual ~BenchOp() = default;
  virtual std::string label() const = 0;
  virtual double bytes() const = 0;
  virtual double flops() const { return 0; }
  virtual void launch(int call, cudaStream_t stream) = 0;  // `call` picks the input set
  virtual void set_variant(int) {}  // operations with kernel variants (op_variants) launch this one next
};

// How many input sets of `bytes_per_set` make their total at least three times the L2 (at most 8).
int rotation_sets(double bytes_per_set);
// The fewest input sets a merge kernel's operation keeps: `hw sweep --pdl` times a call after two others of
// its kind, each on its own set.
inline constexpr int kMinInputSets = 3;

// Per-row stamps of an instrumented merge kernel (OpShape::row_stamps): a stamp and a counter per row, or
// none. The counters are zeroed once, not before every call: the kernel's work per block and row (a barrier,
// a fence, an atomic) is the same either way; only the one store of each row's stamp is skipped after the
// first call.
class BenchStamps {
 public:
  BenchStamps(int rows, bool on);
  RowStamps get() const { return {stamps_.as<unsigned long long>(), counters_.as<unsigned int>()}; }

 private:
  DeviceBuffer stamps_, counters_;
};

std::unique_ptr<BenchOp> make_copy_bench(const OpShape& s, std::uint64_t seed);
// One block of one warp that returns at once: what any kernel call costs before it does anything (the floor a
// small merge kernel sits on, graph-replayed or eager).
std::unique_ptr<BenchOp> make_empty_bench(const OpShape& s, std::uint64_t seed);
// O [B][H][D] (16-bit) read and written back in place, 16 bytes a thread: the least a correction at that
// shape can cost.
std::unique_ptr<BenchOp> make_touch_bench(const OpShape& s, std::uint64_t seed);
std::unique_ptr<BenchOp> make_attention_bench(const OpShape& s, std::uint64_t seed);
std::unique_ptr<BenchOp> make_correct_bench(const OpShape& s, std::uint64_t seed);
std::unique_ptr<BenchOp> make_a2a_pack_bench(const OpShape& s, std::uint64_t seed);
std::unique_ptr<BenchOp> make_a2a_combine_bench(const OpShape& s, std::uint64_t seed);
std::unique_ptr<BenchOp> make_combine_bench(const OpShape& s, std::uint64_t seed);
// FlashInfer's MergeStates (flashinfer_merge_states.cu) on the "combine" shapes; InputError in builds without
// FlashInfer.
std::unique_ptr<BenchOp> make_merge_states_flashinfer_bench(const OpShape& s, std::uint64_t seed);
std::unique_ptr<BenchOp> make_direct_bench(const OpShape& s, std::uint64_t seed);

}  // namespace dcpsim::hw::ops
