#include "step.h"

#include <cmath>
#include <limits>
#include <string>

#include "cuda_check.h"
#include "dcpsim/error.h"
#include "timing.h"

namespace dcpsim::hw {
namespace {

unsigned long long* stamp_slot(RankState& r, int i) {
  return r.stamps.as<unsigned long long>() + i;
}

}  // namespace

ops::AttentionArgs attention_args(const StepPlan& p, RankState& r) {
  ops::AttentionArgs a;
  a.geometry = p.mla ? ops::Geometry::kMla576 : ops::Geometry::kGqa128;
  a.in = p.in;
  a.out = p.out;
  a.kv_fp8 = p.kv_fp8;
  a.kv_scale = p.kv_scale;
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

void enqueue_collective_done(RankState& r) {
  if (r.stamps.get() != nullptr) ops::launch_stamp(stamp_slot(r, 1), r.stream);
}

// lse_ready[b] at stamps[2 + b], out_ready[b] at stamps[2 + B' + b]; counters likewise.
ops::RowStamps row_stamps(const StepPlan& p, RankState& r, bool output) {
  if (r.stamps.get() == nullptr) return {};
  const int off = output ? p.rows_total : 0;
  return {stamp_slot(r, 2 + off), r.stamp_counters.as<unsigned>() + off};
}

// ---- the strategies (strategy.h): every one the runner runs, one line each ----

const HwStrategy* find_hw_strategy(models::Strategy s) {
  switch (s) {
    case models::Strategy::kAgRs:
      return &ag_rs_strategy();
    case models::Strategy::kAgAr:
      return &ag_ar_strategy();
    case models::Strategy::kA2a:
      return &a2a_strategy();
    case models::Strategy::kA2aTwoCall:
      return &a2a_two_call_strategy();
    case models::Strategy::kDirect:
      return &direct_strategy();
    case models::Strategy::kFlashInferA2a:
      return &flashinfer_strategy();
    case models::Strategy::kRowStream:
      return &row_stream_strategy();
  }
  return nullptr;
}

const HwStrategy& hw_strategy(models::Strategy s) {
  if (const HwStrategy* h = find_hw_strategy(s)) return *h;
  std::string runs;
  for (models::Strategy t : models::all_strategies())
    if (find_hw_strategy(t) != nullptr)
      runs += (runs.empty() ? "" : ", ") + std::string(models::to_string(t));
  throw InputError("--strategy " + std::string(models::to_string(s)) +
                   " is modelled by simulate only; hw run runs " + runs);
}

void HwStrategy::check(const StepPlan&, const RunConfig&) const {}

void HwStrategy::connect(const StepPlan&, const RunConfig&, Ranks&, const StrategyLink&) const {}

bool HwStrategy::enqueue_step(const StepPlan&, const RunConfig&, Ranks&, Exchange&, bool) const {
  return false;
}

void connect_ranks(const StepPlan& p, const RunConfig& c, Ranks& ranks, const StrategyLink& link) {
  if (p.N > 1) hw_strategy(p.s.strategy).connect(p, c, ranks, link);
}

bool enqueue_whole_step(const StepPlan& p, const RunConfig& c, Ranks& ranks, Exchange& ex, bool capturing) {
  return p.N > 1 && hw_strategy(p.s.strategy).enqueue_step(p, c, ranks, ex, capturing);
}

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
  (void)p;
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
  const std::size_t ib = ops::elem_bytes(p.in);
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
    default:  // the strategy's phases
      hw_strategy(p.s.strategy).enqueue(p.phases[i], p, c, r, ex);
      break;
  }
  record(r.ev_end[i]);
  if (i + 1 == p.phases.size()) record_event(r.ev_step_end, r.stream, capturing);
}

FinalOutput final_output(const StepPlan& p, const RankState& r) {
  if (p.N == 1) return {&r.o, 0, p.H, 1, &r.lse, 0, p.H};
  return hw_strategy(p.s.strategy).final_output(p, r);
}

}  // namespace dcpsim::hw
