// The row-streaming merge's own kernels (the attention epilogue that pushes is in attention.cu):
//   row_push_kernel     the post-kernel push, for O and LSE already written (an attention without an epilogue
//                       hook; the protocol's tests): a rank's rows into the owners' windows, then their flags
//   row_combine_kernel  the owner's combine: warps claim (row, head group) items in row order from a shared
//                       counter, wait for the row's N flags and merge as the other strategies do. Launched
//                       twice per step: a small streaming grid beside the attention (it holds whole
//                       multiprocessors: an MLA attention block leaves a sub-partition 512 registers, less
//                       than any warp needs) and, once the producers have finished, a tail grid as large as
//                       the device, which takes the rows the streaming grid has not reached. Optionally a
//                       third, the early tail (RowCombineArgs::early), sized as the tail but released while
//                       the last producers run, on the multiprocessors they leave.
// Each warp works alone. Where an item's partials fit a lane's registers (N ≤ 8, 16-bit, D = 256 to 512:
// row_combine_regs_kernel), each source's LSEs and partials are loaded as its flag lands (all in one round
// when the row is complete at the claim); elsewhere (and with RowCombineArgs::staged) its LSEs in one round
// trip, then the partials with a finite LSE streamed into its shared memory with cp.async (no registers held
// per load) while it computes the weights. A partial whose weight is 0 is never multiplied.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <string>

#include "cuda_check.h"
#include "dcpsim/error.h"
#include "device_common.cuh"
#include "elem_dispatch.cuh"
#include "merge_fast.cuh"
#include "mma.cuh"
#include "ops.h"
#include "row_push.cuh"
#include "row_stream_layout.h"

namespace dcpsim::hw::ops {
namespace {

constexpr int kPushThreads = 128;
constexpr int kCombineWarps = 8;  // independent workers per block
constexpr int kStages = 3;
constexpr int kStageBytes = 8192;  // per warp and stage: some sources of one head, all D lanes

// ---- the post-kernel push: one block per (owner, row) ----
template <typename T>
__global__ void __launch_bounds__(kPushThreads) row_push_kernel(RowPushArgs a) {
  if (threadIdx.x == 0 && a.push.started != nullptr) atomicAdd(a.push.started, 1ull);  // as attention's
  pdl_begin();
  const int n = blockIdx.x, b = blockIdx.y;
  const RowPush& q = a.push;
  const int J = q.heads_per_owner;
  const unsigned long long epoch = *q.epoch;
  const int parity = static_cast<int>(epoch & 1);
  const int row = q.row_base + b;
  const int pieces = q.dim * static_cast<int>(sizeof(T)) / 16;  // 16-byte pieces per head
  auto lse_of = [&](int h) {
    return b < a.valid_rows ? a.lse[std::int64_t(b) * a.lse_row_stride + std::int64_t(h) * a.lse_head_stride]
                            : -INFINITY;
  };
  for (int c = threadIdx.x; c < J * pieces; c += kPushThreads) {
    const int j = c / pieces, piece = c % pieces, h = n * J + j;
    if (!isfinite(lse_of(h))) continue;  // weight 0 at the owner: its O is never read
    const uint4* src = reinterpret_cast<const uint4*>(
        static_cast<const T*>(a.o) + std::int64_t(b) * a.o_row_stride + std::int64_t(h) * a.o_head_stride);
    reinterpret_cast<uint4*>(window_o<T>(q, parity, n, row, j))[piece] = src[piece];
  }
  for (int j = threadIdx.x; j < J; j += kPushThreads) *window_lse(q, parity, n, row, j) = lse_of(n * J + j);
  __syncthreads();
  if (threadIdx.x == 0) publish_heads(q, row, n * J, (n + 1) * J, epoch);
}

// ---- the owner's combine ----
struct CombineParams {
  RowCombineArgs a;
  row_stream::Shape shape;
  int heads_per_item, items_per_row;
  int sources_per_tile, tiles_per_head;  // a tile: some sources of one head, all D lanes, in one stage
  int warp_smem;                         // bytes of shared memory per warp (stages, LSEs, weights)
};

// The calling warp claims the next of `items` items (rows in order) from the owner's counter: the item, or
// ≥ `items` when none is left. With a probe, records who took it and when.
class ItemClaim {
 public:
  __device__ ItemClaim(const RowCombineArgs& a, int items) : a_(a), items_(items) {}

