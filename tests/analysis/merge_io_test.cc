// `dcpsim merge` JSON I/O: parse errors name the problem, non-finite values round-trip as strings, and
// a 2-rank example merged by hand.
#include "dcpsim/analysis/merge_io.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "dcpsim/error.h"

namespace dcpsim::analysis {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

std::string parse_error(const std::string& text) {
  try {
    partials_from_json(json::parse(text));
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(MergeIo, ShapeAndTypeErrorsNameTheElement) {
  EXPECT_THAT(parse_error(R"([1, 2])"), HasSubstr("expected an object"));
  EXPECT_THAT(parse_error(R"({"out": [[[[1]]]]})"), HasSubstr("no \"lse\""));
  EXPECT_THAT(parse_error(R"({"lse": [[[0]]], "out": 5})"), HasSubstr("out is number, expected an array"));
  EXPECT_THAT(parse_error(R"({"lse": [[[0]], [[0]]], "out": [[[[1]]]]})"),
              HasSubstr("\"lse\" has 2 ranks but \"out\" has 1"));
  EXPECT_THAT(parse_error(R"({"lse": [[[0, 0]], [[0, 0]]], "out": [[[[1], [2]]], [[[1, 2], [3]]]]})"),
              HasSubstr("out[1][0][0] has 2 elements, expected 1"));
  EXPECT_THAT(parse_error(R"({"lse": [[[0, 0]]], "out": [[[[1], [2]], [[3]]]]})"),
              HasSubstr("lse[0] has 1 elements, expected 2"));
  EXPECT_THAT(parse_error(R"({"lse": [[[0, "-Infinity"]]], "out": [[[[1], [2]]]]})"),
              HasSubstr("lse[0][0][1] is the string \"-Infinity\""));
  EXPECT_THAT(parse_error(R"({"lse": [[[0]]], "out": [[[[true]]]]})"),
              HasSubstr("out[0][0][0][0] is boolean"));
  EXPECT_THAT(parse_error(R"({"lse": [], "out": []})"), HasSubstr("lse is empty"));
}

TEST(MergeIo, FileErrors) {
  EXPECT_THROW(read_partials("/nonexistent/partials.json"), InputError);
  const std::string path = std::string(DCPSIM_BINARY_DIR) + "/merge_io_bad.json";
  std::ofstream(path) << "{\"lse\": [1, 2";
  try {
    read_partials(path);
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("invalid JSON"));
  }
  std::ofstream(path) << R"({"lse": [[[0, 1]], [[2, 1e999]]], "out": []})";
  try {
    read_partials(path);
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr(path + ": invalid JSON at lse[1][0][1]: number overflow"));
  }
  std::filesystem::remove(path);
  EXPECT_THROW(write_json_file("/nonexistent-dir/out.json", json::object()), InputError);
}

TEST(MergeIo, NonFiniteValuesRoundTripAsStrings) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(double_to_json(inf), "inf");
  EXPECT_EQ(double_to_json(-inf), "-inf");
  EXPECT_EQ(double_to_json(std::nan("")), "nan");
  EXPECT_EQ(double_to_json(0.1).get<double>(), 0.1);
  EXPECT_EQ(json_to_double(json("inf"), "x"), inf);
  EXPECT_EQ(json_to_double(json("+inf"), "x"), inf);
  EXPECT_EQ(json_to_double(json("-inf"), "x"), -inf);
  EXPECT_TRUE(std::isnan(json_to_double(json("nan"), "x")));
  // Through text: dump and parse keep every value, including the shortest round-trip form of 0.1.
  const json doc =
      json::parse(json{{"v", {double_to_json(-inf), double_to_json(0.1), double_to_json(NAN)}}}.dump());
  EXPECT_EQ(json_to_double(doc["v"][0], "v"), -inf);
  EXPECT_EQ(json_to_double(doc["v"][1], "v"), 0.1);
  EXPECT_TRUE(std::isnan(json_to_double(doc["v"][2], "v")));
}

