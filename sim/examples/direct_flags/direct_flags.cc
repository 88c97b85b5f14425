// Direct (one-shot) merge with flags on 4 ranks, one kernel per rank: after attention, each rank's merge
// kernel reads its epoch, stores its [B, H/N, D] block and LSEs into the 3 owners' windows over NVLink (3
// writes share its uplink, 3 arrive on each downlink), fences, sets a flag per owner, polls until it has
// seen the 3 peers' flags, then combines. Hand calculation of the merge, from the kernel's start on rank 0
// to its end:
//   epoch + hop + 3 * block / bw             data written (3 flows per port)
//   + (flag latency - hop) + hop + 3 * 8 B / bw   fence, then the flag store lands
//   + poll interval / 2                      the poller sees it
//   + combine                                floor + bytes / (HBM bandwidth * efficiency)
// Uniform contexts keep the ranks symmetric. Limits: one NVLink domain.
#include <cmath>
#include <cstdio>

#include "dcpsim/models/cost_kernels.h"
#include "dcpsim/models/profile.h"
#include "dcpsim/sim/simulator.h"

using namespace dcpsim;

int main() {
  models::HardwareProfile p = models::load_profile("h200-sxm");
  p.nvlink.measured_bandwidth = {400, models::Unit::kGBps, "example"};
  p.nvlink.hop_latency = {0.5, models::Unit::kMicroseconds, "example"};
  p.signal.epoch_handshake = {0.5, models::Unit::kMicroseconds, "example"};
  p.signal.flag_write_latency = {1, models::Unit::kMicroseconds, "example"};
  p.signal.poll_interval = {2, models::Unit::kMicroseconds, "example"};
  p.launch.dependent_gap = {0.1, models::Unit::kMicroseconds, "example"};
  // The stores run at the link's bandwidth and the ranks enter together: no separate peer-store bandwidth, no
  // arrival skew, no in-step term (the profile's numbers fitted on real two-GPU steps).
  p.nvlink.store_bandwidth.reset();
  p.nccl.arrival_skew_graph.reset();
  p.nccl.in_step_graph.reset();

  models::Scenario s;
  s.dcp = 4;
  s.heads = 128;
  s.contexts = models::uniform_contexts(16, 32768);
  s.strategy = models::Strategy::kDirect;
  const sim::StepResult r = sim::Simulator(p).run(s);

  // block = 16 rows * 32 heads * (512 * 2 B + 4 B) = 526336 B
  const double block = 16 * 32 * (512 * 2 + 4);
  const double combine = models::direct_combine_time(p, models::merge_shape(s));
  const double hand =
      0.5e-6 + 0.5e-6 + 3 * block / 400e9 + (1e-6 - 0.5e-6) + 0.5e-6 + 3 * 8 / 400e9 + 1e-6 + combine;
  const double simulated = r.phase(0, "combine")->end_s - r.phase(0, "push")->begin_s;
  std::printf("direct merge, 4 ranks, %d rows, block %.0f B, combine %.3f us\n", s.rows(), block,
              combine * 1e6);
  for (int rank = 0; rank < 4; ++rank) {
    std::printf("  rank %d  push %8.3f - %8.3f  wait %8.3f - %8.3f  combine %8.3f - %8.3f us\n", rank,
                r.phase(rank, "push")->begin_s * 1e6, r.phase(rank, "push")->end_s * 1e6,
                r.phase(rank, "wait")->begin_s * 1e6, r.phase(rank, "wait")->end_s * 1e6,
                r.phase(rank, "combine")->begin_s * 1e6, r.phase(rank, "combine")->end_s * 1e6);
  }
  const double error = std::abs(simulated - hand) / hand;
  std::printf("merge simulated %.3f us, hand alpha-beta %.3f us: %s\n", simulated * 1e6, hand * 1e6,
              error <= 1e-3 ? "within 0.1%" : "DIFFERENT");
  return error <= 1e-3 ? 0 : 1;
}
