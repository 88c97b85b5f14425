// The answers the CLI gives, through the executable: simulate's strategies side by side with nccl-tests'
// algbw/busbw, scan's best line, profiles' HBM and KV capacity, and a short replay with worker processes and
// its files. Each run is small (a few simulations).
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class AnswersCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dcpsim_answers_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  static std::string read(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  // Runs dcpsim; returns the exit status, stdout in out_.
  int run(const std::string& args) {
    const fs::path exe = fs::path(DCPSIM_BINARY_DIR) / "analysis" / "dcpsim";
    const std::string cmd =
        exe.string() + " " + args + " >" + (dir_ / "stdout").string() + " 2>" + (dir_ / "stderr").string();
    const int status = std::system(cmd.c_str());
    out_ = read(dir_ / "stdout");
    err_ = read(dir_ / "stderr");
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  fs::path dir_;
  std::string out_, err_;
};

#ifdef DCPSIM_WITH_SIMGRID
TEST_F(AnswersCli, SimulateEveryStrategySideBySideWithCollectiveBandwidths) {
  ASSERT_EQ(run("simulate --batch 4 --context 8k --strategy all --json " + (dir_ / "s.json").string()), 0)
      << err_;
  for (const char* s : {"ag-rs", "ag-ar", "a2a", "direct", "row-stream", "flashinfer-a2a"})
    EXPECT_THAT(out_, HasSubstr(s));
  EXPECT_THAT(out_, HasSubstr("6 strategies side by side"));
  EXPECT_THAT(out_, HasSubstr("algbw GB/s"));
  EXPECT_THAT(out_, HasSubstr("decode step (61 layers + non-attention)"));
  EXPECT_THAT(out_, HasSubstr("KV capacity"));
  const auto j = nlohmann::json::parse(read(dir_ / "s.json"));
  ASSERT_EQ(j["strategies"].size(), 6u);
  for (const auto& s : j["strategies"]) {
    ASSERT_TRUE(s.contains("collective_bandwidths"));
    for (const auto& c : s["collective_bandwidths"]) {
      const double algbw = c["size_bytes"].get<double>() / (c["time_us"].get<double>() * 1e-6) / 1e9;
      EXPECT_NEAR(c["algbw_GBps"].get<double>(), algbw, algbw * 1e-9);
      const double factor = c["collective"] == "all-reduce" ? 2.0 * 7 / 8 : 7.0 / 8;  // N = 8
      EXPECT_NEAR(c["busbw_GBps"].get<double>(), algbw * factor, algbw * 1e-9);
    }
    EXPECT_GT(s["decode_step"]["non_attention_us"].get<double>(), 0.0);
    EXPECT_EQ(s["memory"]["kv_fits"], true);
  }
}

TEST_F(AnswersCli, ScanBestIsOneLinePerBatchAndContext) {
  ASSERT_EQ(run("scan --dcp 2,4,8 --batch 1,16 --context 4k --strategy ag-rs,direct --best --jobs 1 --out " +
                (dir_ / "q.csv").string()),
            0)
      << err_;
  EXPECT_EQ(std::count(out_.begin(), out_.end(), '\n'), 2) << out_;
  EXPECT_THAT(out_, HasSubstr("deepseek-v3 on h200-sxm, batch 16, context 4096, graph: best N="));
}

TEST_F(AnswersCli, ReplayWithWorkersWritesStepsCdfAndSummary) {
  const std::string trace =
      std::string(DCPSIM_SOURCE_DIR) + "/tests/data/mooncake_conversation_trace.head20.jsonl";
  ASSERT_EQ(
      run("replay --requests " + trace + " --steps 300 --jobs 2 --out " + (dir_ / "steps.csv").string() +
          " --cdf " + (dir_ / "cdf.csv").string() + " --summary " + (dir_ / "s.json").string()),
      0)
      << err_;
  const std::string steps = read(dir_ / "steps.csv");
  EXPECT_EQ(std::count(steps.begin(), steps.end(), '\n'), 301);
  EXPECT_THAT(read(dir_ / "cdf.csv"), HasSubstr("quantile,step_us_ag-rs,layer_step_us_ag-rs"));
  const auto j = nlohmann::json::parse(read(dir_ / "s.json"));
  EXPECT_EQ(j["format"], "dcpsim-replay-summary/1");
  EXPECT_EQ(j["model"], "deepseek-v3 (default)");
  EXPECT_EQ(j["jobs"], 2);
  EXPECT_EQ(j["steps"], 300);
  EXPECT_THAT(out_, HasSubstr("per decode step (61 layers + non-attention), ms"));
  EXPECT_THAT(out_, HasSubstr("non-attention time: modelled op by op"));
}
#endif

TEST_F(AnswersCli, ProfilesShowHbmAndKvCapacity) {
  ASSERT_EQ(run("profiles"), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("HBM"));
  EXPECT_THAT(out_, HasSubstr("KV tokens"));
  // h200-sxm: (143,771 MiB x 0.9 - 85.1 GB of DeepSeek-V3 / TP 8 - activations - runtime) / 70,272 B
  EXPECT_THAT(out_, HasSubstr("665237"));
  ASSERT_EQ(run("profiles --models"), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("https://huggingface.co/Qwen/Qwen3-235B-A22B/blob/main/config.json"));
}

}  // namespace
