// The receiver's N-way combine, shared by the packed all-to-all (LSE in the packed lanes) and the direct
// merge (LSE in its own slots, behind epoch-stamped flags): per (row, head) the merged LSE and the N weights,
// then fp32 accumulation over the N partials with one rounding to the output type. A partial whose weight is
// 0 contributes exactly 0: its values are loaded (with up to 8 sources, before the weights are known, so the
// loads overlap the LSE round trip) but never used in arithmetic.
//
// The kernel shape is the correction's (lse_correct.cu, vec.cuh): a group of G lanes per (row, head), each
// lane owning VPT vectors of the D lanes for every source, the max and sum over the N LSEs reduced with xor
// shuffles, lane s of the group holding source s's weight and handing it to the others by shuffle. 16-byte
// accesses where the layout allows; the packed all-to-all rows (D + 2 lanes of 16 bits) allow only 4-byte
// ones. The calls `auto` picks go to the short-path kernels of a2a_combine_fast.cu (the packed rows' too).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "bench_op.h"
#include "combine_common.cuh"
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
constexpr int kVariantCount = 7;
// The lane-group kernel with 1, 2, 4 vectors per lane and source; the short path with 1, 2; the packed rows'
// short path with 4, 8 32-bit words (a2a_combine_fast.cu)
constexpr const char* kVariantNames[kVariantCount] = {"g1", "g2", "g4", "f1", "f2", "p4", "p8"};

// Sources whose chunk is loaded before the weights: as many as fit in 80 registers beside the VPT·VEC fp32
// accumulators (no spills on sm_90 or sm_100), at most 8.
template <typename T, int VEC, int VPT>
constexpr int prefetch_sources() {
  constexpr int regs = VPT * int(sizeof(T)) * VEC / 4;
  return std::min(8, std::max(1, (80 - VPT * VEC) / std::max(1, regs)));
}

template <typename T, int VEC, int VPT, int NS>
__device__ __forceinline__ void load_sources(Vec<T, VEC> (&v)[NS][VPT], const T* src, std::int64_t stride,
                                             int dcp, int first, int group, int vecs) {
#pragma unroll
  for (int s = 0; s < NS; ++s)
#pragma unroll
    for (int u = 0; u < VPT; ++u) {
      const int i = first + u * group;
      if (s < dcp && i < vecs) v[s][u].load_cg(src + s * stride + std::int64_t(i) * VEC);
    }
}

template <typename T, int VEC>
__device__ __forceinline__ void accumulate(float (&acc)[VEC], const Vec<T, VEC>& x, float w) {
#pragma unroll
  for (int e = 0; e < VEC; e += 2) {
    if constexpr (VEC % 2 == 0) {
      const float2 p = x.get2(e);
      acc[e] = fmaf(w, p.x, acc[e]);
      acc[e + 1] = fmaf(w, p.y, acc[e + 1]);
    } else {
      acc[e] = fmaf(w, x.get(e), acc[e]);
      if (e + 1 < VEC) acc[e + 1] = fmaf(w, x.get(e + 1), acc[e + 1]);
    }
  }
}

