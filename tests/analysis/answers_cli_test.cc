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
  for (const char* s : {"ag-rs", "ag-ar", "a2a", "a2a-2call", "direct", "row-stream", "flashinfer-a2a"})
    EXPECT_THAT(out_, HasSubstr(s));
  EXPECT_THAT(out_, HasSubstr("7 strategies side by side"));
  EXPECT_THAT(out_, HasSubstr("TP 8 (default: the smallest multiple of DCP 8"));
  EXPECT_THAT(out_, HasSubstr("fastest production strategy:"));
  EXPECT_THAT(out_, HasSubstr("vLLM --dcp-comm-backend a2a"));
  EXPECT_THAT(out_, HasSubstr("algbw GB/s"));
  EXPECT_THAT(out_, HasSubstr("decode step (61 layers + non-attention)"));
  EXPECT_THAT(out_, HasSubstr("KV capacity"));
  const auto j = nlohmann::json::parse(read(dir_ / "s.json"));
  ASSERT_EQ(j["strategies"].size(), 7u);
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

// One JSON shape (analysis/summary_json.h): a list of strategies whether one ran or several, each entry
// naming its strategy, tier, engines, layout and units; skipped strategies listed with the rule.
TEST_F(AnswersCli, SimulateJsonIsOneShapeForOneStrategyOrSeveral) {
  ASSERT_EQ(run("simulate --batch 2 --context 4k --strategy vllm-a2a --json " + (dir_ / "one.json").string()),
            0)
      << err_;
  ASSERT_EQ(
      run("simulate --dcp 3 --batch 2 --context 4k --strategy all --json " + (dir_ / "all.json").string()), 0)
      << err_;
  EXPECT_THAT(
      out_, HasSubstr("skipped ag-rs, a2a, direct, row-stream, flashinfer-a2a, a2a-2call: gives each rank"));
  const auto one = nlohmann::json::parse(read(dir_ / "one.json"));
  const auto all = nlohmann::json::parse(read(dir_ / "all.json"));
  for (const auto* j : {&one, &all}) {
    EXPECT_EQ((*j)["schema"], "dcpsim-summary/1");
    EXPECT_EQ((*j)["command"], "simulate");
    ASSERT_TRUE((*j)["strategies"].is_array());
    for (const auto& e : (*j)["strategies"]) {
      for (const char* key :
           {"strategy", "tier", "engines", "layout", "units", "step_latency_us", "decode_step"})
        EXPECT_TRUE(e.contains(key)) << key;
      EXPECT_EQ(e["layout"]["dcp"], (*j)["layout"]["dcp"]);
    }
  }
  ASSERT_EQ(one["strategies"].size(), 1u);
  EXPECT_EQ(one["strategies"][0]["strategy"], "a2a-2call");
  EXPECT_EQ(one["strategies"][0]["engines"][0]["engine"], "vLLM");
  EXPECT_EQ(one["layout"]["tp"], 8);
  EXPECT_TRUE(one["skipped"].empty());
  ASSERT_EQ(all["strategies"].size(), 1u);  // DCP 3 in TP 6: 64 heads, only ag-ar splits them
  EXPECT_EQ(all["strategies"][0]["strategy"], "ag-ar");
  EXPECT_EQ(all["layout"]["tp"], 6);
  EXPECT_EQ(all["skipped"].size(), 6u);
  EXPECT_EQ(all["fastest"]["strategy"], "ag-ar");
}

// --spec-attention rows through the command: the attention reads each request's KV k + 1 times (with 16
// heads per rank, where MLA decode is bound by its KV reads, a far slower layer at long context), while the
// step's requests, its non-attention part, tokens/s and the KV the busiest rank stores are the requests', not
// the rows'.
TEST_F(AnswersCli, SpecVerifyRowsPriceTheReadsButCountTheRequests) {
  const std::string base =
      "simulate --model deepseek-v3 --dcp 1 --tp 8 --batch 4 --context 64k --strategy ag-rs --spec-tokens 3 "
      "--accept-length 2.5 ";
  ASSERT_EQ(run(base + "--json " + (dir_ / "heads.json").string()), 0) << err_;
  ASSERT_EQ(run(base + "--spec-attention rows --json " + (dir_ / "rows.json").string()), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("each a decode row reading its KV"));
  EXPECT_THAT(out_, HasSubstr("busiest rank holds 262144"));  // 4 x 64k, stored once
  const auto h = nlohmann::json::parse(read(dir_ / "heads.json"))["strategies"][0];
  const auto r = nlohmann::json::parse(read(dir_ / "rows.json"))["strategies"][0];
  EXPECT_GT(r["step_latency_us"].get<double>(), 2 * h["step_latency_us"].get<double>());
  EXPECT_DOUBLE_EQ(r["decode_step"]["non_attention_us"].get<double>(),
                   h["decode_step"]["non_attention_us"].get<double>());
  EXPECT_EQ(r["memory"]["kv_fits"], h["memory"]["kv_fits"]);
  EXPECT_EQ(r["decode_step"]["spec_attention"], "rows");
  EXPECT_EQ(h["decode_step"]["spec_attention"], "heads");
  EXPECT_EQ(r["decode_step"]["requests"], 4);
  EXPECT_EQ(h["decode_step"]["requests"], 4);
  // tokens/s = 4 requests x 2.5 tokens / the step, not 16 rows'.
  EXPECT_NEAR(r["decode_step"]["tokens_per_s"].get<double>(),
              4 * 2.5 / (r["decode_step"]["decode_step_us"].get<double>() * 1e-6), 1e-6);
}

