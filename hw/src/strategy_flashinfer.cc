// FlashInfer's fused DCP all-to-all + LSE merge as a peer strategy (flashinfer-a2a): one cooperative kernel
// per rank (ops/flashinfer_dcp_merge.cu) over dcpsim's own NCCL symmetric windows, laid out as FlashInfer's
// launcher lays its workspace out (FlashInferDcpLayout). FlashInfer reads a rank's O [B][H][D] as
// [B][H/N][N][D], so owner r ends up with heads r, r + N, ... (models::interleaves_heads), and it returns no
// merged LSE. It needs every rank on its own GPU of one NVLink domain, so --emulate cannot run it.
#include <string>
#include <vector>

#include "dcpsim/error.h"
#include "dcpsim/hw/direct_protocol.h"
#include "nccl_window.h"
#include "strategy.h"

namespace dcpsim::hw {
namespace {

struct FlashInferState final : MergeState {
  void* window = nullptr;  // ncclWindow_t
  unsigned char* base = nullptr;
};

FlashInferDcpLayout flashinfer_layout(const StepPlan& p) {
  return {p.N, p.rows_total * p.J, p.D, static_cast<int>(ops::elem_bytes(p.out))};
}

class FlashInferStrategy final : public HwStrategy {
 public:
  std::vector<Phase> phases() const override { return {Phase::kFlashInferMerge}; }

  void check(const StepPlan& p, const RunConfig& c) const override {
    const std::string why = strategy_unavailable(models::Strategy::kFlashInferA2a, c.mode, p.N);
    if (!why.empty()) throw InputError("--strategy flashinfer-a2a: " + why);
    if (p.out == ops::Elem::kF32)
      throw InputError("--strategy flashinfer-a2a: FlashInfer's fused merge writes bf16 or fp16, not fp32");
  }

  void allocate(const StepPlan& p, RankState& r) const override {
    r.out = DeviceBuffer(std::size_t(p.rows_total) * p.J * p.D * ops::elem_bytes(p.out));
    r.merge = std::make_unique<FlashInferState>();
  }

  void connect(const StepPlan& p, const RunConfig&, Ranks& ranks, const StrategyLink& link) const override {
    if (link.emulated) throw InputError("--strategy flashinfer-a2a cannot run under --emulate");
    const FlashInferDcpLayout l = flashinfer_layout(p);
    std::vector<int> devices;
    for (auto& r : ranks) devices.push_back(r->device);
    link.windows->open(link.comms, devices, l.bytes(), l.payload_offset());
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      auto& st = static_cast<FlashInferState&>(*ranks[i]->merge);
      st.window = link.windows->at(i).win;
      st.base = static_cast<unsigned char*>(link.windows->at(i).base);
    }
  }

  void enqueue(Phase, const StepPlan& p, const RunConfig&, RankState& r, Exchange&) const override {
    const auto& st = static_cast<const FlashInferState&>(*r.merge);
    auto a = ops::with_dims<ops::FlashInferDcpArgs>(p.merge_dims(p.H));
    a.rank = r.rank;
    a.o = r.o.get();
    a.lse = r.lse.as<float>();
    a.window = st.window;
    a.workspace = st.base;
    a.out = r.out.get();
    // Launched without the PDL attribute even under --launch pdl: FlashInfer's kernel does not wait for its
    // predecessor (griddepcontrol.wait), so it runs in full stream order.
    ops::launch_flashinfer_dcp_merge(a, r.stream);
  }

  FinalOutput final_output(const StepPlan& p, const RankState& r) const override {
    return {&r.out, r.rank, p.J, p.N, nullptr, 0, 0};
  }
};

}  // namespace

const HwStrategy& flashinfer_strategy() {
  static const FlashInferStrategy s;
  return s;
}

}  // namespace dcpsim::hw
