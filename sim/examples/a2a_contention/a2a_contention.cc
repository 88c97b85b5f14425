// All-to-all under contention: every rank sends one block to each of the 7 others at once, so 7 flows share
// each NVLink uplink and 7 share each downlink (max-min: 1/7 of the link each). Against the hand calculation
//   T = base + hop latency + 7 * block / (bandwidth * protocol efficiency),
// and the same block sent between 2 ranks alone (no sharing): T = base + hop latency + block / bandwidth.
// Limits: one NVLink domain, ranks entering together, NCCL's send/recv Simple protocol.
#include <cmath>
#include <cstdio>

#include "dcpsim/models/profile.h"
#include "dcpsim/sim/simulator.h"

using namespace dcpsim;

int main() {
  models::HardwareProfile p = models::load_profile("h200-sxm");
  p.nvlink.measured_bandwidth = {400, models::Unit::kGBps, "example"};
  p.nvlink.hop_latency = {0.5, models::Unit::kMicroseconds, "example"};
  p.nccl.p2p_base_latency = {6, models::Unit::kMicroseconds, "example"};
  p.nccl.protocol_efficiency[static_cast<int>(models::Protocol::kSimple)] = {1, models::Unit::kRatio,
                                                                             "example"};
  // NCCL's model alone: no measured tables, one p2p base latency for every protocol.
  p.comm_tables.clear();
  p.nccl.p2p_simple_base_latency.reset();

  sim::SimOptions options;
  options.collective.protocol = models::Protocol::kSimple;
  const sim::Simulator simulator(p, options);
  const double block = 512 * 1024;

  const sim::CollectiveRun pair = simulator.run_collective(models::Collective::kAllToAll, 2, 2 * block);
  const sim::CollectiveRun eight = simulator.run_collective(models::Collective::kAllToAll, 8, 8 * block);

  // Hand: 6 us + 0.5 us + 512 KiB / 400 GB/s = 7.810720 us; with 7 flows per port: 6.5 + 7 * 1.31072 us.
  const double hand_pair = 6e-6 + 0.5e-6 + block / 400e9;
  const double hand_eight = 6e-6 + 0.5e-6 + 7 * block / 400e9;
  const double e_pair = std::abs(pair.time_s - hand_pair) / hand_pair;
  const double e_eight = std::abs(eight.time_s - hand_eight) / hand_eight;
  std::printf("all-to-all, 512 KiB blocks, p2p/simple\n");
  std::printf("  2 ranks: simulated %.3f us, hand %.3f us\n", pair.time_s * 1e6, hand_pair * 1e6);
  std::printf("  8 ranks: simulated %.3f us, hand %.3f us\n", eight.time_s * 1e6, hand_eight * 1e6);
  for (int r = 0; r < 8; ++r) std::printf("    rank %d leaves %8.3f us\n", r, eight.end_s[r] * 1e6);
  const bool ok = e_pair <= 1e-3 && e_eight <= 1e-3;
  std::printf("%s\n", ok ? "both within 0.1%" : "DIFFERENT");
  return ok ? 0 : 1;
}
