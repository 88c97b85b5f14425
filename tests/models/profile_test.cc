// Hardware profiles: the built-ins load, round-trip exactly, match their files, carry sources; user files
// with a bad, missing or unknown field fail with one InputError naming the file and the field.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "dcpsim/error.h"
#include "dcpsim/models/profile.h"

namespace dcpsim::models {
namespace {

using nlohmann::ordered_json;
using ::testing::HasSubstr;

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::filesystem::path profile_dir() {
  return std::filesystem::path(DCPSIM_SOURCE_DIR) / "models" / "profiles";
}

// A scratch file next to the test binary, removed at the end of the test.
class ProfileFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ =
        std::filesystem::path(DCPSIM_BINARY_DIR) / (std::string("profile_test_") + info->name() + ".json");
    base_ = ordered_json::parse(builtin_profile_json("h200-sxm"));
  }
  void TearDown() override { std::filesystem::remove(path_); }

  // Writes `j` and returns the message load_profile throws for it ("" when it loads).
  std::string load_error(const ordered_json& j) { return load_error_text(j.dump(2)); }
  std::string load_error_text(const std::string& text) {
    std::ofstream(path_) << text;
    try {
      load_profile(path_.string());
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  }

  std::filesystem::path path_;
  ordered_json base_;
};

TEST(Profile, BuiltinNamesAreTheFivePlatforms) {
  EXPECT_THAT(builtin_profile_names(),
              ::testing::ElementsAre("b200", "gb200-nvl72", "h100-sxm", "h200-sxm", "rtx-pro-6000"));
}

TEST(Profile, RtxPro6000IsAPcieHostWithItsOwnPublishedAllReduceTables) {
  const HardwareProfile rtx = load_profile("rtx-pro-6000");
  EXPECT_EQ(rtx.gpu.sm_count.si(), 188);
  EXPECT_DOUBLE_EQ(rtx.gpu.hbm_bandwidth_spec.si(), 1792e9);
  EXPECT_DOUBLE_EQ(rtx.nvlink.bandwidth.si(), 64e9);  // PCIe Gen5 x16, one way
  EXPECT_FALSE(rtx.nccl.nvls_enabled.value);
  // NCCL's PCIe hop latency, not NVLink's.
  EXPECT_THAT(nccl_latency(rtx, Algorithm::kRing, Protocol::kLL128).nvlink_hop_latency.source,
              ::testing::HasSubstr("hwLat[PCI]"));
  // Its own tables (no model word in "NVIDIA RTX PRO 6000 Blackwell": the device name itself matches), none
  // borrowed: two NCCL tables; no vLLM custom all-reduce (upstream vLLM runs NCCL on more than 2 PCIe GPUs).
  ASSERT_EQ(rtx.comm_tables.size(), 2u);
  for (const CommTables& t : rtx.comm_tables) {
    EXPECT_TRUE(t.borrowed.empty());
    EXPECT_THAT(t.provenance.source, ::testing::HasSubstr("rtx6kpro"));
    EXPECT_EQ(t.tables[0].implementation, "");
  }
}

TEST(Profile, EveryBuiltinLoadsAndValidates) {
  for (const std::string& name : builtin_profile_names()) {
    const HardwareProfile p = load_profile(name);
    EXPECT_EQ(p.name, name);
    EXPECT_NO_THROW(validate_profile(p, name));
    EXPECT_GT(p.gpu.sm_count.si(), 0);
    EXPECT_GE(p.topology.gpus_per_nvlink_domain.si(), p.topology.gpus_per_node.si()) << name;
    EXPECT_EQ(builtin_nvlink_domain_size(name), p.topology.gpus_per_nvlink_domain.si()) << name;
  }
}

TEST(Profile, ABuiltinIsParsedOnceAndEveryLoadIsItsOwnCopy) {
  HardwareProfile first = load_profile("h100-sxm");
  const HardwareProfile pristine = load_profile("h100-sxm");
  EXPECT_EQ(first, pristine);
  // One parse: the copies share what a table derives once (its memo; a parse of its own would start another).
  ASSERT_FALSE(first.tables.empty());
  EXPECT_EQ(first.tables[0].tables[0].memo.get(), pristine.tables[0].tables[0].memo.get());
  first.gpu.sm_count.value = 1;  // an edit of one copy (calibration edits its own) reaches no later load
  first.tables.clear();
  const HardwareProfile again = load_profile("h100-sxm");
  EXPECT_EQ(again, pristine);
  EXPECT_FALSE(again.tables.empty());
  EXPECT_THROW(builtin_nvlink_domain_size("no-such-gpu"), InputError);
}

TEST(Profile, KeyNumbersMatchTheStartingFacts) {
  const HardwareProfile h200 = load_profile("h200-sxm");
  EXPECT_EQ(h200.gpu.sm_count.si(), 132);
  EXPECT_DOUBLE_EQ(h200.gpu.hbm_bandwidth_measured.si(), 4.25e12);
  EXPECT_DOUBLE_EQ(h200.nvlink.bandwidth.si(), 450e9);
  EXPECT_DOUBLE_EQ(h200.internode.bandwidth.si(), 50e9);  // 400 Gb/s
  // The NCCL numbers are fitted to the H100 nccl-tests table (the H200 borrows them) and say so.
  EXPECT_THAT(nccl_latency(h200, Algorithm::kRing, Protocol::kLL).base_latency.source,
              ::testing::HasSubstr("h100-sxm-nccl.json"));
  EXPECT_GT(nccl_latency(h200, Algorithm::kRing, Protocol::kLL).base_latency.si(), 3e-6);
  EXPECT_LT(nccl_latency(h200, Algorithm::kRing, Protocol::kLL).base_latency.si(), 10e-6);
  // Two borrowed H100 tables: nccl-tests (NCCL's collectives) and vLLM's custom all-reduce.
  ASSERT_EQ(h200.comm_tables.size(), 2u);
  for (const CommTables& t : h200.comm_tables) {
    EXPECT_FALSE(t.borrowed.empty());
    EXPECT_THAT(t.provenance.device, ::testing::HasSubstr("H100"));
  }
  EXPECT_EQ(h200.comm_tables[0].tables[0].implementation, "");
  EXPECT_EQ(h200.comm_tables[1].tables[0].implementation, "vllm-custom");
  const HardwareProfile nvl72 = load_profile("gb200-nvl72");
  EXPECT_EQ(nvl72.topology.gpus_per_nvlink_domain.si(), 72);
  EXPECT_EQ(nvl72.topology.gpus_per_node.si(), 4);
  EXPECT_DOUBLE_EQ(nvl72.nvlink.bandwidth.si(), 900e9);
}

TEST(Profile, RoundTripsExactly) {
  for (const std::string& name : builtin_profile_names()) {
    const HardwareProfile p = load_profile(name);
    EXPECT_EQ(parse_profile(to_json(p), "round trip"), p) << name;
  }
}

TEST(Profile, AwkwardDoublesRoundTripBitForBit) {
  HardwareProfile p = load_profile("h200-sxm");
  p.nvlink.measured_bandwidth.value = 0.1 + 0.2;
  p.launch.dependent_gap.value = 1.0 / 3.0;
  p.kernel.half_efficiency_bytes.value = 123456.78901234567;  // 17 significant digits, within 1 PB
  p.signal.poll_interval.value = 5e-324;                      // smallest subnormal
  const HardwareProfile back = parse_profile(to_json(p), "round trip");
  EXPECT_EQ(back, p);
  EXPECT_EQ(back.nvlink.measured_bandwidth.value, 0.1 + 0.2);
}

// The files are the single source of truth: the embedded copy is the file, and the file is in to_json's form
// (regenerate a hand-edited file with `dcpsim profiles --show FILE > FILE.new`).
TEST(Profile, FilesAreEmbeddedUnchangedAndCanonical) {
  for (const std::string& name : builtin_profile_names()) {
    const std::string file = read_text(profile_dir() / (name + ".json"));
    EXPECT_EQ(builtin_profile_json(name), file) << name << ": rebuild to re-embed";
    EXPECT_EQ(to_json(load_profile(name)), file) << name << ": not in canonical to_json form";
  }
}

TEST(Profile, EveryNumberCarriesUnitAndSource) {
  for (const std::string& name : builtin_profile_names()) {
    int numbers = 0;
    std::function<void(const ordered_json&, const std::string&)> walk = [&](const ordered_json& j,
                                                                            const std::string& path) {
      if (j.contains("value")) {
        ++numbers;
        ASSERT_TRUE(j.contains("source")) << name << " " << path;
        EXPECT_FALSE(j["source"].get<std::string>().empty()) << name << " " << path;
        if (j["value"].is_number()) {
          EXPECT_TRUE(j.contains("unit")) << name << " " << path;
        }
        return;
      }
      for (const auto& item : j.items()) {
        if (item.value().is_object()) walk(item.value(), path + "." + item.key());
        if (item.value().is_number()) ADD_FAILURE() << name << path << "." << item.key() << ": bare number";
      }
    };
    walk(ordered_json::parse(builtin_profile_json(name)), "");
    EXPECT_GE(numbers, 50) << name;
  }
}

TEST(Profile, UnitsConvertToBaseUnits) {
  EXPECT_DOUBLE_EQ((Quantity{400, Unit::kGbps, "s"}).si(), 50e9);
  EXPECT_DOUBLE_EQ((Quantity{60, Unit::kMiB, "s"}).si(), 60.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ((Quantity{3, Unit::kMicroseconds, "s"}).si(), 3e-6);
  EXPECT_DOUBLE_EQ((Quantity{4.8, Unit::kTBps, "s"}).si(), 4.8e12);
  const Quantity q = quantity_from_si(2.5e-6, Unit::kMicroseconds, "fit");
  EXPECT_DOUBLE_EQ(q.value, 2.5);
  EXPECT_EQ(parse_unit("GB/s"), Unit::kGBps);
  EXPECT_THROW(parse_unit("gbps"), InputError);
  EXPECT_EQ(parse_protocol("LL128"), Protocol::kLL128);
  EXPECT_EQ(parse_algorithm("nvls"), Algorithm::kNvls);
  EXPECT_THROW(parse_protocol("ll64"), InputError);
}

TEST_F(ProfileFileTest, LoadsAUserFileLikeTheBuiltin) {
  EXPECT_EQ(load_error(base_), "");
  EXPECT_EQ(load_profile(path_.string()), load_profile("h200-sxm"));
}

TEST_F(ProfileFileTest, BadValueNamesFileFieldAndValue) {
  base_["nvlink"]["bandwidth"]["value"] = -3;
  EXPECT_EQ(load_error(base_),
            path_.string() + ": nvlink.bandwidth.value: expected a positive number, got -3");
}

TEST_F(ProfileFileTest, MissingFieldIsNamed) {
  base_["nvlink"].erase("hop_latency");
  EXPECT_EQ(load_error(base_), path_.string() + ": nvlink.hop_latency: missing required field");
  base_.erase("signal");
  EXPECT_THAT(load_error(base_), HasSubstr("missing required field"));
}

TEST_F(ProfileFileTest, UnknownFieldIsAnError) {
  base_["nvlink"]["latency_typo"] = base_["nvlink"]["hop_latency"];
  EXPECT_THAT(load_error(base_),
              HasSubstr(path_.string() + ": nvlink.latency_typo: unknown field (allowed: "));
}

TEST_F(ProfileFileTest, MisspeltFieldReportsTheSpellingNotTheMissingName) {
  base_["nvlink"]["bandwith"] = base_["nvlink"]["bandwidth"];
  base_["nvlink"].erase("bandwidth");
  EXPECT_THAT(load_error(base_), HasSubstr("nvlink.bandwith: unknown field (allowed: bandwidth, "));
}

TEST_F(ProfileFileTest, UnknownKeyInsideAQuantity) {
  base_["gpu"]["l2_size"]["note"] = "x";
  EXPECT_THAT(load_error(base_), HasSubstr("gpu.l2_size.note: unknown field (allowed: value, unit, source)"));
}

TEST_F(ProfileFileTest, UnitOfTheWrongDimension) {
  base_["nvlink"]["bandwidth"]["unit"] = "us";
  EXPECT_EQ(load_error(base_),
            path_.string() +
                ": nvlink.bandwidth.unit: expected a bandwidth unit (B/s, GB/s, TB/s, Gb/s), "
                "got \"us\"");
}

TEST_F(ProfileFileTest, EmptySourceIsRejected) {
  base_["launch"]["dependent_gap"]["source"] = "";
  EXPECT_THAT(load_error(base_), HasSubstr("launch.dependent_gap.source: expected a non-empty string"));
}

TEST_F(ProfileFileTest, RangesPerField) {
  ordered_json ratio = base_;
  ratio["nccl"]["protocol_efficiency"]["ll"]["value"] = 1.5;
  EXPECT_THAT(load_error(ratio),
              HasSubstr("nccl.protocol_efficiency.ll.value: expected a ratio in (0, 1], got 1.5"));
  ordered_json count = base_;
  count["gpu"]["sm_count"]["value"] = 131.5;
  EXPECT_THAT(load_error(count), HasSubstr("gpu.sm_count.value: expected a positive integer, got 131.5"));
  ordered_json text = base_;
  text["nccl"]["nvls"]["enabled"]["value"] = "yes";
  EXPECT_THAT(load_error(text), HasSubstr("nccl.nvls.enabled.value: expected true or false, got \"yes\""));
  ordered_json number = base_;
  number["kernel"]["floor"]["value"] = "1";
  EXPECT_THAT(load_error(number), HasSubstr("kernel.floor.value: expected a number, got \"1\""));
}

TEST_F(ProfileFileTest, SyntaxAndFormatErrorsNameTheFile) {
  EXPECT_THAT(load_error_text("{\"name\": "), HasSubstr(path_.string() + ": invalid JSON"));
  EXPECT_THAT(load_error_text("[1, 2]"), HasSubstr(path_.string() + ": expected a JSON object"));
  // A number the parser cannot hold is named by its place in the document.
  EXPECT_THAT(load_error_text(R"({"name": "x", "gpu": {"sm_count": {"value": 1e999}}})"),
              HasSubstr(path_.string() + ": invalid JSON at gpu.sm_count.value: number overflow"));
  base_["format"] = "dcpsim-profile/99";
  EXPECT_THAT(load_error(base_), HasSubstr(path_.string() + ": format: expected \"dcpsim-profile/1\""));
  base_.erase("format");  // optional
  EXPECT_EQ(load_error(base_), "");
}

TEST(Profile, UnknownNameListsTheBuiltins) {
  try {
    load_profile("h300");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(),
                HasSubstr("unknown profile \"h300\" (built-in: b200, gb200-nvl72, h100-sxm, h200-sxm"));
  }
  EXPECT_THROW(load_profile("no/such/dir/profile.json"), InputError);
  EXPECT_THROW(builtin_profile_json("h300"), InputError);
}

TEST(Profile, ValidateCatchesEditsMadeInCode) {
  HardwareProfile p = load_profile("b200");
  p.gpu.sm_count.value = 0;
  EXPECT_THAT(
      [&] { validate_profile(p, "calibrated"); },
      ::testing::ThrowsMessage<InputError>(HasSubstr("calibrated: gpu.sm_count.value: expected a positive")));
  p = load_profile("b200");
  p.internode.latency.unit = Unit::kGBps;
  EXPECT_THROW(validate_profile(p, "calibrated"), InputError);
  p = load_profile("b200");
  p.nccl.nvls_enabled.source.clear();
  EXPECT_THROW(validate_profile(p, "calibrated"), InputError);
}

// launch.pdl_saving_<kernel> is optional per chain kernel: absent reads as none, present round-trips, and a
// negative one is an error naming the field.
TEST(Profile, PdlSavingsAreOptionalPerChainKernel) {
  HardwareProfile p = load_profile("b200");
  for (const auto& q : p.launch.pdl_saving) EXPECT_FALSE(q.has_value());
  const auto pack = static_cast<std::size_t>(MemoryKernel::kA2aPack);
  p.launch.pdl_saving[pack] = quantity_from_si(0.18e-6, Unit::kMicroseconds, "test");
  const std::string json = to_json(p);
  EXPECT_THAT(json, HasSubstr("\"pdl_saving_a2a_pack\""));
  EXPECT_THAT(json, ::testing::Not(HasSubstr("pdl_saving_correction")));
  EXPECT_EQ(parse_profile(json, "round trip"), p);
  p.launch.pdl_saving[pack]->value = -0.1;
  EXPECT_THAT([&] { validate_profile(p, "edited"); },
              ::testing::ThrowsMessage<InputError>(HasSubstr("edited: launch.pdl_saving_a2a_pack.value")));
  // The attention's (dcpsim's kernels) the same way.
  p.launch.pdl_saving[pack]->value = 0.18;
  EXPECT_FALSE(p.launch.pdl_saving_attention.has_value());
  EXPECT_THAT(to_json(p), ::testing::Not(HasSubstr("pdl_saving_attention")));
  p.launch.pdl_saving_attention = quantity_from_si(1.2e-6, Unit::kMicroseconds, "test");
  EXPECT_THAT(to_json(p), HasSubstr("\"pdl_saving_attention\""));
  EXPECT_EQ(parse_profile(to_json(p), "round trip"), p);
  p.launch.pdl_saving_attention->value = -1;
  EXPECT_THAT([&] { validate_profile(p, "edited"); },
              ::testing::ThrowsMessage<InputError>(HasSubstr("edited: launch.pdl_saving_attention.value")));
}

// launch.kernel_after_copy_node_<kernel> (correction, a2a_combine) and launch.graph_saving_<kernel> (the
// chain kernels) are optional: absent, a kernel reads the shared copy-node term and saves nothing; present,
// they round-trip; a negative one is an error naming the field; kernels without a slot are never written.
TEST(Profile, CopyNodeTermsAndGraphSavingsAreOptionalPerKernel) {
  HardwareProfile p = load_profile("b200");
  for (const auto& q : p.launch.after_copy_node) EXPECT_FALSE(q.has_value());
  for (const auto& q : p.launch.graph_saving) EXPECT_FALSE(q.has_value());
  EXPECT_DOUBLE_EQ(p.launch.after_copy_node_s(MemoryKernel::kA2aCombine),
                   p.launch.kernel_after_copy_node.si());
  const auto combine = static_cast<std::size_t>(MemoryKernel::kA2aCombine);
  const auto correction = static_cast<std::size_t>(MemoryKernel::kCorrection);
  p.launch.after_copy_node[combine] = quantity_from_si(0.45e-6, Unit::kMicroseconds, "test");
  p.launch.graph_saving[correction] = quantity_from_si(0.06e-6, Unit::kMicroseconds, "test");
  p.launch.after_copy_node[static_cast<std::size_t>(MemoryKernel::kA2aPack)] =
      quantity_from_si(1e-6, Unit::kMicroseconds, "no pack follows copies: not written");
  const std::string json = to_json(p);
  EXPECT_THAT(json, HasSubstr("\"kernel_after_copy_node_a2a_combine\""));
  EXPECT_THAT(json, HasSubstr("\"graph_saving_correction\""));
  EXPECT_THAT(json, ::testing::Not(HasSubstr("kernel_after_copy_node_correction")));
  EXPECT_THAT(json, ::testing::Not(HasSubstr("kernel_after_copy_node_a2a_pack")));
  EXPECT_DOUBLE_EQ(p.launch.after_copy_node_s(MemoryKernel::kA2aCombine), 0.45e-6);
  EXPECT_DOUBLE_EQ(p.launch.after_copy_node_s(MemoryKernel::kA2aPack), p.launch.kernel_after_copy_node.si());
  p.launch.after_copy_node[static_cast<std::size_t>(MemoryKernel::kA2aPack)].reset();
  EXPECT_EQ(parse_profile(json, "round trip"), p);
  p.launch.after_copy_node[combine]->value = -0.1;
  EXPECT_THAT([&] { validate_profile(p, "edited"); },
              ::testing::ThrowsMessage<InputError>(
                  HasSubstr("edited: launch.kernel_after_copy_node_a2a_combine.value")));
  p.launch.after_copy_node[combine]->value = 0.45;
  p.launch.graph_saving[correction]->value = -0.1;
  EXPECT_THAT(
      [&] { validate_profile(p, "edited"); },
      ::testing::ThrowsMessage<InputError>(HasSubstr("edited: launch.graph_saving_correction.value")));
}

TEST(Profile, NcclLatencyTableOnlyForRingAndTree) {
  const HardwareProfile p = load_profile("h100-sxm");
  EXPECT_DOUBLE_EQ(nccl_latency(p, Algorithm::kTree, Protocol::kLL128).nvlink_hop_latency.si(), 1.25e-6);
  EXPECT_THROW(nccl_latency(p, Algorithm::kNvls, Protocol::kSimple), InputError);
}

}  // namespace
}  // namespace dcpsim::models
