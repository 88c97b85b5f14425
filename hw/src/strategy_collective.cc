// The strategies built on NCCL collectives (SPEC "delivery strategies"): AG+RS and AG+AR (LSE all-gather,
// correction, reduce-scatter / all-reduce), the packed all-to-all (pack, all-to-all, combine) and the
// all-to-all in two calls (vLLM's a2a: O and LSE to two send buffers, their two all-to-alls, combine).
// Emulation replaces each collective with device-local copies and reductions (exchange.h).
#include "strategy.h"

namespace dcpsim::hw {
namespace {

ops::CorrectArgs correct_args(const StepPlan& p, RankState& r) {
  auto a = ops::with_dims<ops::CorrectArgs>(p.merge_dims(p.H));
  a.rank = r.rank;
  a.lse = {r.lse_all.as<float>(), std::int64_t(p.rows_total) * p.H, p.H, 1};
  a.in = r.o.get();
  a.in_row_stride = std::int64_t(p.H) * p.D;
  a.in_head_stride = p.D;
  a.merged_lse = {r.merged_lse.as<float>(), p.H, 1};
  a.stamps = row_stamps(p, r, false);
  return a;
}

// AG+RS (reduce_scatter) and AG+AR (!reduce_scatter).
class GatherStrategy final : public HwStrategy {
 public:
  explicit GatherStrategy(bool reduce_scatter) : rs_(reduce_scatter) {}
  std::vector<Phase> phases() const override {
    return {Phase::kLseAllGather, Phase::kCorrect, rs_ ? Phase::kReduceScatter : Phase::kAllReduce};
  }
  void allocate(const StepPlan& p, RankState& r) const override {
    const std::size_t ob = ops::elem_bytes(p.out), B = p.rows_total, H = p.H, D = p.D, J = p.J, N = p.N;
    r.lse_all = DeviceBuffer(N * B * H * sizeof(float));
    r.merged_lse = DeviceBuffer(B * H * sizeof(float));
    if (rs_) r.rs_send = DeviceBuffer(B * H * D * ob);
    r.out = DeviceBuffer(B * (rs_ ? J : H) * D * ob);
  }
  void enqueue(Phase phase, const StepPlan& p, const RunConfig&, RankState& r, Exchange& ex) const override {
    const std::size_t B = p.rows_total;
    switch (phase) {
      case Phase::kLseAllGather:
        ex.all_gather(r, Buf::kLse, Buf::kLseAll, B * p.H * sizeof(float));
        break;
      case Phase::kCorrect: {
        ops::CorrectArgs a = correct_args(p, r);
        if (rs_) {  // straight into the reduce-scatter's head-block layout
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
        ops::launch_correct(a, r.stream);
        break;
      }
      case Phase::kReduceScatter:
        ex.reduce_scatter(r, Buf::kRsSend, Buf::kOut, B * p.J * p.D, p.out);
        enqueue_collective_done(r);
        break;
      case Phase::kAllReduce:
        ex.all_reduce(r, Buf::kO, Buf::kOut, B * p.H * p.D, p.out);
        enqueue_collective_done(r);
        break;
      default:
        break;
    }
  }
  FinalOutput final_output(const StepPlan& p, const RankState& r) const override {
    if (rs_) return {&r.out, r.rank * p.J, p.J, 1, &r.merged_lse, r.rank * p.J, p.H};
    return {&r.out, 0, p.H, 1, &r.merged_lse, 0, p.H};
  }

 private:
  bool rs_;
};

// The packed all-to-all (two_call false) and the all-to-all in two calls (two_call true): the same pack and
// combine kernels, with the LSE in the O rows or in buffers of its own.
class A2aStrategy final : public HwStrategy {
 public:
  explicit A2aStrategy(bool two_call) : two_(two_call) {}
  std::vector<Phase> phases() const override {
    if (two_) return {Phase::kA2aPack, Phase::kAllToAll, Phase::kAllToAllLse, Phase::kA2aCombine};
    return {Phase::kA2aPack, Phase::kAllToAll, Phase::kA2aCombine};
  }
  std::size_t lanes(const StepPlan& p) const { return p.D + (two_ ? 0 : ops::lse_lanes(p.out)); }
  void allocate(const StepPlan& p, RankState& r) const override {
    const std::size_t ob = ops::elem_bytes(p.out), B = p.rows_total, D = p.D, J = p.J, N = p.N;
    r.a2a_send = DeviceBuffer(N * B * J * lanes(p) * ob);
    r.a2a_recv = DeviceBuffer(N * B * J * lanes(p) * ob);
    if (two_) {
      r.a2a_lse_send = DeviceBuffer(N * B * J * sizeof(float));
      r.a2a_lse_recv = DeviceBuffer(N * B * J * sizeof(float));
    }
    r.out = DeviceBuffer(B * J * D * ob);
    r.merged_lse = DeviceBuffer(B * J * sizeof(float));
  }
  void enqueue(Phase phase, const StepPlan& p, const RunConfig&, RankState& r, Exchange& ex) const override {
    const std::size_t B = p.rows_total, lanes = this->lanes(p);
    switch (phase) {
      case Phase::kA2aPack: {
        auto a = ops::with_dims<ops::PackArgs>(p.merge_dims(p.H));
        a.o = r.o.get();
        a.o_row_stride = std::int64_t(p.H) * p.D;
        a.o_head_stride = p.D;
        a.lse = r.lse.as<float>();
        a.lse_row_stride = p.H;
        a.lse_head_stride = 1;
        a.send = r.a2a_send.get();
        if (two_) a.lse_send = r.a2a_lse_send.as<float>();
        ops::launch_a2a_pack(a, r.stream);
        break;
      }
      case Phase::kAllToAll:
        ex.all_to_all(r, Buf::kA2aSend, Buf::kA2aRecv, B * p.J * lanes * ops::elem_bytes(p.out));
        break;
      case Phase::kAllToAllLse:
        ex.all_to_all(r, Buf::kA2aLseSend, Buf::kA2aLseRecv, B * p.J * sizeof(float));
        break;
      case Phase::kA2aCombine: {
        auto a = ops::with_dims<ops::CombineArgs>(p.merge_dims(p.J));
        a.out = p.out;
        a.o = r.a2a_recv.get();
        a.o_lanes = static_cast<int>(lanes);
        a.src_stride = std::int64_t(B) * p.J * a.o_lanes;
        if (two_) {
          a.lse = r.a2a_lse_recv.as<float>();
          a.lse_src_stride = std::int64_t(B) * p.J;
        }
        a.dst = r.out.get();
        a.dst_row_stride = std::int64_t(p.J) * p.D;
        a.dst_head_stride = p.D;
        a.merged_lse = {r.merged_lse.as<float>(), p.J, 1};
        a.stamps = row_stamps(p, r, true);
        ops::launch_combine(a, r.stream);
        break;
      }
      default:
        break;
    }
  }
  FinalOutput final_output(const StepPlan& p, const RankState& r) const override {
    return {&r.out, r.rank * p.J, p.J, 1, &r.merged_lse, 0, p.J};
  }

 private:
  bool two_;
};

}  // namespace

const HwStrategy& ag_rs_strategy() {
  static const GatherStrategy s(true);
  return s;
}

const HwStrategy& ag_ar_strategy() {
  static const GatherStrategy s(false);
  return s;
}

const HwStrategy& a2a_strategy() {
  static const A2aStrategy s(false);
  return s;
}

const HwStrategy& a2a_two_call_strategy() {
  static const A2aStrategy s(true);
  return s;
}

}  // namespace dcpsim::hw
