// dcpsim scan: the grid, its shards and its worker processes must give one CSV, identical however the work is
// split, with rows that agree with a direct simulation.
#include <gtest/gtest.h>

#ifdef DCPSIM_WITH_SIMGRID
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "dcpsim/analysis/scan.h"
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
  std::filesystem::path dir = std::filesystem::path(DCPSIM_BINARY_DIR) / "scan_test";
  std::ostringstream log;
  void SetUp() override { std::filesystem::create_directories(dir); }
};

TEST_F(Scan, ShardsConcatenateToTheUnshardedCsv) {
  ScanOptions o = small_grid();
  const ScanReport all = run_scan(o, dir / "all.csv", log);
  // 4 dcp x 2 heads x 2 batch x 2 context x 6 strategies, minus dcp 3 with any head-scattering strategy (all
  // but ag-ar).
  EXPECT_EQ(all.scenarios, 4u * 2 * 2 * 2 * 6 - 2u * 2 * 2 * 5);
  EXPECT_EQ(all.skipped.size(), 2u * 2 * 2 * 5);
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
  EXPECT_EQ(one[1], scan_csv_row(o, p, r));
  const auto f = fields(one[1]);
  const auto h = fields(one[0]);
  const auto col = [&](const std::string& name) {
    return f[std::find(h.begin(), h.end(), name) - h.begin()];
  };
  EXPECT_EQ(col("dcp"), "4");
  EXPECT_EQ(col("strategy"), "ag-rs");
  EXPECT_NEAR(std::stod(col("step_latency_us")), r.step_latency_s * 1e6, 1e-6);
  EXPECT_EQ(col("phase_push_us"), "");  // ag-rs has no push phase
  // KV capacity: (141 GB - 60 GiB) / (576 * 2 B * 61 layers) tokens per GPU, 4 times that per group.
  const auto per_gpu = static_cast<std::int64_t>((141e9 - 60.0 * 1073741824.0) / (576.0 * 2 * 61));
  EXPECT_EQ(col("kv_capacity_tokens_per_gpu"), std::to_string(per_gpu));
  EXPECT_EQ(col("kv_capacity_tokens_group"), std::to_string(4 * per_gpu));
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
