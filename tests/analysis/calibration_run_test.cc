// `dcpsim hw calibrate` resumed on a machine without a GPU from checkpoints measured on one (the committed
// H200 traces stand in for the steps; small tables for the sweeps): the fit and validation stages, the files
// they write and their provenance, a second run that re-runs nothing, a plan or a GPU that differ, and what
// is said when a measuring stage is left.
#include "dcpsim/analysis/calibration_run.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "dcpsim/analysis/calibration_fit.h"
#include "dcpsim/analysis/stale_calibration.h"
#include "dcpsim/error.h"
#include "dcpsim/hw/device.h"
#include "dcpsim/hw/kernel_sources.h"

namespace dcpsim::analysis {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;

const char* kTable = R"json({"format": "dcpsim-kernel-tables/1",
  "provenance": {"device": "NVIDIA H200", "driver": "580.159.04", "cuda": "13.0", "nccl": "2.28.3",
                 "clocks": "as found", "date": "2026-12-03", "command": "dcpsim hw sweep (test)"},
  "tables": [{"kernel": "correction", "key": "d512 bf16", "axes": ["dcp", "rows", "heads"], "points": [
    {"at": [2, 1, 8], "median_ns": 3000, "samples": 10, "min_ns": 2900, "max_ns": 3100},
    {"at": [2, 16, 8], "median_ns": 3400, "samples": 10, "min_ns": 3300, "max_ns": 3500}]}]})json";

class CalibrationRun : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(DCPSIM_BINARY_DIR) / (std::string("calibration_run_") +
                                          ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    o_.out = (dir_ / "h200.json").string();
    o_.base = "h200-sxm";
    o_.date = "2026-12-06";
    o_.command = "dcpsim hw calibrate --out h200.json (test)";
    o_.progress = [this](const std::string& line) { log_ += line + "\n"; };
    paths_ = calibration_paths(o_.out);
    plan_ = make_calibration_plan(models::load_profile("h200-sxm"), true);
    // Every measuring stage's files, as a GPU run leaves them.
    fs::create_directories(paths_.work());
    DeviceRecord d;
    d.name = "NVIDIA H200";
    d.uuid = "GPU-test";
    d.sm_count = 132;
    d.memory_bytes = 150754820096;
    d.l2_bytes = 62914560;
    d.cc_major = 9;
    d.driver = "580.159.04";
    d.cuda = "13.0";
    d.nccl = "2.28.3";
    d.clocks = "as found";
    d.copy_bandwidth = 4.25e12;
    d.date = "2026-12-03";
    d.command = "dcpsim hw calibrate (test)";
    std::ofstream(paths_.work() + "device.json") << device_json(d).dump(2);
    const fs::path measured = fs::path(DCPSIM_SOURCE_DIR) / "traces/measured";
    for (const CalibrationStage& s : plan_.stages) {
      if (s.kind == StageKind::kTables)
        std::ofstream(s.family.listed ? paths_.table(s.family.name)
                                      : paths_.work() + paths_.table_file(s.family.name))
            << kTable;
      if (s.kind != StageKind::kSteps) continue;
      fs::create_directories(paths_.work() + s.set);
      for (const CalibrationStep& step : s.steps)
        std::ofstream(paths_.step(s.set, step.name) + ".failed.txt") << "not measured in this test\n";
    }
    for (const char* f : {"mla_n2_b16_ctx8k_graph", "mla_n2_b16_ctx8k_eager"}) {
      fs::remove(paths_.step("fit", f) + ".failed.txt");
      fs::copy_file(measured / "h200" / (std::string(f) + ".pb.gz"), paths_.step("fit", f) + ".gz");
    }
    fs::remove(paths_.step("pdl", "mla_n2_b16_ctx8k_pdl") + ".failed.txt");
    fs::copy_file(measured / "h200-pdl/mla_n2_b16_ctx8k_pdl.pb.gz",
                  paths_.step("pdl", "mla_n2_b16_ctx8k_pdl") + ".gz");
    fs::copy_file(measured / "h200-holdout5/mla_n2_h40_b64_ctx3k_eager.pb.gz",
                  paths_.work() + "holdout/mla_n2_h40_b64_ctx3k_eager.pb.gz");
  }
  void TearDown() override { fs::remove_all(dir_); }

  json read_json(const std::string& path) {
    std::ifstream in(path);
    return json::parse(in);
  }

  fs::path dir_;
  CalibrateRunOptions o_;
  CalibrationPaths paths_;
  CalibrationPlan plan_;
  std::string log_;
};

