// Small device utilities the runner needs around the operations: element types, %globaltimer stamps and the
// counter-based random fill that generates inputs on the device (same values for the same seed and index, so
// the host can regenerate any row for the reference check without copying the cache back).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "cuda_check.h"
#include "dcpsim/error.h"
#include "device_common.cuh"
#include "elem_dispatch.cuh"
#include "fill_hash.h"
#include "ops.h"

namespace dcpsim::hw::ops {

Elem elem_of(models::DType type) {
  switch (type) {
    case models::DType::kF32:
      return Elem::kF32;
    case models::DType::kBF16:
      return Elem::kBF16;
    case models::DType::kF16:
      return Elem::kF16;
    case models::DType::kF64:
    case models::DType::kFP8E4M3:
      break;
  }
  throw InputError("hw kernels take fp32, bf16 or fp16 tensors here, not " +
                   std::string(models::to_string(type)));
}

std::size_t elem_bytes(Elem e) {
  return e == Elem::kF32 ? 4 : 2;
}
int lse_lanes(Elem e) {
  return e == Elem::kF32 ? 1 : 2;
}

namespace {

__global__ void delay_kernel(long long ns) {
  const unsigned long long start = global_timer();
  while (static_cast<long long>(global_timer() - start) < ns) __nanosleep(1000);
}

// Every thread chains fp32 FMAs until `ns` of %globaltimer have passed: the SMs busy, memory untouched.
__global__ void busy_kernel(long long ns, unsigned* sink) {
  const unsigned long long start = global_timer();
  float x = threadIdx.x, y = 1.0001f;
  while (static_cast<long long>(global_timer() - start) < ns) {
#pragma unroll 16
    for (int i = 0; i < 256; ++i) x = fmaf(x, y, 0.5f);
  }
  if (x == 0.125f && sink != nullptr) *sink = 1u;  // keeps the chain; practically never taken
}

__global__ void read_through_kernel(const uint4* p, std::int64_t n, unsigned* sink) {
  unsigned x = 0;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const uint4 v = p[i];
    x ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (x == 0x9e3779b9u && sink != nullptr) *sink = x;  // keeps the loads; practically never taken
}

// One 4-byte load per `stride` bytes: every page of the range is translated, little of it stays in L2.
__global__ void touch_pages_kernel(const unsigned char* p, std::int64_t n, std::int64_t stride,
                                   unsigned* sink) {
  unsigned x = 0;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    x ^= reinterpret_cast<const uint4*>(p + i * stride)->x;
  if (x == 0x9e3779b9u && sink != nullptr) *sink = x;
}

__global__ void stamp_kernel(unsigned long long* slot) {
  pdl_begin();
  *slot = global_timer();
}

__global__ void advance_epoch_kernel(unsigned long long* epoch) {
  pdl_begin();
  *epoch += 1;
}

template <typename T>
__global__ void fill_kernel(T* p, std::int64_t n, float a, std::uint64_t seed, std::int64_t first) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    p[i] = from_f32<T>(static_cast<float>(fill_value(seed, static_cast<std::uint64_t>(first + i), a)));
}

// An element of the KV cache: the type's rounding, or an fp8 cache's e4m3(value / scale) (round to nearest
// even, saturating).
template <typename T>
__device__ T kv_element(float v, const KvFillArgs&) {
  return from_f32<T>(v);
}
template <>
__device__ __nv_fp8_storage_t kv_element<__nv_fp8_storage_t>(float v, const KvFillArgs& a) {
  return __nv_cvt_float_to_fp8(v / a.fp8_scale, __NV_SATFINITE, __NV_E4M3);
}

template <typename T>
__global__ void fill_kv_kernel(KvFillArgs a) {
  const int b = blockIdx.y;
  const std::int64_t n = std::int64_t(a.local_len[b]) * a.width;
  T* dst = static_cast<T*>(a.ptr) + a.local_offset[b] * a.width;
  const std::int64_t span = std::int64_t(a.dcp) * a.interleave;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t l = i / a.width, lane = i % a.width;
    const std::int64_t t = (l / a.interleave) * span + std::int64_t(a.rank) * a.interleave + l % a.interleave;
    const std::uint64_t index = static_cast<std::uint64_t>((a.global_base[b] + t) * a.width + lane);
    dst[i] = kv_element<T>(static_cast<float>(fill_value(a.seed, index, a.amplitude)), a);
  }
}

}  // namespace

