// PNG plots through scripts/plot.py: each kind draws a real image from its documented input (a CSV, or the
// replay summary JSON), and bad requests fail with the right error. Needs python3 with matplotlib (Debian:
// python3-matplotlib).
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>

#include "dcpsim/analysis/plot.h"
#include "dcpsim/analysis/replay.h"
#include "dcpsim/error.h"

namespace dcpsim::analysis {
namespace {

namespace fs = std::filesystem;

class PlotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dcpsim_plot_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  fs::path write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return dir_ / name;
  }
  // A PNG starts with its 8-byte signature and, for any real figure, is far larger than an empty image.
  static void expect_png(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_GT(bytes.size(), 10000u) << p;
    EXPECT_EQ(bytes.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  }
  fs::path dir_;
};

TEST_F(PlotTest, ReplaySummaryBecomesAPng) {
  // A real replay (an analytic timing) and its compact summary: what `dcpsim replay --plot` draws.
  std::vector<Request> requests;
  for (int i = 0; i < 60; ++i) requests.push_back({i, i * 40'000'000LL, 1000 + 300 * i, 20 + i % 13});
  ReplayConfig c;
  c.batcher.geometry.dcp = 4;
  c.batcher.kv_capacity_tokens = 1 << 24;
  c.strategies = {models::Strategy::kAgRs, models::Strategy::kA2a};
  c.layers = 61;
  c.non_attention = [](int rows) { return 1e-3 + 5e-5 * rows; };
  const auto timing = [](const models::Scenario& s) {
    double tokens = 0;
    for (auto ctx : s.contexts) tokens += double(ctx) / s.dcp;
    const double merge = s.strategy == models::Strategy::kA2a ? 8e-6 : 15e-6;
    return StepTiming{2e-5 + 1e-9 * tokens + merge, merge, merge};
  };
  const ReplayResult r = replay_requests(requests, c, timing);
  plot_csv("replay", write("summary.json", summary_json(r, R"({"trace": "t.jsonl", "profile": "p"})")),
           dir_ / "replay.png");
  expect_png(dir_ / "replay.png");
}

TEST_F(PlotTest, ScanPanelsBecomeAPng) {
  std::string csv =
      "profile,dcp,heads,head_dim,qk_dim,kv_heads,batch,context,strategy,launch,step_latency_us,merge_"
      "latency_us,"
      "kv_bytes_per_rank,kv_capacity_tokens_per_gpu\n";
  for (int heads : {64, 128}) {
    for (int dim : {128, 512}) {
      for (int dcp : {1, 2, 4, 8}) {
        for (const char* s : {"ag-rs", "a2a", "direct"}) {
          const double merge = dcp == 1 ? 0 : 8.0 + dcp * (s[0] == 'a' ? 2.0 : 1.0);
          csv += "h200-sxm," + std::to_string(dcp) + "," + std::to_string(heads) + "," + std::to_string(dim) +
                 "," + std::to_string(dim == 512 ? 576 : dim) + ",1,64,131072," + s + ",graph," +
                 std::to_string(300.0 / dcp + merge + heads * 0.1) + "," + std::to_string(merge) + "," +
                 std::to_string(1000000 / dcp) + "," + std::to_string(400000 * dcp) + "\n";
        }
      }
    }
  }
  plot_csv("scan", write("scan.csv", csv), dir_ / "scan.png");
  expect_png(dir_ / "scan.png");
}

TEST_F(PlotTest, ValidationReportBecomesAPng) {
  std::string csv =
      "trace,section,scenario,source,kind,figure,rank,row,measured_ns,predicted_ns,relative_error,within_"
      "tolerance,"
      "interval_low_ns,interval_high_ns,inside_interval\n";
  for (int i = 1; i <= 40; ++i) {
    csv += "\"m.pb\",0,\"dcp8 h128\",hw,phase," + std::string(i % 2 ? "attention" : "collective") + ",0,-1," +
           std::to_string(1000 * i) + "," + std::to_string(1000 * i + 20 * (i % 5)) + ",0.01,1,,,\n";
  }
  plot_csv("validate", write("report.csv", csv), dir_ / "validate.png");
  expect_png(dir_ / "validate.png");
}

TEST_F(PlotTest, BadRequestsFailClearly) {
  EXPECT_THROW(plot_csv("histogram", write("a.csv", "x\n1\n"), dir_ / "a.png"), InputError);
  EXPECT_THROW(plot_csv("replay", dir_ / "absent.csv", dir_ / "a.png"), InputError);
  EXPECT_THROW(plot_csv("replay", write("b.csv", "x\n1\n"), dir_ / "missing_dir" / "b.png"), InputError);
  // Not a replay summary: the script exits 2, which is a failed plot.
  EXPECT_THROW(plot_csv("replay", write("c.csv", "x,y\n1,2\n"), dir_ / "c.png"), RuntimeError);
  EXPECT_THROW(plot_csv("replay", write("d.json", R"({"format": "other"})"), dir_ / "d.png"), RuntimeError);
  EXPECT_FALSE(fs::exists(dir_ / "c.png"));
  EXPECT_TRUE(fs::is_regular_file(plot_script()));
  EXPECT_FALSE(python_with_matplotlib().empty());
}

#ifdef DCPSIM_WITH_SIMGRID
// `dcpsim scan --plot`, through the executable: a real grid simulated, written and drawn; a sharded grid is
// refused before anything runs (exit 2, nothing written).
TEST_F(PlotTest, ScanCommandDrawsItsGrid) {
  const fs::path exe = fs::path(DCPSIM_BINARY_DIR) / "analysis" / "dcpsim";
  const std::string grid =
      " scan --profile gb200-nvl72 --dcp 1,2,4,8 --heads 64,128 --batch 1,64 --context 32k ";
  const std::string quiet = " 2>" + (dir_ / "err").string();
  const std::string ok = exe.string() + grid + "--out " + (dir_ / "scan.csv").string() + " --plot " +
                         (dir_ / "scan.png").string() + quiet;
  ASSERT_EQ(std::system(ok.c_str()), 0);
  expect_png(dir_ / "scan.png");

  const std::string sharded = exe.string() + grid + "--shard 0/2 --out " + (dir_ / "s.csv").string() +
                              " --plot " + (dir_ / "s.png").string() + quiet;
  const int status = std::system(sharded.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_FALSE(fs::exists(dir_ / "s.csv"));
  EXPECT_FALSE(fs::exists(dir_ / "s.png"));
}
#endif

}  // namespace
}  // namespace dcpsim::analysis
