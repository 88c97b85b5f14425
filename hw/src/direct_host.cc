// gpu_direct_merge and gpu_flashinfer_dcp_merge (kernels.h): the one-kernel direct merge and FlashInfer's
// fused merge on host data, in the process modes the runner uses — every rank emulated on the current device
// (plain allocations, one launch for all ranks) or one rank per device over NCCL symmetric windows — run for
// several steps so both buffers and the epoch stamps are exercised.
#include <string>
#include <vector>

#include "cuda_check.h"
#include "dcpsim/error.h"
#include "dcpsim/hw/direct_protocol.h"
#include "dcpsim/hw/kernels.h"
#include "device_buffer.h"
#include "host_convert.h"
#include "nccl_window.h"
#include "ops.h"

namespace dcpsim::hw {
namespace {

struct Shape {
  int N = 0, B = 0, H = 0, J = 0, D = 0, valid = 0;
};

Shape shape_of(std::span<const models::Partial> partials, int valid_rows) {
  const int N = static_cast<int>(partials.size());
  if (N == 0) throw InputError("direct merge: no partials");
  const auto& l0 = partials[0].out_layout;
  if (l0.heads % N != 0)
    throw InputError("direct merge: H=" + std::to_string(l0.heads) +
                     " is not divisible by N=" + std::to_string(N));
  for (const auto& p : partials) {
    p.validate();
    if (p.out_layout.rows != l0.rows || p.out_layout.heads != l0.heads || p.out_layout.dim != l0.dim)
      throw InputError("direct merge: the ranks' partials differ in shape");
  }
  return {
      N, l0.rows, l0.heads, l0.heads / N, l0.dim, valid_rows < 0 ? l0.rows : std::min(valid_rows, l0.rows)};
}

// One rank's device buffers, on the device current when constructed.
struct RankBuffers {
  DeviceBuffer o, lse, out, merged, control, error;
  RankBuffers(const models::Partial& p, const Shape& s, ops::Elem e)
      : o(upload(to_device_bytes(e, p.out))),
        lse(upload(to_floats(p.lse))),
        out(std::size_t(s.B) * s.J * s.D * ops::elem_bytes(e)),
        merged(std::size_t(s.B) * s.J * sizeof(float)),
        control(2 * sizeof(unsigned long long)),
        error(sizeof(int)) {
    DCPSIM_CUDA(cudaMemset(control.get(), 0, control.bytes()));
    DCPSIM_CUDA(cudaMemset(error.get(), 0, error.bytes()));
  }
  ops::DirectRank args(int rank, const models::Partial& p, unsigned char* const* windows) const {
    ops::DirectRank d;
    d.rank = rank;
    d.o = o.get();
    d.o_row_stride = p.out_layout.row_stride;
    d.o_head_stride = p.out_layout.head_stride;
    d.lse = lse.as<float>();
    d.lse_row_stride = p.lse_layout.row_stride;
    d.lse_head_stride = p.lse_layout.head_stride;
    d.windows = windows;
    d.out = out.get();
    d.merged_lse = merged.as<float>();
    d.control = control.as<unsigned long long>();
    d.error = error.as<int>();
    return d;
  }
  GpuMergedBlock block(const Shape& s, ops::Elem e) const {
    const std::size_t kept = std::size_t(s.B) * s.J;
    return {s.B, s.J, s.D, from_device_bytes(e, download<std::uint8_t>(out, kept * s.D * ops::elem_bytes(e))),
            to_doubles(download<float>(merged, kept))};
  }
};

ops::DirectMergeArgs merge_args(const Shape& s, const GpuDirectOptions& o, ops::Elem e,
                                std::span<const models::Partial> partials) {
  auto a =
      ops::with_dims<ops::DirectMergeArgs>({s.N, s.B, s.valid, s.H, s.D, o.base == models::LseBase::k2, e});
  a.timeout_ns = o.timeout_ns;
  a.blocks_per_rank = o.blocks_per_rank;
  if (o.kernel == "chunk")
    a.variant = ops::DirectVariant::kChunk;
  else if (o.kernel == "grid")
    a.variant = ops::DirectVariant::kGrid;
  else if (o.kernel == "chunk-sys")
    a.variant = ops::DirectVariant::kChunkSys;
  else if (o.kernel == "chunk-staged")
    a.variant = ops::DirectVariant::kChunkStaged;
  else
    throw InputError("direct merge: no kernel '" + o.kernel + "' (chunk, grid, chunk-sys, chunk-staged)");
  const std::size_t eb = ops::elem_bytes(e);
  for (const auto& p : partials)
    a.o_rows_aligned =
        a.o_rows_aligned && p.out_layout.row_stride * eb % 16 == 0 && p.out_layout.head_stride * eb % 16 == 0;
  return a;
}

void throw_timeout(const std::vector<RankBuffers>& ranks, const std::vector<int>& devices,
                   std::int64_t timeout_ns, int step) {
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    if (!devices.empty()) DCPSIM_CUDA(cudaSetDevice(devices[r]));
    const int err = download<int>(ranks[r].error, 1)[0];
    if (err != 0)
      throw RuntimeError("direct merge: rank " + std::to_string(r) + " waited " +
                         std::to_string(timeout_ns / 1000000) + " ms for the flag of rank " +
                         std::to_string(err - 1) + " (step " + std::to_string(step + 1) + ") and gave up");
  }
}

// One communicator over `devices` (rank r on devices[r]), destroyed last.
struct Comms {
  std::vector<ncclComm_t> comms;
  explicit Comms(const std::vector<int>& devices) : comms(devices.size()) {
    DCPSIM_NCCL(ncclCommInitAll(comms.data(), static_cast<int>(devices.size()), devices.data()));
  }
  ~Comms() {
    for (auto c : comms) ncclCommDestroy(c);
  }
  Comms(const Comms&) = delete;
  Comms& operator=(const Comms&) = delete;
};

void check_devices(const std::vector<int>& devices, int n, const char* what) {
  if (static_cast<int>(devices.size()) != n)
    throw InputError(std::string(what) + ": " + std::to_string(n) + " ranks need " + std::to_string(n) +
                     " devices, got " + std::to_string(devices.size()));
}

std::vector<GpuMergedBlock> direct_emulated(std::span<const models::Partial> partials, const Shape& s,
                                            const GpuDirectOptions& o, ops::Elem e) {
  const DirectLayout layout{s.N, s.B, s.J, s.D, static_cast<int>(ops::elem_bytes(e))};
  std::vector<DeviceBuffer> windows;
  std::vector<unsigned char*> bases;
  std::vector<RankBuffers> ranks;
  for (int r = 0; r < s.N; ++r) {
    windows.emplace_back(layout.bytes());
    DCPSIM_CUDA(cudaMemset(windows.back().get(), 0, layout.flags_bytes()));
    bases.push_back(windows.back().as<unsigned char>());
    ranks.emplace_back(partials[r], s, e);
  }
  const DeviceBuffer table = upload(bases);
  std::vector<ops::DirectRank> launch;
  for (int r = 0; r < s.N; ++r)
    if (r != o.skip_writer) launch.push_back(ranks[r].args(r, partials[r], table.as<unsigned char* const>()));
  const DeviceBuffer dlaunch = upload(launch);
  ops::DirectMergeArgs a = merge_args(s, o, e, partials);
  a.ranks = dlaunch.as<const ops::DirectRank>();
  a.launch_ranks = static_cast<int>(launch.size());
  a.same_device = true;
  a.windows = table.as<unsigned char* const>();
  for (int step = 0; step < o.steps; ++step) {
    ops::launch_direct_merge(a, nullptr);
    DCPSIM_CUDA(cudaDeviceSynchronize());
    throw_timeout(ranks, {}, o.timeout_ns, step);
  }
  std::vector<GpuMergedBlock> out;
  for (const auto& r : ranks) out.push_back(r.block(s, e));
  return out;
}

std::vector<GpuMergedBlock> direct_windows(std::span<const models::Partial> partials, const Shape& s,
                                           const GpuDirectOptions& o, ops::Elem e) {
  check_devices(o.devices, s.N, "direct merge over NCCL windows");
  const DirectLayout layout{s.N, s.B, s.J, s.D, static_cast<int>(ops::elem_bytes(e))};
  Comms comms(o.devices);
  NcclWindows windows;
  windows.open(comms.comms, o.devices, layout.bytes(), layout.flags_bytes());
  std::vector<RankBuffers> ranks;
  std::vector<DeviceBuffer> launch;
  for (int r = 0; r < s.N; ++r) {
    DCPSIM_CUDA(cudaSetDevice(o.devices[r]));
    ranks.emplace_back(partials[r], s, e);
    launch.push_back(upload(std::vector<ops::DirectRank>{
        ranks.back().args(r, partials[r], windows.at(r).peers.as<unsigned char* const>())}));
  }
  ops::DirectMergeArgs a = merge_args(s, o, e, partials);
  for (int step = 0; step < o.steps; ++step) {
    for (int r = 0; r < s.N; ++r) {
      if (r == o.skip_writer) continue;
      DCPSIM_CUDA(cudaSetDevice(o.devices[r]));
      a.ranks = launch[r].as<const ops::DirectRank>();
      a.windows = windows.at(r).peers.as<unsigned char* const>();
      ops::launch_direct_merge(a, nullptr);
    }
    for (int d : o.devices) {
      DCPSIM_CUDA(cudaSetDevice(d));
      DCPSIM_CUDA(cudaDeviceSynchronize());
    }
    throw_timeout(ranks, o.devices, o.timeout_ns, step);
  }
  std::vector<GpuMergedBlock> out;
  for (int r = 0; r < s.N; ++r) {
    DCPSIM_CUDA(cudaSetDevice(o.devices[r]));
    out.push_back(ranks[r].block(s, e));
  }
  return out;
}

}  // namespace