void launch_delay(long long ns, cudaStream_t stream) {
  delay_kernel<<<1, 1, 0, stream>>>(ns);
  DCPSIM_CUDA_LAUNCHED("delay_kernel");
}

void launch_busy(long long ns, unsigned* sink, cudaStream_t stream) {
  int dev = 0, sms = 0;
  DCPSIM_CUDA(cudaGetDevice(&dev));
  DCPSIM_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  launch_kernel("busy_kernel", busy_kernel, 2 * sms, 1024, 0, stream, ns, sink);
}

void launch_read_through(const void* p, std::size_t bytes, unsigned* sink, cudaStream_t stream) {
  const auto n = static_cast<std::int64_t>(bytes / 16);
  if (n == 0) return;
  int dev = 0, sms = 0;
  DCPSIM_CUDA(cudaGetDevice(&dev));
  DCPSIM_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  launch_kernel("read_through_kernel", read_through_kernel, 4 * sms, 512, 0, stream,
                static_cast<const uint4*>(p), n, sink);
}

void launch_touch_pages(const void* p, std::size_t bytes, std::size_t stride, unsigned* sink,
                        cudaStream_t stream) {
  const auto n = static_cast<std::int64_t>(bytes / stride);
  if (n == 0) return;
  int dev = 0, sms = 0;
  DCPSIM_CUDA(cudaGetDevice(&dev));
  DCPSIM_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  launch_kernel("touch_pages_kernel", touch_pages_kernel, 4 * sms, 256, 0, stream,
                static_cast<const unsigned char*>(p), n, static_cast<std::int64_t>(stride), sink);
}

void launch_stamp(unsigned long long* slot, cudaStream_t stream) {
  launch_kernel("stamp_kernel", stamp_kernel, 1, 1, 0, stream, slot);
}

void launch_advance_epoch(unsigned long long* epoch, cudaStream_t stream) {
  launch_kernel("advance_epoch_kernel", advance_epoch_kernel, 1, 1, 0, stream, epoch);
  DCPSIM_CUDA_LAUNCHED("advance_epoch_kernel");
}

namespace {
thread_local bool t_pdl = false;
}  // namespace

bool pdl_enabled() {
  return t_pdl;
}
PdlScope::PdlScope(bool on) : saved_(t_pdl) {
  t_pdl = on;
}
PdlScope::~PdlScope() {
  t_pdl = saved_;
}

void launch_failed(const char* name, cudaError_t e) {
  throw_cuda(e, name, __FILE__, __LINE__);
}

void launch_fill_uniform(void* ptr, std::int64_t n, Elem e, float a, std::uint64_t seed, std::int64_t first,
                         cudaStream_t stream) {
  if (n == 0) return;
  const int blocks = static_cast<int>(std::min<std::int64_t>(ceil_div(n, 256), 132 * 32));
  switch (e) {
    case Elem::kF32:
      fill_kernel<float><<<blocks, 256, 0, stream>>>(static_cast<float*>(ptr), n, a, seed, first);
      break;
    case Elem::kBF16:
      fill_kernel<__nv_bfloat16>
          <<<blocks, 256, 0, stream>>>(static_cast<__nv_bfloat16*>(ptr), n, a, seed, first);
      break;
    case Elem::kF16:
      fill_kernel<__half><<<blocks, 256, 0, stream>>>(static_cast<__half*>(ptr), n, a, seed, first);
      break;
  }
  DCPSIM_CUDA_LAUNCHED("fill_kernel");
}

void launch_fill_kv_shard(const KvFillArgs& a, cudaStream_t stream) {
  if (a.rows == 0 || a.max_len == 0 || a.width == 0) return;
  const dim3 grid(std::min(ceil_div(a.max_len * a.width, 256), 4096), a.rows);
  if (a.fp8_scale > 0.f) {
    fill_kv_kernel<__nv_fp8_storage_t><<<grid, 256, 0, stream>>>(a);
    DCPSIM_CUDA_LAUNCHED("fill_kv_kernel<fp8>");
    return;
  }
  with_elem(a.elem, [&](auto tag) {
    using T = typename decltype(tag)::type;
    fill_kv_kernel<T><<<grid, 256, 0, stream>>>(a);
  });
  DCPSIM_CUDA_LAUNCHED("fill_kv_kernel");
}

}  // namespace dcpsim::hw::ops
