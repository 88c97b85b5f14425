#pragma once
// NCCL symmetric windows for the merges that store straight into their peers' memory (the direct merge and
// FlashInfer's fused merge): one buffer per local rank from ncclMemAlloc, zeroed, registered collectively
// with ncclCommWindowRegister(NCCL_WIN_COLL_SYMMETRIC), and the table of every rank's base as this rank
// addresses it, read through NCCL's device API (the LSA team: every rank in one NVLink domain). Works the
// same for one thread per GPU (several communicators of this process) and one process per GPU (MPI), and
// across the nodes of one NVLink domain (an NVL72 rack), where CUDA IPC and peer access do not reach.
#include <nccl.h>

#include <cstddef>
#include <vector>

#include "device_buffer.h"

namespace dcpsim::hw {

// Refuses (RuntimeError, one line) when the NCCL library of this process cannot run the device-API code
// this binary was built with (dcpsim/hw/direct_protocol.h, nccl_device_api_mismatch).
void require_nccl_device_api();

class NcclWindows {
 public:
  struct Window {
    int device = 0;
    ncclComm_t comm = nullptr;
    void* base = nullptr;  // ncclMemAlloc'd, `bytes` long
    ncclWindow_t win = nullptr;
    DeviceBuffer peers;  // [N] unsigned char*: every rank's base as this rank addresses it
  };

  NcclWindows() = default;
  NcclWindows(const NcclWindows&) = delete;
  NcclWindows& operator=(const NcclWindows&) = delete;
  ~NcclWindows();  // deregisters (one group over the local communicators) and frees

  // Collective over every rank of the communicators: comms[i] is local rank i's, on devices[i]. Each window
  // holds `bytes`; its first `zero_bytes` are zero before registration (flags and epochs), the rest is left
  // as allocated (every byte is written before it is read). Throws RuntimeError naming what is missing (NCCL
  // version, one NVLink domain).
  void open(const std::vector<ncclComm_t>& comms, const std::vector<int>& devices, std::size_t bytes,
            std::size_t zero_bytes);
  // After a failed rank whose communicators are being aborted: free the memory without deregistering.
  void abandon();
  bool empty() const { return windows_.empty(); }
  const Window& at(std::size_t i) const { return windows_.at(i); }
  std::size_t size() const { return windows_.size(); }

 private:
  std::vector<Window> windows_;
  bool abandoned_ = false;
};

}  // namespace dcpsim::hw
