// dcpsim scan: the grid, its shards and its worker processes must give one CSV, identical however the work is
// split, with rows that agree with a direct simulation.
#include <gtest/gtest.h>

#ifdef DCPSIM_WITH_SIMGRID
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "dcpsim/analysis/scan.h"
#include "dcpsim/analysis/whole_model.h"
#include "dcpsim/error.h"
#include "dcpsim/sim/simulator.h"

namespace dcpsim::analysis {
namespace {

std::string read(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string f; std::getline(in, f, ',');) out.push_back(f);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

ScanOptions small_grid() {
  ScanOptions o;
  o.profile = "h200-sxm";
  o.flags.dcp = "1,2,3,4";
  o.flags.heads = "64,128";
  o.flags.head_dim = "512";
  o.flags.batch = "1,8";
  o.flags.context = "4k,32k";
  o.flags.strategy = "all";
  o.chunk_size = 7;  // several chunks per worker
  return o;
}

class Scan : public ::testing::Test {
 protected:
  // One folder per test: ctest runs the Scan tests at once, and one test's part files must not be seen by
  // another's "no part files left behind" check.
  std::filesystem::path dir;
  std::ostringstream log;
  void SetUp() override {
    dir = std::filesystem::path(DCPSIM_BINARY_DIR) / "scan_test" /
          ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
};

TEST_F(Scan, ShardsConcatenateToTheUnshardedCsv) {
  ScanOptions o = small_grid();
  const ScanReport all = run_scan(o, dir / "all.csv", log);
  // 4 dcp x 2 heads x 2 batch x 2 context x 7 strategies, minus dcp 3 with any head-scattering strategy (all
  // but ag-ar).
  EXPECT_EQ(all.scenarios, 4u * 2 * 2 * 2 * 7 - 2u * 2 * 2 * 6);
  EXPECT_EQ(all.skipped.size(), 2u * 2 * 2 * 6);
  const std::string whole = read(dir / "all.csv");
  std::string joined;
  o.jobs = 2;
  for (int i = 0; i < 3; ++i) {
    o.shard_index = i;
    o.shard_count = 3;
    run_scan(o, dir / ("shard" + std::to_string(i) + ".csv"), log);
    joined += read(dir / ("shard" + std::to_string(i) + ".csv"));
  }
  EXPECT_EQ(joined, whole);
  const auto rows = lines(whole);
  ASSERT_EQ(rows.size(), all.scenarios + 1);
  EXPECT_EQ(rows.front(), scan_csv_header());
  const std::size_t columns = fields(rows.front()).size();
  for (const std::string& row : rows) EXPECT_EQ(fields(row).size(), columns) << row;
  // No part files left behind.
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    EXPECT_EQ(entry.path().string().find(".part"), std::string::npos) << entry.path();
  }
}

TEST_F(Scan, JobsDoNotChangeTheCsvAndRowsMatchTheSimulator) {
  ScanOptions o = small_grid();
  o.flags.dcp = "4";
  o.flags.strategy = "ag-rs,direct";
  run_scan(o, dir / "one.csv", log);
  o.jobs = 3;
  o.header = false;
  run_scan(o, dir / "three.csv", log);
  const auto one = lines(read(dir / "one.csv"));
  const auto three = lines(read(dir / "three.csv"));
  ASSERT_EQ(one.size(), three.size() + 1);  // --no-header
  EXPECT_EQ(std::vector<std::string>(one.begin() + 1, one.end()), three);

  // The first row: dcp 4, 64 heads, batch 1, 4k context, ag-rs.
  models::Scenario s;
  s.dcp = 4;
  s.heads = 64;
  s.contexts = models::uniform_contexts(1, 4096);
  s.strategy = models::Strategy::kAgRs;
  const models::HardwareProfile p = models::load_profile("h200-sxm");
  const sim::StepResult r = sim::Simulator(p).run(s);
  EXPECT_EQ(one[1], scan_csv_row(WholeModel(std::nullopt, p, 4, o.whole), "", p, r));
  const auto f = fields(one[1]);
  const auto h = fields(one[0]);
  const auto col = [&](const std::string& name) {
    return f[std::find(h.begin(), h.end(), name) - h.begin()];
  };
  EXPECT_EQ(col("dcp"), "4");
  EXPECT_EQ(col("strategy"), "ag-rs");
  EXPECT_NEAR(std::stod(col("step_latency_us")), r.step_latency_s * 1e6, 1e-6);
  EXPECT_EQ(col("phase_push_us"), "");  // ag-rs has no push phase
  // KV capacity: (143,771 MiB - 60 GiB) / (576 * 2 B * 61 layers) tokens per GPU, 4 times that per group.
  const auto per_gpu =
      static_cast<std::int64_t>((143771.0 * 1048576 - 60.0 * 1073741824.0) / (576.0 * 2 * 61));
  EXPECT_EQ(col("kv_capacity_tokens_per_gpu"), std::to_string(per_gpu));
  EXPECT_EQ(col("kv_capacity_tokens_group"), std::to_string(4 * per_gpu));
  EXPECT_EQ(col("model"), "none");  // geometry flags given: the attention alone
  EXPECT_NEAR(std::stod(col("decode_step_us")), 61 * r.step_latency_s * 1e6, 1e-5);  // no non-attention time
}

TEST_F(Scan, ModelPresetsSetTheGeometryWeightsAndKvBudgetAndSkipInOneLine) {
  ScanOptions o;
  o.flags.model = "deepseek-v3";
  o.flags.tp = "8";
  o.flags.dcp = "2,4,8,16";  // 16 > TP 8: skipped
  o.flags.batch = "4";
  o.flags.context = "8k";
  o.flags.strategy = "ag-rs,direct";
  const ScanReport report = run_scan(o, dir / "model.csv", log);
  EXPECT_EQ(report.scenarios, 6u);
  EXPECT_EQ(report.skipped.size(), 2u);
  EXPECT_EQ(report.combinations, 8u);
  const std::string text = log.str();
  EXPECT_NE(text.find("skipped 2 of 8 combinations"), std::string::npos) << text;
  std::istringstream log_lines(text);
  int skipped_lines = 0;
  for (std::string l; std::getline(log_lines, l);) skipped_lines += l.find("skipped") != std::string::npos;
  EXPECT_EQ(skipped_lines, 1) << text;  // one line for all of them
  const auto rows = lines(read(dir / "model.csv"));
  const auto h = fields(rows[0]);
  for (std::size_t i = 1; i < rows.size(); ++i) {
    const auto f = fields(rows[i]);
    const auto col = [&](const std::string& name) {
      return f[std::find(h.begin(), h.end(), name) - h.begin()];
    };
    const int dcp = std::stoi(col("dcp"));
    EXPECT_EQ(col("model"), "deepseek-v3");
    EXPECT_EQ(col("tp"), "8");
    EXPECT_EQ(std::stoi(col("heads")), 128 * dcp / 8);  // heads x DCP / TP after the query all-gather
    EXPECT_EQ(col("qk_dim"), "576");
    EXPECT_NEAR(std::stod(col("weights_gb")),
                models::weight_bytes_per_gpu(models::load_model("deepseek-v3"), 8) / 1e9, 1e-3);
    const models::HardwareProfile h200 = models::load_profile("h200-sxm");
    const double budget = WholeModel(models::load_model("deepseek-v3"), h200, 8, {}).kv_budget_bytes();
    EXPECT_EQ(col("kv_capacity_tokens_per_gpu"),
              std::to_string(static_cast<std::int64_t>(budget / (1152.0 * 61))));
    EXPECT_GT(std::stod(col("non_attention_us")), 1000.0);  // the MoE's weights take milliseconds per step
    EXPECT_NEAR(std::stod(col("decode_step_us")),
                61 * std::stod(col("step_latency_us")) + std::stod(col("non_attention_us")), 1e-4);
  }
  ScanSummaryOptions best;
  best.best_only = true;
  best.by_tp = true;
  const std::string answer = scan_summary(read(dir / "model.csv"), best);
  EXPECT_EQ(std::count(answer.begin(), answer.end(), '\n'), 1) << answer;
  EXPECT_NE(answer.find("best N="), std::string::npos) << answer;
}

TEST(ScanSummary, BestSizeIsTheFastestWhereTheBatchFits) {
  const std::string head =
      "profile,model,tp,dcp,heads,kv_heads,head_dim,qk_dim,batch,context,strategy,launch,kv_dtype,out_dtype,"
      "interleave,decode_step_us,step_latency_us,merge_latency_us,comm_share,kv_capacity_tokens_per_gpu,"
      "kv_capacity_tokens_group,kv_fits\n";
  const auto row = [](int dcp, const char* strategy, double decode, bool fits) {
    return "p,m,8," + std::to_string(dcp) + ",128,1,512,576,64,32768," + strategy + ",graph,bf16,bf16,1," +
           std::to_string(decode) + ",10,2,0.25,1000,8000," + (fits ? "true" : "false") + "\n";
  };
  const std::string csv = head + row(1, "ag-rs", 900, false) + row(2, "ag-rs", 1200, true) +
                          row(2, "direct", 1100, true) + row(4, "ag-rs", 1000, true) +
                          row(4, "a2a", 1050, true);
  const std::string table = scan_summary(csv, {});
  // One line per size with its best strategy; the best size is 4 (dcp 1 is faster but does not fit).
  EXPECT_NE(table.find("direct"), std::string::npos) << table;
  EXPECT_EQ(table.find("a2a"), std::string::npos) << table;
  EXPECT_TRUE(std::regex_search(table, std::regex("\\*\\s+4\\s+8\\s+128\\s+ag-rs"))) << table;
  EXPECT_EQ(std::count(table.begin(), table.end(), '*'), 1) << table;
  ScanSummaryOptions best;
  best.best_only = true;
  EXPECT_NE(scan_summary(csv, best).find("best N=4 (TP 8) ag-rs: decode step 1.000 ms"), std::string::npos);
  EXPECT_THROW(scan_summary("dcp,heads\n1,2\n", {}), InputError);
}

// Picks choose among production strategies on layouts whose weights fit: a faster research strategy is shown
// beside, marked, and a layout whose weights do not fit says so and never wins.
TEST(ScanSummary, ResearchIsShownNotRankedAndLayoutsThatDoNotFitNeverWin) {
  const std::string head =
      "profile,model,tp,dcp,heads,kv_heads,head_dim,qk_dim,batch,context,strategy,launch,kv_dtype,out_dtype,"
      "interleave,decode_step_us,step_latency_us,merge_latency_us,comm_share,weights_fit,"
      "kv_capacity_tokens_per_gpu,kv_capacity_tokens_group,kv_fits\n";
  const auto row = [](int tp, int dcp, const char* strategy, double decode, bool weights) {
    return "p,m," + std::to_string(tp) + "," + std::to_string(dcp) + ",128,1,512,576,64,32768," + strategy +
           ",graph,bf16,bf16,1," + std::to_string(decode) + ",10,2,0.25," + (weights ? "true" : "false") +
           ",1000,8000,true\n";
  };
  const std::string csv = head + row(8, 1, "ag-rs", 500, false) + row(8, 8, "a2a", 1000, true) +
                          row(8, 8, "row-stream", 800, true) + row(8, 4, "direct", 1100, true);
  const std::string table = scan_summary(csv, {});
  EXPECT_TRUE(std::regex_search(table, std::regex("\\*\\s+8\\s+8\\s+128\\s+a2a"))) << table;
  EXPECT_NE(table.find("row-stream (r)"), std::string::npos) << table;
  EXPECT_NE(table.find("does not fit (weights)"), std::string::npos) << table;
  EXPECT_EQ(std::count(table.begin(), table.end(), '*'), 1) << table;
  ScanSummaryOptions best;
  best.best_only = true;
  const std::string line = scan_summary(csv, best);
  EXPECT_NE(line.find("best N=8 (TP 8) a2a"), std::string::npos) << line;
  EXPECT_NE(line.find("research: row-stream"), std::string::npos) << line;
  best.include_research = true;
  EXPECT_NE(scan_summary(csv, best).find("best N=8 (TP 8) row-stream"), std::string::npos);
}

TEST_F(Scan, BadShardsAndOptionsAreInputErrors) {
  EXPECT_EQ(parse_shard("2/5"), std::make_pair(2, 5));
  for (const char* bad : {"5/5", "-1/2", "1", "a/b", "1/0", "1/2/3", ""}) {
    EXPECT_THROW(parse_shard(bad), InputError) << bad;
  }
  using Range = std::pair<std::size_t, std::size_t>;
  EXPECT_EQ(shard_range(10, 0, 3), Range(0, 3));
  EXPECT_EQ(shard_range(10, 2, 3), Range(6, 10));
  ScanOptions o = small_grid();
  o.jobs = 0;
  EXPECT_THROW(run_scan(o, dir / "bad.csv", log), InputError);
  o = small_grid();
  o.flags.dcp = "2,x";
  EXPECT_THROW(run_scan(o, dir / "bad.csv", log), InputError);
  EXPECT_FALSE(std::filesystem::exists(dir / "bad.csv"));
}

}  // namespace
}  // namespace dcpsim::analysis

#else

TEST(Scan, BuiltWithoutSimGrid) {
  GTEST_SKIP() << "built without SimGrid";
}

#endif