// One pair (b, j), by the G lanes of its group; the output in TO (T, or another type element by element).
template <typename T, typename TO, int VEC, int VPT>
__device__ __forceinline__ void combine_pair(const CombineArgs& a, const T* o, const float* lse, int b, int j,
                                             int lane, const GroupLaunch& g, unsigned mask, float k) {
  constexpr int kNs = prefetch_sources<T, VEC, VPT>();
  const int group = 1 << g.shift, vecs = a.dim / VEC;
  const std::int64_t pair = std::int64_t(b) * a.heads + j;
  const T* src = o + pair * a.o_lanes;
  auto lse_of = [&](int s) {
    return lse != nullptr ? __ldcg(lse + s * a.lse_src_stride + pair)
                          : packed_lse(src + s * a.src_stride, a.dim);
  };
  const bool prefetch = a.dcp <= kNs;
  const bool shuffled = a.dcp <= (1 << g.reduce_shift);
  const int base = g.shift >= 5 ? 0 : int(threadIdx.x & 31u) & ~(group - 1);
  TO* dst =
      static_cast<TO*>(a.dst) + std::int64_t(b) * a.dst_row_stride + std::int64_t(j) * a.dst_head_stride;
  LseShift sh{-INFINITY, 0.f};
  // A chunk is VPT vectors per lane of every source; there is more than one only when D exceeds 256·VPT
  // vectors. Each chunk forms the weights again (the LSEs are in cache by then): nothing stays live across.
  for (int first = lane; first - lane < vecs; first += group * VPT) {
    Vec<T, VEC> v[kNs][VPT];
    if (prefetch) load_sources<T, VEC, VPT, kNs>(v, src, a.src_stride, a.dcp, first, group, vecs);
    float own = -INFINITY;
    if (b < a.valid_rows) sh = group_shift(a.dcp, k, lane, g.reduce_shift, mask, lse_of, own);
    // Lane r of a reduction holds source r's weight when the reduction spans every source; otherwise each
    // lane forms every weight itself.
    const float w_own = merge_weight(own, k, sh);
    float acc[VPT][VEC];
#pragma unroll
    for (int u = 0; u < VPT; ++u)
#pragma unroll
      for (int e = 0; e < VEC; ++e) acc[u][e] = 0.f;
    if (prefetch) {
#pragma unroll
      for (int s = 0; s < kNs; ++s) {
        if (s >= a.dcp) break;
        const float w = shuffled ? __shfl_sync(mask, w_own, base + s) : merge_weight(lse_of(s), k, sh);
#pragma unroll
        for (int u = 0; u < VPT; ++u) {
          v[s][u].zero_if(w == 0.f);
          accumulate(acc[u], v[s][u], w);
        }
      }
    } else {
      for (int s = 0; s < a.dcp; ++s) {
        const float w = shuffled ? __shfl_sync(mask, w_own, base + s) : merge_weight(lse_of(s), k, sh);
        if (w == 0.f) continue;  // never read
        Vec<T, VEC> x[VPT];
#pragma unroll
        for (int u = 0; u < VPT; ++u) {
          const int i = first + u * group;
          x[u].raw = {};
          if (i < vecs) x[u].load_cg(src + s * a.src_stride + std::int64_t(i) * VEC);
        }
#pragma unroll
        for (int u = 0; u < VPT; ++u) accumulate(acc[u], x[u], w);
      }
    }
#pragma unroll
    for (int u = 0; u < VPT; ++u) {
      const int i = first + u * group;
      if (i >= vecs) continue;
      if constexpr (!std::is_same_v<T, TO>) {
#pragma unroll
        for (int e = 0; e < VEC; ++e) dst[std::int64_t(i) * VEC + e] = from_f32<TO>(acc[u][e]);
      } else {
        Vec<T, VEC> r;
#pragma unroll
        for (int e = 0; e < VEC; e += 2) {
          if constexpr (VEC % 2 == 0)
            r.set2(e, make_float2(acc[u][e], acc[u][e + 1]));
          else
            r.set(e, acc[u][e]);
        }
        r.store(dst + std::int64_t(i) * VEC);
      }
    }
  }
  if (lane == 0 && a.merged_lse.ptr != nullptr)
    a.merged_lse.ptr[std::int64_t(b) * a.merged_lse.row_stride + std::int64_t(j) * a.merged_lse.head_stride] =
        merged_lse(sh, k);
}

