// CPU-only builds: the hw/ public API with every call failing clearly, so the rest of dcpsim links and the
// GPU tests can check the message instead of being compiled out.
#include "dcpsim/error.h"
#include "dcpsim/hw/bench.h"
#include "dcpsim/hw/device.h"
#include "dcpsim/hw/kernels.h"
#include "dcpsim/hw/runner.h"
#include "dcpsim/hw/sweep.h"

namespace dcpsim::hw {
namespace {
[[noreturn]] void no_cuda() {
  throw RuntimeError(kBuiltWithoutCuda);
}
}  // namespace

bool built_with_cuda() {
  return false;
}
int device_count() {
  no_cuda();
}
DeviceInfo device_info(int) {
  no_cuda();
}
SoftwareVersions software_versions() {
  no_cuda();
}

AttentionGeometry attention_geometry(int, int, int) {
  no_cuda();
}
models::Partial gpu_local_attention(const models::Problem&, const models::KvShard&,
                                    const GpuAttentionOptions&) {
  no_cuda();
}
GpuCorrectResult gpu_lse_correct(std::span<const models::Partial>, int, const GpuCorrectOptions&) {
  no_cuda();
}
models::A2aBuffer gpu_a2a_pack(const models::Partial&, int, models::DType, int) {
  no_cuda();
}
GpuSplitPack gpu_a2a_split_pack(const models::Partial&, int, models::DType, int) {
  no_cuda();
}
GpuMergedBlock gpu_a2a_combine(const models::A2aBuffer&, models::LseBase, models::DType, int, int) {
  no_cuda();
}
GpuMergedBlock gpu_combine_slots(std::span<const models::Partial>, int, const GpuCombineOptions&) {
  no_cuda();
}
std::vector<GpuMergedBlock> gpu_direct_merge(std::span<const models::Partial>, const GpuDirectOptions&) {
  no_cuda();
}
std::vector<GpuMergedBlock> gpu_row_stream_merge(std::span<const models::Partial>,
                                                 const GpuRowStreamOptions&) {
  no_cuda();
}
std::vector<GpuMergedBlock> gpu_flashinfer_dcp_merge(std::span<const models::Partial>,
                                                     const GpuFlashInferMergeOptions&) {
  no_cuda();
}

models::KernelTables run_kernel_sweep(const KernelSweepConfig&,
                                      const std::function<void(const SweepProgress&)>&) {
  no_cuda();
}

RunResult run_step(const RunConfig&, traces::TraceSink*) {
  no_cuda();
}

traces::v1::Header measured_header(ProcessMode, const std::vector<int>&, const std::vector<std::string>&) {
  no_cuda();
}
MpiWorld mpi_init(int*, char***) {
  no_cuda();
}
void mpi_finalize() {}

std::vector<std::string> bench_ops() {
  return {"copy",        "attention", "correct", "a2a-pack",
          "a2a-combine", "combine",   "direct",  "merge-states-flashinfer"};
}
std::vector<std::string> op_variants(const std::string&) {
  no_cuda();
}
OpBenchResult run_op_bench(const OpBenchConfig&) {
  no_cuda();
}
OpBenchResult run_op_bench_at(const OpBenchConfig&, double) {
  no_cuda();
}
std::vector<OpBenchPoint> run_op_bench_points(const OpBenchConfig&, const std::vector<int>&,
                                              const std::vector<bool>&, double) {
  no_cuda();
}
std::vector<OpShape> sweep_shapes(const std::string&, const std::string&) {
  no_cuda();
}
double measure_copy_bandwidth(int, std::int64_t, int) {
  no_cuda();
}

}  // namespace dcpsim::hw
