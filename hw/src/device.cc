// Device and library facts for trace headers and test skips.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdio>
#include <string>

#include "cuda_check.h"
#include "dcpsim/hw/device.h"

namespace dcpsim::hw {
namespace {

std::string cuda_version_string(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::string uuid_string(const cudaUUID_t& u) {
  const auto* b = reinterpret_cast<const unsigned char*>(u.bytes);
  char s[64];
  std::snprintf(s, sizeof s, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
                b[15]);
  return s;
}

}  // namespace

bool built_with_cuda() {
  return true;
}

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // no driver or no device: not an error for the caller
    return 0;
  }
  return n;
}

DeviceInfo device_info(int index) {
  cudaDeviceProp p{};
  DCPSIM_CUDA(cudaGetDeviceProperties(&p, index));
  DeviceInfo d;
  d.index = index;
  d.name = p.name;
  d.uuid = uuid_string(p.uuid);
  char bus[32] = {};
  DCPSIM_CUDA(cudaDeviceGetPCIBusId(bus, sizeof bus, index));
  d.pci_bus_id = bus;
  d.sm_count = p.multiProcessorCount;
  d.memory_bytes = static_cast<std::int64_t>(p.totalGlobalMem);
  d.l2_bytes = p.l2CacheSize;
  d.cc_major = p.major;
  d.cc_minor = p.minor;
  return d;
}

SoftwareVersions software_versions() {
  SoftwareVersions v;
  int rt = 0, drv = 0, nccl = 0;
  DCPSIM_CUDA(cudaRuntimeGetVersion(&rt));
  DCPSIM_CUDA(cudaDriverGetVersion(&drv));
  v.cuda_runtime = cuda_version_string(rt);
  v.cuda_driver = cuda_version_string(drv);
  if (ncclGetVersion(&nccl) == ncclSuccess) {
    // NCCL ≥ 2.9 encodes major·10000 + minor·100 + patch.
    v.nccl = std::to_string(nccl / 10000) + "." + std::to_string((nccl % 10000) / 100) + "." +
             std::to_string(nccl % 100);
  }
  return v;
}

}  // namespace dcpsim::hw
