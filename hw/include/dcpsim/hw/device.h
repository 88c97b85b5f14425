#pragma once
// What the runner knows about the machine it runs on: the devices (for trace headers and for skipping GPU
// tests where there are none) and the CUDA/NCCL versions. No CUDA types: CPU-only builds link a stub whose
// calls throw RuntimeError("built without CUDA ...").
#include <cstdint>
#include <string>
#include <vector>

namespace dcpsim::hw {

// False only in the stub library of a CPU-only build.
bool built_with_cuda();

// Number of visible CUDA devices; 0 when the driver reports none (or no driver is installed).
int device_count();

struct DeviceInfo {
  int index = 0;
  std::string name;
  std::string uuid;        // "GPU-xxxxxxxx-xxxx-..."
  std::string pci_bus_id;  // "0000:19:00.0"
  int sm_count = 0;
  std::int64_t memory_bytes = 0;
  std::int64_t l2_bytes = 0;
  int cc_major = 0;
  int cc_minor = 0;
};

DeviceInfo device_info(int index);

struct SoftwareVersions {
  std::string cuda_runtime;  // "13.0"
  std::string cuda_driver;   // the CUDA version the driver supports, "13.0"
  std::string nccl;          // "2.28.9" (the library loaded at run time)
};

SoftwareVersions software_versions();

// The message every stub call throws, so tests of CPU-only builds can check it.
inline constexpr const char* kBuiltWithoutCuda = "built without CUDA: rebuild with -DDCPSIM_WITH_CUDA=ON";

}  // namespace dcpsim::hw
