// LSE correction for the AG strategies: after the LSE all-gather, rank r scales its O_r by w_r = base^(L_r −
// L) and rounds once to the output type, in place or into the reduce-scatter's head-block layout. Any N, any
// D, any O strides, any LSE layout.
//
// Kernel variants, one picked per call by the size of O (correct_auto_variant, from a measured sweep):
// - "g*", the lane-group kernel here: a (row, head) pair belongs to a group of G lanes (vec.cuh) that each
// own
//   VPT 16-byte vectors of its D lanes. A lane issues its O loads first, then the pair's LSE loads (lane r of
//   the group reads LSE r), so the two round trips overlap; the group reduces max and sum with xor shuffles,
//   every lane forms the weight, scales and stores. No shared memory, no barrier, no integer division on the
//   data path (the grid is [head blocks] × [rows]). Many lanes with one vector each suit latency-bound calls,
//   fewer with four (streaming hints) bandwidth-bound ones.
// - "f*", "s*" (lse_correct_fast.cu): the same work with the shortest per-thread instruction chain; "f*"
//   is what auto picks at every size.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bench_op.h"
#include "correct_bench.h"
#include "cuda_check.h"
#include "dcpsim/error.h"
#include "device_buffer.h"
#include "device_common.cuh"
#include "elem_dispatch.cuh"
#include "ops.h"
#include "vec.cuh"

