// Peer pointers of an NCCL symmetric window through NCCL's device API (nccl_device.h, NCCL >= 2.28): the
// window's LSA (load/store accessible, one NVLink domain) mapping gives every team member's buffer an
// address this GPU can store to. One tiny kernel reads them once per run, so the merge kernel takes plain
// pointers and runs the same in emulation, where the "windows" are ordinary allocations.
#include <nccl.h>

#include <string>

#include "cuda_check.h"
#include "dcpsim/error.h"
#include "device_buffer.h"
#include "ops.h"

#if defined(NCCL_VERSION_CODE) && NCCL_VERSION_CODE >= 22800
#include <nccl_device.h>
#define DCPSIM_NCCL_DEVICE_API 1
#endif

namespace dcpsim::hw::ops {
namespace {

#if DCPSIM_NCCL_DEVICE_API
__global__ void peer_table_kernel(ncclWindow_t window, int ranks, unsigned char** table) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n < ranks) table[n] = static_cast<unsigned char*>(ncclGetPeerPointer(window, 0, n));
}
#endif

}  // namespace

int nccl_lsa_team_size(ncclComm_t comm) {
#if DCPSIM_NCCL_DEVICE_API
  return ncclTeamLsa(comm).nRanks;
#else
  (void)comm;
  return 0;
#endif
}

int nccl_header_version() {
  return NCCL_VERSION_CODE;
}

void nccl_window_peer_table(void* window, int ranks, unsigned char** table) {
#if DCPSIM_NCCL_DEVICE_API
  peer_table_kernel<<<(ranks + 127) / 128, 128>>>(static_cast<ncclWindow_t>(window), ranks, table);
  DCPSIM_CUDA_LAUNCHED("peer_table_kernel");
  DCPSIM_CUDA(cudaDeviceSynchronize());
#else
  (void)window;
  (void)ranks;
  (void)table;
  throw RuntimeError("NCCL windows need NCCL >= 2.28's device API; this dcpsim was built against NCCL " +
                     std::to_string(NCCL_VERSION_CODE));
#endif
}

}  // namespace dcpsim::hw::ops
