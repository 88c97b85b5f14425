#pragma once
// Device side of the row-streaming merge's push (layout: row_stream_layout.h): window addressing, fences and
// flags at the push's scope (gpu for logical ranks on one device, system for owners on other devices), and
// the per-(row, owner) head count whose completing add publishes the row's flag.
//
// Ordering: a block's threads store their slices, __syncthreads(), then thread 0 fences (cumulative over the
// block's stores) and adds its heads to the pair's counter. The add that completes the pair (it has read
// every earlier add, each behind its block's fence) fences again and stores the epoch into the owner's flag
// with release semantics; the owner loads the flag with acquire semantics before it reads the slices.
#include <cstdint>

#include "device_common.cuh"
#include "ops.h"
#include "row_stream_layout.h"

namespace dcpsim::hw::ops {

__device__ __forceinline__ row_stream::Shape push_shape(const RowPush& p) {
  return {p.dcp, p.rows, p.heads_per_owner, p.dim};
}

__device__ __forceinline__ void push_fence(bool system_scope) {
  if (system_scope)
    __threadfence_system();
  else
    __threadfence();
}

__device__ __forceinline__ void store_flag_release(unsigned long long* flag, unsigned long long v,
                                                   bool system_scope) {
  if (system_scope)
    asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(flag), "l"(v) : "memory");
  else
    asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(flag), "l"(v) : "memory");
}

__device__ __forceinline__ unsigned long long load_flag_acquire(const unsigned long long* flag,
                                                                bool system_scope) {
  unsigned long long v;
  if (system_scope)
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(flag) : "memory");
  else
    asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(flag) : "memory");
  return v;
}

template <typename T>
__device__ __forceinline__ T* window_o(const RowPush& p, int parity, int owner, int row, int j) {
  return static_cast<T*>(p.o[parity * p.dcp + owner]) + row_stream::o_offset(push_shape(p), p.rank, row, j);
}
__device__ __forceinline__ float* window_lse(const RowPush& p, int parity, int owner, int row, int j) {
  return p.lse[parity * p.dcp + owner] + row_stream::slot(push_shape(p), p.rank, row, j);
}

// Thread 0 only, after a __syncthreads() that follows the block's window stores for heads [h0, h1) of window
// row `row`: counts them per owner and raises the flag of every (row, owner) pair this completes.
__device__ __forceinline__ void publish_heads(const RowPush& p, int row, int h0, int h1,
                                              unsigned long long epoch) {
  push_fence(p.system_scope);
  const row_stream::Shape s = push_shape(p);
  const int J = p.heads_per_owner;
  const int parity = static_cast<int>(epoch & 1);
  const unsigned long long target = row_stream::publish_count(epoch, J);
  for (int n = row_stream::owner_of(h0, J); n <= row_stream::owner_of(h1 - 1, J); ++n) {
    const auto k = static_cast<unsigned long long>(row_stream::heads_for_owner(h0, h1, n, J));
    const unsigned long long done = atomicAdd(p.counters + row_stream::counter_index(s, row, n), k) + k;
    if (done == target) {
      push_fence(p.system_scope);
      store_flag_release(p.flags[parity * p.dcp + n] + row_stream::flag_index(s, p.rank, row), epoch,
                         p.system_scope);
    }
  }
}

// Block-wide (1-D blocks): heads [h0, h1) of launch row b, staged in shared memory (head i's DV elements at
// sO + i·stride, 16-byte aligned; its LSE at sL[i], in the attention's base) go to their owners' windows with
// 16-byte stores; then the block publishes them.
template <typename T, int DV>
__device__ __forceinline__ void push_staged(const RowPush& p, const T* sO, int stride, const float* sL, int b,
                                            int h0, int h1) {
  static_assert(DV * sizeof(T) % 16 == 0);
  constexpr int kChunks = DV * sizeof(T) / 16;  // 16-byte pieces per head
  const unsigned long long epoch = *p.epoch;
  const int parity = static_cast<int>(epoch & 1);
  const int row = p.row_base + b, J = p.heads_per_owner;
  const int n_heads = h1 - h0;
  for (int c = threadIdx.x; c < n_heads * kChunks; c += blockDim.x) {
    const int i = c / kChunks, q = c % kChunks, h = h0 + i;
    uint4* dst = reinterpret_cast<uint4*>(window_o<T>(p, parity, h / J, row, h % J)) + q;
    *dst = reinterpret_cast<const uint4*>(sO + i * stride)[q];
  }
  for (int i = threadIdx.x; i < n_heads; i += blockDim.x) {
    const int h = h0 + i;
    *window_lse(p, parity, h / J, row, h % J) = sL[i];
  }
  __syncthreads();
  if (threadIdx.x == 0) publish_heads(p, row, h0, h1, epoch);
}

// Block-wide: heads [h0, h1) of launch row b have no partial on this rank (empty shard or padding row): only
// their LSE (−inf) travels; the owner never reads the O of a weight-0 partial.
__device__ __forceinline__ void push_empty(const RowPush& p, int b, int h0, int h1) {
  const unsigned long long epoch = *p.epoch;
  const int parity = static_cast<int>(epoch & 1);
  const int row = p.row_base + b, J = p.heads_per_owner;
  for (int h = h0 + static_cast<int>(threadIdx.x); h < h1; h += blockDim.x)
    *window_lse(p, parity, h / J, row, h % J) = -INFINITY;
  __syncthreads();
  if (threadIdx.x == 0) publish_heads(p, row, h0, h1, epoch);
}

}  // namespace dcpsim::hw::ops