// Grid: x = blocks of heads_per_block heads, y = rows (striding past 65535).
template <typename T, typename TO, int VEC, int VPT>
__global__ void __launch_bounds__(kMaxThreads) combine_group_kernel(CombineArgs a, GroupLaunch g) {
  pdl_begin();
  const T* o = static_cast<const T*>(a.o);
  const float* lse = a.lse;
  if (a.flags != nullptr) {
    const unsigned long long epoch = *a.epoch;
    const int parity = static_cast<int>(epoch & 1);
    o += parity * a.parity_o_stride;
    if (lse != nullptr) lse += parity * a.parity_lse_stride;
    if (!wait_flags(a, a.flags + parity * a.parity_flag_stride, epoch)) return;
  }
  const int lane = threadIdx.x & ((1 << g.shift) - 1);
  const int j = blockIdx.x * g.heads_per_block + (threadIdx.x >> g.shift);
  const unsigned mask = group_mask(g.shift);
  const float k = a.base2 ? 1.f : kLog2e;
  for (int b = blockIdx.y; b < a.rows; b += gridDim.y) {
    if (j < a.heads) combine_pair<T, TO, VEC, VPT>(a, o, lse, b, j, lane, g, mask, k);
    row_unit_done(a.stamps, b, gridDim.x);
  }
}

template <typename T, int VEC, int VPT, typename TO = T>
void launch_group(const CombineArgs& a, cudaStream_t stream) {
  const GroupLaunch g = group_launch(a.heads, a.dim / VEC, VPT, a.dcp);
  const dim3 grid(ceil_div(a.heads, g.heads_per_block), std::min(a.rows, 65535));
  launch_kernel("combine_group_kernel", combine_group_kernel<T, TO, VEC, VPT>, grid, g.threads, 0, stream, a,
                g);
}

// Whether every access of `vec` elements is aligned: the source and destination pointers and every stride.
bool aligned_for(const CombineArgs& a, int vec, std::size_t elem) {
  const std::uintptr_t bytes = std::uintptr_t(vec) * elem;
  const std::int64_t strides[] = {a.o_lanes, a.src_stride,     a.parity_o_stride,
                                  a.dim,     a.dst_row_stride, a.dst_head_stride};
  bool ok = reinterpret_cast<std::uintptr_t>(a.o) % bytes == 0 &&
            reinterpret_cast<std::uintptr_t>(a.dst) % bytes == 0;
  for (auto s : strides) ok = ok && s % vec == 0;
  return ok;
}

// VPT counts 16-byte vectors; with 4-byte accesses (packed rows) a lane takes four times as many.
// An output type other than the input's (fp32 partials merged into bf16, say; the runner's steps never
// ask for it): the lane-group kernel one element per lane, rounding each element once.
template <typename T>
void launch_mixed(const CombineArgs& a, cudaStream_t stream) {
  switch (a.out) {
    case Elem::kF32:
      return launch_group<T, 1, 4, float>(a, stream);
    case Elem::kBF16:
      return launch_group<T, 1, 4, __nv_bfloat16>(a, stream);
    case Elem::kF16:
      return launch_group<T, 1, 4, __half>(a, stream);
  }
}

// Variants (kVariantNames): 0-2 the lane-group kernel, 3-4 the short path, 5-6 the packed rows' short path.
template <typename T>
void launch_typed(const CombineArgs& a, int variant, cudaStream_t stream) {
  constexpr int kVec = 16 / sizeof(T);
  if (a.elem != a.out) return launch_mixed<T>(a, stream);
  if (variant >= 5) {  // the packed short path, else the short path with as many bytes per lane
    if (launch_combine_packed(a, variant == 5 ? 4 : 8, stream)) return;
    variant -= 2;
  }
  if (variant >= 3) {  // the short path, else the lane-group kernel with as many vectors
    if (launch_combine_fast(a, variant - 2, stream)) return;
    variant -= 3;
  }
  if (aligned_for(a, kVec, sizeof(T))) {
    if (variant == 0) return launch_group<T, kVec, 1>(a, stream);
    if (variant == 1) return launch_group<T, kVec, 2>(a, stream);
    return launch_group<T, kVec, 4>(a, stream);
  }
  if constexpr (sizeof(T) == 2) {
    if (aligned_for(a, 2, sizeof(T))) {
      if (variant == 0) return launch_group<T, 2, 4>(a, stream);
      if (variant == 1) return launch_group<T, 2, 8>(a, stream);
      return launch_group<T, 2, 16>(a, stream);
    }
  }
  launch_group<T, 1, 4>(a, stream);
}

}  // namespace

