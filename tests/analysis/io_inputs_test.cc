// What a command's flags make it read, for its IoGuard: a profile file and the kernel tables it lists (not a
// built-in profile, not a listed table that does not exist), a model file (not a preset), the traces of a
// --measured directory, a sidecar beside a profile. And the mismatch checks: a sidecar of another profile is
// refused, traces of another GPU are named in one line.
#include "dcpsim/analysis/io_inputs.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "dcpsim/analysis/consistency.h"
#include "dcpsim/error.h"
#include "dcpsim/models/profile.h"

namespace dcpsim::analysis {
namespace {

namespace fs = std::filesystem;

class IoInputsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dcpsim-io-inputs-" + std::to_string(::getpid()));
    fs::create_directories(dir_ / "traces" / "sub");
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::vector<std::string> inputs(const IoGuard& io) const {
    std::vector<std::string> out;
    for (const GuardedPath& g : io.inputs()) out.push_back(g.flag + " " + g.path.filename().string());
    return out;
  }
  fs::path dir_;
};

TEST_F(IoInputsTest, AProfileFileAndTheTablesItLists) {
  nlohmann::json p = nlohmann::json::parse(models::builtin_profile_json("h200-sxm"));
  p["tables"] = {"t.json", "missing.json", "z.json"};
  std::ofstream(dir_ / "p.json") << p.dump();
  std::ofstream(dir_ / "t.json") << "{}";
  std::ofstream(dir_ / "z.json.gz") << "{}";  // z.json stored compressed: the file read is the one guarded
  IoGuard io;
  guard_profile(io, "--profile", (dir_ / "p.json").string());
  EXPECT_EQ(inputs(io), (std::vector<std::string>{"--profile p.json", "--profile's table t.json",
                                                  "--profile's table z.json.gz"}));
  IoGuard builtin;
  guard_profile(builtin, "--profile", "h200-sxm");
  EXPECT_TRUE(builtin.inputs().empty());
}

TEST_F(IoInputsTest, AModelFileButNotAPreset) {
  std::ofstream(dir_ / "m.json") << "{}";
  IoGuard io;
  guard_model(io, "--model", (dir_ / "m.json").string());
  guard_model(io, "--model", "deepseek-v3");
  guard_model(io, "--model", "none");
  EXPECT_EQ(inputs(io), (std::vector<std::string>{"--model m.json"}));
}

TEST_F(IoInputsTest, AMeasuredDirectoryStandsForItsTraces) {
  for (const char* f : {"traces/a.pb", "traces/sub/b.pb.gz", "traces/readme.md"})
    std::ofstream(dir_ / f) << "x";
  std::ofstream(dir_ / "c.pb") << "x";
  IoGuard io;
  guard_measured(io, "--measured", {(dir_ / "traces").string(), (dir_ / "c.pb").string()});
  EXPECT_EQ(io.inputs().size(), 3u);  // a.pb, b.pb.gz and c.pb; not the readme
  io.output("--out", dir_ / "traces" / "new.pb");
  EXPECT_THROW(io.check(), InputError);
}

TEST_F(IoInputsTest, TheSidecarBesideAProfileFile) {
  std::ofstream(dir_ / "p.json") << "{}";
  std::ofstream(dir_ / "p.calibration.json") << "{}";
  IoGuard io;
  guard_calibration(io, "--calibration", "", (dir_ / "p.json").string());
  EXPECT_EQ(inputs(io), (std::vector<std::string>{"--profile's sidecar p.calibration.json"}));
}

TEST(Consistency, ASidecarOfAnotherProfileIsRefused) {
  CalibrationInfo c;
  c.path = "cal.calibration.json";
  c.profile = "h200-sxm-calibrated";
  c.base_profile = "h200-sxm";
  const models::HardwareProfile gb200 = models::load_profile("gb200-nvl72");
  try {
    require_calibration_matches(c, gb200);
    FAIL() << "another profile's sidecar was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("not of 'gb200-nvl72'"), std::string::npos) << e.what();
  }
  models::HardwareProfile calibrated = models::load_profile("h200-sxm");
  calibrated.name = "h200-sxm-calibrated";
  EXPECT_NO_THROW(require_calibration_matches(c, calibrated));
  c.profile.clear();  // a sidecar from before the field existed
  EXPECT_NO_THROW(require_calibration_matches(c, gb200));
}

TEST(Consistency, TracesOfAnotherGpuAreNamed) {
  MeasuredTrace h200, unnamed;
  h200.path = "a.pb";
  h200.header.add_devices()->set_name("NVIDIA H200");
  unnamed.path = "sim.pb";
  const std::string line = device_mismatch(models::load_profile("h100-sxm"), {h200, unnamed});
  EXPECT_NE(line.find("1 trace(s) (a.pb) measured on \"NVIDIA H200\""), std::string::npos) << line;
  EXPECT_EQ(device_mismatch(models::load_profile("h200-sxm"), {h200, unnamed}), "");
  // A name the profile lists in gpu.devices (what the device reports) is the profile's GPU.
  MeasuredTrace h100;
  h100.path = "b.pb";
  h100.header.add_devices()->set_name("NVIDIA H100 80GB HBM3");
  models::HardwareProfile h100_sxm = models::load_profile("h100-sxm");
  h100_sxm.gpu.devices = {"NVIDIA H100 80GB HBM3"};
  EXPECT_EQ(device_mismatch(h100_sxm, {h100}), "");
  h100_sxm.gpu.devices.clear();
  EXPECT_NE(device_mismatch(h100_sxm, {h100}), "");
}

}  // namespace
}  // namespace dcpsim::analysis