TEST_F(CalibrationRun, StagesDoneAreReadFromTheirFiles) {
  const std::vector<bool> done = stages_done(plan_, paths_, "NVIDIA H200");
  for (std::size_t i = 0; i < done.size(); ++i) {
    const StageKind k = plan_.stages[i].kind;
    EXPECT_EQ(done[i], k != StageKind::kFit && k != StageKind::kValidate) << plan_.stages[i].name;
  }
  // Tables measured on another GPU are not this run's.
  EXPECT_FALSE(stages_done(plan_, paths_, "NVIDIA H100 80GB HBM3")[1]);
  // A damaged checkpoint is measured again.
  std::ofstream(paths_.table("merge")) << "{";
  const auto again = stages_done(plan_, paths_, "NVIDIA H200");
  for (std::size_t i = 0; i < again.size(); ++i) {
    if (plan_.stages[i].name == "tables merge") {
      EXPECT_FALSE(again[i]);
    }
  }
}

TEST_F(CalibrationRun, AssembledProfileHasTheDeviceItsTablesAndTheTimelineNumbers) {
  std::vector<std::string> notes;
  DeviceRecord d = device_from_json(read_json(paths_.work() + "device.json"), "device.json");
  const models::HardwareProfile p =
      assemble_profile(models::load_profile("h200-sxm"), d, plan_, paths_, notes);
  EXPECT_EQ(p.name, "h200");
  EXPECT_EQ(p.gpu.hbm_bandwidth_measured.si(), 4.25e12);
  EXPECT_THAT(p.gpu.hbm_bandwidth_measured.source, HasSubstr("measured on NVIDIA H200"));
  ASSERT_FALSE(p.tables.empty());
  EXPECT_EQ(p.tables.front().origin, "h200-attention-gqa-g1.json");  // relative: beside the profile
  ASSERT_TRUE(p.launch.dependent_gap_eager.has_value());
  EXPECT_NEAR(p.launch.dependent_gap_eager->si(), 1.4e-6, 0.3e-6);  // the H200's 1.4 us, from 2 steps
  EXPECT_THAT(p.launch.dependent_gap.source, HasSubstr("GPU timeline"));
  EXPECT_THAT(notes, ::testing::Contains(HasSubstr("launch.dependent_gap_eager")));
  notes.clear();
  // A base describing another GPU: the profile describes the one measured.
  d.name = "NVIDIA RTX PRO 6000";
  const models::HardwareProfile other =
      assemble_profile(models::load_profile("h200-sxm"), d, plan_, paths_, notes);
  EXPECT_EQ(other.gpu.name, "NVIDIA RTX PRO 6000");
  EXPECT_THAT(notes.front(), HasSubstr("describes NVIDIA H200 SXM, not"));
}