const std::vector<std::string>& combine_variants() {
  static const std::vector<std::string> names(kVariantNames, kVariantNames + kVariantCount);
  return names;
}

int combine_auto_variant(const CombineArgs& a) {
  // By the bytes of the N partials, from the decode sweep with every variant on one H200
  // (docs/PERFORMANCE.md, 2026-12-01, 1,380 shapes x bf16/fp16 x graph/eager): the short-path kernels win
  // everywhere, one vector per lane up to 2 MiB and two above (on average within 0.5 % of the per-shape
  // best). Where their layout does not allow them they fall back to the lane-group kernel with as many
  // vectors.
  // The packed all-to-all's rows (LSE in the row) take the packed short path with four words per lane:
  // within 1 % of the per-shape best on median over the decode sweep (540 shapes, bf16, graph; 2026-12-02,
  // docs/PERFORMANCE.md), 1.4-2.3x faster than the lane-group kernels on 4-byte words it replaces.
  const std::int64_t bytes =
      std::int64_t(a.dcp) * a.rows * a.heads * a.dim * std::int64_t(elem_bytes(a.elem));
  const bool packed_short = a.lse == nullptr && a.flags == nullptr && a.dcp <= 8 && a.rows <= 65535 &&
                            a.elem != Elem::kF32 && a.elem == a.out && a.dim % 2 == 0;
  if (packed_short) return 5;                       // p4
  return bytes <= (std::int64_t{2} << 20) ? 3 : 4;  // f1 : f2
}

void launch_combine(const CombineArgs& a, cudaStream_t stream) {
  if (a.dcp < 1 || a.dcp > 4096)
    throw InputError("combine: N=" + std::to_string(a.dcp) + " outside [1, 4096]");
  if (a.flags != nullptr && (a.epoch == nullptr || a.error == nullptr))
    throw InputError("combine: flags need an epoch counter and an error word");
  if (a.variant < -1 || a.variant >= kVariantCount)
    throw InputError("combine: variant " + std::to_string(a.variant) + " outside [-1, " +
                     std::to_string(kVariantCount) + ")");
  if (a.rows == 0 || a.heads == 0) return;
  const int variant = a.variant < 0 ? combine_auto_variant(a) : a.variant;
  with_elem(a.elem, [&](auto tag) { launch_typed<typename decltype(tag)::type>(a, variant, stream); });
  DCPSIM_CUDA_LAUNCHED("combine_group_kernel");
}

}  // namespace dcpsim::hw::ops

