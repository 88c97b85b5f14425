// gpu_row_stream_merge (kernels.h): the row-streaming merge's whole protocol with every rank on the current
// device — per owner double-buffered windows and per-row flags, per rank epochs and monotonic push counters
// — run for several steps so both parities and the counters' epoch targets are exercised. The pushes are
// the post-kernel push (the attention epilogue's push is exercised by `hw run --strategy row-stream`).
#include <string>
#include <vector>

#include "cuda_check.h"
#include "dcpsim/error.h"
#include "dcpsim/hw/kernels.h"
#include "device_buffer.h"
#include "host_convert.h"
#include "ops.h"
#include "row_stream_layout.h"

namespace dcpsim::hw {
namespace {

struct Streams {
  cudaStream_t push = nullptr, combine = nullptr, early = nullptr;
  cudaEvent_t epoch_done = nullptr, early_done = nullptr;
  Streams() {
    int least = 0, greatest = 0;
    DCPSIM_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    DCPSIM_CUDA(cudaStreamCreateWithFlags(&push, cudaStreamNonBlocking));
    DCPSIM_CUDA(cudaStreamCreateWithPriority(&combine, cudaStreamNonBlocking, greatest));
    DCPSIM_CUDA(cudaStreamCreateWithPriority(&early, cudaStreamNonBlocking, least));
    DCPSIM_CUDA(cudaEventCreateWithFlags(&epoch_done, cudaEventDisableTiming));
    DCPSIM_CUDA(cudaEventCreateWithFlags(&early_done, cudaEventDisableTiming));
  }
  ~Streams() {
    cudaEventDestroy(epoch_done);
    cudaEventDestroy(early_done);
    cudaStreamDestroy(push);
    cudaStreamDestroy(combine);
    cudaStreamDestroy(early);
  }
  Streams(const Streams&) = delete;
  Streams& operator=(const Streams&) = delete;
};

}  // namespace

std::vector<GpuMergedBlock> gpu_row_stream_merge(std::span<const models::Partial> partials,
                                                 const GpuRowStreamOptions& o) {
  const int N = static_cast<int>(partials.size());
  if (N == 0) throw InputError("row-stream merge: no partials");
  const auto& l0 = partials[0].out_layout;
  const int B = l0.rows, H = l0.heads, D = l0.dim;
  if (H % N != 0)
    throw InputError("row-stream merge: H=" + std::to_string(H) +
                     " is not divisible by N=" + std::to_string(N));
  const int J = H / N;
  const int valid = o.valid_rows < 0 ? B : std::min(o.valid_rows, B);
  const ops::Elem e = ops::elem_of(o.out_dtype);
  const std::size_t eb = ops::elem_bytes(e);
  const row_stream::Shape shape{N, B, J, D};
  const auto o_elems = static_cast<std::size_t>(row_stream::o_elems(shape));
  const auto l_elems = static_cast<std::size_t>(row_stream::lse_elems(shape));
  const auto f_elems = static_cast<std::size_t>(row_stream::flag_elems(shape));

  std::vector<DeviceBuffer> in_o, in_l, win_o, win_l, win_f, counters, dst;
  for (const auto& p : partials) {
    p.validate();
    if (p.out_layout.rows != B || p.out_layout.heads != H || p.out_layout.dim != D)
      throw InputError("row-stream merge: every partial must have the shape of rank 0's");
    in_o.push_back(upload(to_device_bytes(e, p.out)));
    in_l.push_back(upload(to_floats(p.lse)));
    win_o.emplace_back(2 * o_elems * eb);
    win_l.emplace_back(2 * l_elems * sizeof(float));
    win_f.emplace_back(2 * f_elems * sizeof(unsigned long long));
    counters.emplace_back((1 + row_stream::counter_elems(shape)) *
                          sizeof(unsigned long long));  // epoch, then
    dst.emplace_back(std::size_t(B) * J * D * eb);
    DCPSIM_CUDA(cudaMemset(win_f.back().get(), 0, win_f.back().bytes()));
    DCPSIM_CUDA(cudaMemset(counters.back().get(), 0, counters.back().bytes()));
  }
  std::vector<void*> po(2 * N);
  std::vector<float*> pl(2 * N);
  std::vector<unsigned long long*> pf(2 * N);
  for (int par = 0; par < 2; ++par)
    for (int n = 0; n < N; ++n) {
      po[par * N + n] = win_o[n].as<std::uint8_t>() + par * o_elems * eb;
      pl[par * N + n] = win_l[n].as<float>() + par * l_elems;
      pf[par * N + n] = win_f[n].as<unsigned long long>() + par * f_elems;
    }
  DeviceBuffer dpo = upload(po), dpl = upload(pl), dpf = upload(pf);
  DeviceBuffer error(2 * sizeof(int)), merged(std::size_t(N) * B * J * sizeof(float)),
      claims(N * sizeof(unsigned));
  DCPSIM_CUDA(cudaMemset(error.get(), 0, error.bytes()));
  // The early tail's gate: every push block counts itself as it begins (N ranks × N owners × B rows a step);
  // closed, the gate waits for one block more than a step has.
  DeviceBuffer started(sizeof(unsigned long long));
  DCPSIM_CUDA(cudaMemset(started.get(), 0, started.bytes()));
  const unsigned long long producers = static_cast<unsigned long long>(N) * N * B +
                                       (o.early == GpuRowStreamOptions::Early::kClosed ? 1ULL : 0ULL);
  Streams streams;

  for (int step = 0; step < o.steps; ++step) {
    for (int r = 0; r < N; ++r) ops::launch_advance_epoch(counters[r].as<unsigned long long>(), streams.push);
    DCPSIM_CUDA(cudaMemsetAsync(claims.get(), 0, claims.bytes(), streams.push));
    DCPSIM_CUDA(cudaEventRecord(streams.epoch_done, streams.push));
    DCPSIM_CUDA(cudaStreamWaitEvent(streams.combine, streams.epoch_done, 0));
    DCPSIM_CUDA(cudaStreamWaitEvent(streams.early, streams.epoch_done, 0));
    auto combines = [&](cudaStream_t stream, bool tail, bool early = false) {
      for (int n = 0; n < N; ++n) {
        ops::RowCombineArgs c;
        c.dcp = N;
        c.rows = B;
        c.valid_rows = valid;
        c.heads = J;
        c.dim = D;
        c.base2 = o.base == models::LseBase::k2;
        c.elem = e;
        c.o = win_o[n].get();
        c.lse = win_l[n].as<float>();
        c.flags = win_f[n].as<unsigned long long>();
        c.epoch = counters[n].as<unsigned long long>();
        c.dst = dst[n].get();
        c.dst_row_stride = std::int64_t(J) * D;
        c.dst_head_stride = D;
        c.merged_lse = {merged.as<float>() + std::size_t(n) * B * J, J, 1};
        c.timeout_ns = o.timeout_ns;
        c.error = error.as<int>();
        c.claim = claims.as<unsigned>() + n;
        c.ranks_on_device = N;
        c.tail = tail;
        c.early = early;
        c.producers_started = started.as<unsigned long long>();
        c.producers_per_step = producers;
        c.staged = o.staged;
        ops::launch_row_combine(c, stream);
      }
    };
    const bool early = o.early != GpuRowStreamOptions::Early::kNone;
    auto early_tails = [&] {
      combines(streams.early, true, true);
      DCPSIM_CUDA(cudaEventRecord(streams.early_done, streams.early));
    };
    if (o.combine_first) combines(streams.combine, false);  // streaming grids, spinning until rows land
    for (int r = 0; r < N; ++r) {
      if (r == o.skip_writer) continue;
      const auto& p = partials[r];
      ops::RowPushArgs a;
      a.push.dcp = N;
      a.push.rank = r;
      a.push.rows = B;
      a.push.heads_per_owner = J;
      a.push.dim = D;
      a.push.o = dpo.as<void* const>();
      a.push.lse = dpl.as<float* const>();
      a.push.flags = dpf.as<unsigned long long* const>();
      a.push.epoch = counters[r].as<unsigned long long>();
      a.push.counters = counters[r].as<unsigned long long>() + 1;
      a.push.started = started.as<unsigned long long>();
      a.rows = B;
      a.valid_rows = valid;
      a.heads = H;
      a.elem = e;
      a.o = in_o[r].get();
      a.o_row_stride = p.out_layout.row_stride;
      a.o_head_stride = p.out_layout.head_stride;
      a.lse = in_l[r].as<float>();
      a.lse_row_stride = p.lse_layout.row_stride;
      a.lse_head_stride = p.lse_layout.head_stride;
      ops::launch_row_push(a, streams.push);
    }
    if (early) early_tails();  // behind the pushes in launch order, beside them on the device
    if (!o.combine_first) combines(streams.push, false);
    combines(streams.push, true);  // the tail grids, after every push
    if (early) DCPSIM_CUDA(cudaStreamWaitEvent(streams.push, streams.early_done, 0));
    DCPSIM_CUDA(cudaDeviceSynchronize());
    const auto err = download<int>(error, 2);
    if (err[0] != 0)
      throw RuntimeError("row-stream merge: an owner waited " + std::to_string(o.timeout_ns / 1000000) +
                         " ms for row " + std::to_string(err[1]) + " of rank " + std::to_string(err[0] - 1) +
                         " (step " + std::to_string(step + 1) + ") and gave up");
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