  __device__ int next() {
    if (threadIdx.x % 32 == 0) item_ = static_cast<int>(atomicAdd(a_.claim, 1u));
    item_ = __shfl_sync(0xffffffffu, item_, 0);
    if (probing()) {
      unsigned sm = 0;
      asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
      slot(row_stream::kProbeWho) = (static_cast<unsigned long long>(a_.tail) << 63) |
                                    (static_cast<unsigned long long>(a_.early) << 62) |
                                    (static_cast<unsigned long long>(sm) << 32) |
                                    (blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32);
      mark(row_stream::kProbeClaimed);
    }
    return item_;
  }
  // With a probe, lane 0 records the end of stage `s` of the item claimed last (a valid one).
  __device__ void mark(int s) const {
    if (probing()) slot(s) = global_timer();
  }

 private:
  __device__ bool probing() const { return a_.probe != nullptr && threadIdx.x % 32 == 0 && item_ < items_; }
  __device__ unsigned long long& slot(int s) const {
    return a_.probe[std::int64_t(item_) * row_stream::kProbeSlots + s];
  }
  const RowCombineArgs& a_;
  int items_;
  int item_ = 0;
};

// Lane 0, after the warp's output stores for an item of row b: the warp that completes the row stamps it.
__device__ __forceinline__ void item_stored(const RowCombineArgs& a, int b, int items_per_row) {
  if (threadIdx.x % 32 == 0 && a.out_stamps.stamps != nullptr) {
    __threadfence();
    if (atomicAdd(&a.out_stamps.counters[b], 1u) + 1u == static_cast<unsigned>(items_per_row))
      a.out_stamps.stamps[b] = global_timer();
  }
}

// Lane 0, after the warp's wait for row b's flags: the first warp to see them stamps the row's LSE.
__device__ __forceinline__ void row_flags_seen(const RowCombineArgs& a, int b) {
  if (threadIdx.x % 32 == 0 && a.lse_stamps.stamps != nullptr &&
      atomicAdd(&a.lse_stamps.counters[b], 1u) == 0u)
    a.lse_stamps.stamps[b] = global_timer();
}

// The calling warp waits until every source's flag of row b holds `epoch`, 32 sources at a time, lane i
// polling source s0 + i. As sources land, the whole warp calls landed(s0, mask) (bit i: source s0 + i) after
// a warp barrier that orders their flags' acquires before every lane's reads of their slots. False when this
// wait timed out (the error word names the first source still missing and the row) or another's did.
template <class Landed>
__device__ bool wait_row(const CombineParams& p, const unsigned long long* flags, int b,
                         unsigned long long epoch, Landed&& landed) {
  const RowCombineArgs& a = p.a;
  const int lane = threadIdx.x % 32;
  const unsigned long long start = global_timer();
  for (int s0 = 0; s0 < a.dcp; s0 += 32) {
    const int n = min(32, a.dcp - s0);
    unsigned pending = n == 32 ? 0xffffffffu : (1u << n) - 1u;
    unsigned sleep_ns = 32;
    for (;;) {
      const bool up =
          (pending >> lane & 1u) != 0 &&
          load_flag_acquire(flags + row_stream::flag_index(p.shape, s0 + lane, b), a.system_scope) == epoch;
      __syncwarp();
      const unsigned got = __ballot_sync(0xffffffffu, up);
      if (got != 0) {
        landed(s0, got);
        pending &= ~got;
      }
      if (pending == 0) break;
      int failed = 0;
      if (lane == 0) {
        if (*reinterpret_cast<volatile int*>(a.error) != 0) {  // another wait gave up: so does this one
          failed = 1;
        } else if (static_cast<long long>(global_timer() - start) > a.timeout_ns) {
          if (atomicCAS(a.error, 0, 1 + s0 + __ffs(static_cast<int>(pending)) - 1) == 0)
            *reinterpret_cast<volatile int*>(a.error + 1) = b;
          failed = 1;
        }
      }
      if (__shfl_sync(0xffffffffu, failed, 0) != 0) return false;
      __nanosleep(sleep_ns);
      sleep_ns = min(2u * sleep_ns, 256u);
    }
  }
  return true;
}

// This step's half of the owner's window (parity = epoch & 1): its O slots, LSE slots and row flags.
template <typename T>
struct StepWindow {
  unsigned long long epoch;
  const T* o;
  const float* lse;
  const unsigned long long* flags;
  __device__ StepWindow(const RowCombineArgs& a, const row_stream::Shape& s) : epoch(*a.epoch) {
    const int parity = static_cast<int>(epoch & 1);
    o = static_cast<const T*>(a.o) + parity * row_stream::o_elems(s);
    lse = a.lse + parity * row_stream::lse_elems(s);
    flags = a.flags + parity * row_stream::flag_elems(s);
  }
};

// An item: row b, heads j0 .. j0 + nj − 1 of the owner; `real`: not a padding row.
struct Item {
  int b, j0, nj;
  bool real;
};

// The calling warp's next item, claimed, with its row's flags seen (and the row's LSE stamped); false when no
// item is left or a wait gave up. `landed` (see wait_row) sees `it` filled in, as each source lands.
template <class Landed>
__device__ bool next_item(ItemClaim& claim, const CombineParams& p, const unsigned long long* flags,
                          unsigned long long epoch, int items, Item& it, Landed&& landed) {
  const int item = claim.next();
  if (item >= items) return false;
  it.b = item / p.items_per_row;
  it.j0 = (item % p.items_per_row) * p.heads_per_item;
  it.nj = min(p.heads_per_item, p.a.heads - it.j0);
  it.real = it.b < p.a.valid_rows;
  if (!wait_row(p, flags, it.b, epoch, landed)) return false;
  claim.mark(row_stream::kProbeFlags);
  row_flags_seen(p.a, it.b);
  return true;
}

// First statement of the combines. The streaming grid and the tail begin as every kernel of a step does
// (pdl_begin). The early tail is released while its producers run: it must not wait for them
// (griddepcontrol.wait would), and a block may spin only once every producer block of the step has begun
// (RowCombineArgs::early); a block that finds one missing exits at once. False: the block exits.
__device__ bool combine_begin(const RowCombineArgs& a) {
  if (!a.early) {
    pdl_begin();
    return true;
  }
  return __syncthreads_or(threadIdx.x == 0 && load_flag_acquire(a.producers_started, false) >=
                                                  *a.epoch * a.producers_per_step) != 0;
}

template <typename T>
__global__ void __launch_bounds__(32 * kCombineWarps, 1) row_combine_kernel(CombineParams p) {
  if (!combine_begin(p.a)) return;
  constexpr int kV = 16 / sizeof(T);                   // elements per 16-byte piece
  constexpr int kPerLane = 512 * sizeof(T) / 16 / 32;  // pieces of one head a lane accumulates (D ≤ 512)
  extern __shared__ __align__(16) unsigned char smem[];
  const RowCombineArgs& a = p.a;
  const row_stream::Shape& s = p.shape;
  const int N = a.dcp, lane = threadIdx.x % 32;
  unsigned char* stage = smem + (threadIdx.x / 32) * p.warp_smem;
  float* sl = reinterpret_cast<float*>(stage + kStages * kStageBytes);  // [heads_per_item][N] sanitised LSEs
  float* sw = sl + p.heads_per_item * N;                                // [heads_per_item][N] weights
  const StepWindow<T> win(a, s);
  const float k = a.base2 ? 1.f : kLog2e;
  const int pieces = a.dim * static_cast<int>(sizeof(T)) / 16;
  const int items = a.rows * p.items_per_row;
  ItemClaim claim(a, items);
  for (Item it; next_item(claim, p, win.flags, win.epoch, items, it, [](int, unsigned) {});) {
    const int b = it.b, j0 = it.j0, nj = it.nj;
    const bool real = it.real;
    for (int i = lane; i < nj * N; i += 32)
      sl[i] = real ? sanitize_lse(__ldcg(win.lse + row_stream::slot(s, i % N, b, j0 + i / N))) : -INFINITY;
    __syncwarp();
    claim.mark(row_stream::kProbeLse);
    // Tiles (head jj, sources [g·spt, ...)) through a kStages-deep cp.async pipeline, the first ones issued
    // before the weights are known.
    const int tiles = nj * p.tiles_per_head;
    auto issue = [&](int t) {
      if (t < tiles) {
        const int jj = t / p.tiles_per_head, s0 = (t % p.tiles_per_head) * p.sources_per_tile;
        const int ns = min(p.sources_per_tile, N - s0);
        // Source si's pieces land at dst + (si · pieces + q) · 16; its slice lies one source stride past the
        // previous one's (no division or 64-bit product per piece: a lone warp's issue is instruction-bound).
        unsigned char* dst = stage + (t % kStages) * kStageBytes;
        const T* src = win.o + row_stream::o_offset(s, s0, b, j0 + jj);
        const std::int64_t stride = row_stream::o_offset(s, 1, 0, 0);
        for (int si = 0; si < ns; ++si, src += stride, dst += pieces * 16) {
          const bool live = sl[jj * N + s0 + si] != -INFINITY;
          for (int q = lane; q < pieces; q += 32) cp_async16(dst + q * 16, live ? src + q * kV : win.o, live);
        }
      }
      cp_async_commit();
    };
    for (int t = 0; t < kStages - 1; ++t) issue(t);
    if (lane < nj) {  // SPEC merge weights of head j0 + lane, and its merged LSE
      const float* l = sl + lane * N;
      const LseShift sh = lse_shift(N, k, [&](int i) { return l[i]; });
      for (int i = 0; i < N; ++i) sw[lane * N + i] = merge_weight(l[i], k, sh);
      if (a.merged_lse.ptr != nullptr)
        a.merged_lse.ptr[std::int64_t(b) * a.merged_lse.row_stride +
                         std::int64_t(j0 + lane) * a.merged_lse.head_stride] = merged_lse(sh, k);
    }
    __syncwarp();
    claim.mark(row_stream::kProbeWeights);
    float acc[kPerLane][kV];
#pragma unroll
    for (int i = 0; i < kPerLane; ++i)
#pragma unroll
      for (int v = 0; v < kV; ++v) acc[i][v] = 0.f;
    for (int t = 0; t < tiles; ++t) {
      cp_async_wait<kStages - 2>();
      __syncwarp();
      if (t == 0) claim.mark(row_stream::kProbePartials);
      issue(t + kStages - 1);
      const int jj = t / p.tiles_per_head, g = t % p.tiles_per_head, s0 = g * p.sources_per_tile;
      const int ns = min(p.sources_per_tile, N - s0);
      const unsigned char* st = stage + (t % kStages) * kStageBytes;
#pragma unroll
      for (int i = 0; i < kPerLane; ++i) {
        const int c = lane + i * 32;
        if (c >= pieces) break;
        for (int si = 0; si < ns; ++si) {
          const float w = sw[jj * N + s0 + si];
          if (w == 0.f) continue;
          const uint4 x = *reinterpret_cast<const uint4*>(st + (si * pieces + c) * 16);
          const T* e = reinterpret_cast<const T*>(&x);
#pragma unroll
          for (int v = 0; v < kV; ++v) acc[i][v] += w * to_f32(e[v]);
        }
      }
      if (g == p.tiles_per_head - 1) {  // head j0 + jj is complete: one rounding, 16-byte stores
        T* dst = static_cast<T*>(a.dst) + std::int64_t(b) * a.dst_row_stride +
                 std::int64_t(j0 + jj) * a.dst_head_stride;
#pragma unroll
        for (int i = 0; i < kPerLane; ++i) {
          const int c = lane + i * 32;
          if (c < pieces) {
            uint4 out;
            T* e = reinterpret_cast<T*>(&out);
#pragma unroll
            for (int v = 0; v < kV; ++v) e[v] = from_f32<T>(acc[i][v]);
            reinterpret_cast<uint4*>(dst)[c] = out;
          }
#pragma unroll
          for (int v = 0; v < kV; ++v) acc[i][v] = 0.f;
        }
      }
    }
    cp_async_wait<0>();
    __syncwarp();  // the stages, LSEs and weights are free for the next item
    claim.mark(row_stream::kProbeStored);
    item_stored(a, b, p.items_per_row);
  }
}

// ---- the owner's combine on registers (the default where it applies: launch_row_combine) ----
// The same items, claims, waits, stamps and probes as row_combine_kernel, but an item's partials and LSEs go
// into registers, each source's as soon as its flag lands: HPI heads × up to kRegSources sources × UPL
// 16-byte units a lane, at most 32 loads (D = 384 and 512 with two heads an item, D = 256 with four; N ≤ 8;
// 16-bit elements), one round when the row is complete at the claim; the staged kernel takes a round for the
// LSEs, then its cp.async stages behind them. A warp that claims a row some of whose sources are late (the
// streaming grid, the early tail) holds the others' partials by the time the last one lands, and reads only
// the late ones then. The LSE of (head jj, source s) sits in lane jj·8 + s, so segmented butterflies over
// eight lanes give every head its shift at once. A slot is loaded whatever its LSE (it lies inside the
// window; an empty partial's O may be stale) and accumulated only under a non-zero weight, so an empty
// partial never reaches the sum.
constexpr int kRegSources = 8;

template <typename T, int HPI, int UPL>
__global__ void __launch_bounds__(32 * kCombineWarps, 1) row_combine_regs_kernel(CombineParams p) {
  static_assert(HPI * kRegSources <= 32 && HPI * kRegSources * UPL <= 32);
  if (!combine_begin(p.a)) return;
  constexpr int kV = 16 / sizeof(T);
  const RowCombineArgs& a = p.a;
  const row_stream::Shape& s = p.shape;
  const int N = a.dcp, lane = threadIdx.x % 32;
  const StepWindow<T> win(a, s);
  const float k = a.base2 ? 1.f : kLog2e;
  const int units = a.dim * static_cast<int>(sizeof(T)) / 16;
  const int items = a.rows * p.items_per_row;
  const int lj = lane / kRegSources, ls = lane % kRegSources;  // this lane's LSE: head j0 + lj, source ls
  ItemClaim claim(a, items);
  Item it{0, 0, 0, false};
  float x = -INFINITY;
  uint4 v[HPI][kRegSources][UPL];
  // A source's LSE and slot units are loaded as soon as its flag lands, so the sources that finished early
  // are in registers before the last one lands. N ≤ kRegSources ≤ 32: every source is in wait_row's first
  // group (s0 = 0). A slot never loaded (a source past N, a head past nj, a unit past the row, a padding row)
  // is never read: its weight is 0 or its index is excluded below.
  static_assert(kRegSources <= 32);
  auto landed = [&](int, unsigned got) {
    if (it.real && lj < it.nj && ls < N && (got >> ls & 1u) != 0)
      x = sanitize_lse(__ldcg(win.lse + row_stream::slot(s, ls, it.b, it.j0 + lj)));
#pragma unroll
    for (int si = 0; si < kRegSources; ++si) {
      if ((got >> si & 1u) == 0) continue;  // got holds sources below N only
#pragma unroll
      for (int jj = 0; jj < HPI; ++jj) {
        const uint4* src = reinterpret_cast<const uint4*>(
            win.o + row_stream::o_offset(s, si, it.b, it.j0 + min(jj, it.nj - 1)));
#pragma unroll
        for (int t = 0; t < UPL; ++t)
          if (it.real && jj < it.nj && lane + 32 * t < units) v[jj][si][t] = __ldcg(src + lane + 32 * t);
      }
    }
  };
  for (;;) {
    x = -INFINITY;
    if (!next_item(claim, p, win.flags, win.epoch, items, it, landed)) break;
    const int b = it.b, j0 = it.j0, nj = it.nj;
    // SPEC steps 1-4 per head over its eight lanes (lanes past N hold −inf).
    float m = x;
#pragma unroll
    for (int off = kRegSources / 2; off > 0; off >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
    const float e = m == -INFINITY ? 0.f : fast::exp2_ftz((x - m) * k);
    float sum = e;
#pragma unroll
    for (int off = kRegSources / 2; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
    float w_lane = m == -INFINITY ? 0.f : e * fast::rcp_ftz(sum);
    w_lane = w_lane == w_lane ? w_lane : 0.f;
    if (ls == 0 && lj < nj && a.merged_lse.ptr != nullptr)
      a.merged_lse
          .ptr[std::int64_t(b) * a.merged_lse.row_stride + std::int64_t(j0 + lj) * a.merged_lse.head_stride] =
          merged_lse({m, sum}, k);
    claim.mark(row_stream::kProbeLse);
    claim.mark(row_stream::kProbeWeights);
#pragma unroll
    for (int jj = 0; jj < HPI; ++jj) {
      if (jj >= nj) break;  // the same for every lane
      T* dst = static_cast<T*>(a.dst) + std::int64_t(b) * a.dst_row_stride +
               std::int64_t(j0 + jj) * a.dst_head_stride;
#pragma unroll
      for (int t = 0; t < UPL; ++t) {
        const int c = lane + 32 * t;
        float acc[kV] = {};
#pragma unroll
        for (int si = 0; si < kRegSources; ++si) {
          const float w = __shfl_sync(0xffffffffu, w_lane, jj * kRegSources + si);
          if (si < N && w != 0.f && c < units) {
            const T* el = reinterpret_cast<const T*>(&v[jj][si][t]);
#pragma unroll
            for (int q = 0; q < kV; ++q) acc[q] += w * to_f32(el[q]);
          }
        }
        if (c < units) {
          uint4 out;
          T* o = reinterpret_cast<T*>(&out);
#pragma unroll
          for (int q = 0; q < kV; ++q) o[q] = from_f32<T>(acc[q]);
          reinterpret_cast<uint4*>(dst)[c] = out;
        }
      }
      if (jj == 0) claim.mark(row_stream::kProbePartials);
    }
    __syncwarp();  // every lane's stores before lane 0 counts the item
    claim.mark(row_stream::kProbeStored);
    item_stored(a, b, p.items_per_row);
  }
}

void check_target(const RowPush& q, int heads, Elem e) {
  const int eb = static_cast<int>(elem_bytes(e));
  if (q.dcp < 1 || q.heads_per_owner < 1 || q.dcp * q.heads_per_owner != heads || q.rank < 0 ||
      q.rank >= q.dcp || q.row_base < 0 || q.dim < 1 || q.dim * eb % 16 != 0 || q.o == nullptr ||
      q.lse == nullptr || q.flags == nullptr || q.epoch == nullptr || q.counters == nullptr)
    throw InputError("row push: the target (N=" + std::to_string(q.dcp) +
                     ", J=" + std::to_string(q.heads_per_owner) + ", D=" + std::to_string(q.dim) +
                     ") does not match H=" + std::to_string(heads) +
                     " (D·element size must be a multiple of 16 bytes)");
}

bool aligned16(const void* p, std::int64_t row_stride, std::int64_t head_stride, Elem e) {
  const auto eb = static_cast<std::int64_t>(elem_bytes(e));
  return reinterpret_cast<std::uintptr_t>(p) % 16 == 0 && row_stride * eb % 16 == 0 &&
         head_stride * eb % 16 == 0;
}

}  // namespace

void launch_row_push(const RowPushArgs& a, cudaStream_t stream) {
  check_target(a.push, a.heads, a.elem);
  if (a.rows < 0 || a.valid_rows < 0 || a.push.row_base + a.rows > a.push.rows)
    throw InputError("row push: rows [" + std::to_string(a.push.row_base) + ", " +
                     std::to_string(a.push.row_base + a.rows) + ") outside the window's " +
                     std::to_string(a.push.rows));
  if (!aligned16(a.o, a.o_row_stride, a.o_head_stride, a.elem))
    throw InputError("row push: O rows and heads must start on 16-byte boundaries");
  if (a.rows == 0) return;
  const dim3 grid(a.push.dcp, a.rows);
  with_elem(a.elem, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_kernel("row_push_kernel", row_push_kernel<T>, grid, kPushThreads, 0, stream, a);
  });
  DCPSIM_CUDA_LAUNCHED("row_push_kernel");
}

void launch_row_combine(const RowCombineArgs& a, cudaStream_t stream) {
  const int eb = static_cast<int>(elem_bytes(a.elem));
  if (a.dcp < 1 || a.dcp > 4096)
    throw InputError("row combine: N=" + std::to_string(a.dcp) + " outside [1, 4096]");
  if (a.heads < 1 || a.dim < 1 || a.dim * eb % 16 != 0 || a.dim > 512)
    throw InputError("row combine: D=" + std::to_string(a.dim) +
                     " must fill whole 16-byte pieces and be at most 512 (" + std::to_string(eb) +
                     "-byte elements)");
  if (a.epoch == nullptr || a.error == nullptr || a.flags == nullptr || a.o == nullptr || a.lse == nullptr ||
      a.dst == nullptr || a.claim == nullptr)
    throw InputError("row combine: window, flags, epoch, claim counter, error word and output are required");
  if (!aligned16(a.dst, a.dst_row_stride, a.dst_head_stride, a.elem))
    throw InputError("row combine: output rows and heads must start on 16-byte boundaries");
  if (a.early && (!a.tail || a.producers_started == nullptr || a.producers_per_step == 0))
    throw InputError("row combine: the early tail needs tail, the producers' start counter and their count");
  if (a.rows == 0) return;
  CombineParams p;
  p.a = a;
  p.shape = {a.dcp, a.rows, a.heads, a.dim};
  p.heads_per_item = row_stream::heads_per_item(a.heads, a.dim);
  p.items_per_row = row_stream::items_per_row(a.heads, a.dim);
  p.sources_per_tile = std::clamp(kStageBytes / (a.dim * eb), 1, a.dcp);
  p.tiles_per_head = (a.dcp + p.sources_per_tile - 1) / p.sources_per_tile;
  p.warp_smem = static_cast<int>(kStages * kStageBytes +
                                 (2 * std::size_t(p.heads_per_item) * a.dcp * 4 + 15) / 16 * 16);
  int device = 0, sms = 0, smem_max = 0;
  DCPSIM_CUDA(cudaGetDevice(&device));
  DCPSIM_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const std::int64_t items = std::int64_t(a.rows) * p.items_per_row;
  if (!a.staged && eb == 2 && a.dcp <= kRegSources) {
    // The register path: two heads of at most 64 units an item, or four of at most 32.
    const int units = a.dim * eb / 16;
    auto run = [&](auto kernel) {
      const int blocks =
          row_stream::combine_blocks(sms, a.ranks_on_device, ceil_div(items, kCombineWarps), a.tail);
      launch_kernel_with("row_combine_kernel", kernel, blocks, 32 * kCombineWarps, 0, stream,
                         LaunchExtras{!a.tail, nullptr}, p);
    };
    bool ran = false;
    with_elem(a.elem, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (sizeof(T) == 2) {
        if (!a.tail) {  // as below: the push kernel is loaded before a spinning grid holds the device
          cudaFuncAttributes attr;
          DCPSIM_CUDA(cudaFuncGetAttributes(&attr, row_push_kernel<T>));
        }
        if (p.heads_per_item <= 2 && units <= 64) {
          run(row_combine_regs_kernel<T, 2, 2>);
          ran = true;
        } else if (p.heads_per_item <= 4 && units <= 32) {
          run(row_combine_regs_kernel<T, 4, 1>);
          ran = true;
        }
      }
    });
    if (ran) {
      DCPSIM_CUDA_LAUNCHED("row_combine_kernel");
      return;
    }
  }
  DCPSIM_CUDA(cudaDeviceGetAttribute(&smem_max, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  const int warps = std::clamp(smem_max / p.warp_smem, 1, kCombineWarps);
  if (smem_max < p.warp_smem)
    throw InputError("row combine: N=" + std::to_string(a.dcp) +
                     " needs more shared memory than a block has");
  const std::size_t smem = std::size_t(warps) * p.warp_smem;
  const int blocks = row_stream::combine_blocks(sms, a.ranks_on_device, ceil_div(items, warps), a.tail);
  auto run = [&](auto kernel) {
    DCPSIM_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    launch_kernel_with("row_combine_kernel", kernel, blocks, 32 * warps, smem, stream,
                       LaunchExtras{!a.tail, nullptr}, p);
  };
  with_elem(a.elem, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (!a.tail) {
      // With lazy loading (CUDA's default) a kernel is loaded at its first launch, and a load does not
      // complete while a grid that spins for its output holds the device: load the push kernel before the
      // spinning grid starts (the tail combine is this very kernel).
      cudaFuncAttributes attr;
      DCPSIM_CUDA(cudaFuncGetAttributes(&attr, row_push_kernel<T>));
    }
    run(row_combine_kernel<T>);
  });
  DCPSIM_CUDA_LAUNCHED("row_combine_kernel");
}

}  // namespace dcpsim::hw::ops