namespace dcpsim::hw::ops {
namespace {

constexpr int kMaxThreads = 256;

struct VariantSpec {
  const char* name;
  int vpt;
  bool stream;
  int fast;  // 0: the lane-group kernel below; 1: lse_correct_fast.cu, group butterfly; 2: same, solo weights
};
constexpr VariantSpec kVariants[] = {{"g1", 1, false, 0}, {"g2", 2, false, 0}, {"g4", 4, false, 0},
                                     {"g8", 8, false, 0}, {"g4s", 4, true, 0}, {"g8s", 8, true, 0},
                                     {"f1", 1, false, 1}, {"f2", 2, false, 1}, {"f4", 4, true, 1},
                                     {"s1", 1, false, 2}, {"s2", 2, false, 2}, {"s4", 4, true, 2}};
constexpr int kVariantCount = sizeof(kVariants) / sizeof(kVariants[0]);

template <typename T, int VEC, int VPT, bool STREAM>
__device__ __forceinline__ void load_chunk(Vec<T, VEC> (&v)[VPT], const T* in, int first, int group,
                                           int vecs) {
#pragma unroll
  for (int u = 0; u < VPT; ++u) {
    const int i = first + u * group;
    if (i < vecs) v[u].template load_as<STREAM>(in + std::int64_t(i) * VEC);
  }
}

// One pair (b, h), by the G lanes of its group.
template <typename T, int VEC, int VPT, bool STREAM>
__device__ __forceinline__ void correct_pair(const CorrectArgs& a, int b, int h, int lane,
                                             const GroupLaunch& g, unsigned mask, float k) {
  const int group = 1 << g.shift, vecs = a.dim / VEC;
  const T* in =
      static_cast<const T*>(a.in) + std::int64_t(b) * a.in_row_stride + std::int64_t(h) * a.in_head_stride;
  int block = 0, hb = h;
  if (a.out_block_heads < a.heads) {  // the reduce-scatter layout; in place needs no division
    block = h / a.out_block_heads;
    hb = h - block * a.out_block_heads;
  }
  T* out = static_cast<T*>(a.out) + std::int64_t(block) * a.out_block_stride +
           std::int64_t(b) * a.out_row_stride + std::int64_t(hb) * a.out_head_stride;
  Vec<T, VEC> v[VPT];
  load_chunk<T, VEC, VPT, STREAM>(v, in, lane, group, vecs);  // in flight while the weight is formed
  float w = 0.f, merged = -INFINITY;
  if (b < a.valid_rows) {
    const float* l = a.lse.ptr + std::int64_t(b) * a.lse.row_stride + std::int64_t(h) * a.lse.head_stride;
    auto get = [&](int n) { return l[std::int64_t(n) * a.lse.rank_stride]; };
    const float mine = get(a.rank);
    float own;
    const LseShift sh = group_shift(a.dcp, k, lane, g.reduce_shift, mask, get, own);
    merged = merged_lse(sh, k);
    w = merge_weight(mine, k, sh);
  }
  for (int first = lane;;) {
#pragma unroll
    for (int u = 0; u < VPT; ++u) {
      const int i = first + u * group;
      if (i < vecs) scaled(v[u], w).template store_as<STREAM>(out + std::int64_t(i) * VEC);
    }
    first += group * VPT;
    if (first - lane >= vecs) break;
    load_chunk<T, VEC, VPT, STREAM>(v, in, first, group, vecs);
  }
  if (lane == 0 && a.merged_lse.ptr != nullptr)
    a.merged_lse.ptr[std::int64_t(b) * a.merged_lse.row_stride + std::int64_t(h) * a.merged_lse.head_stride] =
        merged;
}

// Grid: x = blocks of heads_per_block heads, y = rows (striding when there are more than 65535).
template <typename T, int VEC, int VPT, bool STREAM>
__global__ void __launch_bounds__(kMaxThreads) correct_group_kernel(CorrectArgs a, GroupLaunch g) {
  pdl_begin();
  const int lane = threadIdx.x & ((1 << g.shift) - 1);
  const int h = blockIdx.x * g.heads_per_block + (threadIdx.x >> g.shift);
  const unsigned mask = group_mask(g.shift);
  const float k = a.base2 ? 1.f : kLog2e;
  for (int b = blockIdx.y; b < a.rows; b += gridDim.y) {
    if (h < a.heads) correct_pair<T, VEC, VPT, STREAM>(a, b, h, lane, g, mask, k);
    row_unit_done(a.stamps, b, gridDim.x);
  }
}

template <typename T, int VEC, int VPT, bool STREAM>
void launch_group(const CorrectArgs& a, cudaStream_t stream) {
  const GroupLaunch g = group_launch(a.heads, a.dim / VEC, VPT, a.dcp);
  const dim3 grid(ceil_div(a.heads, g.heads_per_block), std::min(a.rows, 65535));
  launch_kernel("correct_group_kernel", correct_group_kernel<T, VEC, VPT, STREAM>, grid, g.threads, 0, stream,
                a, g);
}

// 16-byte vectors when the pointers and every stride allow, else one element per access.
bool vector_layout(const CorrectArgs& a, std::size_t elem) {
  const std::int64_t vec = 16 / static_cast<std::int64_t>(elem);
  const std::int64_t strides[] = {a.in_row_stride,   a.in_head_stride,   a.out_row_stride,
                                  a.out_head_stride, a.out_block_stride, a.dim};
  bool ok =
      reinterpret_cast<std::uintptr_t>(a.in) % 16 == 0 && reinterpret_cast<std::uintptr_t>(a.out) % 16 == 0;
  for (auto s : strides) ok = ok && s % vec == 0;
  return ok;
}

template <typename T>
void launch_typed(const CorrectArgs& a, int variant, cudaStream_t stream) {
  constexpr int kVec = 16 / sizeof(T);
  if (!vector_layout(a, sizeof(T))) return launch_group<T, 1, 4, false>(a, stream);
  const VariantSpec& v = kVariants[variant];
  if (v.fast != 0 && launch_correct_fast(a, v.vpt, v.fast == 2, stream)) return;
  switch (v.vpt * 2 + (v.stream ? 1 : 0)) {
    case 2:
      return launch_group<T, kVec, 1, false>(a, stream);
    case 4:
      return launch_group<T, kVec, 2, false>(a, stream);
    case 8:
      return launch_group<T, kVec, 4, false>(a, stream);
    case 16:
      return launch_group<T, kVec, 8, false>(a, stream);
    case 9:
      return launch_group<T, kVec, 4, true>(a, stream);
    default:
      return launch_group<T, kVec, 8, true>(a, stream);
  }
}

}  // namespace

const std::vector<std::string>& correct_variants() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& v : kVariants) n.push_back(v.name);
    return n;
  }();
  return names;
}