#if DCPSIM_WITH_SIMGRID
TEST_F(CalibrationRun, ResumesToAValidatedProfileWithItsProvenanceAndRerunsNothing) {
  if (hw::built_with_cuda() && hw::device_count() > 0) GTEST_SKIP() << "a GPU here would measure the stages";
  const CalibrateRunResult r = run_calibration(o_);
  ASSERT_EQ(r.outcome, RunOutcome::kComplete) << r.message;
  ASSERT_TRUE(r.validation.has_value());
  EXPECT_GT(r.validation->comparisons.size(), 10u);
  EXPECT_THAT(log_, HasSubstr("[1/22 device] done earlier"));
  EXPECT_THAT(log_, HasSubstr("[21/22 fit] estimate"));
  // The profile loads by file, its tables beside it; its sidecar says what it was fitted on.
  const models::HardwareProfile p = models::load_profile(paths_.profile());
  EXPECT_EQ(p.name, "h200");
  // The 15 measured files first, then the base's files none of whose tables they measure again (its op
  // tables, and here its tables of keys the test's stand-in table does not have).
  ASSERT_GT(p.tables.size(), 15u);
  std::set<std::pair<models::TableKernel, std::string>> measured;
  for (std::size_t i = 0; i < 15; ++i)
    for (const models::KernelTable& k : p.tables[i].tables) measured.insert({k.kernel, k.key});
  for (std::size_t i = 15; i < p.tables.size(); ++i)
    for (const models::KernelTable& k : p.tables[i].tables)
      EXPECT_EQ(measured.count({k.kernel, k.key}), 0u) << p.tables[i].origin;
  // The base's FlashInfer MLA table has keys the stand-in does not measure: kept (as a built-in's fp8-KV
  // tables are); its merge file shares the stand-in's key: left out whole.
  std::set<std::string> origins;
  for (const models::KernelTables& t : p.tables) origins.insert(fs::path(t.origin).filename().string());
  EXPECT_EQ(origins.count("h200-sxm-attention-mla.json"), 1u);
  EXPECT_EQ(origins.count("h200-sxm-merge.json"), 0u);
  const json side = read_json(paths_.sidecar());
  EXPECT_EQ(side["calibrate"]["plan"], plan_.fingerprint());
  EXPECT_EQ(side["calibrate"]["device"]["device"], "NVIDIA H200");
  EXPECT_EQ(side["fitted_on"]["kernel_sources"], std::string(hw::kernel_sources_hash()));
  EXPECT_EQ(side["fitted_on"]["tables"].size(), 15u);
  EXPECT_TRUE(stale_calibration(paths_.sidecar(), {}).empty());
  EXPECT_TRUE(fs::exists(paths_.work() + "validation.md"));
  EXPECT_TRUE(fs::exists(paths_.work() + "plan.json"));
  EXPECT_THAT(r.lines.back(), HasSubstr("targets: median"));
  // Again: nothing is re-run.
  log_.clear();
  const CalibrateRunResult again = run_calibration(o_);
  EXPECT_EQ(again.outcome, RunOutcome::kComplete);
  EXPECT_THAT(log_, HasSubstr("[21/22 fit] done earlier"));
  EXPECT_THAT(log_, HasSubstr("[22/22 validate] done earlier"));
  EXPECT_FALSE(again.validation.has_value());
  // A table changed since the fit makes the calibration stale.
  std::ofstream(paths_.table("merge"), std::ios::app) << "\n";
  EXPECT_THAT(stale_calibration(paths_.sidecar(), {}),
              ::testing::ElementsAre(HasSubstr("h200-merge.json changed")));
}
#else
TEST_F(CalibrationRun, WithoutTheSimulatorTheMeasuredProfileIsWrittenAndTheFitWaits) {
  const CalibrateRunResult r = run_calibration(o_);
  EXPECT_EQ(r.outcome, RunOutcome::kNeedsSimulator);
  EXPECT_THAT(r.message, HasSubstr("need the simulator"));
  EXPECT_NO_THROW(models::load_profile(paths_.profile()));
}
#endif

TEST_F(CalibrationRun, AnotherPlanOrAMeasuringStageLeftIsSaid) {
  if (hw::built_with_cuda() && hw::device_count() > 0) GTEST_SKIP() << "a GPU here would measure the stages";
  std::ofstream(paths_.work() + "plan.json")
      << R"({"format": "dcpsim-calibrate-plan/1", "fingerprint": "0123"})";
  try {
    run_calibration(o_);
    ADD_FAILURE() << "a plan.json of another plan was accepted";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("made by another plan (fingerprint 0123"));
  }
  fs::remove(paths_.work() + "plan.json");
  fs::remove(paths_.table("merge-cold"));
  const CalibrateRunResult r = run_calibration(o_);
  EXPECT_EQ(r.outcome, RunOutcome::kNeedsGpu);
  EXPECT_THAT(r.message, HasSubstr("stage tables merge-cold needs the GPU"));
  EXPECT_THAT(r.message, HasSubstr("run the same command on the GPU"));
}

