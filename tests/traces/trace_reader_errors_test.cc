// Every way a trace file can be wrong is an InputError that names the file and, past the magic, the offset.
#include <gtest/gtest.h>
#include <zlib.h>

#include <fstream>
#include <iterator>
#include <string>

#include "dcpsim/error.h"
#include "dcpsim/traces/protobuf_writer.h"
#include "dcpsim/traces/trace_collector.h"
#include "dcpsim/traces/trace_reader.h"
#include "trace_test_support.h"

namespace dcpsim::traces {
namespace {

using testing::ScratchDir;

// The message of the InputError that reading `path` throws ("" if it does not throw one).
std::string read_error(const std::filesystem::path& path) {
  try {
    read_trace(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

void expect_mentions(const std::string& message, const std::string& part) {
  EXPECT_NE(message.find(part), std::string::npos) << "'" << message << "' does not mention '" << part << "'";
}

std::string varint(std::uint64_t v) {
  std::string out;
  do {
    out.push_back(static_cast<char>((v & 0x7f) | (v >= 0x80 ? 0x80 : 0)));
    v >>= 7;
  } while (v != 0);
  return out;
}

std::string framed(const v1::Record& record) {
  const std::string body = record.SerializeAsString();
  return varint(body.size()) + body;
}

std::filesystem::path write_sample(const ScratchDir& dir) {
  ProtobufTraceWriter writer(dir / "t.pb");
  replay(testing::sample_trace(), writer);
  return dir / "t.pb";
}

// `path` gzip-compressed into `out`, cut to its first `keep` bytes (all of them by default).
void gzip_file(const std::filesystem::path& path, const std::filesystem::path& out,
               std::size_t keep = std::string::npos) {
  std::ifstream in(path, std::ios::binary);
  const std::string plain((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::filesystem::path whole = out.string() + ".whole";
  gzFile z = gzopen(whole.c_str(), "wb9");
  ASSERT_NE(z, nullptr);
  ASSERT_EQ(gzwrite(z, plain.data(), static_cast<unsigned>(plain.size())), static_cast<int>(plain.size()));
  ASSERT_EQ(gzclose(z), Z_OK);
  std::ifstream zin(whole, std::ios::binary);
  std::string packed((std::istreambuf_iterator<char>(zin)), std::istreambuf_iterator<char>());
  std::ofstream(out, std::ios::binary) << packed.substr(0, keep);
}

// A gzip-compressed trace reads as the trace itself; one cut short is an error naming the file.
TEST(TraceReaderErrors, GzipCompressedTracesReadAsThemselves) {
  ScratchDir dir;
  const std::filesystem::path plain = write_sample(dir);
  gzip_file(plain, dir / "t.pb.gz");
  const Trace a = read_trace(plain), b = read_trace(dir / "t.pb.gz");
  ASSERT_EQ(a.sections.size(), b.sections.size());
  for (std::size_t i = 0; i < a.sections.size(); ++i) {
    EXPECT_EQ(a.sections[i].events.size(), b.sections[i].events.size());
    EXPECT_EQ(a.sections[i].phase_summaries.size(), b.sections[i].phase_summaries.size());
  }
  const auto size = std::filesystem::file_size(dir / "t.pb.gz");
  gzip_file(plain, dir / "cut.pb.gz", size / 2);
  const std::string why = read_error(dir / "cut.pb.gz");
  expect_mentions(why, "cut.pb.gz");
  expect_mentions(why, "gzip");
  EXPECT_EQ(why.find('\n'), std::string::npos);
}

TEST(TraceReaderErrors, MissingFile) {
  ScratchDir dir;
  const std::string why = read_error(dir / "absent.pb");
  expect_mentions(why, "absent.pb");
  expect_mentions(why, "does not exist");
}

TEST(TraceReaderErrors, DirectoryInsteadOfFile) {
  expect_mentions(read_error(ScratchDir().path()), "directory");
}

TEST(TraceReaderErrors, WrongMagic) {
  ScratchDir dir;
  testing::write_bytes(dir / "notes.txt", "these are not the bytes you are looking for");
  const std::string why = read_error(dir / "notes.txt");
  expect_mentions(why, "notes.txt");
  expect_mentions(why, "offset 0");
  expect_mentions(why, "magic");
}

TEST(TraceReaderErrors, EmptyAndShortFiles) {
  ScratchDir dir;
  testing::write_bytes(dir / "empty.pb", "");
  expect_mentions(read_error(dir / "empty.pb"), "magic");
  testing::write_bytes(dir / "short.pb", "DCPT");
  expect_mentions(read_error(dir / "short.pb"), "magic");
}

TEST(TraceReaderErrors, MagicAloneIsAnEmptyTrace) {
  ScratchDir dir;
  testing::write_bytes(dir / "t.pb", std::string(kTraceMagic, kTraceMagicSize));
  const Trace t = read_trace(dir / "t.pb");
  EXPECT_FALSE(t.header.has_value());
  EXPECT_TRUE(t.sections.empty());
}

// Cutting the file anywhere inside a record — its body or its length prefix — is reported as truncation at
// that record's offset.
TEST(TraceReaderErrors, TruncatedRecord) {
  ScratchDir dir;
  const std::string whole = testing::read_bytes(write_sample(dir));
  // Find where the last record starts by reading the intact file.
  std::uint64_t last_start = 0;
  {
    TraceReader reader(dir / "t.pb");
    v1::Record record;
    std::uint64_t before = reader.offset();
    while (reader.next(record)) {
      last_start = before;
      before = reader.offset();
    }
    ASSERT_EQ(before, whole.size());
  }
  for (std::size_t cut : {whole.size() - 1, static_cast<std::size_t>(last_start) + 3}) {
    testing::write_bytes(dir / "cut.pb", whole.substr(0, cut));
    const std::string why = read_error(dir / "cut.pb");
    expect_mentions(why, "cut.pb");
    expect_mentions(why, "truncated");
    expect_mentions(why, "offset " + std::to_string(last_start));
  }
  // A length prefix whose continuation bit promises a byte that never comes.
  testing::write_bytes(dir / "prefix.pb", std::string(kTraceMagic, kTraceMagicSize) + "\x85");
  const std::string why = read_error(dir / "prefix.pb");
  expect_mentions(why, "truncated");
  expect_mentions(why, "offset 8");
}

TEST(TraceReaderErrors, UnparseableRecord) {
  ScratchDir dir;
  // Field 1 with wire type 7, which does not exist.
  const std::string garbage = "\x0f\xff\xff\xff";
  testing::write_bytes(dir / "g.pb",
                       std::string(kTraceMagic, kTraceMagicSize) + varint(garbage.size()) + garbage);
  const std::string why = read_error(dir / "g.pb");
  expect_mentions(why, "g.pb");
  expect_mentions(why, "offset 8");
  expect_mentions(why, "unparseable");
}

TEST(TraceReaderErrors, AbsurdLengthIsCorruptionNotAnAllocation) {
  ScratchDir dir;
  testing::write_bytes(dir / "big.pb",
                       std::string(kTraceMagic, kTraceMagicSize) + varint(kMaxRecordBytes + 1));
  expect_mentions(read_error(dir / "big.pb"), "exceeds the limit");
  testing::write_bytes(dir / "long.pb", std::string(kTraceMagic, kTraceMagicSize) + std::string(11, '\xff'));
  expect_mentions(read_error(dir / "long.pb"), "varint");
}

TEST(TraceReaderErrors, RecordsOutOfOrderInTheFile) {
  ScratchDir dir;
  v1::Record event;
  *event.mutable_event() = make_event(0, "cpu", v1::EVENT_KIND_LAUNCH, "early", 0, 1);
  const std::string magic(kTraceMagic, kTraceMagicSize);
  testing::write_bytes(dir / "o.pb", magic + framed(event));
  const std::string why = read_error(dir / "o.pb");
  expect_mentions(why, "offset 8");
  expect_mentions(why, "before any scenario");

  v1::Record scenario;
  *scenario.mutable_scenario() = testing::sample_scenario(2, 1, v1::STRATEGY_AG_RS);
  scenario.mutable_scenario()->set_lse_base(v1::LSE_BASE_UNSPECIFIED);
  testing::write_bytes(dir / "s.pb", magic + framed(scenario));
  expect_mentions(read_error(dir / "s.pb"), "lse_base is unspecified");

  v1::Record empty;  // a record with no body
  testing::write_bytes(dir / "e.pb", magic + framed(empty));
  expect_mentions(read_error(dir / "e.pb"), "no body");
}

TEST(TraceReaderErrors, ReaderIsUsableUpToTheBadRecord) {
  ScratchDir dir;
  const std::string whole = testing::read_bytes(write_sample(dir));
  testing::write_bytes(dir / "cut.pb", whole.substr(0, whole.size() - 2));
  TraceReader reader(dir / "cut.pb");
  v1::Record record;
  int good = 0;
  try {
    while (reader.next(record)) ++good;
    FAIL() << "the truncated file read to the end";
  } catch (const InputError&) {
  }
  const Trace t = testing::sample_trace();
  std::size_t total = 1;
  for (const auto& s : t.sections) {
    total += 1 + s.events.size() + s.flows.size() + s.row_results.size() + s.phase_summaries.size() +
             s.summaries.size() + s.gpu_activities.size();
  }
  EXPECT_EQ(static_cast<std::size_t>(good), total - 1);
}

}  // namespace
}  // namespace dcpsim::traces
