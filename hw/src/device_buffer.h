#pragma once
// Owning device allocation (cudaMalloc; never managed memory) and pinned-free host<->device helpers.
#include <cuda_runtime.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "cuda_check.h"

namespace dcpsim::hw {

// Bytes held by DeviceBuffers across the process now and at most (hw run's memory figures).
struct DeviceBytes {
  static inline std::atomic<std::int64_t> live{0}, peak{0};
  static void add(std::int64_t b) {
    const std::int64_t now = live += b;
    std::int64_t seen = peak.load();
    while (now > seen && !peak.compare_exchange_weak(seen, now)) {
    }
  }
};

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes_ > 0) DCPSIM_CUDA(cudaMalloc(&ptr_, bytes_));
    if (ptr_) DeviceBytes::add(static_cast<std::int64_t>(bytes_));
  }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      release();
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  template <typename T = void>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  void* get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void release() noexcept {
    if (ptr_) {
      cudaFree(ptr_);
      DeviceBytes::add(-static_cast<std::int64_t>(bytes_));
    }
    ptr_ = nullptr;
  }
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

template <typename T>
DeviceBuffer upload(const std::vector<T>& host) {
  DeviceBuffer d(host.size() * sizeof(T));
  if (!host.empty())
    DCPSIM_CUDA(cudaMemcpy(d.get(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

template <typename T>
std::vector<T> download(const DeviceBuffer& d, std::size_t count) {
  std::vector<T> host(count);
  if (count > 0) DCPSIM_CUDA(cudaMemcpy(host.data(), d.get(), count * sizeof(T), cudaMemcpyDeviceToHost));
  return host;
}

}  // namespace dcpsim::hw
