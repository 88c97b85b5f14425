// Decode attention with LSE over one rank's KV shard: split-KV on tensor cores (mma.sync m16n8k16, fp32
// accumulation), then one combine of the splits into O (any element type, strided) and L (fp32, base e or 2,
// any layout). The file ends with the operation's benchmark descriptor (sizes, inputs, bytes, flops); kernel,
// combine and descriptor of this one operation stay together, hence the length.
//
// A block owns one row, 16·WH heads that share a KV head, and one contiguous token range. Per tile of TOK
// tokens: K (and V) land in shared memory through a STAGES-deep cp.async pipeline; the WD warps of a head
// group each score TOK/WD tokens against all D_qk lanes (S = Q·Kᵀ), exchange scores and row maxima through
// shared memory, then each accumulates P·V for its D/WD slice of the output. For MLA the 576-wide latent tile
// is read once and serves both products (V = its first 512 lanes), so the KV bytes are the unique latent
// bytes.
//
// Row-streaming merge: with a push target (AttentionArgs::push) each finished (row, head group) goes straight
// to its owners' windows instead of O and L: with one split the split kernel's own epilogue stages the tile
// in shared memory and pushes it with 16-byte stores; with several splits (or another output type) the split
// combine pushes each (row, head) as it finishes (row_push.cuh).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "bench_op.h"
#include "cuda_check.h"
#include "dcpsim/error.h"
#include "dcpsim/hw/attention_impl.h"
#include "device_buffer.h"
#include "device_common.cuh"
#include "mma.cuh"
#include "ops.h"
#include "row_push.cuh"

