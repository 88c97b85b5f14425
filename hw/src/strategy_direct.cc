// The direct (one-shot) merge on hardware: one kernel per rank (ops/direct_merge.cu) over owner windows laid
// out as dcpsim/hw/direct_protocol.h says.
//   threads / MPI  every rank's window is an NCCL symmetric window (nccl_window.h); the kernel stores into
//                  the peers' windows through the LSA team's pointers, one launch per rank.
//   --emulate      the windows are plain allocations on the one device, and the first rank to enqueue the
//                  phase launches the kernel for every logical rank at once (blockIdx.y = rank): a kernel
//                  that waits for flags cannot wait behind a later launch on the same stream. The phase is
//                  charged to rank 0; the other ranks' direct_merge phases are empty.
#include <vector>

#include "dcpsim/error.h"
#include "dcpsim/hw/direct_protocol.h"
#include "nccl_window.h"
#include "strategy.h"

namespace dcpsim::hw {
namespace {

struct DirectState final : MergeState {
  DeviceBuffer control;  // [2] u64: the last epoch, block arrivals
  DeviceBuffer window;   // emulation: this rank's window
  DeviceBuffer windows;  // emulation: every owner's window base (rank 0 holds the table)
  DeviceBuffer launch;   // DirectRank entries this rank launches (emulation: rank 0 all N, others none)
  int launch_ranks = 0;
  bool same_device = false;               // emulation: every window on this rank's device
  unsigned char* const* table = nullptr;  // the window bases this rank's launch addresses (device array)
};

DirectState& state(RankState& r) {
  return static_cast<DirectState&>(*r.merge);
}

DirectLayout direct_layout(const StepPlan& p) {
  return {p.N, p.rows_total, p.J, p.D, static_cast<int>(ops::elem_bytes(p.out))};
}

ops::DirectRank rank_args(const StepPlan& p, RankState& r, unsigned char* const* windows) {
  ops::DirectRank d;
  d.rank = r.rank;
  d.o = r.o.get();
  d.o_row_stride = std::int64_t(p.H) * p.D;
  d.o_head_stride = p.D;
  d.lse = r.lse.as<float>();
  d.lse_row_stride = p.H;
  d.lse_head_stride = 1;
  d.windows = windows;
  d.out = r.out.get();
  d.merged_lse = r.merged_lse.as<float>();
  d.control = state(r).control.as<unsigned long long>();
  d.error = r.error.as<int>();
  d.stamps = row_stamps(p, r, true);
  return d;
}

class DirectStrategy final : public HwStrategy {
 public:
  std::vector<Phase> phases() const override { return {Phase::kDirectMerge}; }

  void allocate(const StepPlan& p, RankState& r) const override {
    auto st = std::make_unique<DirectState>();
    st->control = DeviceBuffer(2 * sizeof(unsigned long long));
    DCPSIM_CUDA(cudaMemset(st->control.get(), 0, st->control.bytes()));
    r.error = DeviceBuffer(sizeof(int));
    DCPSIM_CUDA(cudaMemset(r.error.get(), 0, r.error.bytes()));
    r.out = DeviceBuffer(std::size_t(p.rows_total) * p.J * p.D * ops::elem_bytes(p.out));
    r.merged_lse = DeviceBuffer(std::size_t(p.rows_total) * p.J * sizeof(float));
    r.merge = std::move(st);
  }

  void connect(const StepPlan& p, const RunConfig&, Ranks& ranks, const StrategyLink& link) const override {
    const DirectLayout l = direct_layout(p);
    if (link.emulated) {
      std::vector<unsigned char*> bases;
      for (auto& r : ranks) {
        DirectState& st = state(*r);
        st.window = DeviceBuffer(l.bytes());
        DCPSIM_CUDA(cudaMemset(st.window.get(), 0, l.flags_bytes()));
        bases.push_back(st.window.as<unsigned char>());
      }
      DirectState& first = state(*ranks.front());
      first.windows = upload(bases);
      std::vector<ops::DirectRank> all;
      for (auto& r : ranks) all.push_back(rank_args(p, *r, first.windows.as<unsigned char* const>()));
      first.launch = upload(all);
      first.launch_ranks = static_cast<int>(all.size());
      first.same_device = true;
      first.table = first.windows.as<unsigned char* const>();
      return;
    }
    std::vector<int> devices;
    for (auto& r : ranks) devices.push_back(r->device);
    link.windows->open(link.comms, devices, l.bytes(), l.flags_bytes());
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      RankState& r = *ranks[i];
      DCPSIM_CUDA(cudaSetDevice(r.device));
      DirectState& st = state(r);
      st.launch = upload(std::vector<ops::DirectRank>{
          rank_args(p, r, link.windows->at(i).peers.as<unsigned char* const>())});
      st.launch_ranks = 1;
      st.table = link.windows->at(i).peers.as<unsigned char* const>();
    }
  }

  void enqueue(Phase, const StepPlan& p, const RunConfig& c, RankState& r, Exchange&) const override {
    const DirectState& st = state(r);
    if (st.launch_ranks == 0) return;  // emulation: merged by rank 0's launch
    auto a = ops::with_dims<ops::DirectMergeArgs>(p.merge_dims(p.H));
    a.ranks = st.launch.as<const ops::DirectRank>();
    a.launch_ranks = st.launch_ranks;
    a.timeout_ns = c.direct_timeout_ms * 1000000LL;
    a.same_device = st.same_device;
    a.windows = st.table;
    ops::launch_direct_merge(a, r.stream);
  }

  FinalOutput final_output(const StepPlan& p, const RankState& r) const override {
    return {&r.out, r.rank * p.J, p.J, 1, &r.merged_lse, 0, p.J};
  }
};

}  // namespace

const HwStrategy& direct_strategy() {
  static const DirectStrategy s;
  return s;
}

}  // namespace dcpsim::hw