// ---- benchmark descriptors: the receiver's combine of N blocks of [B][H/N][D] into [B][H/N][D] and its LSE.
// "a2a-combine": the packed all-to-all's received buffer [N][B][H/N][D + 2] (LSE in the last two lanes);
// "combine": the direct merge's slots, O [N][B][H/N][D] and LSE [N][B][H/N] apart (the layout FlashInfer's
// MergeStates is compared with). Bytes: every input read once, O and the merged LSE written once. Inputs
// rotate over enough sets to exceed L2 ----
namespace dcpsim::hw::ops {
namespace {

class CombineBench final : public BenchOp {
 public:
  CombineBench(const OpShape& s, std::uint64_t seed, bool packed)
      : s_(s), packed_(packed), elem_(elem_of(s.dtype)), stamps_(s.rows, s.row_stamps) {
    const char* name = packed ? "a2a-combine" : "combine";
    if (s.dcp < 1 || s.rows < 1 || s.heads < 1 || s.dim < 1)
      throw InputError(std::string(name) + " bench: N, B, H and D must be >= 1");
    if (s.heads % s.dcp != 0) throw InputError(std::string(name) + " bench: H must be divisible by N");
    if (elem_ == Elem::kF32) throw InputError(std::string(name) + " bench: --dtype must be bf16 or fp16");
    j_ = s.heads / s.dcp;
    lanes_ = s.dim + (packed ? 2 : 0);
    const std::int64_t o_elems = std::int64_t(s.dcp) * s.rows * j_ * lanes_;
    const std::int64_t lse_elems = packed ? 0 : std::int64_t(s.dcp) * s.rows * j_;
    // At least kMinInputSets input sets: a call and the ones before it read different buffers, as ranks' do.
    sets_ = std::max(kMinInputSets, rotation_sets(double(o_elems) * 2 + double(lse_elems) * 4));
    for (int i = 0; i < sets_; ++i) {
      // Packed: random 16-bit lanes, so the LSE lanes hold fp32 patterns whose high half is a bf16 in [-4,
      // 4).
      o_.emplace_back(std::size_t(o_elems) * 2);
      launch_fill_uniform(o_.back().get(), o_elems, packed ? Elem::kBF16 : elem_, 4.f, seed + i, 0, nullptr);
      if (!packed) {
        lse_.emplace_back(std::size_t(lse_elems) * 4);
        launch_fill_uniform(lse_.back().get(), lse_elems, Elem::kF32, 8.f, seed + 100 + i, 0, nullptr);
      }
    }
    out_ = DeviceBuffer(std::size_t(s.rows) * j_ * s.dim * 2);
    merged_ = DeviceBuffer(std::size_t(s.rows) * j_ * 4);
    DCPSIM_CUDA(cudaDeviceSynchronize());
  }
  std::string label() const override {
    return "N=" + std::to_string(s_.dcp) + " B=" + std::to_string(s_.rows) + " H/N=" + std::to_string(j_) +
           " D=" + std::to_string(s_.dim) + (s_.row_stamps ? " stamped" : "");
  }
  double bytes() const override {
    const double pairs = double(s_.rows) * j_;
    return s_.dcp * pairs * (lanes_ * 2 + (packed_ ? 0 : 4)) + pairs * (s_.dim * 2 + 4);
  }
  void set_variant(int v) override { s_.variant = v; }
  void launch(int call, cudaStream_t stream) override {
    auto a = with_dims<CombineArgs>({s_.dcp, s_.rows, s_.rows, j_, s_.dim, false, elem_});
    a.out = elem_;
    a.variant = s_.variant;
    a.o = o_[call % sets_].get();
    a.o_lanes = lanes_;
    a.src_stride = std::int64_t(s_.rows) * j_ * lanes_;
    if (!packed_) {
      a.lse = lse_[call % sets_].as<float>();
      a.lse_src_stride = std::int64_t(s_.rows) * j_;
    }
    a.dst = out_.get();
    a.dst_row_stride = std::int64_t(j_) * s_.dim;
    a.dst_head_stride = s_.dim;
    a.merged_lse = {merged_.as<float>(), j_, 1};
    a.stamps = stamps_.get();
    launch_combine(a, stream);
  }

 private:
  OpShape s_;
  bool packed_;
  Elem elem_;
  int j_ = 1, lanes_ = 0, sets_ = 1;
  std::vector<DeviceBuffer> o_, lse_;
  DeviceBuffer out_, merged_;
  BenchStamps stamps_;
};

}  // namespace

std::unique_ptr<BenchOp> make_a2a_combine_bench(const OpShape& s, std::uint64_t seed) {
  // a2a-2call's combine reads the LSEs apart (split_lse): the direct merge's layout, the same kernels.
  return std::make_unique<CombineBench>(s, seed, !s.split_lse);
}
std::unique_ptr<BenchOp> make_combine_bench(const OpShape& s, std::uint64_t seed) {
  return std::make_unique<CombineBench>(s, seed, false);
}

}  // namespace dcpsim::hw::ops