namespace dcpsim::hw::ops {
namespace {

template <int DQK_, int DV_, int WH_, int WD_, int TOK_, int STAGES_, bool SHARED_KV_>
struct Cfg {
  static constexpr int DQK = DQK_, DV = DV_, WH = WH_, WD = WD_, TOK = TOK_, STAGES = STAGES_;
  static constexpr bool SHARED_KV = SHARED_KV_;
  static constexpr int kHeads = 16 * WH;
  static constexpr int kThreads = 32 * WH * WD;
  static constexpr int kKStride = DQK + 8;  // +16 bytes per row: ldmatrix rows fall in distinct bank groups
  static constexpr int kVStride = DV + 8;
  static constexpr int kSStride = TOK + 4;
  static constexpr int kTokPerWarp = TOK / WD;
  static constexpr int kDPerWarp = DV / WD;
  static_assert(kTokPerWarp % 16 == 0 && kDPerWarp % 16 == 0 && DQK % 16 == 0 && TOK % 16 == 0);
  static constexpr std::size_t kQBytes = std::size_t(kHeads) * kKStride * 2;
  static constexpr std::size_t kKBytes = std::size_t(STAGES) * TOK * kKStride * 2;
  static constexpr std::size_t kVBytes = SHARED_KV ? 0 : std::size_t(STAGES) * TOK * kVStride * 2;
  static constexpr std::size_t kSBytes = std::size_t(kHeads) * kSStride * 4;
  static constexpr std::size_t kMaxBytes = std::size_t(WD) * kHeads * 4;
  static constexpr std::size_t kSmem = kQBytes + kKBytes + kVBytes + kSBytes + kMaxBytes;
};

using MlaCfg = Cfg<576, 512, 4, 2, 32, 3, true>;
using GqaCfg = Cfg<128, 128, 1, 4, 64, 3, false>;

struct SplitParams {
  const void* q;
  std::int64_t q_row_stride, q_block_stride;
  int q_block_heads;
  const void* k;
  const void* v;
  std::int64_t k_token_stride, v_token_stride;
  const std::int64_t* kv_offset;
  const int* kv_len;
  int rows, valid_rows, heads, kv_heads, splits, tokens_per_split;
  float scale_log2;
  float* ws_o;    // [B][H][splits][DV], normalised per split
  float* ws_lse;  // [B][H][splits], log2 units
  bool base2;     // the pushed LSE's base (push only)
  RowPush push;   // the push target (PUSH kernels only)
};

// Loads tile `tile` of this block's range into pipeline stage `stage` (tokens past t_end are zero-filled).
template <class C, typename T>
__device__ __forceinline__ void load_tile(const SplitParams& p, T* sK, T* sV, int stage,
                                          std::int64_t row_base, int kvh, int t0, int t_end) {
  const T* k = static_cast<const T*>(p.k);
  constexpr int kChunks = C::DQK / 8;
  for (int c = threadIdx.x; c < C::TOK * kChunks; c += C::kThreads) {
    const int r = c / kChunks, col = (c % kChunks) * 8;
    const int t = t0 + r;
    const bool ok = t < t_end;
    const T* src = ok ? k + (row_base + t) * p.k_token_stride + std::int64_t(kvh) * C::DQK + col : k;
    cp_async16(sK + (stage * C::TOK + r) * C::kKStride + col, src, ok);
  }
  if constexpr (!C::SHARED_KV) {
    const T* v = static_cast<const T*>(p.v);
    constexpr int kVChunks = C::DV / 8;
    for (int c = threadIdx.x; c < C::TOK * kVChunks; c += C::kThreads) {
      const int r = c / kVChunks, col = (c % kVChunks) * 8;
      const int t = t0 + r;
      const bool ok = t < t_end;
      const T* src = ok ? v + (row_base + t) * p.v_token_stride + std::int64_t(kvh) * C::DV + col : v;
      cp_async16(sV + (stage * C::TOK + r) * C::kVStride + col, src, ok);
    }
  }
}

// PUSH (one split only): the epilogue pushes the block's finished heads to their owners (row_push.cuh)
// instead of writing the split workspace.
template <class C, typename T, bool PUSH>
__global__ void __launch_bounds__(C::kThreads) attention_split_kernel(SplitParams p) {
  // A pushing block counts itself as it begins, before it may wait for its predecessor under PDL: the early
  // tail spins only once every producer block of the step holds its multiprocessor (RowPush::started), and a
  // block parked in griddepcontrol.wait holds one.
  if constexpr (PUSH) {
    if (threadIdx.x == 0 && p.push.started != nullptr) atomicAdd(p.push.started, 1ull);
  }
  pdl_begin();
  extern __shared__ __align__(16) unsigned char smem[];
  T* sQ = reinterpret_cast<T*>(smem);
  T* sK = reinterpret_cast<T*>(smem + C::kQBytes);
  T* sV = C::SHARED_KV ? sK : reinterpret_cast<T*>(smem + C::kQBytes + C::kKBytes);
  float* sS = reinterpret_cast<float*>(smem + C::kQBytes + C::kKBytes + C::kVBytes);
  float* sMax = sS + C::kHeads * C::kSStride;

  const int split = blockIdx.x, b = blockIdx.z;
  const int group = p.heads / p.kv_heads;
  const int blocks_per_group = (group + C::kHeads - 1) / C::kHeads;
  const int kvh = blockIdx.y / blocks_per_group;
  const int h0 = kvh * group + (blockIdx.y % blocks_per_group) * C::kHeads;
  const int h_end = kvh * group + group;
  const int len = b < p.valid_rows ? p.kv_len[b] : 0;
  const int t_begin = split * p.tokens_per_split;
  const int t_end = min(len, t_begin + p.tokens_per_split);
  const int tiles = t_end > t_begin ? (t_end - t_begin + C::TOK - 1) / C::TOK : 0;
  const std::size_t ws_row = std::size_t(b) * p.heads;

  if (tiles == 0) {  // nothing on this split: its weight in the combine is 0, its O is never read
    if constexpr (PUSH) {
      push_empty(p.push, b, h0, min(h0 + C::kHeads, h_end));
    } else {
      for (int i = threadIdx.x; i < C::kHeads; i += C::kThreads)
        if (h0 + i < h_end) p.ws_lse[(ws_row + h0 + i) * p.splits + split] = -INFINITY;
    }
    return;
  }
  const std::int64_t row_base = p.kv_offset[b];

  {  // Q tile (heads past the group are zero rows; their results are dropped)
    const T* q = static_cast<const T*>(p.q);
    constexpr int kChunks = C::DQK / 8;
    for (int c = threadIdx.x; c < C::kHeads * kChunks; c += C::kThreads) {
      const int r = c / kChunks, col = (c % kChunks) * 8;
      const int h = h0 + r;
      const bool ok = h < h_end;
      const T* src = ok ? q + std::int64_t(h / p.q_block_heads) * p.q_block_stride +
                              std::int64_t(b) * p.q_row_stride + std::int64_t(h % p.q_block_heads) * C::DQK +
                              col
                        : q;
      cp_async16(sQ + r * C::kKStride + col, src, ok);
    }
  }
#pragma unroll
  for (int s = 0; s < C::STAGES - 1; ++s) {
    if (s < tiles) load_tile<C, T>(p, sK, sV, s, row_base, kvh, t_begin + s * C::TOK, t_end);
    cp_async_commit();
  }

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int hg = warp % C::WH, dh = warp / C::WH;
  const int g = lane / 4, tig = lane % 4;
  constexpr int kNS = C::kTokPerWarp / 8;  // score n-tiles per warp
  constexpr int kNO = C::kDPerWarp / 8;    // output n-tiles per warp
  float o[kNO][4];
#pragma unroll
  for (int i = 0; i < kNO; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
  float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;
  const int r0 = hg * 16 + g, r1 = r0 + 8;  // this thread's two head rows within the block

  for (int it = 0; it < tiles; ++it) {
    cp_async_wait<C::STAGES - 2>();
    __syncthreads();
    {
      const int nt = it + C::STAGES - 1;
      if (nt < tiles) load_tile<C, T>(p, sK, sV, nt % C::STAGES, row_base, kvh, t_begin + nt * C::TOK, t_end);
      cp_async_commit();
    }
    const int stage = it % C::STAGES;
    const T* tK = sK + stage * C::TOK * C::kKStride;
    const T* tV = C::SHARED_KV ? tK : sV + stage * C::TOK * C::kVStride;
    constexpr int kVS = C::SHARED_KV ? C::kKStride : C::kVStride;
    const int t0 = t_begin + it * C::TOK;

    // S = Q·Kᵀ for this warp's 16 heads × kTokPerWarp tokens.
    float s[kNS][4];
#pragma unroll
    for (int i = 0; i < kNS; ++i) s[i][0] = s[i][1] = s[i][2] = s[i][3] = 0.f;
#pragma unroll 4
    for (int ks = 0; ks < C::DQK / 16; ++ks) {
      unsigned a[4];
      ldmatrix_x4(a, sQ + (hg * 16 + (lane & 15)) * C::kKStride + ks * 16 + (lane >> 4) * 8);
#pragma unroll
      for (int np = 0; np < kNS / 2; ++np) {
        const int tok = dh * C::kTokPerWarp + np * 16 + (lane & 7) + ((lane >> 4) << 3);
        unsigned bf[4];
        ldmatrix_x4(bf, tK + tok * C::kKStride + ks * 16 + ((lane >> 3) & 1) * 8);
        mma<T>(s[2 * np], a, bf[0], bf[1]);
        mma<T>(s[2 * np + 1], a, bf[2], bf[3]);
      }
    }
    float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
    for (int i = 0; i < kNS; ++i) {
      const int col = dh * C::kTokPerWarp + i * 8 + 2 * tig;
      const bool ok0 = t0 + col < t_end, ok1 = t0 + col + 1 < t_end;
      const float a0 = ok0 ? s[i][0] * p.scale_log2 : -INFINITY,
                  a1 = ok1 ? s[i][1] * p.scale_log2 : -INFINITY;
      const float a2 = ok0 ? s[i][2] * p.scale_log2 : -INFINITY,
                  a3 = ok1 ? s[i][3] * p.scale_log2 : -INFINITY;
      *reinterpret_cast<float2*>(sS + r0 * C::kSStride + col) = make_float2(a0, a1);
      *reinterpret_cast<float2*>(sS + r1 * C::kSStride + col) = make_float2(a2, a3);
      mx0 = fmaxf(mx0, fmaxf(a0, a1));
      mx1 = fmaxf(mx1, fmaxf(a2, a3));
    }
#pragma unroll
    for (int off = 1; off < 4; off <<= 1) {
      mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, off));
      mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, off));
    }
    if (tig == 0) {
      sMax[dh * C::kHeads + r0] = mx0;
      sMax[dh * C::kHeads + r1] = mx1;
    }
    __syncthreads();