// Two ranks, two rows, two heads, D = 2, base 2 so every weight is exact:
//  row 0 head 0: L = [2, 2]      -> L = 3, w = [1/2, 1/2]: O = ([4, 8] + [2, 0]) / 2 = [3, 4]
//  row 0 head 1: L = [-inf, 5]   -> L = 5, w = [0, 1]: rank 0's NaN garbage is never read, O = [7, -1]
//  row 1 head 0: L = [3, 1]      -> L = 3 + log2(1.25), w = [0.8, 0.2]: O = 0.8·[1, 0] + 0.2·[6, 5] = [2, 1]
//  row 1 head 1: L = [nan, +inf] -> empty everywhere: O = [0, 0], L = -inf
constexpr const char* kTwoRanks = R"({
  "lse": [[[2, "-inf"], [3, "nan"]], [[2, 5], [1, "inf"]]],
  "out": [[[[4, 8], ["nan", "nan"]], [[1, 0], [9, 9]]],
          [[[2, 0], [7, -1]], [[6, 5], ["nan", "inf"]]]]
})";

TEST(MergeIo, TwoRankExampleMergedByHand) {
  const std::vector<models::Partial> parts = partials_from_json(json::parse(kTwoRanks));
  ASSERT_EQ(parts.size(), 2u);
  for (models::Strategy s : {models::Strategy::kAgRs, models::Strategy::kA2a, models::Strategy::kDirect,
                             models::Strategy::kAgAr}) {
    models::MergeOptions o;
    o.strategy = s;
    o.base = models::LseBase::k2;
    o.out_dtype = models::DType::kF32;
    const json doc = merge_result_to_json(models::merge(parts, o), o);
    const json expected_out = json::parse(R"([[[3, 4], [7, -1]], [[2, 1], [0, 0]]])");
    for (int b = 0; b < 2; ++b) {
      for (int h = 0; h < 2; ++h) {
        for (int d = 0; d < 2; ++d) {
          EXPECT_NEAR(doc["out"][b][h][d].get<double>(), expected_out[b][h][d].get<double>(), 1e-6)
              << models::to_string(s) << " " << b << h << d;
        }
      }
    }
    EXPECT_EQ(doc["lse"][0][0].get<double>(), 3.0);
    EXPECT_EQ(doc["lse"][0][1].get<double>(), 5.0);
    EXPECT_NEAR(doc["lse"][1][0].get<double>(), 3.0 + std::log2(1.25), 1e-6);
    EXPECT_EQ(doc["lse"][1][1], "-inf");
    EXPECT_EQ(doc["strategy"], std::string(models::to_string(s)));
    if (models::scatters_heads(s)) {
      ASSERT_EQ(doc["ranks"].size(), 2u);
      EXPECT_EQ(doc["ranks"][1]["heads"], json::parse("[1, 2]"));
      EXPECT_EQ(doc["ranks"][1]["out"][0][0], json::parse("[7, -1]"));
      EXPECT_EQ(doc["ranks"][1]["lse"][1][0], "-inf");
    } else {
      EXPECT_FALSE(doc.contains("ranks"));
    }
  }
}

TEST(MergeIo, WriteReplacesTheFileAtomically) {
  const std::string path = std::string(DCPSIM_BINARY_DIR) + "/merge_io_out.json";
  write_json_file(path, json{{"a", 1}});
  write_json_file(path, json{{"a", double_to_json(-std::numeric_limits<double>::infinity())}});
  std::ifstream in(path);
  const json back = json::parse(in);
  EXPECT_EQ(back["a"], "-inf");
  for (const auto& entry : std::filesystem::directory_iterator(DCPSIM_BINARY_DIR)) {
    EXPECT_EQ(entry.path().filename().string().find(".merge_io_out.json.tmp"), std::string::npos);
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace dcpsim::analysis
