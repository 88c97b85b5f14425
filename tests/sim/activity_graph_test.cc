// The activity graph runs its own events ahead of SimGrid's clock only while nothing SimGrid runs could end
// first: a chain of latencies crossing kernels that start and end on the way keeps every date.
#include <gtest/gtest.h>

#include <vector>

#include "../../sim/src/activity_graph.h"
#include "../../sim/src/platform.h"
#include "../../sim/src/sim_engine.h"

namespace dcpsim::sim {
namespace {

constexpr double kUs = 1e-6;
// Scenario clocks are spaced 2^-40 s (~0.9 ps) apart, so each 1 us latency lands within a picosecond of it.
constexpr double kClock = 1e-11;

TEST(ActivityGraph, LatencyChainsAndKernelsKeepTheirDatesWhenRunAhead) {
  detail::SimEngine& engine = detail::SimEngine::instance();
  detail::Platform& platform = engine.platform(8);
  detail::ActivityGraph g;
  // A 10 us kernel on GPU 0 from the start; beside it a chain of twenty 1 us latencies. The 5th latency
  // starts a 2 us kernel on GPU 1 (SimGrid must start it at 5 us, though the chain has run ahead of its
  // clock); the 8th waits for that kernel too; a 0.5 us latency follows the long kernel.
  const detail::NodeId a = g.exec(platform.gpu(0), 10 * kUs);
  std::vector<detail::NodeId> chain;
  for (int k = 0; k < 20; ++k) {
    chain.push_back(g.latency(kUs));
    if (k > 0) g.after(chain[k - 1], chain[k]);
  }
  const detail::NodeId b = g.exec(platform.gpu(1), 2 * kUs);
  g.after(chain[4], b);
  const detail::NodeId joined = g.join_of({chain[6], b});
  const detail::NodeId late = g.latency(3 * kUs);  // 3 us after both the 7th latency and the kernel
  g.after(joined, late);
  const detail::NodeId x = g.after_latency(a, 0.5 * kUs);
  g.run(engine);

  for (int k = 0; k < 20; ++k) EXPECT_NEAR(g.end(chain[k]), (k + 1) * kUs, kClock) << k;
  EXPECT_NEAR(g.start(b), 5 * kUs, kClock);
  EXPECT_NEAR(g.end(b), 7 * kUs, kClock);
  EXPECT_NEAR(g.end(late), 10 * kUs, kClock);  // max(7, 7) + 3
  EXPECT_NEAR(g.end(a), 10 * kUs, kClock);
  EXPECT_NEAR(g.end(x), 10.5 * kUs, kClock);
  EXPECT_EQ(g.simgrid_activities(), 2);
}

}  // namespace
}  // namespace dcpsim::sim