    // Online softmax (every warp of the head group computes the same running max and sum).
    float n0 = m0, n1 = m1;
#pragma unroll
    for (int w = 0; w < C::WD; ++w) {
      n0 = fmaxf(n0, sMax[w * C::kHeads + r0]);
      n1 = fmaxf(n1, sMax[w * C::kHeads + r1]);
    }
    const float al0 = exp2f(m0 - n0), al1 = exp2f(m1 - n1);  // m = −inf before the first tile: α = 0
    m0 = n0;
    m1 = n1;
    l0 *= al0;
    l1 *= al1;
#pragma unroll
    for (int i = 0; i < kNO; ++i) {
      o[i][0] *= al0;
      o[i][1] *= al0;
      o[i][2] *= al1;
      o[i][3] *= al1;
    }
#pragma unroll
    for (int kt = 0; kt < C::TOK / 16; ++kt) {
      const int c0 = kt * 16 + 2 * tig;
      const float2 x00 = *reinterpret_cast<const float2*>(sS + r0 * C::kSStride + c0);
      const float2 x10 = *reinterpret_cast<const float2*>(sS + r1 * C::kSStride + c0);
      const float2 x01 = *reinterpret_cast<const float2*>(sS + r0 * C::kSStride + c0 + 8);
      const float2 x11 = *reinterpret_cast<const float2*>(sS + r1 * C::kSStride + c0 + 8);
      const float p00 = exp2f(x00.x - m0), p01 = exp2f(x00.y - m0), p02 = exp2f(x01.x - m0),
                  p03 = exp2f(x01.y - m0);
      const float p10 = exp2f(x10.x - m1), p11 = exp2f(x10.y - m1), p12 = exp2f(x11.x - m1),
                  p13 = exp2f(x11.y - m1);
      l0 += (p00 + p01) + (p02 + p03);
      l1 += (p10 + p11) + (p12 + p13);
      unsigned a[4] = {pack2<T>(p00, p01), pack2<T>(p10, p11), pack2<T>(p02, p03), pack2<T>(p12, p13)};
#pragma unroll
      for (int np = 0; np < kNO / 2; ++np) {
        const int d = dh * C::kDPerWarp + np * 16 + (lane >> 4) * 8;
        const int tok = kt * 16 + (lane & 7) + (((lane >> 3) & 1) << 3);
        unsigned bf[4];
        ldmatrix_x4_trans(bf, tV + tok * kVS + d);
        mma<T>(o[2 * np], a, bf[0], bf[1]);
        mma<T>(o[2 * np + 1], a, bf[2], bf[3]);
      }
    }
  }
  cp_async_wait<0>();