std::vector<GpuMergedBlock> gpu_direct_merge(std::span<const models::Partial> partials,
                                             const GpuDirectOptions& o) {
  const Shape s = shape_of(partials, o.valid_rows);
  const ops::Elem e = ops::elem_of(o.out_dtype);
  if (o.steps < 1) throw InputError("direct merge: steps must be >= 1");
  return o.devices.empty() ? direct_emulated(partials, s, o, e) : direct_windows(partials, s, o, e);
}

std::vector<GpuMergedBlock> gpu_flashinfer_dcp_merge(std::span<const models::Partial> partials,
                                                     const GpuFlashInferMergeOptions& o) {
  if (!ops::flashinfer_dcp_merge_built())
    throw InputError("FlashInfer's fused DCP merge: this dcpsim was built without FlashInfer's headers");
  const Shape s = shape_of(partials, -1);
  const ops::Elem e = ops::elem_of(o.out_dtype);
  check_devices(o.devices, s.N, "FlashInfer's fused DCP merge");
  const FlashInferDcpLayout layout{s.N, s.B * s.J, s.D, static_cast<int>(ops::elem_bytes(e))};
  Comms comms(o.devices);
  NcclWindows windows;
  windows.open(comms.comms, o.devices, layout.bytes(), layout.payload_offset());
  std::vector<DeviceBuffer> in_o, in_l, out;
  for (int r = 0; r < s.N; ++r) {
    // FlashInfer takes dense [B][H][D] and [B][H].
    std::vector<double> o_dense(std::size_t(s.B) * s.H * s.D), l_dense(std::size_t(s.B) * s.H);
    for (int b = 0; b < s.B; ++b)
      for (int h = 0; h < s.H; ++h) {
        l_dense[std::size_t(b) * s.H + h] = partials[r].l(b, h);
        for (int d = 0; d < s.D; ++d) o_dense[(std::size_t(b) * s.H + h) * s.D + d] = partials[r].o(b, h, d);
      }
    DCPSIM_CUDA(cudaSetDevice(o.devices[r]));
    in_o.push_back(upload(to_device_bytes(e, o_dense)));
    in_l.push_back(upload(to_floats(l_dense)));
    out.emplace_back(std::size_t(s.B) * s.J * s.D * ops::elem_bytes(e));
  }
  for (int step = 0; step < o.steps; ++step) {
    for (int r = 0; r < s.N; ++r) {
      DCPSIM_CUDA(cudaSetDevice(o.devices[r]));
      auto a =
          ops::with_dims<ops::FlashInferDcpArgs>({s.N, s.B, s.B, s.H, s.D, o.base == models::LseBase::k2, e});
      a.rank = r;
      a.o = in_o[r].get();
      a.lse = in_l[r].as<float>();
      a.window = windows.at(r).win;
      a.workspace = static_cast<unsigned char*>(windows.at(r).base);
      a.out = out[r].get();
      ops::launch_flashinfer_dcp_merge(a, nullptr);
    }
    for (int d : o.devices) {
      DCPSIM_CUDA(cudaSetDevice(d));
      DCPSIM_CUDA(cudaDeviceSynchronize());
    }
  }
  std::vector<GpuMergedBlock> blocks;
  for (int r = 0; r < s.N; ++r) {
    DCPSIM_CUDA(cudaSetDevice(o.devices[r]));
    const std::size_t count = std::size_t(s.B) * s.J * s.D;
    blocks.push_back({s.B,
                      s.J,
                      s.D,
                      from_device_bytes(e, download<std::uint8_t>(out[r], count * ops::elem_bytes(e))),
                      {}});
  }
  return blocks;
}

}  // namespace dcpsim::hw
