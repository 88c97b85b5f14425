// Bad requests fail with one clear InputError naming the value; a simulation that cannot finish is a
// RuntimeError, never a hang or a silently short result.
#include <gtest/gtest.h>

#include <xbt/log.h>

#include <string>

#include "../../sim/src/activity_graph.h"
#include "../../sim/src/sim_engine.h"
#include "dcpsim/error.h"
#include "dcpsim/sim/simgrid_log.h"
#include "sim_test_support.h"

XBT_LOG_NEW_DEFAULT_CATEGORY(dcpsim_errors_test, "messages the simulator tests log through SimGrid");

namespace dcpsim::sim {
namespace {

using models::Strategy;
using testing::builtin;
using testing::mla;

std::string input_error(const Simulator& sim, const models::Scenario& s) {
  try {
    sim.run(s);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Errors, HeadsNotDivisibleByTheGroupForHeadScatteringStrategies) {
  const Simulator sim(builtin("h200-sxm"));
  for (Strategy st : {Strategy::kAgRs, Strategy::kA2a, Strategy::kDirect, Strategy::kRowStream}) {
    const std::string what = input_error(sim, mla(3, 128, 2, 1024, st));
    EXPECT_NE(what.find("128"), std::string::npos) << what;
    EXPECT_NE(what.find("3"), std::string::npos) << what;
  }
  EXPECT_EQ(input_error(sim, mla(3, 128, 2, 1024, Strategy::kAgAr)), "");  // AG+AR keeps every head
}

TEST(Errors, GroupBeyondOneDomainWithoutAnInterNodeFabric) {
  models::HardwareProfile p = builtin("h200-sxm");
  p.internode.bandwidth.value = 0;  // a single box: no NICs between nodes
  const Simulator sim(p);
  EXPECT_EQ(input_error(sim, mla(8, 128, 2, 1024, Strategy::kAgRs)), "");
  const std::string what = input_error(sim, mla(16, 128, 2, 1024, Strategy::kAgRs));
  EXPECT_NE(what.find("dcp 16"), std::string::npos) << what;
  EXPECT_NE(what.find("inter-node"), std::string::npos) << what;
}

TEST(Errors, GroupLargerThanThePlatform) {
  const Simulator sim(builtin("h200-sxm"));
  const std::string what = input_error(sim, mla(kDefaultMaxGpus + 8, 8, 1, 1024, Strategy::kAgAr));
  EXPECT_NE(what.find("exceeds"), std::string::npos) << what;
}

TEST(Errors, BadOptionsAndProfiles) {
  SimOptions options;
  options.peers_in_flight = 0;
  EXPECT_THROW(Simulator(builtin("h200-sxm"), options), InputError);
  models::HardwareProfile p = builtin("b200");
  p.nvlink.measured_bandwidth.value = -1;
  EXPECT_THROW(Simulator{p}, InputError);
  const Simulator sim(builtin("b200"));
  EXPECT_THROW(sim.run_collective(models::Collective::kAllGather, 4, 1024, {0.0, 1.0}), InputError);
  models::Scenario empty = mla(2, 8, 1, 1024, Strategy::kAgRs);
  empty.contexts.clear();
  EXPECT_THROW(sim.run(empty), InputError);
}

TEST(Errors, AGraphThatCannotFinishIsARuntimeError) {
  detail::ActivityGraph g;
  const detail::NodeId a = g.latency(1e-6);
  const detail::NodeId b = g.join();
  const detail::NodeId c = g.join();
  g.after(a, b);
  g.after(c, b);
  g.after(b, c);  // b and c wait for each other: those "ranks" never finish
  g.label(b, "rank 1 combine");
  try {
    g.run(detail::SimEngine::instance());
    FAIL() << "expected a RuntimeError";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1 combine"), std::string::npos) << e.what();
  }
  EXPECT_GE(g.end(a), 1e-6 * (1 - 1e-9));  // what could run did run
  // The engine is still usable afterwards.
  EXPECT_GT(Simulator(builtin("b200")).run(mla(2, 8, 1, 1024, Strategy::kAgRs)).step_latency_s, 0.0);
}

// SimGrid's log lines are dcpsim's to report: nothing reaches stderr, a simulator error carries them, and a
// SimGrid failure that aborts says what it was in one line.
TEST(Errors, SimGridLogLinesAreKeptNotPrinted) {
  detail::SimEngine::instance();  // SimGrid's engine exists, its logging routed
  ::testing::internal::CaptureStderr();
  XBT_CRITICAL("link %s has no bandwidth", "nvlink7");
  XBT_WARN("a warning");
  XBT_INFO("an info line (below the threshold)");
  const std::string printed = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(printed, "");
  const std::string kept = take_simgrid_log();
  EXPECT_NE(kept.find("link nvlink7 has no bandwidth"), std::string::npos) << kept;
  EXPECT_NE(kept.find("a warning"), std::string::npos) << kept;
  EXPECT_EQ(kept.find("info line"), std::string::npos) << kept;
  EXPECT_EQ(take_simgrid_log(), "");  // taken

  XBT_CRITICAL("the scenario's links are gone");
  detail::ActivityGraph g;
  const detail::NodeId b = g.join();
  const detail::NodeId c = g.join();
  g.after(b, c);
  g.after(c, b);
  try {
    g.run(detail::SimEngine::instance());  // a new scenario: earlier lines are forgotten
    FAIL() << "expected a RuntimeError";
  } catch (const RuntimeError& e) {
    EXPECT_EQ(std::string(e.what()).find("links are gone"), std::string::npos) << e.what();
  }
}

TEST(ErrorsDeathTest, SimGridAbortIsOneLine) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        detail::SimEngine::instance();
        xbt_die("platform %s is broken", "d8");
      },
      "^dcpsim: error: SimGrid: .*platform d8 is broken\n$");
}

}  // namespace
}  // namespace dcpsim::sim