#pragma unroll
  for (int off = 1; off < 4; off <<= 1) {
    l0 += __shfl_xor_sync(0xffffffffu, l0, off);
    l1 += __shfl_xor_sync(0xffffffffu, l1, off);
  }
  const int ha = h0 + r0, hb = h0 + r1;
  const float inv0 = 1.f / l0, inv1 = 1.f / l1;
  if constexpr (PUSH) {
    // Stage the tile as [kHeads][DV] in the output type where Q and the KV tiles were (+16 bytes per head:
    // the fragment stores of a warp's eight rows land in distinct banks), then push it.
    constexpr int kOStride = C::DV + 8;
    static_assert(std::size_t(C::kHeads) * kOStride * sizeof(T) + C::kHeads * sizeof(float) <=
                  C::kQBytes + C::kKBytes + C::kVBytes);
    __syncthreads();  // every warp is done with the tiles the staging area reuses
    T* sO = reinterpret_cast<T*>(smem);
    float* sL = reinterpret_cast<float*>(smem + std::size_t(C::kHeads) * kOStride * sizeof(T));
#pragma unroll
    for (int i = 0; i < kNO; ++i) {
      const int d = dh * C::kDPerWarp + i * 8 + 2 * tig;
      *reinterpret_cast<unsigned*>(sO + r0 * kOStride + d) = pack2<T>(o[i][0] * inv0, o[i][1] * inv0);
      *reinterpret_cast<unsigned*>(sO + r1 * kOStride + d) = pack2<T>(o[i][2] * inv1, o[i][3] * inv1);
    }
    if (dh == 0 && tig == 0) {  // the local LSE in the attention's base, as the split combine writes it
      const float to_base = p.base2 ? 1.f : kLn2;
      sL[r0] = (m0 + log2f(l0)) * to_base;
      sL[r1] = (m1 + log2f(l1)) * to_base;
    }
    __syncthreads();
    push_staged<T, C::DV>(p.push, sO, kOStride, sL, b, h0, min(h0 + C::kHeads, h_end));
  } else {
#pragma unroll
    for (int i = 0; i < kNO; ++i) {
      const int d = dh * C::kDPerWarp + i * 8 + 2 * tig;
      if (ha < h_end)
        *reinterpret_cast<float2*>(p.ws_o + ((ws_row + ha) * p.splits + split) * C::DV + d) =
            make_float2(o[i][0] * inv0, o[i][1] * inv0);
      if (hb < h_end)
        *reinterpret_cast<float2*>(p.ws_o + ((ws_row + hb) * p.splits + split) * C::DV + d) =
            make_float2(o[i][2] * inv1, o[i][3] * inv1);
    }
    if (dh == 0 && tig == 0) {
      if (ha < h_end) p.ws_lse[(ws_row + ha) * p.splits + split] = m0 + log2f(l0);
      if (hb < h_end) p.ws_lse[(ws_row + hb) * p.splits + split] = m1 + log2f(l1);
    }
  }
}

struct CombineSplitsParams {
  const float* ws_o;
  const float* ws_lse;
  int heads, splits, dv, valid_rows;
  bool base2;
  void* o;
  std::int64_t o_row_stride, o_head_stride;
  LseOut lse;
  float empty_lse, empty_fill;
  RowStamps stamps;
  RowPush push;  // combine_splits_push_kernel only
};

