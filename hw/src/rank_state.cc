#include "rank_state.h"

#include "cuda_check.h"
#include "dcpsim/error.h"
#include "dcpsim/hw/attention_impl.h"
#include "row_stream.h"
#include "strategy.h"

namespace dcpsim::hw {

RankState::~RankState() {
  if (device >= 0 && (!ev_begin.empty() || owns_stream)) cudaSetDevice(device);
  for (auto e : ev_begin) cudaEventDestroy(e);
  for (auto e : ev_end) cudaEventDestroy(e);
  if (ev_step_begin) cudaEventDestroy(ev_step_begin);
  if (ev_step_end) cudaEventDestroy(ev_step_end);
  if (owns_stream && stream) cudaStreamDestroy(stream);
}

void* RankState::buf(Buf b) const {
  switch (b) {
    case Buf::kQLocal:
      return q_local.get();
    case Buf::kQAll:
      return q_all.get();
    case Buf::kLse:
      return lse.get();
    case Buf::kLseAll:
      return lse_all.get();
    case Buf::kO:
      return o.get();
    case Buf::kRsSend:
      return rs_send.get();
    case Buf::kOut:
      return out.get();
    case Buf::kA2aSend:
      return a2a_send.get();
    case Buf::kA2aRecv:
      return a2a_recv.get();
    case Buf::kA2aLseSend:
      return a2a_lse_send.get();
    case Buf::kA2aLseRecv:
      return a2a_lse_recv.get();
  }
  return nullptr;
}

namespace {

void fill_inputs(const StepPlan& p, RankState& r) {
  const std::size_t ib = ops::elem_bytes(p.in);
  const float amp = static_cast<float>(kInputAmplitude);
  std::vector<int> len(p.rows_total);
  for (int b = 0; b < p.rows_total; ++b) {
    len[b] = static_cast<int>(p.local_len(b, r.rank));
    r.max_len = std::max<std::int64_t>(r.max_len, len[b]);
  }
  // Every row starts on a KV page, so FlashInfer's page table can address the same storage dcpsim's kernel
  // reads through kv_offset (a few unused tokens per row).
  std::vector<std::int64_t> offset = paged_row_offsets(len, kv_page_tokens(p.mla));
  const std::int64_t total = offset.back();
  offset.pop_back();
  r.kv_offset_host = offset;
  r.kv_len_host = len;
  r.kv_offset = upload(offset);
  r.kv_len = upload(len);
  r.global_base = upload(p.global_row_base);

  const std::int64_t q_count = std::int64_t(p.rows_total) * (p.gather_q ? p.J : p.H) * p.Dqk;
  r.q_local = DeviceBuffer(q_count * ib);
  ops::launch_fill_uniform(r.q_local.get(), q_count, p.in, amp, p.q_stream(),
                           p.gather_q ? r.rank * q_count : 0, r.stream);
  if (p.gather_q) r.q_all = DeviceBuffer(q_count * p.N * ib);

  const std::size_t kvb = p.kv_elem_bytes();
  r.k = DeviceBuffer(std::max<std::int64_t>(total, 1) * p.k_width() * kvb);
  ops::KvFillArgs f;
  f.elem = p.in;
  f.fp8_scale = p.kv_fp8 ? p.kv_scale : 0.f;
  f.rows = p.rows_total;
  f.local_offset = r.kv_offset.as<std::int64_t>();
  f.global_base = r.global_base.as<std::int64_t>();
  f.local_len = r.kv_len.as<int>();
  f.max_len = r.max_len;
  f.dcp = p.N;
  f.rank = r.rank;
  f.interleave = p.I;
  f.amplitude = amp;
  f.ptr = r.k.get();
  f.width = static_cast<int>(p.k_width());
  f.seed = p.k_stream();
  ops::launch_fill_kv_shard(f, r.stream);
  if (!p.mla) {
    r.v = DeviceBuffer(std::max<std::int64_t>(total, 1) * p.v_width() * kvb);
    f.ptr = r.v.get();
    f.width = static_cast<int>(p.v_width());
    f.seed = p.v_stream();
    ops::launch_fill_kv_shard(f, r.stream);
  }
}

void alloc_buffers(const StepPlan& p, RankState& r) {
  const std::size_t ob = ops::elem_bytes(p.out), B = p.rows_total, H = p.H, D = p.D;
  r.o = DeviceBuffer(B * H * D * ob);
  r.lse = DeviceBuffer(B * H * sizeof(float));
  if (p.N > 1) hw_strategy(p.s.strategy).allocate(p, r);
  if (p.row_stamps) {
    r.stamps = DeviceBuffer((2 + 2 * B) * sizeof(unsigned long long));
    r.stamp_counters = DeviceBuffer(2 * B * sizeof(unsigned));
    DCPSIM_CUDA(cudaMemset(r.stamps.get(), 0, r.stamps.bytes()));
  }
}

}  // namespace

std::unique_ptr<RankState> make_rank_state(const StepPlan& p, const RunConfig& c, int rank, int device,
                                           cudaStream_t stream) {
  (void)c;  // what the buffers depend on is in the plan
  DCPSIM_CUDA(cudaSetDevice(device));
  auto holder = std::make_unique<RankState>();
  RankState& r = *holder;
  r.rank = rank;
  r.device = device;
  if (stream) {
    r.stream = stream;
  } else {
    DCPSIM_CUDA(cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking));
    r.owns_stream = true;
  }
  fill_inputs(p, r);
  alloc_buffers(p, r);
  r.ev_begin.resize(p.phases.size());
  r.ev_end.resize(p.phases.size());
  for (std::size_t i = 0; i < p.phases.size(); ++i) {
    DCPSIM_CUDA(cudaEventCreate(&r.ev_begin[i]));
    DCPSIM_CUDA(cudaEventCreate(&r.ev_end[i]));
  }
  DCPSIM_CUDA(cudaEventCreate(&r.ev_step_begin));
  DCPSIM_CUDA(cudaEventCreate(&r.ev_step_end));
  DCPSIM_CUDA(cudaStreamSynchronize(r.stream));
  return holder;
}

}  // namespace dcpsim::hw
