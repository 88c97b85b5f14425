#include "step.h"

#include <cmath>
#include <limits>

#include "cuda_check.h"
#include "timing.h"

namespace dcpsim::hw {
namespace {

unsigned long long* stamp_slot(RankState& r, int i) {
  return r.stamps.as<unsigned long long>() + i;
}

// lse_ready[b] at stamps[2 + b], out_ready[b] at stamps[2 + B' + b]; counters likewise.
ops::RowStamps row_stamps(const StepPlan& p, RankState& r, bool output) {
  if (r.stamps.get() == nullptr) return {};
  const int off = output ? p.rows_total : 0;
  return {stamp_slot(r, 2 + off), r.stamp_counters.as<unsigned>() + off};
}

}  // namespace

ops::AttentionArgs attention_args(const StepPlan& p, RankState& r) {
  ops::AttentionArgs a;
  a.geometry = p.mla ? ops::Geometry::kMla576 : ops::Geometry::kGqa128;
  a.in = p.in;
  a.out = p.out;
  a.rows = p.rows_total;
  a.valid_rows = p.B;
  a.heads = p.H;
  a.kv_heads = p.Hkv;
  a.q = p.gather_q ? r.q_all.get() : r.q_local.get();
  a.q_block_heads = p.gather_q ? p.J : p.H;
  a.q_block_stride = p.gather_q ? std::int64_t(p.rows_total) * p.J * p.Dqk : 0;
  a.q_row_stride = std::int64_t(a.q_block_heads) * p.Dqk;
  a.k = r.k.get();
  a.v = p.mla ? r.k.get() : r.v.get();
  a.k_token_stride = p.k_width();
  a.v_token_stride = p.mla ? p.Dqk : p.v_width();
  a.kv_offset = r.kv_offset.as<std::int64_t>();
  a.kv_len = r.kv_len.as<int>();
  a.max_len = r.max_len;
  a.scale = static_cast<float>(p.s.scale());
  a.base2 = p.s.lse_base == models::LseBase::k2;
  a.o = r.o.get();
  a.o_row_stride = std::int64_t(p.H) * p.D;
  a.o_head_stride = p.D;
  a.lse = {r.lse.as<float>(), p.H, 1};
  a.empty_lse = -std::numeric_limits<float>::infinity();
  a.empty_fill = 0.f;
  a.workspace = r.workspace.as<float>();
  if (p.N == 1) a.stamps = row_stamps(p, r, true);
  return a;
}

namespace {

void enqueue_correct(const StepPlan& p, RankState& r) {
  ops::CorrectArgs a;
  a.dcp = p.N;
  a.rank = r.rank;
  a.rows = p.rows_total;
  a.valid_rows = p.B;
  a.heads = p.H;
  a.dim = p.D;
  a.base2 = p.s.lse_base == models::LseBase::k2;
  a.elem = p.out;
  a.lse = {r.lse_all.as<float>(), std::int64_t(p.rows_total) * p.H, p.H, 1};
  a.in = r.o.get();
  a.in_row_stride = std::int64_t(p.H) * p.D;
  a.in_head_stride = p.D;
  if (p.s.strategy == models::Strategy::kAgRs) {  // straight into the reduce-scatter's head-block layout
    a.out = r.rs_send.get();
    a.out_block_heads = p.J;
    a.out_block_stride = std::int64_t(p.rows_total) * p.J * p.D;
    a.out_row_stride = std::int64_t(p.J) * p.D;
    a.out_head_stride = p.D;
  } else {  // in place, then the all-reduce
    a.out = r.o.get();
    a.out_block_heads = p.H;
    a.out_row_stride = a.in_row_stride;
    a.out_head_stride = a.in_head_stride;
  }
  a.merged_lse = {r.merged_lse.as<float>(), p.H, 1};
  a.stamps = row_stamps(p, r, false);
  ops::launch_correct(a, r.stream);
}

ops::CombineArgs combine_args(const StepPlan& p, RankState& r) {
  ops::CombineArgs a;
  a.dcp = p.N;
  a.rows = p.rows_total;
  a.valid_rows = p.B;
  a.heads = p.J;
  a.dim = p.D;
  a.base2 = p.s.lse_base == models::LseBase::k2;
  a.in = p.out;
  a.out = p.out;
  a.dst = r.out.get();
  a.dst_row_stride = std::int64_t(p.J) * p.D;
  a.dst_head_stride = p.D;
  a.merged_lse = {r.merged_lse.as<float>(), p.J, 1};
  a.stamps = row_stamps(p, r, true);
  return a;
}

void enqueue_pack(const StepPlan& p, RankState& r) {
  ops::PackArgs a;
  a.dcp = p.N;
  a.rows = p.rows_total;
  a.valid_rows = p.B;
  a.heads = p.H;
  a.dim = p.D;
  a.elem = p.out;
  a.o = r.o.get();
  a.o_row_stride = std::int64_t(p.H) * p.D;
  a.o_head_stride = p.D;
  a.lse = r.lse.as<float>();
  a.lse_row_stride = p.H;
  a.lse_head_stride = 1;
  a.send = r.a2a_send.get();
  ops::launch_a2a_pack(a, r.stream);
}

void enqueue_direct_write(const StepPlan& p, RankState& r) {
  ops::DirectWriteArgs a;
  a.dcp = p.N;
  a.rank = r.rank;
  a.rows = p.rows_total;
  a.valid_rows = p.B;
  a.heads = p.H;
  a.dim = p.D;
  a.elem = p.out;
  a.o = r.o.get();
  a.o_row_stride = std::int64_t(p.H) * p.D;
  a.o_head_stride = p.D;
  a.lse = r.lse.as<float>();
  a.lse_row_stride = p.H;
  a.lse_head_stride = 1;
  a.dst_o = r.dst_o.as<void* const>();
  a.dst_lse = r.dst_lse.as<float* const>();
  a.dst_flags = r.dst_flags.as<unsigned long long* const>();
  a.epoch = r.counters.as<unsigned long long>();
  a.done_counter = r.counters.as<unsigned long long>() + 1;
  ops::launch_direct_write(a, r.stream);
}

void enqueue_collective_done(RankState& r) {
  if (r.stamps.get() != nullptr) ops::launch_stamp(stamp_slot(r, 1), r.stream);
}

}  // namespace

void prepare_rank(const StepPlan& p, RankState& r) {
  DCPSIM_CUDA(cudaSetDevice(r.device));
  const ops::AttentionArgs a = attention_args(p, r);
  if (p.attention == AttentionImpl::kFlashInfer)
    r.flashinfer = std::make_unique<ops::FlashInferAttention>(a, r.kv_offset_host, r.kv_len_host);
  else
    r.workspace = DeviceBuffer(ops::attention_workspace_bytes(a, ops::attention_splits(a, r.device)));
}

namespace {

void record_event(cudaEvent_t e, cudaStream_t stream, bool capturing) {
  if (capturing)
    DCPSIM_CUDA(cudaEventRecordWithFlags(e, stream, cudaEventRecordExternal));
  else
    DCPSIM_CUDA(cudaEventRecord(e, stream));
}

}  // namespace

void enqueue_prologue(const StepPlan& p, const RunConfig& c, RankState& r, bool capturing) {
  TimelineTag tag(r.timeline, timeline_tag(current_rep(), r.rank, 0));
  ops::PdlScope pdl(p.s.launch == models::LaunchMode::kPdl);
  record_event(r.ev_step_begin, r.stream, capturing);
  if (r.stamps.get() != nullptr) {
    DCPSIM_CUDA(cudaMemsetAsync(r.stamp_counters.get(), 0, r.stamp_counters.bytes(), r.stream));
    ops::launch_stamp(stamp_slot(r, 0), r.stream);
  }
  if (p.N > 1 && p.s.strategy == models::Strategy::kDirect)
    ops::launch_advance_epoch(r.counters.as<unsigned long long>(), r.stream);
  (void)c;
}

void enqueue_phase(const StepPlan& p, const RunConfig& c, std::size_t i, RankState& r, Exchange& ex,
                   bool capturing) {
  TimelineTag tag(r.timeline, timeline_tag(current_rep(), r.rank, static_cast<int>(i) + 1));
  ops::PdlScope pdl(p.s.launch == models::LaunchMode::kPdl);
  const bool phase_events = r.timing == Timing::kEvents;
  auto record = [&](cudaEvent_t e) {
    if (phase_events) record_event(e, r.stream, capturing);
  };
  const std::size_t ob = ops::elem_bytes(p.out), ib = ops::elem_bytes(p.in);
  const std::size_t B = p.rows_total;
  record(r.ev_begin[i]);
  switch (p.phases[i]) {
    case Phase::kQAllGather:
      ex.all_gather(r, Buf::kQLocal, Buf::kQAll, B * p.J * p.Dqk * ib);
      break;
    case Phase::kAttention:
      if (r.flashinfer)
        r.flashinfer->launch(attention_args(p, r), r.stream);
      else
        ops::launch_attention(attention_args(p, r), r.stream);
      break;
    case Phase::kLseAllGather:
      ex.all_gather(r, Buf::kLse, Buf::kLseAll, B * p.H * sizeof(float));
      break;
    case Phase::kCorrect:
      enqueue_correct(p, r);
      break;
    case Phase::kReduceScatter:
      ex.reduce_scatter(r, Buf::kRsSend, Buf::kOut, B * p.J * p.D, p.out);
      enqueue_collective_done(r);
      break;
    case Phase::kAllReduce:
      ex.all_reduce(r, Buf::kO, Buf::kOut, B * p.H * p.D, p.out);
      enqueue_collective_done(r);
      break;
    case Phase::kA2aPack:
      enqueue_pack(p, r);
      break;
    case Phase::kAllToAll:
      ex.all_to_all(r, Buf::kA2aSend, Buf::kA2aRecv, B * p.J * (p.D + ops::lse_lanes(p.out)) * ob);
      break;
    case Phase::kA2aCombine: {
      ops::CombineArgs a = combine_args(p, r);
      a.o = r.a2a_recv.get();
      a.o_lanes = p.D + ops::lse_lanes(p.out);
      a.src_stride = std::int64_t(B) * p.J * a.o_lanes;
      ops::launch_combine(a, r.stream);
      break;
    }
    case Phase::kDirectWrite:
      enqueue_direct_write(p, r);
      break;
    case Phase::kDirectCombine: {
      ops::CombineArgs a = combine_args(p, r);
      a.o = r.slots_o.get();
      a.o_lanes = p.D;
      a.src_stride = std::int64_t(B) * p.J * p.D;
      a.lse = r.slots_lse.as<float>();
      a.lse_src_stride = std::int64_t(B) * p.J;
      a.flags = r.flags.as<unsigned long long>();
      a.epoch = r.counters.as<unsigned long long>();
      a.parity_o_stride = static_cast<std::int64_t>(r.slot_o_elems(p));
      a.parity_lse_stride = static_cast<std::int64_t>(r.slot_lse_elems(p));
      a.parity_flag_stride = p.N;
      a.timeout_ns = c.direct_timeout_ms * 1000000LL;
      a.error = r.error.as<int>();
      ops::launch_combine(a, r.stream);
      break;
    }
    case Phase::kRowCombine:  // on the ranks' own streams: enqueue_row_stream_step (row_stream.cc)
      throw RuntimeError(std::string(phase_name(p.phases[i])) +
                         " is enqueued with the whole row-stream step");
  }
  record(r.ev_end[i]);
  if (i + 1 == p.phases.size()) record_event(r.ev_step_end, r.stream, capturing);
}

FinalOutput final_output(const StepPlan& p, const RankState& r) {
  if (p.N == 1) return {&r.o, 0, p.H, &r.lse, 0, p.H};
  switch (p.s.strategy) {
    case models::Strategy::kAgRs:
      return {&r.out, r.rank * p.J, p.J, &r.merged_lse, r.rank * p.J, p.H};
    case models::Strategy::kAgAr:
      return {&r.out, 0, p.H, &r.merged_lse, 0, p.H};
    default:
      return {&r.out, r.rank * p.J, p.J, &r.merged_lse, 0, p.J};
  }
}

}  // namespace dcpsim::hw