// Block-wide: the normalised weights of (row b, head h)'s splits into w (padded with zeros to a multiple of
// 8) and the merged LSE in log2 units (−inf for an empty or padding row).
__device__ float split_weights(const CombineSplitsParams& p, int b, int h, float* w) {
  __shared__ float merged;
  const std::size_t base = (std::size_t(b) * p.heads + h) * p.splits;
  if (threadIdx.x < 32) {
    float m = -INFINITY;
    for (int s = threadIdx.x; s < p.splits; s += 32) m = fmaxf(m, p.ws_lse[base + s]);
    for (int off = 16; off > 0; off >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
    float sum = 0.f;
    for (int s = threadIdx.x; s < p.splits; s += 32) {
      const float e = m == -INFINITY ? 0.f : exp2f(p.ws_lse[base + s] - m);
      w[s] = e;
      sum += e;
    }
    for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
    if (threadIdx.x == 0) merged = (m == -INFINITY || b >= p.valid_rows) ? -INFINITY : m + log2f(sum);
    __syncwarp();
    // The weight array is padded to a multiple of 8 with zeros: the unrolled sum reads it eight at a time.
    const int padded = (p.splits + 7) / 8 * 8;
    for (int s = threadIdx.x; s < padded; s += 32) w[s] = s < p.splits && sum > 0.f ? w[s] / sum : 0.f;
  }
  __syncthreads();
  return merged;
}

// One block per (head, row): weights of the splits in shared memory, then each thread sums its lanes.
template <typename TOut>
__global__ void combine_splits_kernel(CombineSplitsParams p) {
  pdl_begin();
  extern __shared__ float w[];
  const int h = blockIdx.x, b = blockIdx.y;
  const std::size_t base = (std::size_t(b) * p.heads + h) * p.splits;
  const float L = split_weights(p, b, h, w);
  TOut* o = static_cast<TOut*>(p.o) + std::int64_t(b) * p.o_row_stride + std::int64_t(h) * p.o_head_stride;
  // Four lanes per thread, eight splits' loads in flight before they are summed. A split with weight 0 may
  // never have been written: its values are selected away, never multiplied.
  const float4* ws = reinterpret_cast<const float4*>(p.ws_o + base * p.dv);
  const int dv4 = p.dv / 4;
  for (int d4 = threadIdx.x; d4 < dv4; d4 += blockDim.x) {
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    if (L != -INFINITY) {
      for (int s0 = 0; s0 < p.splits; s0 += 8) {
        float4 x[8];
#pragma unroll
        for (int u = 0; u < 8; ++u)
          if (s0 + u < p.splits) x[u] = __ldcs(ws + std::size_t(s0 + u) * dv4 + d4);
#pragma unroll
        for (int u = 0; u < 8; ++u) {
          if (s0 + u >= p.splits) break;
          const float wu = w[s0 + u];
          if (wu != 0.f) {
            acc.x += wu * x[u].x;
            acc.y += wu * x[u].y;
            acc.z += wu * x[u].z;
            acc.w += wu * x[u].w;
          }
        }
      }
    } else {
      acc = make_float4(p.empty_fill, p.empty_fill, p.empty_fill, p.empty_fill);
    }
    o[4 * d4] = from_f32<TOut>(acc.x);
    o[4 * d4 + 1] = from_f32<TOut>(acc.y);
    o[4 * d4 + 2] = from_f32<TOut>(acc.z);
    o[4 * d4 + 3] = from_f32<TOut>(acc.w);
  }
  if (threadIdx.x == 0 && p.lse.ptr != nullptr)
    p.lse.ptr[std::int64_t(b) * p.lse.row_stride + std::int64_t(h) * p.lse.head_stride] =
        L == -INFINITY ? p.empty_lse : (p.base2 ? L : L * kLn2);
  row_unit_done(p.stamps, b, static_cast<unsigned>(p.heads));
}

// The split combine of the row-streaming merge: as combine_splits_kernel, but (row b, head h) goes to its
// owner's window, 16 bytes per store, and is counted towards the row's flag. An empty row sends its LSE only.
template <typename TOut>
__global__ void combine_splits_push_kernel(CombineSplitsParams p) {
  pdl_begin();
  extern __shared__ float w[];
  constexpr int kV = 16 / sizeof(TOut);  // output elements per 16-byte store
  const int h = blockIdx.x, b = blockIdx.y;
  const std::size_t base = (std::size_t(b) * p.heads + h) * p.splits;
  const float L = split_weights(p, b, h, w);
  const RowPush& q = p.push;
  const unsigned long long epoch = *q.epoch;
  const int parity = static_cast<int>(epoch & 1);
  const int row = q.row_base + b, J = q.heads_per_owner;
  if (L != -INFINITY) {
    uint4* dst = reinterpret_cast<uint4*>(window_o<TOut>(q, parity, h / J, row, h % J));
    const float4* ws = reinterpret_cast<const float4*>(p.ws_o + base * p.dv);
    const int dv4 = p.dv / 4;
    for (int c = threadIdx.x; c < p.dv / kV; c += blockDim.x) {
      float acc[kV];
#pragma unroll
      for (int v = 0; v < kV; ++v) acc[v] = 0.f;
      for (int s = 0; s < p.splits; ++s) {
        const float ws_weight = w[s];
        if (ws_weight == 0.f) continue;  // possibly never written: never read
#pragma unroll
        for (int u = 0; u < kV / 4; ++u) {
          const float4 x = __ldcs(ws + std::size_t(s) * dv4 + c * (kV / 4) + u);
          acc[4 * u] += ws_weight * x.x;
          acc[4 * u + 1] += ws_weight * x.y;
          acc[4 * u + 2] += ws_weight * x.z;
          acc[4 * u + 3] += ws_weight * x.w;
        }
      }
      uint4 out;
      TOut* e = reinterpret_cast<TOut*>(&out);
#pragma unroll
      for (int v = 0; v < kV; ++v) e[v] = from_f32<TOut>(acc[v]);
      dst[c] = out;
    }
  }
  if (threadIdx.x == 0)
    *window_lse(q, parity, h / J, row, h % J) = L == -INFINITY ? -INFINITY : (p.base2 ? L : L * kLn2);
  __syncthreads();
  if (threadIdx.x == 0) publish_heads(q, row, h, h + 1, epoch);
}

template <class C>
void launch_split(const AttentionArgs& a, const SplitParams& sp, cudaStream_t stream, bool push) {
  const int group = a.heads / a.kv_heads;
  const dim3 grid(sp.splits, a.kv_heads * ((group + C::kHeads - 1) / C::kHeads), a.rows);
  LaunchExtras extras;
  if (push) extras.blocks_started = a.blocks_started;  // else the split combine's launch records it
  auto run = [&](auto kernel) {
    DCPSIM_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(C::kSmem)));
    launch_kernel_with("attention_split_kernel", kernel, grid, C::kThreads, C::kSmem, stream, extras, sp);
  };
  if (a.in == Elem::kBF16)
    push ? run(attention_split_kernel<C, __nv_bfloat16, true>)
         : run(attention_split_kernel<C, __nv_bfloat16, false>);
  else
    push ? run(attention_split_kernel<C, __half, true>) : run(attention_split_kernel<C, __half, false>);
  DCPSIM_CUDA_LAUNCHED("attention_split_kernel");
}

int tokens_per_tile(Geometry g) {
  return g == Geometry::kMla576 ? MlaCfg::TOK : GqaCfg::TOK;
}
int head_blocks(const AttentionArgs& a) {
  const int per = a.geometry == Geometry::kMla576 ? MlaCfg::kHeads : GqaCfg::kHeads;
  const int group = a.heads / a.kv_heads;
  return a.kv_heads * ((group + per - 1) / per);
}

// The split kernel pushes itself when there is one split and nothing to convert (its tile is already in the
// output type); otherwise the split combine does.
bool pushes_itself(const AttentionArgs& a, int splits) {
  return a.push != nullptr && splits == 1 && a.out == a.in;
}