int correct_auto_variant(const CorrectArgs& a) {
  // By the bytes of O, from the decode sweeps with every variant on one H200 (docs/PERFORMANCE.md): the
  // short-path kernels win everywhere since their critical path was shortened (2026-12-04, 1,082 shapes x
  // graph/eager, bf16): one vector per thread up to 256 KiB, two to 2 MiB, four with streaming hints above —
  // except for short rows (D = 128) past 8 MiB, where two without hints stay ahead. This choice is within
  // 2.5 % of the per-shape best on average in every size bucket; the lane-group kernels and the kernels of
  // 2026-11 (since removed) were 3-20 % behind past 8 MiB.
  const std::int64_t bytes = std::int64_t(a.rows) * a.heads * a.dim * std::int64_t(elem_bytes(a.elem));
  const bool short_rows = std::int64_t(a.dim) * std::int64_t(elem_bytes(a.elem)) <= 256;
  if (bytes <= (std::int64_t{256} << 10)) return 6;                                                   // f1
  if (bytes <= (std::int64_t{2} << 20) || (short_rows && bytes > (std::int64_t{8} << 20))) return 7;  // f2
  return 8;                                                                                           // f4
}

void launch_correct(const CorrectArgs& a, cudaStream_t stream) {
  if (a.dcp < 1 || a.rank < 0 || a.rank >= a.dcp)
    throw InputError("correction: rank " + std::to_string(a.rank) + " outside [0, " + std::to_string(a.dcp) +
                     ")");
  if (a.out_block_heads < 1) throw InputError("correction: out_block_heads must be >= 1");
  if (a.variant < -1 || a.variant >= kVariantCount)
    throw InputError("correction: variant " + std::to_string(a.variant) + " outside [-1, " +
                     std::to_string(kVariantCount) + ")");
  if (a.rows == 0 || a.heads == 0) return;
  const int variant = a.variant < 0 ? correct_auto_variant(a) : a.variant;
  with_elem(a.elem, [&](auto tag) { launch_typed<typename decltype(tag)::type>(a, variant, stream); });
  DCPSIM_CUDA_LAUNCHED("correct_group_kernel");
}

}  // namespace dcpsim::hw::ops

