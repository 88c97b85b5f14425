// Direct (one-shot) merge, ONE kernel per rank (protocol in dcpsim/hw/direct_protocol.h). Two kernels run it:
//
// direct_chunk_kernel (the default, variant "chunk"; "chunk-sys" keeps system-scope flags in emulation).
// An owner's (row, head) pairs of the valid rows are cut into chunks of eight; block b handles chunks b,
// b + grid, ...:
//   1. sends: chunk c of every owner's pairs from the rank's O into slot `rank` of that owner's window (peer
//      memory over NVLink, or a plain allocation in emulation), four pairs a warp with every lane's 16-byte
//      loads issued before its stores, plus the fp32 LSEs; padding rows are not sent;
//   2. publish: a block barrier, then thread n raises chunk flag (rank, c) in owner n's window with a release
//      store of the epoch (cumulative over the barrier: no thread fences its own stores);
//   3. wait: once all its chunks are out, for each chunk the block's first N threads poll the N flags (s, c)
//   of
//      the rank's own window with acquire loads, at most timeout_ns (then error = 1 + the missing source);
//   4. combine: a warp per pair of the chunk: lane s loads LSE s beside the lane's first slot loads, the SPEC
//      weights by warp shuffles, fp32 accumulation of the N slots with 16-byte loads, one rounding.
// No block waits for more than the same chunk of every source.
//
// direct_merge_kernel (variant "grid", the 2026-12-01 kernel): a warp per (row, head) stores, every thread
// fences at system scope, the block that completes the rank's arrival count raises one flag per owner, every
// block waits for all N flags and combines its share of the owner's rows.
//
// The blocks spin on flags raised by other blocks (and other GPUs), so every block of a launch must be
// resident at once: direct_merge_blocks() sizes the grid from the occupancy. Emulation launches every
// logical rank of the device at once (blockIdx.y = rank); a rank that is not in the launch never raises its
// flags, which is how the timeout is tested.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <string>
#include <vector>

#include "bench_op.h"
#include "cuda_check.h"
#include "dcpsim/error.h"
#include "dcpsim/hw/direct_protocol.h"
#include "device_buffer.h"
#include "device_common.cuh"
#include "elem_dispatch.cuh"
#include "ops.h"