void check_args(const AttentionArgs& a) {
  if (a.in == Elem::kF32) throw InputError("attention kernel: Q/K/V must be bf16 or fp16, not fp32");
  if (a.kv_fp8)
    throw InputError(
        "attention kernel: an fp8 KV cache runs on FlashInfer's kernels only (--attention flashinfer)");
  if (a.rows < 0 || a.heads < 1 || a.kv_heads < 1 || a.heads % a.kv_heads != 0)
    throw InputError("attention kernel: H=" + std::to_string(a.heads) +
                     " must be a multiple of H_kv=" + std::to_string(a.kv_heads));
  if (a.geometry == Geometry::kMla576 && a.kv_heads != 1)
    throw InputError("attention kernel: MLA geometry needs H_kv = 1, got " + std::to_string(a.kv_heads));
  if (a.q_block_heads < 1) throw InputError("attention kernel: q_block_heads must be >= 1");
  if (a.valid_rows < 0 || a.valid_rows > a.rows)
    throw InputError("attention kernel: valid_rows=" + std::to_string(a.valid_rows) +
                     " outside [0, rows=" + std::to_string(a.rows) + "]");
  if (a.blocks_started != nullptr && a.push == nullptr)
    throw InputError("attention kernel: blocks_started is for a pushing launch (row-stream) only");
  if (a.push != nullptr) {
    const RowPush& q = *a.push;
    const int dv = a.geometry == Geometry::kMla576 ? 512 : 128;
    if (q.dcp < 1 || q.heads_per_owner < 1 || q.dcp * q.heads_per_owner != a.heads || q.dim != dv ||
        q.rank < 0 || q.rank >= q.dcp || q.row_base < 0 || q.row_base + a.rows > q.rows || q.o == nullptr ||
        q.lse == nullptr || q.flags == nullptr || q.epoch == nullptr || q.counters == nullptr)
      throw InputError("attention kernel: the row push target does not match H=" + std::to_string(a.heads) +
                       ", D=" + std::to_string(dv) + " and rows [" + std::to_string(q.row_base) + ", " +
                       std::to_string(q.row_base + a.rows) + ")");
  }
}

}  // namespace

int attention_splits(const AttentionArgs& a, int device) {
  const int tok = tokens_per_tile(a.geometry);
  const int max_tiles = std::max<int>(1, ceil_div(a.max_len, tok));
  if (a.splits > 0) return std::min(a.splits, max_tiles);
  int sms = 0;
  DCPSIM_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const int per_sm = a.geometry == Geometry::kMla576 ? 1 : 2;  // resident blocks per SM (shared-memory bound)
  // Padding rows (past valid_rows) have no work: counting them halved the splits at B = 64 + 4 padding rows
  // and made attention 40% slower (MLA, N = 3, H = 48, 1k context).
  const int blocks = std::max(1, a.valid_rows * head_blocks(a));
  const int want = std::max(1, sms * per_sm / blocks);
  return std::clamp(want, 1, std::min(max_tiles, 1024));
}

int attention_rows_per_wave(const AttentionArgs& a, int splits, int device) {
  int sms = 0;
  DCPSIM_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const int per_sm = a.geometry == Geometry::kMla576 ? 1 : 2;
  return std::max(1, sms * per_sm / std::max(1, head_blocks(a) * std::max(splits, 1)));
}

int attention_push_blocks(const AttentionArgs& a, int device) {
  if (a.push == nullptr || a.rows == 0) return 0;
  const int splits = attention_splits(a, device);
  if (!pushes_itself(a, splits)) return 0;
  return splits * head_blocks(a) * a.rows;
}

std::size_t attention_workspace_bytes(const AttentionArgs& a, int splits) {
  const int dv = a.geometry == Geometry::kMla576 ? 512 : 128;
  return std::size_t(a.rows) * a.heads * splits * (std::size_t(dv) + 1) * sizeof(float);
}

void launch_attention(const AttentionArgs& a, cudaStream_t stream) {
  check_args(a);
  if (a.rows == 0) return;
  int device = 0;
  DCPSIM_CUDA(cudaGetDevice(&device));
  const int splits = attention_splits(a, device);
  const int tok = tokens_per_tile(a.geometry);
  const int tiles_per_split = ceil_div(std::max<std::int64_t>(1, ceil_div(a.max_len, tok)), splits);
  const int dv = a.geometry == Geometry::kMla576 ? 512 : 128;
  const int dqk = a.geometry == Geometry::kMla576 ? 576 : 128;
  SplitParams sp{a.q,
                 a.q_row_stride,
                 a.q_block_stride,
                 a.q_block_heads,
                 a.k,
                 a.geometry == Geometry::kMla576 ? a.k : a.v,
                 a.k_token_stride,
                 a.v_token_stride,
                 a.kv_offset,
                 a.kv_len,
                 a.rows,
                 a.valid_rows,
                 a.heads,
                 a.kv_heads,
                 splits,
                 tiles_per_split * tok,
                 a.scale * kLog2e,
                 a.workspace,
                 a.workspace + std::size_t(a.rows) * a.heads * splits * dv,
                 a.base2,
                 a.push != nullptr ? *a.push : RowPush{}};
  (void)dqk;
  const bool fused_push = pushes_itself(a, splits);
  if (a.geometry == Geometry::kMla576)
    launch_split<MlaCfg>(a, sp, stream, fused_push);
  else
    launch_split<GqaCfg>(a, sp, stream, fused_push);
  if (fused_push) return;

  CombineSplitsParams cp{sp.ws_o,      sp.ws_lse,   a.heads,      splits,         dv,
                         a.valid_rows, a.base2,     a.o,          a.o_row_stride, a.o_head_stride,
                         a.lse,        a.empty_lse, a.empty_fill, a.stamps,       sp.push};
  const dim3 grid(a.heads, a.rows);
  const std::size_t smem = std::size_t(splits + 7) / 8 * 8 * sizeof(float);
  if (a.push != nullptr) {
    LaunchExtras extras;
    extras.blocks_started = a.blocks_started;
    switch (a.out) {
      case Elem::kF32:
        launch_kernel_with("combine_splits_push_kernel", combine_splits_push_kernel<float>, grid, 128, smem,
                           stream, extras, cp);
        break;
      case Elem::kBF16:
        launch_kernel_with("combine_splits_push_kernel", combine_splits_push_kernel<__nv_bfloat16>, grid, 128,
                           smem, stream, extras, cp);
        break;
      case Elem::kF16:
        launch_kernel_with("combine_splits_push_kernel", combine_splits_push_kernel<__half>, grid, 128, smem,
                           stream, extras, cp);
        break;
    }
    DCPSIM_CUDA_LAUNCHED("combine_splits_push_kernel");
    return;
  }
  switch (a.out) {
    case Elem::kF32:
      launch_kernel("combine_splits_kernel", combine_splits_kernel<float>, grid, 128, smem, stream, cp);
      break;
    case Elem::kBF16:
      launch_kernel("combine_splits_kernel", combine_splits_kernel<__nv_bfloat16>, grid, 128, smem, stream,
                    cp);
      break;
    case Elem::kF16:
      launch_kernel("combine_splits_kernel", combine_splits_kernel<__half>, grid, 128, smem, stream, cp);
      break;
  }
  DCPSIM_CUDA_LAUNCHED("combine_splits_kernel");
}

}  // namespace dcpsim::hw::ops

