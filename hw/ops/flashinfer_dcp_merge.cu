// FlashInfer's fused DCP all-to-all + LSE merge (flashinfer/comm/dcp_lse_reduce.cuh, 0.7.2.post1),
// instantiated for bf16 and fp16, base e and base 2, both send schedules, and launched the way FlashInfer's
// own torch op launches it (flashinfer/data/csrc/dcp_lse_reduce.cu: local_heads 1, every leading index one
// entry, payload offsets from the header's constants). It needs NCCL 2.28's device API (ncclGetLsaPointer on
// the window); dcpsim's NCCL window setup (hw/src/nccl_window.cc) provides the window.
#include <flashinfer/comm/dcp_lse_reduce.cuh>

#include <algorithm>
#include <string>

#include "dcpsim/error.h"
#include "flashinfer_kernels.h"

namespace dcpsim::hw::ops::flashinfer_kernels {
namespace {

namespace dcp = flashinfer::comm::dcp;
constexpr int kRowDistributedMinEntries = 16;  // FlashInfer's launcher's threshold

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw RuntimeError(std::string("FlashInfer DCP merge: ") + what + ": " + cudaGetErrorString(e));
}

template <typename T, bool kBaseE, bool kRows>
void launch(const DcpMergeRun& r, cudaStream_t stream) {
  auto kernel = dcp::FusedKernel<T, kBaseE, kRows>;
  const std::size_t smem = std::size_t(r.dcp) * sizeof(float);
  int device = 0, per_sm = 0, sms = 0, cooperative = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device), "attribute");
  if (!cooperative) throw RuntimeError("FlashInfer DCP merge: device has no cooperative launch");
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, dcp::kFusedBlockSize, smem),
        "occupancy");
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "SM count");
  const int grid = std::min(std::max(r.entries, r.dcp), per_sm * sms);
  const std::size_t payload = dcp::PayloadOffset(r.dcp);
  const std::size_t slot_out = std::size_t(r.dcp) * r.entries * r.dim * sizeof(T);
  const std::size_t slot_lse = std::size_t(r.dcp) * r.entries * sizeof(float);
  const std::size_t signal = dcp::kMetadataBytes, out_region = payload,
                    lse_region = payload + dcp::kNumSlots * slot_out;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeCooperative;
  attr[0].val.cooperative = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(grid);
  cfg.blockDim = dim3(dcp::kFusedBlockSize);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  check(cudaLaunchKernelEx(&cfg, kernel, static_cast<const T*>(r.o), r.lse, r.workspace,
                           static_cast<ncclWindow_t>(r.window), signal, out_region, out_region, slot_out,
                           lse_region, lse_region, slot_lse, static_cast<T*>(r.out), r.rank, r.dcp, r.entries,
                           r.entries, 1, r.dim),
        "cooperative launch");
}

template <typename T>
void launch_typed(const DcpMergeRun& r, cudaStream_t stream) {
  const bool rows = r.entries >= kRowDistributedMinEntries;
  if (r.lse_base_e)
    rows ? launch<T, true, true>(r, stream) : launch<T, true, false>(r, stream);
  else
    rows ? launch<T, false, true>(r, stream) : launch<T, false, false>(r, stream);
}

}  // namespace

void dcp_merge(const DcpMergeRun& r, cudaStream_t stream) {
  if (r.dcp < 1 || r.dcp > dcp::kMaxRanks)
    throw InputError("FlashInfer DCP merge: N=" + std::to_string(r.dcp) + " outside [1, " +
                     std::to_string(dcp::kMaxRanks) + "]");
  if (r.entries < 1) return;
  if (r.bf16)
    launch_typed<__nv_bfloat16>(r, stream);
  else
    launch_typed<__half>(r, stream);
}

}  // namespace dcpsim::hw::ops::flashinfer_kernels
