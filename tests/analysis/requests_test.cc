// Request-trace readers on the published Azure and Mooncake traces (tests/data/README.md), and their refusal
// of malformed files with the file, the line and the problem named.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "dcpsim/analysis/requests.h"
#include "dcpsim/error.h"

namespace dcpsim::analysis {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

fs::path data(const std::string& name) {
  return fs::path(DCPSIM_SOURCE_DIR) / "tests" / "data" / name;
}

class Scratch {
 public:
  Scratch() : dir_(fs::temp_directory_path() / ("dcpsim_requests_" + std::to_string(::getpid()))) {
    fs::create_directories(dir_);
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  fs::path file(const std::string& name, const std::string& content) const {
    std::ofstream(dir_ / name, std::ios::binary) << content;
    return dir_ / name;
  }

 private:
  fs::path dir_;
};

constexpr std::int64_t kSecond = 1'000'000'000;

TEST(AzureCsv, CodeTraceRowsFirstAndLast) {
  const auto r = read_requests(data("AzureLLMInferenceTrace_code.csv.gz"));
  ASSERT_EQ(r.size(), 8819u);
  EXPECT_EQ(r.front(), (Request{0, 0, 4808, 10}));
  EXPECT_EQ(r[1].arrival_ns, 52'000'000);  // 18:17:04.0319600 - 18:17:03.9799600
  // 19:14:19.9280160 is 57 min 15.9480560 s after the first request.
  EXPECT_EQ(r.back(), (Request{8818, (57 * 60 + 15) * kSecond + 948'056'000, 549, 173}));
}

TEST(AzureCsv, ConversationTraceRowsFirstAndLast) {
  const auto r = read_azure_csv(data("AzureLLMInferenceTrace_conv.csv.gz"));
  ASSERT_EQ(r.size(), 19366u);
  EXPECT_EQ(r.front(), (Request{0, 0, 374, 44}));
  EXPECT_EQ(r[1].arrival_ns, 4 * kSecond + 314'579'000);  // 18:15:50.9951690 - 18:15:46.6805900
  EXPECT_EQ(r.back(), (Request{19365, (58 * 60 + 21) * kSecond + 721'937'000, 197, 183}));
  for (std::size_t i = 1; i < r.size(); ++i) ASSERT_LE(r[i - 1].arrival_ns, r[i].arrival_ns);
}

TEST(MooncakeJsonl, WholeTraceRowsFirstAndLast) {
  const auto r = read_requests(data("mooncake_conversation_trace.no_hash_ids.jsonl.gz"));
  ASSERT_EQ(r.size(), 12031u);
  EXPECT_EQ(r.front(), (Request{0, 0, 6758, 500}));
  EXPECT_EQ(r.back(), (Request{12030, 3'536'999LL * 1'000'000, 20774, 508}));
  std::int64_t longest = 0;
  for (const auto& q : r) longest = std::max(longest, q.input_tokens);
  EXPECT_EQ(longest, 126195);  // the README's "max 126k"
}

TEST(MooncakeJsonl, ReadsThePublishedLinesWithHashIds) {
  const auto r = read_mooncake_jsonl(data("mooncake_conversation_trace.head20.jsonl"));
  ASSERT_EQ(r.size(), 20u);
  EXPECT_EQ(r[1], (Request{1, 0, 7322, 490}));
  EXPECT_EQ(r[4], (Request{4, 0, 6760, 3}));
}

TEST(DateTime, ParsesUtcWithFractionsExactly) {
  EXPECT_EQ(parse_utc_datetime_ns("2023-11-16 18:15:46", "t"), 1700158546LL * kSecond);
  EXPECT_EQ(parse_utc_datetime_ns("2023-11-16 18:15:46.6805900", "t"), 1700158546LL * kSecond + 680'590'000);
  EXPECT_EQ(parse_utc_datetime_ns("2023-11-16T18:15:46.000000001Z", "t"), 1700158546LL * kSecond + 1);
  EXPECT_EQ(parse_utc_datetime_ns("1970-01-01 00:00:00", "t"), 0);
  EXPECT_EQ(
      parse_utc_datetime_ns("2024-02-29 00:00:00", "t") - parse_utc_datetime_ns("2024-02-28 00:00:00", "t"),
      86400 * kSecond);
  EXPECT_THROW(parse_utc_datetime_ns("2023-02-29 00:00:00", "t"), InputError);
  EXPECT_THROW(parse_utc_datetime_ns("2023-11-16 25:00:00", "t"), InputError);
  EXPECT_THROW(parse_utc_datetime_ns("2023-11-16 18:15:46.", "t"), InputError);
  EXPECT_THROW(parse_utc_datetime_ns("16/11/2023 18:15", "t"), InputError);
}

void expect_error(const fs::path& path, const std::string& needle) {
  try {
    read_requests(path);
    FAIL() << "accepted " << path;
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr(path.filename().string()));
    EXPECT_THAT(e.what(), HasSubstr(needle));
  }
}

TEST(RequestErrors, AzureFilesThatAreMissingEmptyOrMalformed) {
  Scratch s;
  const std::string header = "TIMESTAMP,ContextTokens,GeneratedTokens\n";
  expect_error(fs::temp_directory_path() / "no_such_trace.csv", "does not exist");
  expect_error(s.file("empty.csv", ""), "is empty");
  expect_error(s.file("header_only.csv", header), "holds a header but no requests");
  expect_error(
      s.file("columns.csv", "time,in,out\n2023-11-16 18:15:46,1,2\n"),
      "header is 'time,in,out'; an Azure request trace starts with TIMESTAMP,ContextTokens,GeneratedTokens");
  expect_error(s.file("fields.csv", header + "2023-11-16 18:15:46,1,2\n2023-11-16 18:15:47,3\n"),
               "fields.csv:3: 2 fields");
  expect_error(s.file("number.csv", header + "2023-11-16 18:15:46,12k,2\n"),
               "number.csv:2: ContextTokens '12k' is not a whole number in [0, ");
  expect_error(s.file("negative.csv", header + "2023-11-16 18:15:46,10,-2\n"), "GeneratedTokens '-2'");
  expect_error(s.file("time.csv", header + "yesterday,10,2\n"), "time.csv:2: TIMESTAMP 'yesterday'");
  expect_error(s.file("quoted.csv", header + "\"2023-11-16 18:15:46\",10,2\n"), "quoted fields");
}

TEST(RequestErrors, MooncakeLinesThatAreNotRequests) {
  Scratch s;
  const std::string good = R"({"timestamp": 0, "input_length": 10, "output_length": 2})"
                           "\n";
  expect_error(s.file("empty.jsonl", "\n\n"), "holds no requests");
  expect_error(s.file("text.jsonl", good + "hello\n"), "text.jsonl:2: not a JSON object");
  expect_error(s.file("array.jsonl", good + "[1, 2]\n"), "array.jsonl:2: not a JSON object");
  expect_error(s.file("missing.jsonl", R"({"timestamp": 0, "input_length": 10})"),
               "missing.jsonl:1: field \"output_length\" is missing");
  expect_error(s.file("string.jsonl", R"({"timestamp": 0, "input_length": "10", "output_length": 2})"),
               "\"input_length\" is \"10\"; a whole number in [0, ");
  expect_error(s.file("time.jsonl", R"({"timestamp": -5, "input_length": 10, "output_length": 2})"),
               "\"timestamp\" is -5");
  expect_error(s.file("trace.parquet", good), "unknown format");
}

TEST(RequestErrors, TruncatedGzipIsNamed) {
  Scratch s;
  std::ifstream in(data("AzureLLMInferenceTrace_code.csv.gz"), std::ios::binary);
  const std::string gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  expect_error(s.file("cut.csv.gz", gz.substr(0, gz.size() / 3)), "truncated gzip");
}

TEST(RequestFormat, ChosenByName) {
  EXPECT_EQ(request_format_of("a/b.jsonl"), RequestFormat::kMooncakeJsonl);
  EXPECT_EQ(request_format_of("b.JSONL.GZ"), RequestFormat::kMooncakeJsonl);
  EXPECT_EQ(request_format_of("b.csv.gz"), RequestFormat::kAzureCsv);
  EXPECT_THROW(request_format_of("b.txt"), InputError);
}

}  // namespace
}  // namespace dcpsim::analysis