// ---- benchmark descriptor: in-place correction of one rank's O [B][H][D] (optionally head-padded rows and
// transposed LSE) that also writes the merged LSE, as the runner's does; bytes = O read + written once, the N
// gathered LSEs read once, the merged LSE written once ----
namespace dcpsim::hw::ops {
namespace {

class CorrectBench final : public BenchOp {
 public:
  CorrectBench(const OpShape& s, std::uint64_t seed)
      : s_(s), elem_(elem_of(s.dtype)), stamps_(s.rows, s.row_stamps) {
    if (s.dcp < 1 || s.rows < 1 || s.heads < 1 || s.dim < 1)
      throw InputError("correct bench: N, B, H and D must be >= 1");
    if (elem_ == Elem::kF32) throw InputError("correct bench: --dtype must be bf16 or fp16");
    row_stride_ = std::int64_t(s.heads) * s.dim + s.out_row_pad;
    const std::int64_t o_elems = std::int64_t(s.rows) * row_stride_;
    const std::int64_t lse_elems = std::int64_t(s.dcp) * s.rows * s.heads;
    // At least kMinInputSets input sets, each with its own gathered LSEs: a call and the ones before it read
    // different buffers, as ranks' corrections do.
    sets_ = std::max(kMinInputSets, rotation_sets(double(o_elems) * 2 + double(lse_elems) * 4));
    for (int i = 0; i < sets_; ++i) {
      o_.emplace_back(std::size_t(o_elems) * 2);
      launch_fill_uniform(o_.back().get(), o_elems, elem_, 1.f, seed + i, 0, nullptr);
      lse_.emplace_back(std::size_t(lse_elems) * 4);
      launch_fill_uniform(lse_.back().get(), lse_elems, Elem::kF32, 8.f, seed + 100 + i, 0, nullptr);
    }
    merged_ = DeviceBuffer(std::size_t(s.rows) * s.heads * 4);
    if (s.rs_layout) {
      if (s.heads % s.dcp != 0) throw InputError("correct bench: the RS layout needs H divisible by N");
      rs_out_ = DeviceBuffer(std::size_t(s.rows) * s.heads * s.dim * 2);
    }
    DCPSIM_CUDA(cudaDeviceSynchronize());
  }
  std::string label() const override {
    return "N=" + std::to_string(s_.dcp) + " B=" + std::to_string(s_.rows) +
           " H=" + std::to_string(s_.heads) + " D=" + std::to_string(s_.dim) +
           (s_.transposed_lse ? " lse[H][B]" : "") +
           (s_.out_row_pad ? " pad=" + std::to_string(s_.out_row_pad) : "") +
           (s_.row_stamps ? " stamped" : "") + (s_.rs_layout ? " rs" : "");
  }
  double bytes() const override {
    return 2.0 * 2 * s_.rows * s_.heads * s_.dim + 4.0 * (s_.dcp + 1) * s_.rows * s_.heads;
  }
  void set_variant(int v) override { s_.variant = v; }
  // The gathered LSEs call `call` reads.
  std::pair<const void*, std::size_t> lse(int call) const {
    const DeviceBuffer& b = lse_[call % sets_];
    return {b.get(), b.bytes()};
  }
  void launch(int call, cudaStream_t stream) override {
    auto a = with_dims<CorrectArgs>({s_.dcp, s_.rows, s_.rows, s_.heads, s_.dim, false, elem_});
    a.variant = s_.variant;
    const std::int64_t rs = s_.transposed_lse ? 1 : s_.heads, hs = s_.transposed_lse ? s_.rows : 1;
    a.lse = {lse_[call % sets_].as<float>(), std::int64_t(s_.rows) * s_.heads, rs, hs};
    a.in = a.out = o_[call % sets_].get();
    a.in_row_stride = a.out_row_stride = row_stride_;
    a.in_head_stride = a.out_head_stride = s_.dim;
    a.out_block_heads = s_.heads;
    if (s_.rs_layout) {  // as AG+RS runs it (hw/src/strategy_collective.cc)
      const int j = s_.heads / s_.dcp;
      a.out = rs_out_.get();
      a.out_block_heads = j;
      a.out_block_stride = std::int64_t(s_.rows) * j * s_.dim;
      a.out_row_stride = std::int64_t(j) * s_.dim;
      a.out_head_stride = s_.dim;
    }
    a.merged_lse = {merged_.as<float>(), s_.heads, 1};
    a.stamps = stamps_.get();
    launch_correct(a, stream);
  }

 private:
  OpShape s_;
  Elem elem_;
  std::int64_t row_stride_ = 0;
  int sets_ = 1;
  std::vector<DeviceBuffer> o_, lse_;
  DeviceBuffer merged_, rs_out_;
  BenchStamps stamps_;
};

}  // namespace

std::optional<std::pair<const void*, std::size_t>> correct_bench_lse(const BenchOp& op, int call) {
  const auto* c = dynamic_cast<const CorrectBench*>(&op);
  if (c == nullptr) return std::nullopt;
  return c->lse(call);
}

std::unique_ptr<BenchOp> make_correct_bench(const OpShape& s, std::uint64_t seed) {
  return std::make_unique<CorrectBench>(s, seed);
}

}  // namespace dcpsim::hw::ops
