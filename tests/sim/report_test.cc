// What `dcpsim simulate` prints and writes: the text summary and the JSON carry the step, every phase, every
// rank and the flow grain, with the numbers of the StepResult they came from; spreads use the usual median.
#include <gtest/gtest.h>

#include <string>

#include "dcpsim/models/kernel_table.h"
#include "dcpsim/sim/report.h"
#include "sim_test_support.h"

namespace dcpsim::sim {
namespace {

using models::Strategy;
using testing::builtin;
using testing::mla;

int count_lines(const std::string& text) {
  int n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

TEST(Report, SpreadTakesTheMiddleOrTheMeanOfTheTwoMiddleValues) {
  const Spread odd = spread({5.0, 1.0, 3.0});
  EXPECT_EQ(odd.min, 1.0);
  EXPECT_EQ(odd.median, 3.0);
  EXPECT_EQ(odd.max, 5.0);
  EXPECT_EQ(spread({4.0, 1.0, 3.0, 2.0}).median, 2.5);
}

TEST(Report, SummaryAndJsonCarryTheResult) {
  for (int n : {8, 24}) {
    const StepResult r = Simulator(builtin("gb200-nvl72")).run(mla(n, 144, 4, 8192, Strategy::kDirect));
    const std::string text = format_summary(r);
    EXPECT_NE(text.find("step latency"), std::string::npos);
    for (const PhaseSpan& p : r.ranks[0].phases)
      EXPECT_NE(text.find("  " + p.name), std::string::npos) << p.name;
    // Bundles are announced only when used (auto: above 16 ranks).
    EXPECT_EQ(text.find("flows: bundled") != std::string::npos, n > kBundleAboveRanks) << n;
    EXPECT_EQ(r.bundled_flows, n > kBundleAboveRanks);
    EXPECT_GE(count_lines(text), n + 5);  // header, plans, phase table, one line per rank

    const nlohmann::json j = summary_json(r);
    EXPECT_EQ(j.at("flows"), n > kBundleAboveRanks ? "bundle" : "pair");
    EXPECT_DOUBLE_EQ(j.at("step_latency_us").get<double>(), r.step_latency_s * 1e6);
    EXPECT_DOUBLE_EQ(j.at("merge_latency_us").get<double>(), r.merge_latency_s * 1e6);
    ASSERT_EQ(j.at("ranks").size(), static_cast<std::size_t>(n));
    EXPECT_DOUBLE_EQ(j.at("ranks").at(n - 1).at("done_us").get<double>(), r.ranks[n - 1].done_s * 1e6);
    EXPECT_DOUBLE_EQ(j.at("ranks").at(0).at("output_ready").at("max_us").get<double>(),
                     spread(r.ranks[0].output_ready_s).max * 1e6);
  }
}

TEST(Report, AnFp8CacheSaysItsAttentionIsModelled) {
  models::Scenario s = mla(8, 128, 4, 8192, Strategy::kAgRs);
  const Simulator sim(builtin("h100-sxm"));
  EXPECT_EQ(format_summary(sim.run(s)).find("fp8 KV cache"), std::string::npos);
  s.kv_dtype = models::DType::kFP8E4M3;
  const std::string text = format_summary(sim.run(s));
  EXPECT_NE(text.find("fp8 KV cache: attention modelled"), std::string::npos) << text;
}

// With an fp8-KV table covering every rank's attention (`hw sweep --kv-dtype fp8`), the summary says so and
// no longer that the attention is modelled; the JSON's figures say table. Outside the table, modelled again.
TEST(Report, AnFp8TableMakesTheFp8AttentionMeasured) {
  models::HardwareProfile p = builtin("h100-sxm");
  models::KernelTables t;
  t.provenance.device = "NVIDIA H100 80GB HBM3";
  models::KernelTable k{models::TableKernel::kAttention, "mla qk576 d512 fp8 flashinfer", {}, {}, {}, {}};
  for (double h : {64.0, 128.0})
    for (double b : {1.0, 4.0, 16.0})
      for (double n : {512.0, 1024.0, 2048.0})
        k.points.push_back({{h, b, n}, 20000.0 + 10.0 * n, 10, 1, 1e9});
  k.finalize("test");
  t.tables.push_back(k);
  p.tables.push_back(t);
  const Simulator sim(p);
  models::Scenario s = mla(8, 128, 4, 8192, Strategy::kAgRs);  // 1,024 tokens per rank
  s.kv_dtype = models::DType::kFP8E4M3;
  const StepResult r = sim.run(s);
  const std::string text = format_summary(r);
  EXPECT_NE(text.find("fp8 KV cache: attention from the profile's fp8-KV tables"), std::string::npos) << text;
  EXPECT_EQ(text.find("modelled"), std::string::npos) << text;
  int attention = 0;
  const nlohmann::json j = summary_json(r);
  for (const auto& f : j.at("kernel_figures").at("figures")) {
    if (f.at("kernel") != "attention") continue;
    ++attention;
    EXPECT_EQ(f.at("source"), "table");
  }
  EXPECT_EQ(attention, 8);                          // one per rank
  s.contexts = models::uniform_contexts(64, 8192);  // more rows than the table measured
  EXPECT_NE(format_summary(sim.run(s)).find("fp8 KV cache: attention modelled"), std::string::npos);
}

}  // namespace
}  // namespace dcpsim::sim