// ---- benchmark descriptor: one rank's decode attention over `context` tokens per row (unique KV bytes) ----
namespace dcpsim::hw::ops {
namespace {

class AttentionBench final : public BenchOp {
 public:
  AttentionBench(const OpShape& s, std::uint64_t seed) : s_(s) {
    mla_ = s.qk_dim == 576;
    if (!(mla_ && s.dim == 512 && s.kv_heads == 1) && !(s.qk_dim == 128 && s.dim == 128))
      throw InputError("attention bench: D_qk/D must be 576/512 (MLA, H_kv = 1) or 128/128 (GQA)");
    if (s.q_blocks < 1 || s.heads % s.q_blocks != 0)
      throw InputError("attention bench: the Q head blocks must divide H");
    const FlashInferGeometry g{s.heads, s.kv_heads, s.qk_dim, s.dim, true, false};
    // An fp8 cache runs on FlashInfer's kernels or not at all (as in hw run): never a fallback.
    if (s.kv_fp8 && s.attention == AttentionImpl::kDcpsim)
      throw InputError("attention bench: an fp8 KV cache runs on FlashInfer's kernels only, not dcpsim's");
    std::string notice;
    impl_ = resolve_attention_impl(s.kv_fp8 ? AttentionImpl::kFlashInfer : s.attention, g, &notice);
    int dev = 0;
    DCPSIM_CUDA(cudaGetDevice(&dev));
    const Geometry geometry = mla_ ? Geometry::kMla576 : Geometry::kGqa128;
    if (impl_ == AttentionImpl::kFlashInfer && !flashinfer_runs_on(geometry, dev)) {
      if (s.attention == AttentionImpl::kFlashInfer || s.kv_fp8)
        throw InputError(std::string(s.kv_fp8 ? "--kv-dtype fp8" : "--attention flashinfer") +
                         ": this build's FlashInfer kernels do not run on device " + std::to_string(dev));
      notice = "attention: dcpsim's kernel (FlashInfer does not run on device " + std::to_string(dev) + ")";
      impl_ = AttentionImpl::kDcpsim;
    }
    if (!notice.empty()) std::fprintf(stderr, "%s\n", notice.c_str());
    // Rows start on KV pages (FlashInfer's page table addresses the same storage).
    const int page = kv_page_tokens(mla_);
    const std::int64_t row_tokens = (s.context + page - 1) / page * page;
    const std::int64_t tokens = std::int64_t(s.rows) * row_tokens;
    kv_width_ = std::int64_t(s.kv_heads) * s.qk_dim + (mla_ ? 0 : std::int64_t(s.kv_heads) * s.dim);
    kv_elem_ = s.kv_fp8 ? 1 : 2;
    sets_ = rotation_sets(double(tokens) * kv_width_ * kv_elem_);
    q_ = DeviceBuffer(std::size_t(s.rows) * s.heads * s.qk_dim * 2);
    launch_fill_uniform(q_.get(), std::int64_t(s.rows) * s.heads * s.qk_dim, Elem::kBF16, 1.7f, seed, 0,
                        nullptr);
    std::vector<std::int64_t> off(s.rows);
    for (int b = 0; b < s.rows; ++b) off[b] = std::int64_t(b) * row_tokens;
    const std::vector<int> len(s.rows, static_cast<int>(s.context));
    offsets_ = upload(off);
    lengths_ = upload(len);
    for (int i = 0; i < sets_; ++i) {
      kv_.emplace_back(std::size_t(tokens) * kv_width_ * kv_elem_);
      if (s.kv_fp8)
        fill_fp8_kv(kv_.back().get(), tokens, seed + 1 + i);
      else
        launch_fill_uniform(kv_.back().get(), tokens * kv_width_, Elem::kBF16, 1.7f, seed + 1 + i, 0,
                            nullptr);
    }
    o_ = DeviceBuffer(std::size_t(s.rows) * s.heads * s.dim * 2);
    lse_ = DeviceBuffer(std::size_t(s.rows) * s.heads * 4);
    args_ = base_args();
    args_.kv_fp8 = s.kv_fp8;
    if (s.kv_fp8) args_.kv_scale = static_cast<float>(kFp8KvScale);
    if (impl_ == AttentionImpl::kFlashInfer) {
      flashinfer_ = std::make_unique<FlashInferAttention>(args_, off, len);
    } else {
      splits_ = attention_splits(args_, dev);
      ws_ = DeviceBuffer(attention_workspace_bytes(args_, splits_));
      args_.workspace = ws_.as<float>();
    }
    DCPSIM_CUDA(cudaDeviceSynchronize());
  }
  std::string label() const override {
    return std::string(mla_ ? "mla" : "gqa") + " B=" + std::to_string(s_.rows) +
           " H=" + std::to_string(s_.heads) + " Hkv=" + std::to_string(s_.kv_heads) +
           " ctx=" + std::to_string(s_.context) +
           (s_.q_blocks > 1 ? " qblocks=" + std::to_string(s_.q_blocks) : std::string()) +
           (s_.lse_base2 ? " base2" : "") + (s_.kv_fp8 ? " fp8" : "") +
           (flashinfer_ ? std::string(" flashinfer") : " dcpsim splits=" + std::to_string(splits_));
  }
  // Unique bytes: every KV element once (MLA: the 576-wide latent serves K and V), Q, O and LSE once.
  double bytes() const override {
    return double(s_.rows) * s_.context * kv_width_ * kv_elem_ +
           double(s_.rows) * s_.heads * (s_.qk_dim * 2 + s_.dim * 2 + 4);
  }
  double flops() const override {
    return 2.0 * s_.rows * s_.heads * double(s_.context) * (s_.qk_dim + s_.dim);
  }
  void launch(int call, cudaStream_t stream) override {
    AttentionArgs a = args_;
    a.k = kv_[call % sets_].get();
    a.v =
        mla_ ? a.k : static_cast<const std::uint8_t*>(a.k) + std::size_t(s_.kv_heads) * s_.qk_dim * kv_elem_;
    if (flashinfer_)
      flashinfer_->launch(a, stream);
    else
      launch_attention(a, stream);
  }

