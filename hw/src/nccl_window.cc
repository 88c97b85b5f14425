#include "nccl_window.h"

#include <exception>
#include <functional>
#include <string>
#include <thread>

#include "cuda_check.h"
#include "dcpsim/error.h"
#include "dcpsim/hw/direct_protocol.h"
#include "ops.h"

namespace dcpsim::hw {

void require_nccl_device_api() {
  int runtime = 0;
  DCPSIM_NCCL(ncclGetVersion(&runtime));
  const std::string why = nccl_device_api_mismatch(ops::nccl_header_version(), runtime);
  if (!why.empty()) throw RuntimeError(why);
}

namespace {

// Runs f(i) for every local rank at once, one thread each: registration and deregistration are collective,
// and each communicator's call returns only when every rank of it has made the call.
void on_every_rank(std::size_t n, const std::function<void(std::size_t)>& f) {
  if (n == 1) return f(0);
  std::vector<std::exception_ptr> errors(n);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < n; ++i)
    threads.emplace_back([&, i] {
      try {
        f(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace

void NcclWindows::open(const std::vector<ncclComm_t>& comms, const std::vector<int>& devices,
                       std::size_t bytes, std::size_t zero_bytes) {
  require_nccl_device_api();
  for (std::size_t i = 0; i < comms.size(); ++i) {
    int ranks = 0;
    DCPSIM_NCCL(ncclCommCount(comms[i], &ranks));
    const int lsa = ops::nccl_lsa_team_size(comms[i]);
    if (lsa != ranks)
      throw RuntimeError("NCCL windows: only " + std::to_string(lsa) + " of the " + std::to_string(ranks) +
                         " ranks share this rank's NVLink (LSA) domain; the direct merge and FlashInfer's "
                         "fused merge store into every peer's window and need all ranks in one domain");
    Window w;
    w.device = devices.at(i);
    w.comm = comms[i];
    DCPSIM_CUDA(cudaSetDevice(w.device));
    DCPSIM_NCCL(ncclMemAlloc(&w.base, bytes));
    windows_.push_back(std::move(w));
    DCPSIM_CUDA(cudaMemset(windows_.back().base, 0, zero_bytes));
    DCPSIM_CUDA(cudaDeviceSynchronize());  // zero before any peer can store a flag
  }
  on_every_rank(windows_.size(), [&](std::size_t i) {
    Window& w = windows_[i];
    DCPSIM_CUDA(cudaSetDevice(w.device));
    DCPSIM_NCCL(ncclCommWindowRegister(w.comm, w.base, bytes, &w.win, NCCL_WIN_COLL_SYMMETRIC));
  });
  for (Window& w : windows_) {
    // Without symmetric support NCCL returns a local registration handle (host memory) in place of the
    // device-side window: refuse it rather than let a kernel read it.
    cudaPointerAttributes attr{};
    const cudaError_t e = cudaPointerGetAttributes(&attr, w.win);
    if (e != cudaSuccess) (void)cudaGetLastError();
    if (w.win == nullptr || e != cudaSuccess || attr.type != cudaMemoryTypeDevice) {
      int version = 0;
      ncclGetVersion(&version);
      throw RuntimeError(
          "NCCL " + std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." +
          std::to_string(version % 100) +
          " registered the buffer without a symmetric window (it gives none without CUDA P2P among all local "
          "ranks and cuMem, and before 2.28.9 none to a communicator of one rank); the direct merge and "
          "FlashInfer's fused merge need one");
    }
  }
  for (Window& w : windows_) {
    int ranks = 0;
    DCPSIM_NCCL(ncclCommCount(w.comm, &ranks));
    DCPSIM_CUDA(cudaSetDevice(w.device));
    w.peers = DeviceBuffer(std::size_t(ranks) * sizeof(unsigned char*));
    ops::nccl_window_peer_table(w.win, ranks, w.peers.as<unsigned char*>());
  }
}

void NcclWindows::abandon() {
  for (Window& w : windows_) w.win = nullptr;
  abandoned_ = true;
}

NcclWindows::~NcclWindows() {
  if (windows_.empty()) return;
  if (abandoned_) {
    for (Window& w : windows_) {
      cudaSetDevice(w.device);
      w.peers = DeviceBuffer();
      if (w.base != nullptr) ncclMemFree(w.base);
    }
    return;
  }
  try {
    on_every_rank(windows_.size(), [&](std::size_t i) {
      Window& w = windows_[i];
      cudaSetDevice(w.device);
      cudaDeviceSynchronize();
      if (w.win != nullptr) ncclCommWindowDeregister(w.comm, w.win);  // a local registration too
    });
  } catch (...) {  // a destructor: the memory is freed below either way
  }
  for (Window& w : windows_) {
    cudaSetDevice(w.device);
    w.peers = DeviceBuffer();
    if (w.base != nullptr) ncclMemFree(w.base);
  }
}

}  // namespace dcpsim::hw