namespace dcpsim::hw::ops {
namespace {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kInFlight = 4;  // 16-byte loads a lane issues before it stores or accumulates
constexpr unsigned kFull = 0xffffffffu;

// Flags at the scope their observers need: every other GPU of the NVLink domain (sys), or, when every window
// is on this device (emulation, the chunk kernel), the device (gpu).
template <bool SYS>
__device__ __forceinline__ void store_release(unsigned long long* p, unsigned long long v) {
  if constexpr (SYS)
    asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
  else
    asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

template <bool SYS>
__device__ __forceinline__ unsigned long long load_acquire(const unsigned long long* p) {
  unsigned long long v;
  if constexpr (SYS)
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  else
    asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(kFull, v, o));
  return v;
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(kFull, v, o);
  return v;
}

template <typename T>
__device__ __forceinline__ void accumulate(float* acc, const int4& v, float w) {
  const T* e = reinterpret_cast<const T*>(&v);
#pragma unroll
  for (int i = 0; i < int(16 / sizeof(T)); ++i) acc[i] += w * to_f32(e[i]);
}

template <typename T>
__device__ __forceinline__ int4 round_out(const float* acc) {
  int4 v;
  T* e = reinterpret_cast<T*>(&v);
#pragma unroll
  for (int i = 0; i < int(16 / sizeof(T)); ++i) e[i] = from_f32<T>(acc[i]);
  return v;
}

struct Step {
  DirectLayout layout;
  unsigned long long epoch;
  int par;
  bool vec;                       // every row of O, the slots and the output is 16-byte aligned
  unsigned char* const* windows;  // the owners' window bases (the chunk kernel: a copy in shared memory)
};

// 1. One (row, head) of the rank's O and its LSE into the owner's slot.
template <typename T>
__device__ void send(const DirectRank& me, const Step& st, int b, int h, int lane) {
  const DirectLayout& L = st.layout;
  const int owner = L.owner_of(h), j = L.local_head(h);
  unsigned char* win = me.windows[owner];
  const T* src = static_cast<const T*>(me.o) + b * me.o_row_stride + h * me.o_head_stride;
  T* dst = reinterpret_cast<T*>(win + L.o(st.par, me.rank, b, j));
  if (st.vec) {
    const int chunks = L.dim * int(sizeof(T)) / 16;
    const int4* s4 = reinterpret_cast<const int4*>(src);
    int4* d4 = reinterpret_cast<int4*>(dst);
    for (int c0 = lane; c0 < chunks; c0 += 32 * kInFlight) {
      int4 v[kInFlight];
#pragma unroll
      for (int u = 0; u < kInFlight; ++u)
        if (c0 + 32 * u < chunks) v[u] = __ldg(s4 + c0 + 32 * u);
#pragma unroll
      for (int u = 0; u < kInFlight; ++u)
        if (c0 + 32 * u < chunks) d4[c0 + 32 * u] = v[u];
    }
  } else {
    for (int d = lane; d < L.dim; d += 32) dst[d] = src[d];
  }
  if (lane == 0)
    *reinterpret_cast<float*>(win + L.lse(st.par, me.rank, b, j)) =
        me.lse[b * me.lse_row_stride + h * me.lse_head_stride];
}

// 2. After the block's stores: the block that completes the rank's count raises the flags.
__device__ void publish(const DirectMergeArgs& a, const DirectRank& me, const Step& st) {
  __threadfence_system();  // each thread's peer stores are visible system-wide before it is counted
  __syncthreads();
  if (threadIdx.x != 0) return;
  if (atomicAdd(me.control + 1, 1ull) + 1ull != gridDim.x) return;
  me.control[1] = 0;  // every block of this launch has counted: the next launch counts from 0
  __threadfence_system();
  for (int n = 0; n < a.dcp; ++n)
    store_release<true>(
        reinterpret_cast<unsigned long long*>(me.windows[n] + st.layout.flag(st.par, me.rank)), st.epoch);
  *reinterpret_cast<volatile unsigned long long*>(me.control) = st.epoch;  // read by the next step
}

// 3. Every source's flag, at offset flag_at(s) of the rank's own window `own`, holds the step's epoch; false
// after the timeout, with the error word naming the first source found missing.
template <bool SYS, typename FlagAt>
__device__ bool wait_flags(const DirectMergeArgs& a, const DirectRank& me, const Step& st,
                           const unsigned char* own, FlagAt flag_at) {
  __shared__ int failed;
  if (threadIdx.x == 0) failed = 0;
  __syncthreads();
  for (int s = threadIdx.x; s < a.dcp; s += blockDim.x) {
    const auto* flag = reinterpret_cast<const unsigned long long*>(own + flag_at(s));
    const unsigned long long start = global_timer();
    while (load_acquire<SYS>(flag) != st.epoch) {
      if (static_cast<long long>(global_timer() - start) > a.timeout_ns) {
        atomicCAS(me.error, 0, 1 + s);
        atomicOr(&failed, 1);
        break;
      }
      __nanosleep(32);
    }
  }
  __syncthreads();
  const bool ok = failed == 0;
  __syncthreads();  // every thread has read `failed` before a next call (the chunk kernel's loop) resets it
  return ok;
}

// A padding row's (row, kept head): nothing was sent; zeros and an empty LSE.
template <typename T>
__device__ void clear_pair(T* dst, float* merged, int dim, int lane) {
  for (int d = lane; d < dim; d += 32) dst[d] = from_f32<T>(0.f);
  if (lane == 0 && merged != nullptr) *merged = -INFINITY;
}

// 4. One (row, kept head) of the owner: N slots in, one rounding out. Every lane of the warp calls it.
template <typename T>
__device__ void combine(const DirectMergeArgs& a, const DirectRank& me, const Step& st, int b, int j,
                        int lane) {
  const DirectLayout& L = st.layout;
  const int N = a.dcp;
  T* dst = static_cast<T*>(me.out) + (std::int64_t(b) * L.heads + j) * L.dim;
  float* merged = me.merged_lse != nullptr ? me.merged_lse + std::int64_t(b) * L.heads + j : nullptr;
  if (b >= a.valid_rows) {  // padding row: nothing was sent
    clear_pair<T>(dst, merged, L.dim, lane);
    return;
  }
  const unsigned char* own = me.windows[me.rank];
  auto lse_of = [&](int s) {
    return sanitize_lse(__ldcg(reinterpret_cast<const float*>(own + L.lse(st.par, s, b, j))));
  };
  const float k = a.base2 ? 1.f : kLog2e;
  float m = -INFINITY;
  for (int s = lane; s < N; s += 32) m = fmaxf(m, lse_of(s));
  m = warp_max(m);
  float sum = 0.f;
  if (m != -INFINITY) {
    for (int s = lane; s < N; s += 32) sum += exp2f((lse_of(s) - m) * k);
    sum = warp_sum(sum);
  }
  const LseShift shift{m, sum};
  auto slot = [&](int s) { return reinterpret_cast<const T*>(own + L.o(st.par, s, b, j)); };
  if (!st.vec) {  // element-wise: O rows not 16-byte aligned
    for (int d0 = 0; d0 < L.dim; d0 += 32) {
      const int d = d0 + lane;
      float acc = 0.f;
      for (int base = 0; base < N; base += 32) {
        const int count = min(32, N - base);
        const float w_lane = lane < count ? merge_weight(lse_of(base + lane), k, shift) : 0.f;
        for (int s = 0; s < count; ++s) {
          const float w = __shfl_sync(kFull, w_lane, s);
          if (w != 0.f && d < L.dim) acc += w * to_f32(slot(base + s)[d]);
        }
      }
      if (d < L.dim) dst[d] = from_f32<T>(acc);
    }
  } else {
    constexpr int kVec = 16 / sizeof(T);
    const int chunks = L.dim / kVec;
    for (int c0 = 0; c0 < chunks; c0 += 32) {
      const int c = c0 + lane;
      const bool active = c < chunks;
      float acc[kVec] = {};
      for (int base = 0; base < N; base += 32) {
        const int count = min(32, N - base);
        const float w_lane = lane < count ? merge_weight(lse_of(base + lane), k, shift) : 0.f;
        for (int s0 = 0; s0 < count; s0 += kInFlight) {
          float w[kInFlight];
          int4 v[kInFlight];
#pragma unroll
          for (int i = 0; i < kInFlight; ++i) {
            w[i] = s0 + i < count ? __shfl_sync(kFull, w_lane, s0 + i) : 0.f;
            // A partial with weight 0 is never read (its O may be NaN).
            if (w[i] != 0.f && active) v[i] = __ldcg(reinterpret_cast<const int4*>(slot(base + s0 + i)) + c);
          }
#pragma unroll
          for (int i = 0; i < kInFlight; ++i)
            if (w[i] != 0.f && active) accumulate<T>(acc, v[i], w[i]);
        }
      }
      if (active) reinterpret_cast<int4*>(dst)[c] = round_out<T>(acc);
    }
  }
  if (lane == 0 && merged != nullptr) *merged = merged_lse(shift, k);
}

// Row stamps: the warp that completes row b's H/N heads stamps it.
__device__ void row_head_done(const RowStamps& s, int b, int heads, int lane) {
  if (s.stamps == nullptr) return;
  __syncwarp();
  if (lane != 0) return;
  __threadfence();
  if (atomicAdd(&s.counters[b], 1u) + 1u == unsigned(heads)) s.stamps[b] = global_timer();
}

template <typename T>
__global__ void __launch_bounds__(kThreads, 3) direct_merge_kernel(DirectMergeArgs a, bool vec) {
  pdl_begin();
  const DirectRank& me = a.ranks[blockIdx.y];  // read field by field as needed (few registers held)
  Step st;
  st.layout = {a.dcp, a.rows, a.heads / a.dcp, a.dim, int(sizeof(T))};
  st.epoch = *reinterpret_cast<volatile const unsigned long long*>(me.control) + 1ull;
  st.par = DirectLayout::parity(st.epoch);
  st.vec = vec;
  st.windows = me.windows;
  const int warp = blockIdx.x * kWarps + threadIdx.x / 32, lane = threadIdx.x % 32;
  const int warps = gridDim.x * kWarps;
  for (int pair = warp; pair < a.valid_rows * a.heads; pair += warps)
    send<T>(me, st, pair / a.heads, pair % a.heads, lane);
  publish(a, me, st);
  if (!wait_flags<true>(a, me, st, me.windows[me.rank], [&](int src) { return st.layout.flag(st.par, src); }))
    return;
  const int J = st.layout.heads;
  for (int pair = warp; pair < a.rows * J; pair += warps) {
    combine<T>(a, me, st, pair / J, pair % J, lane);
    row_head_done(me.stamps, pair / J, J, lane);
  }
}

// ---- the chunk kernel (the default): per-chunk flags, no grid-wide dependency ----

constexpr int kChunk = DirectLayout::kChunkPairs;
static_assert(kChunk == kWarps, "the chunk kernel combines one pair of a chunk per warp");
constexpr int kSendPairs = 4;      // pairs a warp loads at once before it stores them
constexpr int kUnitsInFlight = 8;  // 16-byte loads a lane issues before it stores

// Item i of a chunk's sends: owner i / count, pair q0 + i % count of that owner, as (row, rank head, slot).
struct SendItem {
  int b, h, owner, j;
};
__device__ __forceinline__ SendItem send_item(int i, int q0, int count, int J) {
  const int owner = i / count, q = q0 + i % count;
  const int b = q / J, j = q - b * J;
  return {b, owner * J + j, owner, j};
}

// 1. The block's chunk c to every owner: N × count pairs, kSendPairs per warp at a time with every lane's
// 16-byte loads of them issued before any store (a warp's pairs are D·sizeof(T)/16 units each, spread over
// its lanes), then the LSEs.
template <typename T>
__device__ void send_chunk(const DirectMergeArgs& a, const DirectRank& me, const Step& st, int q0, int count,
                           int warp, int lane) {
  const DirectLayout& L = st.layout;
  const int items = a.dcp * count;
  if (!st.vec) {
    for (int i = warp; i < items; i += kWarps) {
      const SendItem it = send_item(i, q0, count, L.heads);
      send<T>(me, st, it.b, it.h, lane);
    }
    return;
  }
  const int U = L.dim * int(sizeof(T)) / 16;
  for (int i0 = warp * kSendPairs; i0 < items; i0 += kWarps * kSendPairs) {
    const int n = min(kSendPairs, items - i0), units = n * U;
    for (int u0 = lane; u0 < units; u0 += 32 * kUnitsInFlight) {
      int4 v[kUnitsInFlight];
      int4* d[kUnitsInFlight];
#pragma unroll
      for (int k = 0; k < kUnitsInFlight; ++k) {
        const int u = u0 + 32 * k;
        if (u < units) {
          const int p = u / U, w = u - p * U;
          const SendItem it = send_item(i0 + p, q0, count, L.heads);
          const int4* src = reinterpret_cast<const int4*>(static_cast<const T*>(me.o) +
                                                          it.b * me.o_row_stride + it.h * me.o_head_stride);
          v[k] = __ldg(src + w);
          d[k] = reinterpret_cast<int4*>(st.windows[it.owner] + L.o(st.par, me.rank, it.b, it.j)) + w;
        }
      }
#pragma unroll
      for (int k = 0; k < kUnitsInFlight; ++k)
        if (u0 + 32 * k < units) *d[k] = v[k];
    }
    if (lane < n) {
      const SendItem it = send_item(i0 + lane, q0, count, L.heads);
      *reinterpret_cast<float*>(st.windows[it.owner] + L.lse(st.par, me.rank, it.b, it.j)) =
          me.lse[it.b * me.lse_row_stride + it.h * me.lse_head_stride];
    }
  }
}

// 2. After the block's stores of chunk c: thread n raises the chunk's flag in owner n's window. One barrier,
// then one release store per flag: the barrier orders every thread's stores of the chunk before the flag
// threads' release, and a release is cumulative over what its thread has synchronised with (the pattern of
// cooperative groups' grid sync), so no thread fences its own stores.
template <bool SYS>
__device__ void publish_chunk(const DirectMergeArgs& a, const DirectRank& me, const Step& st, int c) {
  __syncthreads();
  for (int n = threadIdx.x; n < a.dcp; n += blockDim.x)
    store_release<SYS>(
        reinterpret_cast<unsigned long long*>(st.windows[n] + st.layout.chunk_flag(st.par, me.rank, c)),
        st.epoch);
}

// Lane s < N loads LSE s of the owner's (row b, kept head j); every lane gets the SPEC shift over the warp
// and returns lane s's weight (0 past N, for empty partials, and when every partial is empty). Called after
// the slot loads it should overlap are issued.
__device__ __forceinline__ float lane_weight(const unsigned char* own, const DirectLayout& L, int par, int b,
                                             int j, int N, float k, int lane, LseShift& shift) {
  const float x = lane < N
                      ? sanitize_lse(__ldcg(reinterpret_cast<const float*>(own + L.lse(par, lane, b, j))))
                      : -INFINITY;
  const float m = warp_max(x);
  const float e = m == -INFINITY ? 0.f : exp2f((x - m) * k);
  shift = {m, warp_sum(e)};
  const float w = m == -INFINITY ? 0.f : e / shift.sum;
  return w == w ? w : 0.f;
}

// 4. One (row, kept head) of the owner, N ≤ 32, 16-byte rows: lane s loads LSE s once, and the lane's slot
// loads of its first units go out with it, before the weights are known (a slot is read whatever its weight
// but accumulated only under a non-zero one, so the NaN partial of an empty shard never reaches the sum).
// One rounding to the output type.
constexpr int kPrefetch = 4;  // sources whose first 16-byte unit a lane loads beside the LSE

template <typename T>
__device__ void combine_one(const DirectMergeArgs& a, const DirectRank& me, const Step& st, int b, int j,
                            int lane) {
  const DirectLayout& L = st.layout;
  const int N = a.dcp;
  const unsigned char* own = st.windows[me.rank];
  constexpr int kVec = 16 / sizeof(T);
  const int units = L.dim / kVec;
  auto slot = [&](int s) { return reinterpret_cast<const int4*>(own + L.o(st.par, s, b, j)); };
  int4 first[kPrefetch];
#pragma unroll
  for (int i = 0; i < kPrefetch; ++i)
    if (i < N && lane < units) first[i] = __ldcg(slot(i) + lane);
  const float k = a.base2 ? 1.f : kLog2e;
  LseShift shift;
  const float w_lane = lane_weight(own, L, st.par, b, j, N, k, lane, shift);
  T* dst = static_cast<T*>(me.out) + (std::int64_t(b) * L.heads + j) * L.dim;
  // The lane's first unit: the prefetched sources, then the rest; then its further units, if any.
  for (int c0 = 0; c0 < units; c0 += 32) {
    const int c = c0 + lane;
    const bool active = c < units;
    float acc[kVec] = {};
    int s0 = 0;
    if (c0 == 0) {
#pragma unroll
      for (int i = 0; i < kPrefetch; ++i) {
        const float w = i < N ? __shfl_sync(kFull, w_lane, i) : 0.f;
        if (w != 0.f && active) accumulate<T>(acc, first[i], w);
      }
      s0 = kPrefetch;
    }
    for (; s0 < N; s0 += kPrefetch) {
      int4 v[kPrefetch];
#pragma unroll
      for (int i = 0; i < kPrefetch; ++i)
        if (s0 + i < N && active) v[i] = __ldcg(slot(s0 + i) + c);
#pragma unroll
      for (int i = 0; i < kPrefetch; ++i) {
        const float w = s0 + i < N ? __shfl_sync(kFull, w_lane, min(s0 + i, 31)) : 0.f;
        if (w != 0.f && active) accumulate<T>(acc, v[i], w);
      }
    }
    if (active) reinterpret_cast<int4*>(dst)[c] = round_out<T>(acc);
  }
  if (lane == 0 && me.merged_lse != nullptr)
    me.merged_lse[std::int64_t(b) * L.heads + j] = merged_lse(shift, k);
}

// ---- the one-round paths (variant "chunk"; "chunk-staged" keeps the rounds above) ----
// At decode shapes the merge is a chain of dependent round trips to the L2, not a stream: the staged sends
// take a round per four pairs of a warp plus one for the LSEs, the staged combine one per four sources of a
// lane's unit. These paths issue all of a lane's loads of a phase at once when they fit its registers.

constexpr int kFlatUnits = 16;   // 16-byte loads a lane of the one-round send keeps in flight
constexpr int kFlatItems = 128;  // a chunk's sends (N × pairs) the block's table holds
constexpr int kFlatSources = 8;  // sources the one-round combine loads at once

// One send of a chunk: where the pair's O and LSE are read, and where they go in the owner's window for
// parity 0 (parity 1 adds the buffers' sizes).
struct SendEntry {
  const int4* src;
  unsigned char* dst;
  const float* lse_src;
  unsigned char* lse_dst;
};

// The block's table of chunk c's sends, thread i filling entry i: the divisions by the chunk's count and the
// heads happen once per pair, not once per 16-byte unit.
template <typename T>
__device__ void fill_send_table(SendEntry* tab, const DirectMergeArgs& a, const DirectRank& me,
                                const Step& st, int q0, int count) {
  const DirectLayout& L = st.layout;
  for (int i = threadIdx.x; i < a.dcp * count; i += blockDim.x) {
    const SendItem it = send_item(i, q0, count, L.heads);
    unsigned char* win = st.windows[it.owner];
    tab[i] = {reinterpret_cast<const int4*>(static_cast<const T*>(me.o) + it.b * me.o_row_stride +
                                            it.h * me.o_head_stride),
              win + L.o(0, me.rank, it.b, it.j),
              me.lse + it.b * me.lse_row_stride + it.h * me.lse_head_stride,
              win + L.lse(0, me.rank, it.b, it.j)};
  }
}

// 1. The chunk's sends in one round: warp w takes sends w, w + 8, ...; its lanes walk their 16-byte units
// (2^log_units a pair) and the first lanes their LSEs, every load issued before any store.
__device__ void send_chunk_flat(const SendEntry* tab, int items, int log_units, std::size_t o_par,
                                std::size_t lse_par, int warp, int lane) {
  const int mine = (items - warp + kWarps - 1) / kWarps;
  if (mine <= 0) return;
  const int flat = mine << log_units, unit_mask = (1 << log_units) - 1;
  for (int f0 = 0; f0 < flat; f0 += 32 * kFlatUnits) {
    int4 v[kFlatUnits];
#pragma unroll
    for (int t = 0; t < kFlatUnits; ++t) {
      const int f = f0 + lane + 32 * t;
      if (f < flat) v[t] = __ldg(tab[warp + kWarps * (f >> log_units)].src + (f & unit_mask));
    }
    const bool lse_lane = f0 == 0 && lane < mine;
    const float l = lse_lane ? *tab[warp + kWarps * lane].lse_src : 0.f;
#pragma unroll
    for (int t = 0; t < kFlatUnits; ++t) {
      const int f = f0 + lane + 32 * t;
      if (f < flat)
        reinterpret_cast<int4*>(tab[warp + kWarps * (f >> log_units)].dst + o_par)[f & unit_mask] = v[t];
    }
    if (lse_lane) *reinterpret_cast<float*>(tab[warp + kWarps * lane].lse_dst + lse_par) = l;
  }
}

// Sources whose slots combine_flat loads in one round: all of them on sm_90; on sm_100 the bf16 instance
// would spill at eight (ptxas of CUDA 13.0), so there it takes two rounds of four.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
constexpr int kFlatRound = 4;
#else
constexpr int kFlatRound = kFlatSources;
#endif

// 4. One (row, kept head) of the owner, N ≤ 8 and at most 32·UPL units a row: every slot load of the lane and
// the LSE load in one round (kFlatRound sources at a time), then the SPEC weights by shuffles and one
// rounding (slots of weight 0 are loaded but never accumulated, as in combine_one).
template <typename T, int UPL>
__device__ void combine_flat(const DirectMergeArgs& a, const DirectRank& me, const Step& st, int b, int j,
                             int lane) {
  const DirectLayout& L = st.layout;
  const int N = a.dcp;
  const unsigned char* own = st.windows[me.rank];
  constexpr int kVec = 16 / sizeof(T);
  const int units = L.dim / kVec;
  int4 v[kFlatRound][UPL];
  auto load_round = [&](int s0) {
#pragma unroll
    for (int i = 0; i < kFlatRound; ++i) {
      const int4* slot = reinterpret_cast<const int4*>(own + L.o(st.par, min(s0 + i, N - 1), b, j));
#pragma unroll
      for (int t = 0; t < UPL; ++t) {
        v[i][t] = make_int4(0, 0, 0, 0);
        if (s0 + i < N && lane + 32 * t < units) v[i][t] = __ldcg(slot + lane + 32 * t);
      }
    }
  };
  load_round(0);
  const float k = a.base2 ? 1.f : kLog2e;
  LseShift shift;
  const float w_lane = lane_weight(own, L, st.par, b, j, N, k, lane, shift);
  T* dst = static_cast<T*>(me.out) + (std::int64_t(b) * L.heads + j) * L.dim;
  if constexpr (kFlatRound >= kFlatSources) {
    float w[kFlatSources];
#pragma unroll
    for (int s = 0; s < kFlatSources; ++s) w[s] = __shfl_sync(kFull, w_lane, s);
#pragma unroll
    for (int t = 0; t < UPL; ++t) {
      const int c = lane + 32 * t;
      if (c >= units) continue;
      float acc[kVec] = {};
#pragma unroll
      for (int s = 0; s < kFlatSources; ++s)
        if (s < N && w[s] != 0.f) accumulate<T>(acc, v[s][t], w[s]);
      reinterpret_cast<int4*>(dst)[c] = round_out<T>(acc);
    }
  } else {
    float acc[UPL][kVec] = {};
#pragma unroll
    for (int s0 = 0; s0 < kFlatSources; s0 += kFlatRound) {
      if (s0 > 0) {
        if (s0 >= N) break;
        load_round(s0);
      }
#pragma unroll
      for (int i = 0; i < kFlatRound; ++i) {
        const float w = __shfl_sync(kFull, w_lane, s0 + i);
#pragma unroll
        for (int t = 0; t < UPL; ++t)
          if (s0 + i < N && w != 0.f && lane + 32 * t < units) accumulate<T>(acc[t], v[i][t], w);
      }
    }
#pragma unroll
    for (int t = 0; t < UPL; ++t)
      if (lane + 32 * t < units) reinterpret_cast<int4*>(dst)[lane + 32 * t] = round_out<T>(acc[t]);
  }
  if (lane == 0 && me.merged_lse != nullptr)
    me.merged_lse[std::int64_t(b) * L.heads + j] = merged_lse(shift, k);
}

constexpr int kWindowCache = 72;  // window bases a block keeps in shared memory (an NVL72 domain)

// FLAT: the one-round paths, which the host picks only where they apply (direct_flat); else the staged ones.
template <typename T, bool SYS, bool FLAT>
__global__ void __launch_bounds__(kThreads, 2) direct_chunk_kernel(DirectMergeArgs a, bool vec) {
  pdl_begin();
  // The rank's arguments and the owners' window bases in shared memory, read once with loads side by side:
  // read from global memory, each use after a flag's acquire or release (a memory clobber) would be another
  // dependent round trip before the address it forms.
  static_assert(sizeof(DirectRank) % 8 == 0 && alignof(DirectRank) <= 8);
  __shared__ unsigned long long rank_words[sizeof(DirectRank) / 8];
  __shared__ unsigned char* windows[kWindowCache];
  __shared__ SendEntry table[FLAT ? kFlatItems : 1];
  // With the launch's one table (a.windows), both go out at once.
  const int cached = min(a.dcp, kWindowCache);
  for (int i = threadIdx.x; i < int(sizeof(DirectRank) / 8); i += blockDim.x)
    rank_words[i] = reinterpret_cast<const unsigned long long*>(a.ranks + blockIdx.y)[i];
  if (a.windows != nullptr)
    for (int n = threadIdx.x; n < cached; n += blockDim.x) windows[n] = a.windows[n];
  __syncthreads();
  const DirectRank& me = *reinterpret_cast<const DirectRank*>(rank_words);
  if (a.windows == nullptr) {
    for (int n = threadIdx.x; n < cached; n += blockDim.x) windows[n] = me.windows[n];
    __syncthreads();
  }
  Step st;
  st.windows = a.dcp <= kWindowCache ? windows : me.windows;
  st.layout = {a.dcp, a.rows, a.heads / a.dcp, a.dim, int(sizeof(T))};
  st.vec = vec;
  const int J = st.layout.heads, pairs = a.valid_rows * J, chunks = st.layout.chunks(a.valid_rows);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int units = a.dim * int(sizeof(T)) / 16, log_units = __ffs(units) - 1;  // FLAT: a power of two
  // The epoch is read once the block's first table is built: its load goes out beside the O loads of the
  // first chunk, whose stores are the first use of its parity (a barrier would wait for it).
  bool have_epoch = false;
  auto read_epoch = [&] {
    st.epoch = *reinterpret_cast<volatile const unsigned long long*>(me.control) + 1ull;
    st.par = DirectLayout::parity(st.epoch);
    have_epoch = true;
  };
  if (!FLAT) read_epoch();
  for (int c = blockIdx.x; c < chunks; c += gridDim.x) {
    const int q0 = c * kChunk, count = min(kChunk, pairs - q0);
    if constexpr (FLAT) {
      fill_send_table<T>(table, a, me, st, q0, count);
      __syncthreads();
      if (!have_epoch) read_epoch();
      send_chunk_flat(table, a.dcp * count, log_units, st.par * st.layout.o_buffer_bytes(),
                      st.par * st.layout.lse_buffer_bytes(), warp, lane);
    } else {
      send_chunk<T>(a, me, st, q0, count, warp, lane);
    }
    publish_chunk<SYS>(a, me, st, c);  // its barrier also keeps the next chunk's table from this one's reads
  }
  if (!have_epoch) read_epoch();  // a block with no chunk of its own
  // Every block reads the epoch before it counts itself (the barrier: each of its warps has), so the block
  // that completes the count records the epoch for the next step once no block of this one can still read
  // it, and resets the count for the next launch, whatever its grid. The block's last thread counts: the
  // first ones poll the flags meanwhile.
  __syncthreads();
  if (threadIdx.x == blockDim.x - 1 && atomicAdd(me.control + 1, 1ull) + 1ull == gridDim.x) {
    me.control[1] = 0;
    *reinterpret_cast<volatile unsigned long long*>(me.control) = st.epoch;
  }
  // Padding rows: nothing was sent, nothing to wait for.
  for (int pair = pairs + blockIdx.x * kWarps + warp; pair < a.rows * J; pair += gridDim.x * kWarps) {
    const int b = pair / J, j = pair % J;
    clear_pair<T>(static_cast<T*>(me.out) + (std::int64_t(b) * J + j) * a.dim,
                  me.merged_lse != nullptr ? me.merged_lse + std::int64_t(b) * J + j : nullptr, a.dim, lane);
    row_head_done(me.stamps, b, J, lane);
  }
  const bool fast = vec && a.dcp <= 32;
  for (int c = blockIdx.x; c < chunks; c += gridDim.x) {
    if (!wait_flags<SYS>(a, me, st, st.windows[me.rank],
                         [&](int src) { return st.layout.chunk_flag(st.par, src, c); }))
      return;
    const int q = c * kChunk + warp;
    if (q >= pairs) continue;
    if constexpr (FLAT) {
      if (units <= 32)
        combine_flat<T, 1>(a, me, st, q / J, q % J, lane);
      else
        combine_flat<T, 2>(a, me, st, q / J, q % J, lane);
    } else if (fast)
      combine_one<T>(a, me, st, q / J, q % J, lane);
    else
      combine<T>(a, me, st, q / J, q % J, lane);
    row_head_done(me.stamps, q / J, J, lane);
  }
}

void check_args(const DirectMergeArgs& a) {
  if (a.dcp < 1 || a.dcp > 4096)
    throw InputError("direct merge: N=" + std::to_string(a.dcp) + " outside [1, 4096]");
  if (a.heads % a.dcp != 0)
    throw InputError("direct merge: H=" + std::to_string(a.heads) +
                     " is not divisible by N=" + std::to_string(a.dcp));
  if (a.valid_rows < 0 || a.valid_rows > a.rows || a.dim < 1)
    throw InputError("direct merge: valid rows " + std::to_string(a.valid_rows) + " of " +
                     std::to_string(a.rows) + ", D=" + std::to_string(a.dim));
  if (a.ranks == nullptr || a.launch_ranks < 1 || a.launch_ranks > a.dcp)
    throw InputError("direct merge: a launch takes 1.." + std::to_string(a.dcp) + " ranks");
}

}  // namespace

std::size_t direct_window_bytes(int dcp, int rows, int heads, int dim, Elem e) {
  return DirectLayout{dcp, rows, heads / dcp, dim, int(elem_bytes(e))}.bytes();
}

// The chunk kernel needs a chunk to synchronise on: a step of padding rows only takes the grid kernel, whose
// per-source flags keep the double-buffering argument (direct_protocol.h).
bool direct_uses_chunks(const DirectMergeArgs& a) {
  return a.variant != DirectVariant::kGrid && a.valid_rows > 0;
}

// System-scope flags unless every window is on this device and the variant allows device scope.
bool direct_sys_scope(const DirectMergeArgs& a) {
  return !a.same_device || a.variant == DirectVariant::kChunkSys;
}

// 16-byte units when a row of D values is a whole number of them (the slot and output rows then are too:
// DirectLayout aligns its regions) and every rank's O rows start on 16 bytes.
bool direct_vec(const DirectMergeArgs& a) {
  return (a.dim * elem_bytes(a.elem)) % 16 == 0 && a.o_rows_aligned;
}

// The one-round paths: 16-byte rows of a power of two of at most 64 units, at most kFlatSources ranks (so a
// chunk's sends, N × 8, fit the block's table).
bool direct_flat(const DirectMergeArgs& a) {
  const std::int64_t units = a.dim * std::int64_t(elem_bytes(a.elem)) / 16;
  return a.variant != DirectVariant::kChunkStaged && direct_vec(a) && (units & (units - 1)) == 0 &&
         units <= 64 && a.dcp <= kFlatSources;
}

using DirectKernel = void (*)(DirectMergeArgs, bool);

template <typename T>
DirectKernel direct_kernel(const DirectMergeArgs& a) {
  static_assert(kFlatSources * kChunk <= kFlatItems);
  if (!direct_uses_chunks(a)) return direct_merge_kernel<T>;
  if (direct_flat(a))
    return direct_sys_scope(a) ? direct_chunk_kernel<T, true, true> : direct_chunk_kernel<T, false, true>;
  return direct_sys_scope(a) ? direct_chunk_kernel<T, true, false> : direct_chunk_kernel<T, false, false>;
}

int direct_merge_blocks(const DirectMergeArgs& a, int device) {
  const bool chunk = direct_uses_chunks(a);
  DirectKernel kernel = nullptr;
  with_elem(a.elem, [&](auto tag) { kernel = direct_kernel<typename decltype(tag)::type>(a); });
  int per_sm = 0, sms = 0;
  DCPSIM_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, 0));
  DCPSIM_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const int resident = std::max(1, per_sm * sms / a.launch_ranks);
  if (a.blocks_per_rank > 0) return std::min(a.blocks_per_rank, resident);
  const int J = a.heads / a.dcp;
  // The chunk kernel: a block per chunk of the owner's pairs (it sends that chunk to every owner and combines
  // its own), or per eight padding pairs; the grid kernel: enough warps for the larger of the two phases.
  const std::int64_t work =
      chunk ? std::max<std::int64_t>(ceil_div(std::int64_t(a.valid_rows) * J, kChunk),
                                     ceil_div(std::int64_t(a.rows - a.valid_rows) * J, kWarps))
            : ceil_div(std::max<std::int64_t>(std::int64_t(a.valid_rows) * a.heads, std::int64_t(a.rows) * J),
                       kWarps);
  return static_cast<int>(std::min<std::int64_t>(std::max<std::int64_t>(1, work), resident));
}