 private:
  // The whole storage (every row's pages, padding tokens too) as one row of e4m3(value / kFp8KvScale), as
  // `hw run --kv-dtype fp8` generates a shard, so no page holds a stray NaN pattern.
  void fill_fp8_kv(void* ptr, std::int64_t tokens, std::uint64_t seed) {
    if (tokens > std::numeric_limits<int>::max())
      throw InputError("attention bench: an fp8 KV cache of more than 2^31 tokens");
    const DeviceBuffer offset = upload(std::vector<std::int64_t>{0});
    const DeviceBuffer len = upload(std::vector<int>{static_cast<int>(tokens)});
    KvFillArgs f;
    f.ptr = ptr;
    f.rows = 1;
    f.local_offset = offset.as<std::int64_t>();
    f.global_base = offset.as<std::int64_t>();
    f.local_len = len.as<int>();
    f.max_len = tokens;
    f.width = static_cast<int>(kv_width_);
    f.seed = seed;
    f.amplitude = 1.7f;
    f.fp8_scale = static_cast<float>(kFp8KvScale);
    launch_fill_kv_shard(f, nullptr);
    DCPSIM_CUDA(cudaDeviceSynchronize());  // before the index buffers go
  }

  AttentionArgs base_args() {
    AttentionArgs a;
    a.geometry = mla_ ? Geometry::kMla576 : Geometry::kGqa128;
    a.rows = a.valid_rows = s_.rows;
    a.heads = s_.heads;
    a.kv_heads = s_.kv_heads;
    a.q = q_.get();
    a.q_block_heads = s_.heads / s_.q_blocks;
    a.q_block_stride = std::int64_t(s_.rows) * a.q_block_heads * s_.qk_dim;
    a.q_row_stride = std::int64_t(a.q_block_heads) * s_.qk_dim;
    a.k = kv_[0].get();
    a.v = a.k;
    a.k_token_stride = kv_width_;  // GQA: K and V of a token side by side
    a.v_token_stride = kv_width_;
    a.kv_offset = offsets_.as<std::int64_t>();
    a.kv_len = lengths_.as<int>();
    a.max_len = s_.context;
    a.scale = 1.f / std::sqrt(float(s_.qk_dim));
    a.o = o_.get();
    a.o_row_stride = std::int64_t(s_.heads) * s_.dim;
    a.o_head_stride = s_.dim;
    a.lse = {lse_.as<float>(), s_.heads, 1};
    a.base2 = s_.lse_base2;
    a.empty_lse = -INFINITY;
    return a;
  }

  OpShape s_;
  bool mla_ = true;
  std::int64_t kv_width_ = 0;
  int kv_elem_ = 2;  // bytes per KV element: bf16, or fp8 e4m3
  int sets_ = 1, splits_ = 1;
  AttentionImpl impl_ = AttentionImpl::kDcpsim;
  std::unique_ptr<FlashInferAttention> flashinfer_;
  DeviceBuffer q_, offsets_, lengths_, o_, lse_, ws_;
  std::vector<DeviceBuffer> kv_;
  AttentionArgs args_;
};

}  // namespace

std::unique_ptr<BenchOp> make_attention_bench(const OpShape& s, std::uint64_t seed) {
  return std::make_unique<AttentionBench>(s, seed);
}

}  // namespace dcpsim::hw::ops
