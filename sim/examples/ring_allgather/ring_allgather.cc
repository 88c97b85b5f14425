// Ring all-gather on 8 ranks of one NVSwitch: NCCL's ring, Simple protocol, realised step by step as SimGrid
// transfers, against the alpha-beta hand calculation
//   T = base + (N - 1) * (step latency + bytes per rank / bandwidth).
// Every number comes from the profile set up below (h200-sxm with round values), so the calculation can be
// redone by hand. Limits: one NVLink domain, ranks entering together, nothing else on the links.
#include <cmath>
#include <cstdio>

#include "dcpsim/models/profile.h"
#include "dcpsim/sim/simulator.h"

using namespace dcpsim;

int main() {
  models::HardwareProfile p = models::load_profile("h200-sxm");
  p.nvlink.measured_bandwidth = {400, models::Unit::kGBps, "example"};
  p.nvlink.hop_latency = {0.5, models::Unit::kMicroseconds, "example"};
  auto& simple = p.nccl.ring[static_cast<int>(models::Protocol::kSimple)];
  simple.base_latency = {8, models::Unit::kMicroseconds, "example"};
  simple.nvlink_hop_latency = {3, models::Unit::kMicroseconds, "example"};
  p.nccl.protocol_efficiency[static_cast<int>(models::Protocol::kSimple)] = {1, models::Unit::kRatio,
                                                                             "example"};

  sim::SimOptions options;
  options.collective = {models::Algorithm::kRing, models::Protocol::kSimple};
  const sim::Simulator simulator(p, options);
  const double bytes = 1 << 20;  // each rank's shard
  const sim::CollectiveRun run = simulator.run_collective(models::Collective::kAllGather, 8, bytes);

  // Hand calculation: 8 us + 7 * (3 us + 1 MiB / 400 GB/s) = 8 + 7 * (3 + 2.62144) us = 47.35008 us.
  const double hand = 8e-6 + 7 * (3e-6 + bytes / 400e9);
  std::printf("ring all-gather, 8 ranks, 1 MiB per rank, ring/simple, %d steps\n", run.plan.steps);
  for (int r = 0; r < 8; ++r)
    std::printf("  rank %d  enters %8.3f us  leaves %8.3f us\n", r, run.begin_s[r] * 1e6, run.end_s[r] * 1e6);
  const double error = std::abs(run.time_s - hand) / hand;
  std::printf("simulated %.3f us, hand alpha-beta %.3f us, plan %.3f us: %s\n", run.time_s * 1e6, hand * 1e6,
              run.plan.analytic_time_s * 1e6, error <= 1e-3 ? "within 0.1%" : "DIFFERENT");
  return error <= 1e-3 ? 0 : 1;
}
