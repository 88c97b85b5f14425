// What `dcpsim simulate` prints and writes: the text summary and the JSON carry the step, every phase, every
// rank and the flow grain, with the numbers of the StepResult they came from; spreads use the usual median.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "dcpsim/models/kernel_table.h"
#include "dcpsim/sim/report.h"
#include "sim_test_support.h"

namespace dcpsim::sim {
namespace {

using models::Strategy;
using testing::builtin;
using testing::gqa;
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
  const Simulator sim(builtin("h200-sxm"));  // no fp8-KV tables (h100-sxm has them)
  EXPECT_EQ(format_summary(sim.run(s)).find("fp8 KV cache"), std::string::npos);
  s.kv_dtype = models::DType::kFP8E4M3;
  const std::string text = format_summary(sim.run(s));
  EXPECT_NE(text.find("fp8 KV cache: attention modelled"), std::string::npos) << text;
  EXPECT_NE(text.find("optimistic on Hopper"), std::string::npos) << text;
  // A profile whose attention is vLLM's Triton MLA kernel names that kernel, not FlashInfer's Hopper caveat.
  const Simulator rtx(builtin("rtx-pro-6000"));
  const StepResult r = rtx.run(s);
  EXPECT_TRUE(r.triton_mla_attention);
  const std::string triton = format_summary(r);
  EXPECT_NE(triton.find("fp8 KV cache: attention modelled as vLLM's Triton MLA kernel"), std::string::npos)
      << triton;
  EXPECT_EQ(triton.find("optimistic on Hopper"), std::string::npos) << triton;
  // Row-stream's pushing kernel is dcpsim's own, not vLLM's: the note does not name the Triton kernel.
  s.strategy = Strategy::kRowStream;
  const StepResult pushing = rtx.run(s);
  EXPECT_FALSE(pushing.triton_mla_attention);
  EXPECT_EQ(format_summary(pushing).find("vLLM's Triton MLA"), std::string::npos);
}

// A profile with one fp8-KV attention table (`hw sweep --kv-dtype fp8` writes such) over heads x rows x
// tokens.
models::HardwareProfile with_fp8_table(const std::string& key, std::vector<double> heads,
                                       std::vector<double> tokens) {
  models::HardwareProfile p = builtin("h100-sxm");
  for (models::KernelTables& file : p.tables)  // the built-in's own fp8-KV tables leave: this one alone
    std::erase_if(file.tables,
                  [](const models::KernelTable& k) { return k.key.find(" fp8 ") != std::string::npos; });
  models::KernelTables t;
  t.provenance.device = "NVIDIA H100 80GB HBM3";
  models::KernelTable k{models::TableKernel::kAttention, key, {}, {}, {}, {}, {}, {}, {}};
  for (double h : heads)
    for (double b : {1.0, 4.0, 16.0})
      for (double n : tokens) k.points.push_back({{h, b, n}, 20000.0 + 10.0 * n, 10, 1, 1e9});
  k.finalize("test");
  t.tables.push_back(k);
  p.tables.push_back(t);
  return p;
}

std::ptrdiff_t count_figures(const StepResult& r, const std::string& kernel) {
  return std::count_if(r.kernel_figures.begin(), r.kernel_figures.end(),
                       [&](const KernelFigure& f) { return f.kernel == kernel; });
}

// With an fp8-KV table covering every rank's attention, the summary says so and no longer that the attention
// is modelled; the JSON's figures say table; the step repacks the gathered query for FlashInfer's kernel,
// which measured it (as the runner does, GQA too). Outside the table: modelled again, no implementation
// assumed.
TEST(Report, AnFp8TableMakesTheFp8AttentionMeasured) {
  const Simulator sim(with_fp8_table("mla qk576 d512 fp8 flashinfer", {64, 128}, {512, 1024, 2048}));
  models::Scenario s = mla(8, 128, 4, 8192, Strategy::kAgRs);  // 1,024 tokens per rank
  s.kv_dtype = models::DType::kFP8E4M3;
  const StepResult r = sim.run(s);
  const std::string text = format_summary(r);
  EXPECT_NE(text.find("fp8 KV cache: attention from the profile's fp8-KV tables"), std::string::npos) << text;
  EXPECT_EQ(text.find("modelled"), std::string::npos) << text;
  const nlohmann::json j = summary_json(r);
  for (const auto& f : j.at("kernel_figures").at("figures"))
    EXPECT_TRUE(f.at("kernel") != "attention" || f.at("source") == "table") << f;
  EXPECT_EQ(count_figures(r, "attention"), 8);  // one per rank
  EXPECT_EQ(count_figures(r, "q_repack"), 8);
  s.contexts = models::uniform_contexts(64, 8192);  // more rows than the table measured
  const StepResult outside = sim.run(s);
  EXPECT_NE(format_summary(outside).find("fp8 KV cache: attention modelled"), std::string::npos);
  EXPECT_EQ(count_figures(outside, "q_repack"), 0);

  models::Scenario g =
      gqa(4, 32, 4, 8192, Strategy::kAgRs);  // 32 heads over 8 KV heads, 2,048 tokens per rank
  g.kv_dtype = models::DType::kFP8E4M3;
  const StepResult gr =
      Simulator(with_fp8_table("gqa qk128 d128 g4 fp8 flashinfer", {16, 32}, {1024, 2048})).run(g);
  EXPECT_NE(format_summary(gr).find("attention from the profile's fp8-KV tables"), std::string::npos);
  EXPECT_EQ(count_figures(gr, "q_repack"), 4);
}

}  // namespace
}  // namespace dcpsim::sim
