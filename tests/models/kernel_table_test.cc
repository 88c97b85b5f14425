// Kernel tables: loading and its errors, interpolation (exact at measured points, between neighbours, nothing
// outside the hull), profiles with and without tables, table vs analytic pricing, the attention roofline and
// per-kernel-type memory numbers.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <zlib.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "dcpsim/error.h"
#include "dcpsim/json_limits.h"
#include "dcpsim/models/cost_kernels.h"
#include "dcpsim/models/kernel_table.h"
#include "dcpsim/models/profile.h"
#include "dcpsim/text_file.h"
#include "kernel_table_json.h"
#include "kernel_table_points.h"

namespace dcpsim::models {
namespace {

using nlohmann::ordered_json;
using ::testing::HasSubstr;

ordered_json point(std::vector<double> at, double median) {
  return {{"at", at}, {"median_ns", median}, {"samples", 10}, {"min_ns", median}, {"max_ns", median}};
}

// A correction table over dcp {2, 4} x rows {1, 16, 64} x heads {32, 128}, times increasing along each axis,
// with the corner (4, 64, 128) not measured.
ordered_json correction_tables(const std::string& device = "NVIDIA H200") {
  ordered_json points = ordered_json::array();
  for (double n : {2.0, 4.0})
    for (double b : {1.0, 16.0, 64.0})
      for (double h : {32.0, 128.0}) {
        if (n == 4 && b == 64 && h == 128) continue;
        points.push_back(point({n, b, h}, 5000 + 100 * n + 20 * b + h));
      }
  return {{"format", "dcpsim-kernel-tables/1"},
          {"provenance",
           {{"device", device},
            {"driver", "580.159.04"},
            {"cuda", "13.0"},
            {"nccl", "2.28.3"},
            {"clocks", "default"},
            {"date", "2026-12-01"},
            {"command", "test"}}},
          {"tables", ordered_json::array({ordered_json{{"kernel", "correction"},
                                                       {"key", "d512 bf16"},
                                                       {"axes", {"dcp", "rows", "heads"}},
                                                       {"points", points}}})}};
}

// correction_tables() with its one table under `key` and every time multiplied by `factor`.
ordered_json scaled_correction_tables(const std::string& key, double factor) {
  ordered_json t = correction_tables();
  ordered_json& table = t["tables"][0];
  table["key"] = key;
  for (auto& pt : table["points"])
    for (const char* f : {"median_ns", "min_ns", "max_ns"}) pt[f] = pt[f].get<double>() * factor;
  return t;
}

// The message of the InputError `read` throws, or "".
template <class Read>
std::string message_of(Read&& read) {
  try {
    read();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::string parse_error_text(const std::string& text) {
  return message_of([&] { parse_kernel_tables(text, "t.json"); });
}

std::string parse_error(const ordered_json& j) {
  return parse_error_text(j.dump());
}

TEST(KernelTable, ExactAtEveryMeasuredPoint) {
  const KernelTables t = parse_kernel_tables(correction_tables().dump(), "t.json");
  ASSERT_EQ(t.tables.size(), 1u);
  for (const TablePoint& p : t.tables[0].points) {
    const auto got = table_time_s(t.tables[0], p.at);
    ASSERT_TRUE(got.has_value());
    EXPECT_DOUBLE_EQ(*got, p.median_ns * 1e-9);
  }
}

TEST(KernelTable, MonotoneAndBetweenNeighboursAlongEachAxis) {
  const KernelTables t = parse_kernel_tables(correction_tables().dump(), "t.json");
  double previous = 0.0;
  for (double b = 1.0; b <= 64.0; b *= 1.1) {
    const double at[] = {2.0, b, 64.0};  // heads 64 lies between the grid's 32 and 128
    const auto got = table_time_s(t.tables[0], at);
    ASSERT_TRUE(got.has_value()) << b;
    EXPECT_GE(*got, previous) << b;
    previous = *got;
  }
  // log-log: 64 is halfway in log between 32 and 128, so the time is the neighbours' geometric mean.
  const double mid[] = {2.0, 16.0, 64.0};
  EXPECT_NEAR(*table_time_s(t.tables[0], mid), std::sqrt(5552.0 * 5648.0) * 1e-9, 1e-15);
}

// A kernel whose time is a power of its size (here linear in the rows) is interpolated exactly between
// measured points, where a straight line in log(size) would overshoot.
TEST(KernelTable, PowerLawsInterpolateExactly) {
  KernelTable k{TableKernel::kCorrection, "d128 bf16", {}, {}, {}, {}, {}, {}, {}};
  for (double b : {4.0, 16.0})
    for (double h : {8.0, 32.0}) k.points.push_back({{2.0, b, h}, 100.0 * b * std::sqrt(h), 5, 1, 1e9});
  k.finalize("test");
  for (double b : {5.0, 8.0, 11.0})
    for (double h : {9.0, 16.0, 30.0}) {
      const double at[] = {2.0, b, h};
      EXPECT_NEAR(*table_time_s(k, at), 100e-9 * b * std::sqrt(h), 1e-12 * b * std::sqrt(h)) << b << " " << h;
    }
}

// A memory-bound kernel's time is a floor plus its bytes over a bandwidth: affine in the product of its
// sizes. Read linearly (TableInterpolation::kLinear) a table of such a kernel is exact between measured
// points, also where the corner of a cell was not measured (slice by slice); the power law overestimates it
// there (the merge tables' leave-one-out reads them linearly, table_loo_test).
TEST(KernelTable, LinearReadingIsExactForAFloorPlusBytes) {
  auto time_ns = [](double n, double b, double h) { return 2000.0 + 0.5 * (n + 1) * b * h; };
  // Each N measured at its own heads (as a2a tables are, at heads per rank): the grid of all values misses
  // corners, so N = 3 is read slice by slice, each N's own grid, then along N.
  KernelTable k{TableKernel::kCorrection, "d128 bf16", {}, {}, {}, {}, {}, {}, {}};
  for (double n : {2.0, 4.0})
    for (double b : {8.0, 16.0, 32.0})
      for (double h : n == 2.0 ? std::vector<double>{24.0, 48.0} : std::vector<double>{12.0, 48.0})
        k.points.push_back({{n, b, h}, time_ns(n, b, h), 5, 1, 1e9});
  k.interpolation = TableInterpolation::kLinear;
  k.finalize("test");
  ASSERT_FALSE(k.slices.empty());
  for (double n : {2.0, 3.0, 4.0})
    for (double b : {8.0, 11.0, 13.0, 16.0, 23.0, 32.0})
      for (double h : {24.0, 31.0, 40.0, 48.0}) {
        const double at[] = {n, b, h};
        const std::optional<double> t = table_time_s(k, at);
        ASSERT_TRUE(t) << n << " " << b << " " << h;
        EXPECT_NEAR(*t * 1e9, time_ns(n, b, h), 1e-9 * time_ns(n, b, h)) << n << " " << b << " " << h;
      }
  const double below[] = {3.0, 16.0, 12.0};  // N = 2 measured no heads below 24
  EXPECT_FALSE(table_time_s(k, below));
  // The power law at the middle (in log) of a cell 2x apart on rows and heads: 1-3% over.
  KernelTable power = k;
  power.interpolation = TableInterpolation::kPowerLaw;
  power.finalize("test");
  const double mid[] = {2.0, 8.0 * std::sqrt(2.0), 24.0 * std::sqrt(2.0)};
  const double exact = time_ns(mid[0], mid[1], mid[2]);
  EXPECT_GT(*table_time_s(power, mid) * 1e9, 1.01 * exact);
  EXPECT_LT(*table_time_s(power, mid) * 1e9, 1.03 * exact);
  EXPECT_NEAR(*table_time_s(k, mid) * 1e9, exact, 1e-9 * exact);
}

// Each N measured at its own slices of the heads (a2a_pack's heads_per_rank at H = N x each, say): the grid
// of all values misses corners, so a lookup interpolates each N's slice over its own grid, then along N.
TEST(KernelTable, IncompleteGridsInterpolateSliceBySlice) {
  KernelTable k{TableKernel::kA2aPack, "d512 bf16", {}, {}, {}, {}, {}, {}, {}};
  auto time_ns = [](double n, double b, double h) { return 1000.0 + 50 * n + 10 * b + 30 * h; };
  for (double b : {1.0, 16.0}) {
    for (double h : {4.0, 16.0}) k.points.push_back({{2.0, b, h}, time_ns(2, b, h), 5, 1, 1e9});
    for (double h : {8.0, 32.0}) k.points.push_back({{4.0, b, h}, time_ns(4, b, h), 5, 1, 1e9});
  }
  k.finalize("test");
  ASSERT_EQ(k.slices.size(), 2u);  // N = 2 and N = 4
  for (const TablePoint& p : k.points) EXPECT_DOUBLE_EQ(*table_time_s(k, p.at), p.median_ns * 1e-9);
  // N = 3, B = 1, h = 8: N = 2's slice halfway (in log) between h = 4 and 16, N = 4's measured point; then
  // log(3/2) / log(2) of the way (in log N) from N = 2 to N = 4.
  const double at[] = {3.0, 1.0, 8.0};
  const double n2 = std::sqrt(time_ns(2, 1, 4) * time_ns(2, 1, 16));
  const double n4 = time_ns(4, 1, 8);
  const double w = std::log(1.5) / std::log(2.0);
  EXPECT_NEAR(*table_time_s(k, at), std::exp((1 - w) * std::log(n2) + w * std::log(n4)) * 1e-9, 1e-15);
  // Between the neighbours, as every interpolated time.
  EXPECT_GT(*table_time_s(k, at), std::min(n2, n4) * 1e-9);
  EXPECT_LT(*table_time_s(k, at), std::max(n2, n4) * 1e-9);
  // h = 4 lies inside N = 2's slice but below N = 4's: not priced between them; at N = 2 it is measured.
  const double below[] = {3.0, 1.0, 4.0};
  EXPECT_FALSE(table_time_s(k, below));
  const double on_slice[] = {2.0, 16.0, 4.0};
  EXPECT_DOUBLE_EQ(*table_time_s(k, on_slice), time_ns(2, 16, 4) * 1e-9);
  // A complete grid needs no slices.
  KernelTable full{TableKernel::kA2aPack, "d512 bf16", {}, {}, {}, {}, {}, {}, {}};
  for (double n : {2.0, 4.0})
    for (double h : {4.0, 8.0}) full.points.push_back({{n, 1.0, h}, time_ns(n, 1, h), 5, 1, 1e9});
  full.finalize("test");
  EXPECT_TRUE(full.slices.empty());
}

TEST(KernelTable, NothingOutsideTheHullOrWithoutItsCorners) {
  const KernelTables t = parse_kernel_tables(correction_tables().dump(), "t.json");
  const double beyond_rows[] = {2.0, 128.0, 32.0};
  const double below_dcp[] = {1.5, 16.0, 32.0};
  const double missing_corner[] = {4.0, 32.0, 64.0};  // needs (4, 64, 128)
  const double nan[] = {2.0, std::nan(""), 32.0};
  EXPECT_FALSE(table_time_s(t.tables[0], beyond_rows));
  EXPECT_FALSE(table_time_s(t.tables[0], below_dcp));
  EXPECT_FALSE(table_time_s(t.tables[0], missing_corner));
  EXPECT_FALSE(table_time_s(t.tables[0], nan));
  const double inside[] = {3.0, 8.0, 64.0};
  EXPECT_TRUE(table_time_s(t.tables[0], inside));
  EXPECT_FALSE(lookup_kernel_time_s({t}, TableKernel::kCorrection, "d128 bf16", inside));  // another key
  EXPECT_FALSE(lookup_kernel_time_s({t}, TableKernel::kA2aPack, "d512 bf16", inside));     // another kernel
}

TEST(KernelTable, RoundTripsThroughItsCanonicalText) {
  const KernelTables t = parse_kernel_tables(correction_tables().dump(), "t.json");
  EXPECT_EQ(parse_kernel_tables(kernel_tables_json(t), "again.json"), t);
  EXPECT_THAT(describe_kernel_tables(t), HasSubstr("correction [d512 bf16]: 11 points"));
}

TEST(KernelTable, BadTablesFailWithFileAndPath) {
  ordered_json j = correction_tables();
  j["tables"][0]["points"][3]["median_ns"] = nullptr;  // how a NaN reaches JSON
  EXPECT_EQ(parse_error(j), "t.json: tables[0].points[3].median_ns: expected a positive number, got NaN");

  j = correction_tables();
  j["tables"][0]["points"].push_back(j["tables"][0]["points"][2]);
  EXPECT_THAT(parse_error(j),
              HasSubstr("tables[0].points[11]: duplicate point [2.0,16.0,32.0] (also points[2])"));

  j = correction_tables();
  j["tables"][0]["axes"] = {"dcp", "heads", "rows"};
  EXPECT_THAT(parse_error(j), HasSubstr("t.json: tables[0].axes: expected [\"dcp\",\"rows\",\"heads\"]"));

  j = correction_tables();
  j["tables"][0]["kernel"] = "softmax";
  EXPECT_THAT(parse_error(j), HasSubstr("t.json: tables[0].kernel: unknown kernel type \"softmax\""));

  j = correction_tables();
  j["provenance"].erase("device");
  EXPECT_EQ(parse_error(j), "t.json: provenance.device: missing required field");

  j = correction_tables();
  j["format"] = "dcpsim-kernel-tables/9";
  EXPECT_THAT(parse_error(j), HasSubstr("t.json: format: expected \"dcpsim-kernel-tables/1\""));

  j = correction_tables();
  j["tables"][0]["points"][0]["at"] = {2, -1, 32};
  EXPECT_THAT(parse_error(j), HasSubstr("tables[0].points[0].at[1]: expected a positive number, got -1"));

  j = correction_tables();
  j["tables"].push_back(j["tables"][0]);
  EXPECT_THAT(parse_error(j), HasSubstr("tables[1]: duplicate table for correction \"d512 bf16\""));

  EXPECT_THAT(parse_error(ordered_json::array()), HasSubstr("t.json: (top level): expected a JSON object"));
}

// A table file read the ordinary way: the whole document as JSON values, then its tables.
KernelTables ordinary_read(const std::string& text) {
  return detail::parse_kernel_tables_json(parse_json_checked<ordered_json>(text, "t.json"), "t.json");
}

std::string ordinary_error(const std::string& text) {
  return message_of([&] { ordinary_read(text); });
}

// parse_kernel_tables reads a file's points straight from the parser (kernel_table_points.h): it takes every
// committed table that way, and gets what the ordinary reader gets. (Leaves ASan to the next test: 16 MB of
// tables read the ordinary way.)
TEST(KernelTable, EveryCommittedTableReadsTheSameBothWays) {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(DCPSIM_SOURCE_DIR "/models/tables")) {
    const std::string text = read_text_file(entry.path(), "table");
    if (text.find("dcpsim-kernel-tables/1") == std::string::npos) continue;  // communication tables
    const std::string where = entry.path().string();
    detail::TablePointsReader fast(where);
    EXPECT_TRUE(fast.read(text)) << where;  // no fallback for a well-formed file
    EXPECT_EQ(parse_kernel_tables(text, "t.json"), ordinary_read(text)) << where;
    ++files;
  }
  EXPECT_GT(files, 30);
}

// Whatever in a points array is not a well-formed point, the fast read gives the file to the ordinary reader,
// whose message names the point and the field.
TEST(KernelTable, MalformedPointsGetTheOrdinaryReadersMessages) {
  const std::string good = correction_tables().dump();
  EXPECT_EQ(parse_kernel_tables(good, "t.json"), ordinary_read(good));
  const auto edited = [](auto edit) {
    ordered_json j = correction_tables();
    edit(j["tables"][0]["points"]);
    return j.dump();
  };
  // The same document with a second "points" member after the first (JSON keeps the last).
  const auto points_again = [&](const std::string& value) {
    std::string text = good;
    return text.insert(text.rfind("]}]}") + 1, ", \"points\": " + value);
  };
  const std::vector<std::pair<std::string, std::string>> bad = {
      {edited([](ordered_json& p) { p[1]["extra"] = 1; }),
       "t.json: tables[0].points[1].extra: unknown field (allowed: at, median_ns, samples, min_ns, max_ns)"},
      {edited([](ordered_json& p) { p[2].erase("min_ns"); }),
       "t.json: tables[0].points[2].min_ns: missing required field"},
      {edited([](ordered_json& p) { p[0]["samples"] = 2.5; }),
       "t.json: tables[0].points[0].samples: expected a positive integer up to 2147483647, got 2.5"},
      {edited([](ordered_json& p) { p[0]["samples"] = 2147483648; }),
       "t.json: tables[0].points[0].samples: expected a positive integer up to 2147483647, got 2147483648"},
      {edited([](ordered_json& p) { p[0]["samples"] = 18446744073709551615ull; }),
       "t.json: tables[0].points[0].samples: expected a positive integer up to 2147483647, got "
       "18446744073709551615"},
      {edited([](ordered_json& p) {
         p[4]["at"] = {2, 16};
       }),
       "t.json: tables[0].points[4].at: expected an array of 3 coordinates, got [2,16]"},
      {edited([](ordered_json& p) { p[4]["at"] = 3; }),
       "t.json: tables[0].points[4].at: expected an array of 3 coordinates, got 3"},
      {edited([](ordered_json& p) { p[3]["max_ns"] = 1.0; }),
       "t.json: tables[0].points[3]: expected min_ns <= median_ns <= max_ns, got 5648.0, 5648.0, 1.0"},
      {edited([](ordered_json& p) { p[5]["median_ns"] = "5"; }),
       "t.json: tables[0].points[5].median_ns: expected a positive number, got \"5\""},
      {edited([](ordered_json& p) { p[5] = 7; }), "t.json: tables[0].points[5]: expected an object, got 7"},
      {edited([](ordered_json& p) { p = ordered_json::array(); }),
       "t.json: tables[0].points: expected a non-empty array of points, got []"},
      {points_again("5"), "t.json: tables[0].points: expected a non-empty array of points, got 5"},
      {points_again("[]"), "t.json: tables[0].points: expected a non-empty array of points, got []"},
  };
  for (const auto& [text, message] : bad) {
    EXPECT_EQ(parse_error_text(text), message) << text.substr(0, 200);
    EXPECT_EQ(ordinary_error(text), message);
  }
  // A second points array replaces the first, as in the ordinary reader.
  const std::string again = points_again(ordered_json::array({point({2, 1, 32}, 7000)}).dump());
  EXPECT_EQ(parse_kernel_tables(again, "t.json"), ordinary_read(again));
  EXPECT_EQ(parse_kernel_tables(again, "t.json").tables[0].points.size(), 1u);
  // A syntax error inside a point names the value where it happened, as everywhere.
  std::string cut = good;
  cut.replace(cut.find("\"median_ns\":"), 12, "\"median_ns\":x");
  EXPECT_THAT(parse_error_text(cut), HasSubstr("t.json: invalid JSON at tables[0].points[0].median_ns"));
}

// A profile file and its table file side by side in a scratch directory.
class ProfileTablesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::path(DCPSIM_BINARY_DIR) / (std::string("kernel_table_test_") + info->name());
    std::filesystem::create_directories(dir_ / "tables");
    profile_ = ordered_json::parse(builtin_profile_json("h200-sxm"));
    profile_.erase("tables");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path write(const std::string& name, const ordered_json& j) {
    std::ofstream(dir_ / name) << j.dump(2);
    return dir_ / name;
  }
  std::string load_error(const std::filesystem::path& p) {
    try {
      load_profile(p.string());
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  }

  std::filesystem::path dir_;
  ordered_json profile_;
};

TEST_F(ProfileTablesTest, ProfileWithoutTablesPricesEverythingAnalytically) {
  const HardwareProfile p = load_profile(write("p.json", profile_).string());
  EXPECT_TRUE(p.tables.empty());
  const MergeShape m{2, 16, 32, 512, DType::kBF16, false};
  const KernelPrice price = merge_kernel_price(p, MemoryKernel::kCorrection, m);
  EXPECT_EQ(price.source, FigureSource::kAnalytic);
  EXPECT_DOUBLE_EQ(price.seconds, correction_time(p, m));
}

// Cold inputs (an emulated step's merge kernels) are priced from the " cold" table where there is one, else
// from the warm one; warm inputs never from the cold table.
TEST_F(ProfileTablesTest, ColdInputsPreferTheColdTable) {
  write("tables/warm.json", correction_tables());
  write("tables/cold.json", scaled_correction_tables("d512 bf16 cold", 2));
  MergeShape m{2, 16, 32, 512, DType::kBF16, false};
  EXPECT_EQ(merge_table_key(m), "d512 bf16");
  profile_["tables"] = {"tables/warm.json"};
  const HardwareProfile warm_only = load_profile(write("w.json", profile_).string());
  m.cold_inputs = true;
  EXPECT_EQ(merge_table_key(m), "d512 bf16 cold");
  EXPECT_DOUBLE_EQ(merge_kernel_price(warm_only, MemoryKernel::kCorrection, m).seconds, 5552e-9);
  profile_["tables"] = {"tables/warm.json", "tables/cold.json"};
  const HardwareProfile both = load_profile(write("b.json", profile_).string());
  const KernelPrice c = merge_kernel_price(both, MemoryKernel::kCorrection, m);
  EXPECT_EQ(c.source, FigureSource::kTable);
  EXPECT_DOUBLE_EQ(c.seconds, 2 * 5552e-9);
  m.cold_inputs = false;
  EXPECT_DOUBLE_EQ(merge_kernel_price(both, MemoryKernel::kCorrection, m).seconds, 5552e-9);
}

// AG+RS's correction (the reduce-scatter's layout) is priced from the " rs" table where there is one, else
// from the in-place table; in place never from the " rs" one. Cold RS inputs: the RS cold table, else the RS
// warm one, before any in-place table.
TEST_F(ProfileTablesTest, RsLayoutPrefersTheRsTable) {
  write("tables/in_place.json", correction_tables());
  write("tables/rs.json", scaled_correction_tables("d512 bf16 rs", 1.5));
  MergeShape m{2, 16, 32, 512, DType::kBF16, false};
  m.rs_layout = true;
  EXPECT_EQ(merge_table_key(m), "d512 bf16 rs");
  m.cold_inputs = true;
  m.row_stamps = true;
  EXPECT_EQ(merge_table_key(m), "d512 bf16 rs stamped cold");
  m.cold_inputs = m.row_stamps = false;
  profile_["tables"] = {"tables/in_place.json"};
  const HardwareProfile in_place_only = load_profile(write("i.json", profile_).string());
  EXPECT_DOUBLE_EQ(merge_kernel_price(in_place_only, MemoryKernel::kCorrection, m).seconds, 5552e-9);
  profile_["tables"] = {"tables/in_place.json", "tables/rs.json"};
  const HardwareProfile both = load_profile(write("b.json", profile_).string());
  EXPECT_DOUBLE_EQ(merge_kernel_price(both, MemoryKernel::kCorrection, m).seconds, 1.5 * 5552e-9);
  m.cold_inputs = true;  // no cold table: the RS warm one
  EXPECT_DOUBLE_EQ(merge_kernel_price(both, MemoryKernel::kCorrection, m).seconds, 1.5 * 5552e-9);
  m.cold_inputs = m.rs_layout = false;
  EXPECT_DOUBLE_EQ(merge_kernel_price(both, MemoryKernel::kCorrection, m).seconds, 5552e-9);
}

// a2a-2call's pack and combine (the LSEs apart from O: another combine kernel) are priced from the " split"
// tables where there are any, else from the packed layout's; the packed all-to-all never from the " split"
// ones. Cold split inputs: the split cold table, else the packed cold one (inputs out of L2 cost more than
// the layout saves), else the split warm one.
TEST_F(ProfileTablesTest, SplitLseLayoutPrefersTheSplitTable) {
  const auto combine = [](const std::string& key, double factor) {
    ordered_json t = scaled_correction_tables(key, factor);
    t["tables"][0]["kernel"] = "a2a_combine";
    t["tables"][0]["axes"] = {"dcp", "rows", "heads_per_rank"};
    return t;
  };
  write("tables/packed.json", combine("d512 bf16", 1.0));
  write("tables/split.json", combine("d512 bf16 split", 0.9));
  write("tables/split_cold.json", combine("d512 bf16 split cold", 1.4));
  MergeShape m{2, 16, 64, 512, DType::kBF16, false};  // 32 heads per owner: on the grid
  m.split_lse = true;
  EXPECT_EQ(merge_table_key(m), "d512 bf16 split");
  m.cold_inputs = true;
  EXPECT_EQ(merge_table_key(m), "d512 bf16 split cold");
  m.cold_inputs = false;
  profile_["tables"] = {"tables/packed.json"};
  const HardwareProfile packed_only = load_profile(write("p.json", profile_).string());
  EXPECT_DOUBLE_EQ(merge_kernel_price(packed_only, MemoryKernel::kA2aCombine, m).seconds, 5552e-9);
  EXPECT_EQ(merge_price_key(packed_only, MemoryKernel::kA2aCombine, m), "d512 bf16");  // what reports name
  EXPECT_EQ(merge_price_key(packed_only, MemoryKernel::kCorrection, m), "");           // no correction table
  profile_["tables"] = {"tables/packed.json", "tables/split.json"};
  const HardwareProfile both = load_profile(write("b.json", profile_).string());
  const KernelPrice split = merge_kernel_price(both, MemoryKernel::kA2aCombine, m);
  EXPECT_EQ(split.source, FigureSource::kTable);
  EXPECT_DOUBLE_EQ(split.seconds, 0.9 * 5552e-9);
  EXPECT_EQ(merge_price_key(both, MemoryKernel::kA2aCombine, m), "d512 bf16 split");
  m.cold_inputs = true;  // no cold table at all: the split warm one, before the packed one
  EXPECT_DOUBLE_EQ(merge_kernel_price(both, MemoryKernel::kA2aCombine, m).seconds, 0.9 * 5552e-9);
  write("tables/packed_cold.json", combine("d512 bf16 cold", 1.5));
  profile_["tables"] = {"tables/packed.json", "tables/split.json", "tables/packed_cold.json"};
  const HardwareProfile no_split_cold = load_profile(write("n.json", profile_).string());
  EXPECT_DOUBLE_EQ(merge_kernel_price(no_split_cold, MemoryKernel::kA2aCombine, m).seconds, 1.5 * 5552e-9);
  profile_["tables"] = {"tables/packed.json", "tables/split.json", "tables/packed_cold.json",
                        "tables/split_cold.json"};
  const HardwareProfile all = load_profile(write("a.json", profile_).string());
  EXPECT_DOUBLE_EQ(merge_kernel_price(all, MemoryKernel::kA2aCombine, m).seconds, 1.4 * 5552e-9);
  m.cold_inputs = m.split_lse = false;  // the packed all-to-all's combine
  EXPECT_DOUBLE_EQ(merge_kernel_price(all, MemoryKernel::kA2aCombine, m).seconds, 5552e-9);
  // The scenario decides: a2a-2call splits, a2a does not.
  Scenario s;
  s.dcp = 2;
  s.heads = 64;
  s.head_dim = 512;
  s.strategy = Strategy::kA2aTwoCall;
  EXPECT_TRUE(merge_shape(s).split_lse);
  s.strategy = Strategy::kA2a;
  EXPECT_FALSE(merge_shape(s).split_lse);
}

// The emulated correction's cold endpoint with its gathered LSEs in L2: the " cold lse" table where there is
// one, else the " cold" one, else the warm one; the key names the LSEs only with cold inputs.
TEST_F(ProfileTablesTest, WarmLsesPreferTheColdLseTable) {
  write("tables/warm.json", correction_tables());
  write("tables/cold.json", scaled_correction_tables("d512 bf16 cold", 3.0));
  write("tables/cold_lse.json", scaled_correction_tables("d512 bf16 cold lse", 2.0));
  MergeShape m{2, 16, 32, 512, DType::kBF16, false};
  m.warm_lse = true;
  EXPECT_EQ(merge_table_key(m), "d512 bf16");
  m.cold_inputs = true;
  EXPECT_EQ(merge_table_key(m), "d512 bf16 cold lse");
  profile_["tables"] = {"tables/warm.json", "tables/cold.json", "tables/cold_lse.json"};
  const HardwareProfile all = load_profile(write("a.json", profile_).string());
  EXPECT_DOUBLE_EQ(merge_kernel_price(all, MemoryKernel::kCorrection, m).seconds, 2.0 * 5552e-9);
  profile_["tables"] = {"tables/warm.json", "tables/cold.json"};
  const HardwareProfile no_lse = load_profile(write("c.json", profile_).string());
  EXPECT_DOUBLE_EQ(merge_kernel_price(no_lse, MemoryKernel::kCorrection, m).seconds, 3.0 * 5552e-9);
  profile_["tables"] = {"tables/warm.json"};
  const HardwareProfile warm_only = load_profile(write("w.json", profile_).string());
  EXPECT_DOUBLE_EQ(merge_kernel_price(warm_only, MemoryKernel::kCorrection, m).seconds, 5552e-9);
  m.warm_lse = false;  // plain cold inputs never read the " cold lse" table
  EXPECT_DOUBLE_EQ(merge_kernel_price(all, MemoryKernel::kCorrection, m).seconds, 3.0 * 5552e-9);
  // The RS layout: its own cold table before any in-place one, " lse" or not.
  write("tables/rs_cold.json", scaled_correction_tables("d512 bf16 rs cold", 4.0));
  profile_["tables"] = {"tables/warm.json", "tables/cold.json", "tables/cold_lse.json",
                        "tables/rs_cold.json"};
  const HardwareProfile rs = load_profile(write("r.json", profile_).string());
  m.warm_lse = m.rs_layout = true;
  EXPECT_EQ(merge_table_key(m), "d512 bf16 rs cold lse");
  EXPECT_DOUBLE_EQ(merge_kernel_price(rs, MemoryKernel::kCorrection, m).seconds, 4.0 * 5552e-9);
  EXPECT_DOUBLE_EQ(merge_kernel_price(warm_only, MemoryKernel::kCorrection, m).seconds, 5552e-9);
}

// A kernel launched under PDL after one of its kind reads the " pdl" table first, else the plain ones.
TEST_F(ProfileTablesTest, PdlKernelsPreferThePdlTable) {
  write("tables/warm.json", correction_tables());
  write("tables/pdl.json", scaled_correction_tables("d512 bf16 pdl", 0.5));
  MergeShape m{2, 16, 32, 512, DType::kBF16, false};
  m.pdl = true;
  EXPECT_EQ(merge_table_key(m), "d512 bf16 pdl");
  profile_["tables"] = {"tables/warm.json", "tables/pdl.json"};
  const HardwareProfile both = load_profile(write("b.json", profile_).string());
  EXPECT_DOUBLE_EQ(merge_kernel_price(both, MemoryKernel::kCorrection, m).seconds, 0.5 * 5552e-9);
  profile_["tables"] = {"tables/warm.json"};
  const HardwareProfile warm_only = load_profile(write("w.json", profile_).string());
  const KernelPrice fallback = merge_kernel_price(warm_only, MemoryKernel::kCorrection, m);
  EXPECT_EQ(fallback.source, FigureSource::kTable);
  EXPECT_DOUBLE_EQ(fallback.seconds, 5552e-9);
  m.pdl = false;  // a plain launch never reads the " pdl" table
  EXPECT_DOUBLE_EQ(merge_kernel_price(both, MemoryKernel::kCorrection, m).seconds, 5552e-9);
  // Cold inputs: the " pdl cold" table first, then the plain cold one (the inputs' residency matters more).
  write("tables/pdl_cold.json", scaled_correction_tables("d512 bf16 pdl cold", 0.9));
  write("tables/cold.json", scaled_correction_tables("d512 bf16 cold", 3.0));
  m.pdl = m.cold_inputs = true;
  EXPECT_EQ(merge_table_key(m), "d512 bf16 pdl cold");
  profile_["tables"] = {"tables/warm.json", "tables/cold.json", "tables/pdl.json", "tables/pdl_cold.json"};
  const HardwareProfile all = load_profile(write("a.json", profile_).string());
  EXPECT_DOUBLE_EQ(merge_kernel_price(all, MemoryKernel::kCorrection, m).seconds, 0.9 * 5552e-9);
  profile_["tables"] = {"tables/warm.json", "tables/cold.json", "tables/pdl.json"};
  const HardwareProfile no_pdl_cold = load_profile(write("n.json", profile_).string());
  EXPECT_DOUBLE_EQ(merge_kernel_price(no_pdl_cold, MemoryKernel::kCorrection, m).seconds, 3.0 * 5552e-9);
}

TEST_F(ProfileTablesTest, ProfileWithATablePricesInsideItAndFlagsOutside) {
  write("tables/corr.json", correction_tables());
  profile_["tables"] = {"tables/corr.json"};
  const HardwareProfile p = load_profile(write("p.json", profile_).string());
  ASSERT_EQ(p.tables.size(), 1u);
  EXPECT_EQ(p.tables[0].origin, "tables/corr.json");
  const KernelPrice inside =
      merge_kernel_price(p, MemoryKernel::kCorrection, {2, 16, 32, 512, DType::kBF16, false});
  EXPECT_EQ(inside.source, FigureSource::kTable);
  EXPECT_DOUBLE_EQ(inside.seconds, 5552e-9);
  const MergeShape outside{8, 16, 32, 512, DType::kBF16, false};
  const KernelPrice extrapolated = merge_kernel_price(p, MemoryKernel::kCorrection, outside);
  EXPECT_EQ(extrapolated.source, FigureSource::kAnalytic);
  EXPECT_DOUBLE_EQ(extrapolated.seconds, correction_time(p, outside));
  // The profile writes the reference back, and reads the same profile from it.
  EXPECT_EQ(parse_profile(to_json(p), (dir_ / "p.json").string()), p);
}

// The kernels that work on one owner's slice are looked up by H / N: N = 5 with H = 20 (h = 4) lies between
// N = 4 (H = 16) and N = 6 (H = 24) at the same h. Tables written with the older H axis load as H / N.
TEST_F(ProfileTablesTest, OwnerSliceKernelsAreLookedUpByHeadsPerRank) {
  ordered_json points = ordered_json::array();
  for (double n : {4.0, 6.0})
    for (double b : {1.0, 16.0})
      for (double h : {4.0, 8.0}) points.push_back(point({n, b, n * h}, 2000 + 100 * n + 10 * b + h));
  ordered_json t = correction_tables();
  t["tables"] = ordered_json::array({{{"kernel", "a2a_pack"},
                                      {"key", "d512 bf16"},
                                      {"axes", {"dcp", "rows", "heads"}},
                                      {"points", points}}});
  write("tables/pack.json", t);
  profile_["tables"] = {"tables/pack.json"};
  const HardwareProfile p = load_profile(write("p.json", profile_).string());
  ASSERT_EQ(p.tables.size(), 1u);
  EXPECT_EQ(p.tables[0].tables[0].points[1].at, (std::vector<double>{4.0, 1.0, 8.0}));  // H 32 -> 8
  EXPECT_THAT(kernel_tables_json(p.tables[0]), HasSubstr("\"axes\": [\"dcp\",\"rows\",\"heads_per_rank\"]"));
  const KernelPrice price =
      merge_kernel_price(p, MemoryKernel::kA2aPack, {5, 1, 20, 512, DType::kBF16, false});
  EXPECT_EQ(price.source, FigureSource::kTable);
  const double w = std::log(5.0 / 4.0) / std::log(6.0 / 4.0);
  EXPECT_NEAR(price.seconds, std::exp((1 - w) * std::log(2414.0) + w * std::log(2614.0)) * 1e-9, 1e-15);
  // Correction keeps H: the same shape is not in this table's kernel.
  EXPECT_EQ(merge_kernel_price(p, MemoryKernel::kCorrection, {5, 1, 20, 512, DType::kBF16, false}).source,
            FigureSource::kAnalytic);
}

TEST_F(ProfileTablesTest, InlineTablesLoadAndRoundTrip) {
  profile_["tables"] = ordered_json::array({correction_tables()});
  const HardwareProfile p = load_profile(write("p.json", profile_).string());
  ASSERT_EQ(p.tables.size(), 1u);
  EXPECT_EQ(p.tables[0].origin, "");
  EXPECT_EQ(parse_profile(to_json(p), "again.json"), p);
}

// The repository stores its measured tables as X.json.gz; a profile (and every reader) names them X.json.
TEST_F(ProfileTablesTest, GzipTablesLoadByTheirPlainName) {
  const std::string text = correction_tables().dump(2);
  const auto gzip_to = [&](const std::filesystem::path& path, std::size_t bytes) {
    gzFile z = gzopen(path.c_str(), "wb9");
    ASSERT_NE(z, nullptr);
    ASSERT_EQ(gzwrite(z, text.data(), static_cast<unsigned>(text.size())), static_cast<int>(text.size()));
    gzclose(z);
    std::filesystem::resize_file(path, std::min<std::uintmax_t>(bytes, std::filesystem::file_size(path)));
  };
  gzip_to(dir_ / "tables/c.json.gz", SIZE_MAX);
  profile_["tables"] = {"tables/c.json"};
  const HardwareProfile p = load_profile(write("p.json", profile_).string());
  ASSERT_EQ(p.tables.size(), 1u);
  EXPECT_EQ(p.tables[0].origin, "tables/c.json");
  EXPECT_EQ(p.tables[0].tables, parse_kernel_tables(text, "c.json").tables);
  EXPECT_EQ(load_kernel_tables(dir_ / "tables/c.json").tables, p.tables[0].tables);
  // gzip content under a plain name is read too; a cut stream is a one-line error naming the file.
  gzip_to(dir_ / "tables/named.json", SIZE_MAX);
  EXPECT_EQ(load_kernel_tables(dir_ / "tables/named.json").tables, p.tables[0].tables);
  gzip_to(dir_ / "tables/cut.json.gz", 40);
  try {
    load_kernel_tables(dir_ / "tables/cut.json");
    ADD_FAILURE() << "a truncated gzip table loaded";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              (dir_ / "tables/cut.json.gz").string() + ": not a valid gzip stream: truncated");
  }
}

// Each built-in table is embedded as stored (gzip) and inflates to the file of the tree.
TEST(BuiltinTables, EmbeddedTablesAreTheTreesFiles) {
  for (const char* name : {"h100-sxm", "h200-sxm"}) {
    const HardwareProfile p = load_profile(name);
    ASSERT_GT(p.tables.size(), 5u) << name;
    for (const KernelTables& t : p.tables) {
      const std::filesystem::path file = std::filesystem::path(DCPSIM_SOURCE_DIR) / "models/tables" /
                                         std::filesystem::path(t.origin).filename();
      EXPECT_TRUE(std::filesystem::exists(file.string() + ".gz")) << file;
      EXPECT_EQ(load_kernel_tables(file).tables, t.tables) << file;
    }
  }
}

TEST_F(ProfileTablesTest, MissingMalformedOrForeignTablesAreRefused) {
  profile_["tables"] = {"tables/none.json"};
  EXPECT_THAT(load_error(write("p.json", profile_)),
              HasSubstr("p.json: tables[0]: " + (dir_ / "tables/none.json").string() + ": cannot open"));

  ordered_json bad = correction_tables();
  bad["tables"][0]["points"][0]["samples"] = 0;
  write("tables/bad.json", bad);
  profile_["tables"] = {"tables/bad.json"};
  EXPECT_THAT(
      load_error(write("p.json", profile_)),
      HasSubstr(
          "bad.json: tables[0].points[0].samples: expected a positive integer up to 2147483647, got 0"));

  write("tables/h100.json", correction_tables("NVIDIA H100 80GB HBM3"));
  profile_["tables"] = {"tables/h100.json"};
  EXPECT_THAT(load_error(write("p.json", profile_)), HasSubstr("measured on \"NVIDIA H100 80GB HBM3\""));

  profile_["tables"] = {42};
  EXPECT_THAT(load_error(write("p.json", profile_)),
              HasSubstr("p.json: tables[0]: expected a table file path or a table object, got 42"));
}

// A profile lists the names CUDA reports for its GPU (gpu.devices): a table measured under any of them loads;
// one measured on another GPU is refused with the file to edit (or, for a built-in, how to make an editable
// copy).
TEST_F(ProfileTablesTest, TablesOfAnyListedDeviceNameLoadAndTheRefusalSaysWhatToEdit) {
  write("tables/h100.json", correction_tables("NVIDIA H100 80GB HBM3"));
  profile_["tables"] = {"tables/h100.json"};
  profile_["gpu"]["name"] = "NVIDIA H100 SXM5";
  const std::string refused = load_error(write("p.json", profile_));
  EXPECT_THAT(refused,
              HasSubstr("measured on \"NVIDIA H100 80GB HBM3\", a GPU the profile does not describe"));
  EXPECT_THAT(refused, HasSubstr("add it to gpu.devices in " + (dir_ / "p.json").string()));

  profile_["gpu"]["devices"] = {"NVIDIA H100 SXM5 80GB", "nvidia h100 80gb hbm3"};  // case is ignored
  const HardwareProfile p = load_profile(write("p.json", profile_).string());
  EXPECT_EQ(p.gpu.devices.size(), 2u);
  EXPECT_TRUE(profile_describes_device(p, "NVIDIA H100 80GB HBM3"));
  EXPECT_TRUE(profile_describes_device(p, "NVIDIA H100 SXM5"));  // the prefix rule on gpu.name
  EXPECT_FALSE(profile_describes_device(p, "NVIDIA H100 PCIe"));
  EXPECT_FALSE(profile_describes_device(p, ""));
  EXPECT_EQ(parse_profile(to_json(p), (dir_ / "p.json").string()), p);  // the list round-trips

  profile_["gpu"]["devices"] = {"NVIDIA H100 80GB HBM3", ""};
  EXPECT_THAT(load_error(write("p.json", profile_)),
              HasSubstr("gpu.devices: expected a list of device names"));
  profile_["gpu"]["devices"] = "NVIDIA H100 80GB HBM3";
  EXPECT_THAT(load_error(write("p.json", profile_)),
              HasSubstr("gpu.devices: expected a list of device names"));

  // The built-ins list the names CUDA reports for their GPUs, so their users' tables load.
  EXPECT_TRUE(profile_describes_device(load_profile("h100-sxm"), "NVIDIA H100 80GB HBM3"));
  EXPECT_TRUE(profile_describes_device(load_profile("h200-sxm"), "NVIDIA H200"));
  EXPECT_TRUE(profile_describes_device(load_profile("b200"), "NVIDIA B200"));
  EXPECT_TRUE(profile_describes_device(load_profile("gb200-nvl72"), "NVIDIA GB200"));
  EXPECT_FALSE(profile_describes_device(load_profile("h200-sxm"), "NVIDIA H100 80GB HBM3"));
  // The prefix rule stops at a word boundary: an H20 is not an H200.
  EXPECT_FALSE(profile_describes_device(load_profile("h200-sxm"), "NVIDIA H20"));
  EXPECT_TRUE(profile_describes_device(load_profile("rtx-pro-6000"), "NVIDIA RTX PRO 6000 Blackwell"));
}

TEST(KernelCosts, AttentionTableScalesTheWavesAndFlagsItsSource) {
  HardwareProfile p = load_profile("h200-sxm");
  p.tables.clear();
  const AttentionShape a{32, 1, 512, 576, true, DType::kBF16, DType::kBF16, {}};
  const std::vector<int64_t> rows(16, 4096);
  const AttentionTiming analytic = decode_attention_time(p, a, rows);
  EXPECT_EQ(analytic.source, FigureSource::kAnalytic);

  KernelTables t;
  t.provenance.device = "NVIDIA H200";
  KernelTable k{TableKernel::kAttention, attention_table_key(a), {}, {}, {}, {}, {}, {}, {}};
  for (double tokens : {2048.0, 8192.0})
    k.points.push_back({{32.0, 16.0, tokens}, 30000.0 * tokens / 4096, 5, 1, 1e9});
  k.finalize("test");
  t.tables.push_back(k);
  p.tables.push_back(t);
  const AttentionTiming measured = decode_attention_time(p, a, rows);
  EXPECT_EQ(measured.source, FigureSource::kTable);
  const double expected = std::sqrt(15000e-9 * 60000e-9);  // 4096: halfway in log between 2048 and 8192
  EXPECT_NEAR(measured.kernel_end_s + measured.combine_s, expected, 1e-12);
  const double scale = expected / (analytic.kernel_end_s + analytic.combine_s);
  for (std::size_t b = 0; b < rows.size(); ++b)
    EXPECT_NEAR(measured.row_done_s[b], analytic.row_done_s[b] * scale, 1e-15);
  // Outside the table (more rows than measured): analytic, and flagged.
  const std::vector<int64_t> more(64, 4096);
  EXPECT_EQ(decode_attention_time(p, a, more).source, FigureSource::kAnalytic);
}

// Attention tables name the implementation they measured: a scenario that says which one ran is priced from
// that table (or from one of unknown implementation), never from another's; one that does not say takes the
// first implementation the profile lists.
TEST(KernelCosts, AttentionTablesOfEachImplementation) {
  HardwareProfile p = load_profile("h200-sxm");
  p.tables.clear();
  AttentionShape a{32, 1, 512, 576, true, DType::kBF16, DType::kBF16, {}};
  KernelTables t;
  t.provenance.device = "NVIDIA H200";
  for (const auto& [impl, ns] : {std::pair{"flashinfer", 20000.0}, std::pair{"dcpsim", 50000.0}}) {
    KernelTable k{TableKernel::kAttention, attention_table_key(a) + " " + impl, {}, {}, {}, {}, {}, {}, {}};
    for (double tokens : {2048.0, 8192.0}) k.points.push_back({{32.0, 16.0, tokens}, ns, 5, 1, 1e9});
    k.finalize("test");
    t.tables.push_back(k);
  }
  p.tables.push_back(t);
  const double at[] = {32.0, 16.0, 4096.0};
  EXPECT_NEAR(*attention_table_time_s(p, a, at), 20000e-9, 1e-15);  // the first listed
  a.impl = "dcpsim";
  EXPECT_NEAR(*attention_table_time_s(p, a, at), 50000e-9, 1e-15);
  a.impl = "flashinfer";
  EXPECT_NEAR(*attention_table_time_s(p, a, at), 20000e-9, 1e-15);
  a.impl = "other";  // no table of its own and none of unknown implementation: analytic
  EXPECT_FALSE(attention_table_time_s(p, a, at).has_value());
  const std::vector<int64_t> rows(16, 4096);
  EXPECT_EQ(decode_attention_time(p, a, rows).source, FigureSource::kAnalytic);
}

// GQA at a group size between two measured ones (tables of groups 8 and 16; 12 query heads per KV head):
// the same KV heads priced from each table, linear in the group; exact at a measured group, analytic (and
// flagged) outside the measured groups. The tables grow with heads at different rates, so "the same KV heads"
// (64 and 128 heads over 8) is told apart from "the same heads" (96 over 12 and over 6).
TEST(KernelCosts, GqaBetweenMeasuredGroupsInterpolatesTheirTables) {
  HardwareProfile p = load_profile("h200-sxm");
  p.tables.clear();
  KernelTables t;
  t.provenance.device = "NVIDIA H200";
  for (const auto& [group, base_ns, per_head_ns] :
       {std::tuple{8, 20000.0, 10.0}, std::tuple{16, 28000.0, 30.0}}) {
    const AttentionShape g{8 * group, 8, 128, 128, false, DType::kBF16, DType::kBF16, {}};
    KernelTable k{TableKernel::kAttention, attention_table_key(g) + " dcpsim", {}, {}, {}, {}, {}, {}, {}};
    for (double heads : {32.0, 256.0})
      for (double rows : {8.0, 64.0})
        for (double tokens : {1024.0, 8192.0})
          k.points.push_back({{heads, rows, tokens}, base_ns + per_head_ns * heads, 5, 1, 1e9});
    k.finalize("test");
    t.tables.push_back(k);
  }
  p.tables.push_back(t);
  const std::vector<int64_t> rows(16, 4096);
  const auto total = [&](int heads, int kv_heads) {
    const AttentionTiming x =
        decode_attention_time(p, {heads, kv_heads, 128, 128, false, DType::kBF16, DType::kBF16, {}}, rows);
    return std::pair{x.kernel_end_s + x.combine_s, x.source};
  };
  const double g8 = total(64, 8).first, g16 = total(128, 8).first;  // measured groups, 8 KV heads
  EXPECT_GT(g16, g8);
  EXPECT_NEAR(total(96, 8).first, 0.5 * (g8 + g16), 1e-12);  // group 12: halfway, same KV heads
  EXPECT_EQ(total(96, 8).second, FigureSource::kTable);
  EXPECT_GT(std::abs(total(96, 8).first - 0.5 * (total(96, 12).first + total(96, 6).first)), 1e-7);
  EXPECT_NEAR(total(80, 8).first, g8 + 0.25 * (g16 - g8), 1e-12);  // group 10: a quarter of the way
  EXPECT_EQ(total(160, 8).second, FigureSource::kAnalytic);        // group 20: beyond every measured group
  EXPECT_EQ(total(32, 8).second, FigureSource::kAnalytic);         // group 4: below them
}

TEST(KernelCosts, MlaDecodeAtManyHeadsIsComputeBound) {
  HardwareProfile p = load_profile("h200-sxm");
  p.tables.clear();
  p.attention.tensor_rate = quantity_from_si(160e12, Unit::kTFlops, "test");
  const AttentionShape a{128, 1, 512, 576, true, DType::kBF16, DType::kBF16, {}};
  const std::vector<int64_t> rows(256, 2048);
  const AttentionTiming t = decode_attention_time(p, a, rows);
  const double flops = 2.0 * 256 * 128 * 2048 * (576 + 512);
  EXPECT_DOUBLE_EQ(t.total_flops, flops);
  EXPECT_GE(t.kernel_end_s, flops / 160e12);  // never faster than the tensor cores
  EXPECT_LT(t.kernel_end_s, 1.3 * flops / 160e12 + p.attention.floor.si());
  // Ten times the rate: bandwidth-bound again, and faster.
  p.attention.tensor_rate = quantity_from_si(1600e12, Unit::kTFlops, "test");
  EXPECT_LT(decode_attention_time(p, a, rows).kernel_end_s, 0.5 * t.kernel_end_s);
}

TEST(KernelCosts, EachMergeKernelTypeMayHaveItsOwnNumbers) {
  HardwareProfile p = load_profile("h200-sxm");
  const MergeShape m{4, 64, 64, 512, DType::kBF16, false};
  const double pack = a2a_pack_time(p, m);
  const double corr = correction_time(p, m);
  MemoryKernelSpec own = p.kernel;
  own.floor = quantity_from_si(6e-6, Unit::kMicroseconds, "test");
  own.hbm_efficiency_max = quantity_from_si(0.4, Unit::kRatio, "test");
  p.kernel.per_type[static_cast<std::size_t>(MemoryKernel::kCorrection)] = own;
  EXPECT_DOUBLE_EQ(a2a_pack_time(p, m), pack);
  EXPECT_GT(correction_time(p, m), corr + 5e-6 - p.kernel.floor.si());
  EXPECT_DOUBLE_EQ(correction_time(p, m),
                   6e-6 + correction_bytes(m) /
                              (p.gpu.hbm_bandwidth_measured.si() * hbm_efficiency(own, correction_bytes(m))));
  // Written as kernel.correction and read back.
  const HardwareProfile again = parse_profile(to_json(p), "again.json");
  EXPECT_EQ(again, p);
  EXPECT_THAT(to_json(p), HasSubstr("\"correction\": {"));
}

}  // namespace
}  // namespace dcpsim::models
