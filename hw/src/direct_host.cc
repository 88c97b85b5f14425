// gpu_direct_merge (kernels.h): the direct merge's whole protocol with every rank on the current device — per
// owner double-buffered slots and flags, per rank epoch and done counters — run for several steps so both
// buffers and the epoch stamps are exercised.
#include <string>
#include <vector>

#include "cuda_check.h"
#include "dcpsim/error.h"
#include "dcpsim/hw/kernels.h"
#include "device_buffer.h"
#include "host_convert.h"
#include "ops.h"

namespace dcpsim::hw {

std::vector<GpuMergedBlock> gpu_direct_merge(std::span<const models::Partial> partials,
                                             const GpuDirectOptions& o) {
  const int N = static_cast<int>(partials.size());
  if (N == 0) throw InputError("direct merge: no partials");
  const auto& l0 = partials[0].out_layout;
  const int B = l0.rows, H = l0.heads, D = l0.dim;
  if (H % N != 0)
    throw InputError("direct merge: H=" + std::to_string(H) + " is not divisible by N=" + std::to_string(N));
  const int J = H / N;
  const int valid = o.valid_rows < 0 ? B : std::min(o.valid_rows, B);
  const ops::Elem e = ops::elem_of(o.out_dtype);
  const std::size_t eb = ops::elem_bytes(e);
  const std::size_t slot_o = std::size_t(N) * B * J * D, slot_l = std::size_t(N) * B * J;

  std::vector<DeviceBuffer> in_o, in_l, slots_o, slots_l, flags, dst;
  for (const auto& p : partials) {
    p.validate();
    in_o.push_back(upload(to_device_bytes(e, p.out)));
    in_l.push_back(upload(to_floats(p.lse)));
    slots_o.emplace_back(2 * slot_o * eb);
    slots_l.emplace_back(2 * slot_l * sizeof(float));
    flags.emplace_back(2 * N * sizeof(unsigned long long));
    dst.emplace_back(std::size_t(B) * J * D * eb);
    DCPSIM_CUDA(cudaMemset(flags.back().get(), 0, flags.back().bytes()));
  }
  std::vector<void*> po(2 * N);
  std::vector<float*> pl(2 * N);
  std::vector<unsigned long long*> pf(2 * N);
  for (int par = 0; par < 2; ++par)
    for (int n = 0; n < N; ++n) {
      po[par * N + n] = slots_o[n].as<std::uint8_t>() + par * slot_o * eb;
      pl[par * N + n] = slots_l[n].as<float>() + par * slot_l;
      pf[par * N + n] = flags[n].as<unsigned long long>() + par * N;
    }
  DeviceBuffer dpo = upload(po), dpl = upload(pl), dpf = upload(pf);
  DeviceBuffer counters(2 * N * sizeof(unsigned long long)), error(sizeof(int)),
      merged(std::size_t(N) * B * J * 4);
  DCPSIM_CUDA(cudaMemset(counters.get(), 0, counters.bytes()));
  DCPSIM_CUDA(cudaMemset(error.get(), 0, error.bytes()));
  auto* epoch = counters.as<unsigned long long>();  // [N] epochs, then [N] done counters

  for (int step = 0; step < o.steps; ++step) {
    for (int r = 0; r < N; ++r) ops::launch_advance_epoch(epoch + r, nullptr);
    for (int r = 0; r < N; ++r) {
      if (r == o.skip_writer) continue;
      const auto& p = partials[r];
      ops::DirectWriteArgs w;
      w.dcp = N;
      w.rank = r;
      w.rows = B;
      w.valid_rows = valid;
      w.heads = H;
      w.dim = D;
      w.elem = e;
      w.o = in_o[r].get();
      w.o_row_stride = p.out_layout.row_stride;
      w.o_head_stride = p.out_layout.head_stride;
      w.lse = in_l[r].as<float>();
      w.lse_row_stride = p.lse_layout.row_stride;
      w.lse_head_stride = p.lse_layout.head_stride;
      w.dst_o = dpo.as<void* const>();
      w.dst_lse = dpl.as<float* const>();
      w.dst_flags = dpf.as<unsigned long long* const>();
      w.epoch = epoch + r;
      w.done_counter = epoch + N + r;
      ops::launch_direct_write(w, nullptr);
    }
    for (int n = 0; n < N; ++n) {
      ops::CombineArgs c;
      c.dcp = N;
      c.rows = B;
      c.valid_rows = valid;
      c.heads = J;
      c.dim = D;
      c.base2 = o.base == models::LseBase::k2;
      c.in = e;
      c.o = slots_o[n].get();
      c.src_stride = std::int64_t(B) * J * D;
      c.o_lanes = D;
      c.lse = slots_l[n].as<float>();
      c.lse_src_stride = std::int64_t(B) * J;
      c.out = e;
      c.dst = dst[n].get();
      c.dst_row_stride = std::int64_t(J) * D;
      c.dst_head_stride = D;
      c.merged_lse = {merged.as<float>() + std::size_t(n) * B * J, J, 1};
      c.flags = flags[n].as<unsigned long long>();
      c.epoch = epoch + n;
      c.parity_o_stride = static_cast<std::int64_t>(slot_o);
      c.parity_lse_stride = static_cast<std::int64_t>(slot_l);
      c.parity_flag_stride = N;
      c.timeout_ns = o.timeout_ns;
      c.error = error.as<int>();
      ops::launch_combine(c, nullptr);
    }
    DCPSIM_CUDA(cudaDeviceSynchronize());
    const int err = download<int>(error, 1)[0];
    if (err != 0)
      throw RuntimeError("direct merge: an owner waited " + std::to_string(o.timeout_ns / 1000000) +
                         " ms for the flag of rank " + std::to_string(err - 1) + " (step " +
                         std::to_string(step + 1) + ") and gave up");
  }
  std::vector<GpuMergedBlock> out;
  const auto ml = download<float>(merged, std::size_t(N) * B * J);
  for (int n = 0; n < N; ++n) {
    GpuMergedBlock m{
        B, J, D, from_device_bytes(e, download<std::uint8_t>(dst[n], std::size_t(B) * J * D * eb)), {}};
    m.lse.assign(ml.begin() + std::size_t(n) * B * J, ml.begin() + std::size_t(n + 1) * B * J);
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace dcpsim::hw