TEST(StaleCalibration, ASidecarWithoutHashesOrWithOtherKernelsIsStale) {
  const fs::path dir = fs::path(DCPSIM_BINARY_DIR) / "stale_calibration_test";
  fs::create_directories(dir);
  std::ofstream(dir / "t.json") << kTable;
  json side = {{"format", "dcpsim-calibration/1"}, {"fitted_on", fitted_on_json({dir / "t.json"})}};
  std::ofstream(dir / "p.calibration.json") << side.dump();
  EXPECT_TRUE(stale_calibration(dir / "p.calibration.json", {}).empty());
  side["fitted_on"]["kernel_sources"] = "0000";
  std::ofstream(dir / "p.calibration.json") << side.dump();
  EXPECT_THAT(stale_calibration(dir / "p.calibration.json", {}),
              ::testing::ElementsAre(HasSubstr("hw/ops/ changed")));
  std::ofstream(dir / "p.calibration.json") << json{{"format", "dcpsim-calibration/1"}}.dump();
  EXPECT_THAT(stale_calibration(dir / "p.calibration.json", {}),
              ::testing::ElementsAre(HasSubstr("records no hash")));
  // A table stored compressed is recorded under the name profiles list, and hashed over its inflated text.
  const std::string z = "u.json.gz";
  const std::string gzip = "gzip -9nc '" + (dir / "t.json").string() + "' > '" + (dir / z).string() + "'";
  ASSERT_EQ(std::system(gzip.c_str()), 0);
  const json gz = fitted_on_json({dir / z})["tables"];
  ASSERT_TRUE(gz.contains("u.json")) << gz.dump();
  EXPECT_EQ(gz["u.json"], fitted_on_json({dir / "t.json"})["tables"]["t.json"]);
  // Cut short, it makes the calibration stale, said in one line; the check does not fail.
  std::ofstream(dir / "p.calibration.json")
      << json{{"format", "dcpsim-calibration/1"}, {"fitted_on", fitted_on_json({dir / z})}}.dump();
  fs::resize_file(dir / z, 20);
  EXPECT_THAT(stale_calibration(dir / "p.calibration.json", {}),
              ::testing::ElementsAre(HasSubstr("table u.json cannot be read (")));
  fs::remove_all(dir);
}

// Every calibrated profile committed (models/calibrated/, and the built-ins' sidecars there) was fitted on
// the tree's kernels and tables: else refit it with `dcpsim hw calibrate` or remove it.
TEST(StaleCalibration, NoCommittedCalibrationIsStale) {
  const fs::path dir = fs::path(DCPSIM_SOURCE_DIR) / "models/calibrated";
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (!name.ends_with(".calibration.json")) continue;
    const std::vector<std::string> stale =
        stale_calibration(e.path(), {fs::path(DCPSIM_SOURCE_DIR) / "models/tables"});
    EXPECT_TRUE(stale.empty()) << ::testing::PrintToString(stale);
  }
}

// A base that was itself calibrated (the built-in h100-sxm is) gets its clause replaced: one device, one
// date.
TEST(CalibratedDescription, ReplacesAnEarlierRunsClauseInsteadOfAppendingASecond) {
  DeviceRecord d;
  d.name = "NVIDIA H100 80GB HBM3";
  d.uuid = "GPU-new";
  const std::string fitted = calibrated_description("HGX H100", d, "2026-12-06", true);
  EXPECT_EQ(fitted.rfind(
                "HGX H100; measured on NVIDIA H100 80GB HBM3 (GPU-new) by dcpsim hw calibrate 2026-12-06", 0),
            0u)
      << fitted;
  d.uuid = "GPU-other";
  const std::string again = calibrated_description(fitted, d, "2026-12-07", true);
  EXPECT_EQ(again.find("GPU-new"), std::string::npos) << again;
  EXPECT_EQ(again.find("measured on"), again.rfind("measured on")) << again;
  EXPECT_NE(again.find("(GPU-other) by dcpsim hw calibrate 2026-12-07"), std::string::npos) << again;
  // The provisional profile's clause (not yet fitted) is replaced the same way.
  const std::string provisional = calibrated_description(fitted, d, "2026-12-07", false);
  EXPECT_EQ(provisional.find("measured on"), provisional.rfind("measured on")) << provisional;
  EXPECT_NE(provisional.find("not yet fitted on steps"), std::string::npos);
  // A description that says "measured on" of something else keeps it.
  EXPECT_NE(calibrated_description("NVLink numbers measured on 8 GPUs", d, "2026-12-07", true)
                .find("NVLink numbers measured on 8 GPUs; measured on"),
            std::string::npos);
}

}  // namespace
}  // namespace dcpsim::analysis