void launch_direct_merge(const DirectMergeArgs& a, cudaStream_t stream) {
  check_args(a);
  int device = 0;
  DCPSIM_CUDA(cudaGetDevice(&device));
  const int blocks = direct_merge_blocks(a, device);
  const char* name = direct_uses_chunks(a) ? "direct_chunk_kernel" : "direct_merge_kernel";
  with_elem(a.elem, [&](auto tag) {
    launch_kernel(name, direct_kernel<typename decltype(tag)::type>(a), dim3(blocks, a.launch_ranks),
                  kThreads, 0, stream, a, direct_vec(a));
  });
  DCPSIM_CUDA_LAUNCHED(name);
}

std::vector<std::string> direct_variants() {
  return {"chunk", "grid", "chunk-sys", "chunk-staged"};
}

}  // namespace dcpsim::hw::ops

// ---- benchmark descriptor: one emulated direct-merge step of N ranks on one device (the runner's
// --emulate launch: every rank in one kernel). bytes = every rank's O and LSE read once, every slot written
// once and read once, every owner's block written once ----
namespace dcpsim::hw::ops {
namespace {

class DirectBench final : public BenchOp {
 public:
  DirectBench(const OpShape& s, std::uint64_t seed) : s_(s), variant_(s.variant) {
    if (s.heads % s.dcp != 0) throw InputError("direct bench: H must be divisible by N");
    const int N = s.dcp, J = s.heads / N;
    const std::size_t window = direct_window_bytes(N, s.rows, s.heads, s.dim, Elem::kBF16);
    std::vector<unsigned char*> bases;
    for (int r = 0; r < N; ++r) {
      o_.emplace_back(std::size_t(s.rows) * s.heads * s.dim * 2);
      lse_.emplace_back(std::size_t(s.rows) * s.heads * 4);
      launch_fill_uniform(o_.back().get(), std::int64_t(s.rows) * s.heads * s.dim, Elem::kBF16, 1.f, seed + r,
                          0, nullptr);
      launch_fill_uniform(lse_.back().get(), std::int64_t(s.rows) * s.heads, Elem::kF32, 8.f, seed + 100 + r,
                          0, nullptr);
      windows_.emplace_back(window);
      DCPSIM_CUDA(cudaMemset(windows_.back().get(), 0, window));
      bases.push_back(windows_.back().as<unsigned char>());
      out_.emplace_back(std::size_t(s.rows) * J * s.dim * 2);
    }
    table_ = upload(bases);
    control_ = DeviceBuffer(std::size_t(N) * 2 * 8);
    error_ = DeviceBuffer(std::size_t(N) * 4);
    DCPSIM_CUDA(cudaMemset(control_.get(), 0, control_.bytes()));
    DCPSIM_CUDA(cudaMemset(error_.get(), 0, error_.bytes()));
    std::vector<DirectRank> ranks(N);
    for (int r = 0; r < N; ++r) {
      DirectRank& d = ranks[r];
      d.rank = r;
      d.o = o_[r].get();
      d.o_row_stride = std::int64_t(s.heads) * s.dim;
      d.o_head_stride = s.dim;
      d.lse = lse_[r].as<float>();
      d.lse_row_stride = s.heads;
      d.lse_head_stride = 1;
      d.windows = table_.as<unsigned char* const>();
      d.out = out_[r].get();
      d.control = control_.as<unsigned long long>() + 2 * r;
      d.error = error_.as<int>() + r;
    }
    ranks_ = upload(ranks);
    DCPSIM_CUDA(cudaDeviceSynchronize());
  }
  std::string label() const override {
    return "N=" + std::to_string(s_.dcp) + " B=" + std::to_string(s_.rows) +
           " H=" + std::to_string(s_.heads) + " D=" + std::to_string(s_.dim) + " (all ranks, one launch)";
  }
  double bytes() const override {
    const double o = double(s_.rows) * s_.heads * s_.dim * 2, l = double(s_.rows) * s_.heads * 4;
    return s_.dcp * (o + l) * 3 + s_.dcp * double(s_.rows) * (s_.heads / s_.dcp) * s_.dim * 2;
  }
  void launch(int, cudaStream_t stream) override {
    auto a = with_dims<DirectMergeArgs>({s_.dcp, s_.rows, s_.rows, s_.heads, s_.dim, false, Elem::kBF16});
    a.ranks = ranks_.as<const DirectRank>();
    a.launch_ranks = s_.dcp;
    a.blocks_per_rank = s_.blocks;
    a.variant = variant_ == 3   ? DirectVariant::kChunkStaged
                : variant_ == 2 ? DirectVariant::kChunkSys
                : variant_ == 1 ? DirectVariant::kGrid
                : variant_ == 0 ? DirectVariant::kChunk
                                : DirectVariant::kAuto;
    a.same_device = true;  // every rank's window is an allocation of this device
    a.windows = table_.as<unsigned char* const>();
    launch_direct_merge(a, stream);
  }
  void set_variant(int v) override { variant_ = v; }

 private:
  OpShape s_;
  int variant_;  // -1: auto; else direct_variants()[variant_]
  std::vector<DeviceBuffer> o_, lse_, windows_, out_;
  DeviceBuffer table_, control_, error_, ranks_;
};

}  // namespace

std::unique_ptr<BenchOp> make_direct_bench(const OpShape& s, std::uint64_t seed) {
  return std::make_unique<DirectBench>(s, seed);
}

}  // namespace dcpsim::hw::ops