// A layout whose weights do not fit is said so and never ranked; an explicit --tp below --dcp is a usage
// error.
TEST_F(AnswersCli, LayoutsThatDoNotFitAreNeverRanked) {
  ASSERT_EQ(run("simulate --dcp 1 --tp 1 --batch 2 --context 4k --strategy ag-rs,a2a --json " +
                (dir_ / "s.json").string()),
            0)
      << err_;
  EXPECT_THAT(out_, HasSubstr("this layout DOES NOT FIT"));
  EXPECT_THAT(out_, HasSubstr("fastest: none ranked"));
  EXPECT_TRUE(nlohmann::json::parse(read(dir_ / "s.json"))["fastest"].is_null());
  EXPECT_EQ(run("simulate --dcp 8 --tp 4"), 2);
  EXPECT_THAT(err_, HasSubstr("dcp 8 > tp 4"));
  ASSERT_EQ(run("scan --dcp 1,8 --tp 1,8 --batch 2 --context 4k --strategy ag-rs --jobs 1 --out " +
                (dir_ / "q.csv").string()),
            0)
      << err_;
  EXPECT_THAT(out_, HasSubstr("does not fit (weights)"));
  EXPECT_THAT(read(dir_ / "q.csv"), HasSubstr(",weights_fit,"));
  // scan --json: the one summary shape, the layout that does not fit never the best.
  ASSERT_EQ(run("scan --dcp 1,8 --tp 1,8 --batch 2 --context 4k --strategy ag-rs,row-stream --jobs 1 --out " +
                (dir_ / "q.csv").string() + " --json " + (dir_ / "q.json").string()),
            0)
      << err_;
  const auto j = nlohmann::json::parse(read(dir_ / "q.json"));
  EXPECT_EQ(j["schema"], "dcpsim-summary/1");
  EXPECT_EQ(j["command"], "scan");
  ASSERT_EQ(j["strategies"].size(), 2u);
  EXPECT_EQ(j["strategies"][1]["tier"], "research");
  for (const auto& e : j["strategies"]) EXPECT_TRUE(e.contains("units") && e.contains("points"));
  ASSERT_FALSE(j["best"].empty());
  for (const auto& b : j["best"]) {
    EXPECT_EQ(b["weights_fit"], true);
    EXPECT_EQ(b["strategy"], "ag-rs");
  }
}

// A bad --at is a usage error before anything is written.
TEST_F(AnswersCli, BadSliceIsAUsageErrorBeforeAnyOutput) {
  EXPECT_EQ(run("scan --dcp 2,4 --batch 2 --context 4k --strategy ag-rs --jobs 1 --out " +
                (dir_ / "q.csv").string() + " --plot " + (dir_ / "q.png").string() + " --at batch=3"),
            2);
  EXPECT_THAT(err_, HasSubstr("--at batch=3: no scenario of this scan has it (batch here: 2)"));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "q.csv"));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "q.png"));
}

TEST_F(AnswersCli, ScanBestIsOneLinePerBatchAndContext) {
  ASSERT_EQ(run("scan --dcp 2,4,8 --batch 1,16 --context 4k --strategy ag-rs,direct --best --jobs 1 --out " +
                (dir_ / "q.csv").string()),
            0)
      << err_;
  EXPECT_EQ(std::count(out_.begin(), out_.end(), '\n'), 3) << out_;  // the layout, then one line each
  EXPECT_THAT(out_, HasSubstr("layout: TP 8 (default"));
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
  EXPECT_EQ(j["schema"], "dcpsim-summary/1");
  EXPECT_EQ(j["command"], "replay");
  EXPECT_EQ(j["model"], "deepseek-v3 (default)");
  EXPECT_EQ(j["layout"]["tp"], 8);
  EXPECT_EQ(j["strategies"].size(), 7u);
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
