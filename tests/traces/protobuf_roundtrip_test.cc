// ProtobufTraceWriter -> TraceReader: every record kind survives field by field; large traces stream; a
// writer that is not finished leaves nothing behind; records out of order are refused.
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <string>

#include "dcpsim/error.h"
#include "dcpsim/traces/protobuf_writer.h"
#include "dcpsim/traces/trace_collector.h"
#include "dcpsim/traces/trace_reader.h"
#include "trace_test_support.h"

namespace dcpsim::traces {
namespace {

using google::protobuf::util::MessageDifferencer;
using testing::ScratchDir;

template <typename Message>
void expect_same_messages(const std::vector<Message>& got, const std::vector<Message>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    std::string diff;
    MessageDifferencer differencer;
    differencer.ReportDifferencesToString(&diff);
    EXPECT_TRUE(differencer.Compare(want[i], got[i])) << "record " << i << ": " << diff;
  }
}

void expect_same_trace(const Trace& got, const Trace& want) {
  ASSERT_EQ(got.header.has_value(), want.header.has_value());
  if (want.header) {
    EXPECT_TRUE(MessageDifferencer::Equals(*got.header, *want.header));
  }
  ASSERT_EQ(got.sections.size(), want.sections.size());
  for (std::size_t s = 0; s < want.sections.size(); ++s) {
    SCOPED_TRACE("section " + std::to_string(s));
    EXPECT_TRUE(MessageDifferencer::Equals(got.sections[s].scenario, want.sections[s].scenario));
    expect_same_messages(got.sections[s].events, want.sections[s].events);
    expect_same_messages(got.sections[s].flows, want.sections[s].flows);
    expect_same_messages(got.sections[s].row_results, want.sections[s].row_results);
    expect_same_messages(got.sections[s].phase_summaries, want.sections[s].phase_summaries);
    expect_same_messages(got.sections[s].summaries, want.sections[s].summaries);
    expect_same_messages(got.sections[s].gpu_activities, want.sections[s].gpu_activities);
  }
}

TEST(ProtobufTrace, EveryRecordKindRoundTrips) {
  ScratchDir dir;
  const Trace want = testing::sample_trace();
  ProtobufTraceWriter writer(dir / "t.pb");
  replay(want, writer);
  const Trace got = read_trace(dir / "t.pb");
  expect_same_trace(got, want);

  // Spot checks that the comparison above really looks at the values that matter.
  ASSERT_EQ(got.sections.size(), 2u);
  EXPECT_EQ(got.header->source(), v1::SOURCE_HW);
  EXPECT_EQ(got.header->devices(1).pci_bus_id(), "00000000:11:00.0");
  EXPECT_EQ(got.header->time_origin_ns(), 98765432109876);
  EXPECT_EQ(got.sections[1].scenario.strategy(), v1::STRATEGY_DIRECT);
  EXPECT_EQ(got.sections[1].scenario.lse_base(), v1::LSE_BASE_2);
  EXPECT_EQ(got.sections[1].scenario.padded_rows(), 1);
  const v1::Event& wait = got.sections[0].events[4];
  EXPECT_EQ(wait.kind(), v1::EVENT_KIND_WAIT);
  ASSERT_TRUE(wait.has_id());
  EXPECT_EQ(wait.id(), 20u);
  EXPECT_EQ(wait.args().at("epoch"), "3");
  EXPECT_FALSE(got.sections[0].events[0].has_id());
  EXPECT_FALSE(got.sections[0].events[0].has_rows());
  EXPECT_EQ(got.sections[0].events[1].rows().end(), 4);
  EXPECT_TRUE(got.sections[0].events[5].emulated());
  EXPECT_EQ(got.sections[0].phase_summaries[0].rank(), -1);
  EXPECT_EQ(got.sections[0].phase_summaries[0].samples_ns(1), 13000.5);
  EXPECT_EQ(got.sections[1].summaries[0].kv_bytes_per_rank(1), (1 << 30) - 4096);
  EXPECT_EQ(got.sections[1].row_results.back().output_ready_ns(), 26000 + 400 + 1);
  ASSERT_EQ(got.sections[1].gpu_activities.size(), 4u);
  EXPECT_EQ(got.sections[1].gpu_activities[2].grid(2), 64);
  EXPECT_EQ(got.sections[1].gpu_activities[3].bytes(), 1 << 20);
}

TEST(ProtobufTrace, SameTraceGivesSameBytes) {
  ScratchDir dir;
  const Trace t = testing::sample_trace();
  ProtobufTraceWriter a(dir / "a.pb");
  replay(t, a);
  ProtobufTraceWriter b(dir / "b.pb");
  replay(t, b);
  EXPECT_EQ(testing::read_bytes(dir / "a.pb"), testing::read_bytes(dir / "b.pb"));
}

TEST(ProtobufTrace, FileStartsWithMagic) {
  ScratchDir dir;
  ProtobufTraceWriter writer(dir / "t.pb");
  writer.on_header(make_header(v1::SOURCE_SIM));
  writer.finish();
  const std::string bytes = testing::read_bytes(dir / "t.pb");
  EXPECT_EQ(bytes.substr(0, kTraceMagicSize), "DCPTRC2\n");
  EXPECT_EQ(writer.records_written(), 1u);
}

// A name ending in .gz promises a gzip stream: the file starts with gzip's magic, is smaller than the plain
// trace, reads back record for record, and no temporary file is left beside it.
TEST(ProtobufTrace, GzNameWritesAGzipStream) {
  ScratchDir dir;
  const Trace want = testing::sample_trace();
  ProtobufTraceWriter plain(dir / "t.pb");
  replay(want, plain);
  ProtobufTraceWriter gz(dir / "t.pb.gz");
  replay(want, gz);
  const std::string bytes = testing::read_bytes(dir / "t.pb.gz");
  ASSERT_GE(bytes.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(bytes[0]), 0x1fu);
  EXPECT_EQ(static_cast<unsigned char>(bytes[1]), 0x8bu);
  EXPECT_LT(bytes.size(), testing::read_bytes(dir / "t.pb").size());
  expect_same_trace(read_trace(dir / "t.pb.gz"), want);
  EXPECT_EQ(dir.entries(), 2);
  ProtobufTraceWriter upper(dir / "U.PB.GZ");  // the suffix in any case
  replay(want, upper);
  EXPECT_EQ(testing::read_bytes(dir / "U.PB.GZ").substr(0, 2), "\x1f\x8b");
}
// 10^5 events are read back one record at a time into a single reused message: nothing on the read side grows
// with the trace, and the reader's offset walks the whole file.
TEST(ProtobufTrace, LargeTraceStreamsRecordByRecord) {
  ScratchDir dir;
  constexpr int kEvents = 100000;
  {
    ProtobufTraceWriter writer(dir / "big.pb");
    writer.on_header(make_header(v1::SOURCE_SIM));
    writer.on_scenario(testing::sample_scenario(8, 64, v1::STRATEGY_A2A));
    for (int i = 0; i < kEvents; ++i) {
      writer.on_event(make_event(i % 8, "stream0", v1::EVENT_KIND_KERNEL, "k", 10 * i, 10 * i + 7, i, i % 64,
                                 i % 64 + 1));
    }
    writer.finish();
  }
  TraceReader reader(dir / "big.pb");
  v1::Record record;
  ASSERT_TRUE(reader.next(record));
  ASSERT_TRUE(record.has_header());
  ASSERT_TRUE(reader.next(record));
  ASSERT_TRUE(record.has_scenario());
  int seen = 0;
  std::uint64_t last_offset = reader.offset();
  while (reader.next(record)) {
    ASSERT_TRUE(record.has_event());
    ASSERT_EQ(record.event().start_ns(), 10 * seen);
    ASSERT_EQ(record.event().bytes(), seen);
    ASSERT_EQ(record.event().rank(), seen % 8);
    ASSERT_GT(reader.offset(), last_offset);
    last_offset = reader.offset();
    ++seen;
  }
  EXPECT_EQ(seen, kEvents);
  EXPECT_EQ(reader.offset(), std::filesystem::file_size(dir / "big.pb"));
}

TEST(ProtobufTrace, UnfinishedWriterLeavesNoFile) {
  ScratchDir dir;
  {
    ProtobufTraceWriter writer(dir / "t.pb");
    writer.on_header(make_header(v1::SOURCE_SIM));
    writer.on_scenario(testing::sample_scenario(2, 1, v1::STRATEGY_AG_RS));
    EXPECT_EQ(dir.entries(), 1);  // the temporary file exists while writing
    EXPECT_FALSE(std::filesystem::exists(dir / "t.pb"));
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "t.pb"));
  EXPECT_EQ(dir.entries(), 0);
}

TEST(ProtobufTrace, FinishReplacesAnExistingFileOnlyAtTheEnd) {
  ScratchDir dir;
  testing::write_bytes(dir / "t.pb", "old contents");
  {
    ProtobufTraceWriter writer(dir / "t.pb");
    writer.on_header(make_header(v1::SOURCE_SIM));
    EXPECT_EQ(testing::read_bytes(dir / "t.pb"), "old contents");
    writer.finish();
  }
  EXPECT_TRUE(read_trace(dir / "t.pb").header.has_value());
  EXPECT_EQ(dir.entries(), 1);
}

TEST(ProtobufTrace, MissingOutputDirectoryIsAnInputError) {
  ScratchDir dir;
  try {
    ProtobufTraceWriter writer(dir / "no-such-dir" / "t.pb");
    FAIL() << "writer opened in a missing directory";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-dir"), std::string::npos) << e.what();
  }
}

TEST(ProtobufTrace, WriterRefusesRecordsOutOfOrder) {
  ScratchDir dir;
  ProtobufTraceWriter writer(dir / "t.pb");
  EXPECT_THROW(writer.on_event(make_event(0, "cpu", v1::EVENT_KIND_LAUNCH, "x", 0, 1)), RuntimeError);
  writer.on_scenario(testing::sample_scenario(2, 4, v1::STRATEGY_AG_RS));
  EXPECT_THROW(writer.on_header(make_header(v1::SOURCE_SIM)), RuntimeError);  // header must come first
  EXPECT_THROW(writer.on_event(make_event(2, "cpu", v1::EVENT_KIND_LAUNCH, "x", 0, 1)),
               RuntimeError);  // rank
  EXPECT_THROW(writer.on_event(make_event(0, "cpu", v1::EVENT_KIND_LAUNCH, "x", 5, 4)),
               RuntimeError);  // end<start
  EXPECT_THROW(writer.on_event(make_event(0, "cpu", v1::EVENT_KIND_LAUNCH, "x", -1, 4)), RuntimeError);
  EXPECT_THROW(writer.on_event(make_event(0, "", v1::EVENT_KIND_LAUNCH, "x", 0, 4)), RuntimeError);  // lane
  EXPECT_THROW(writer.on_event(make_event(0, "cpu", v1::EVENT_KIND_UNSPECIFIED, "x", 0, 4)), RuntimeError);
  EXPECT_THROW(writer.on_event(make_event(0, "s", v1::EVENT_KIND_KERNEL, "x", 0, 4, 0, 2, 5)), RuntimeError);
  v1::Flow flow;
  flow.set_from_event(1);
  flow.set_to_event(2);
  EXPECT_THROW(writer.on_flow(flow), RuntimeError);  // the events it links were never written
  v1::Scenario no_base = testing::sample_scenario(2, 4, v1::STRATEGY_AG_RS);
  no_base.clear_lse_base();
  try {
    writer.on_scenario(no_base);
    FAIL() << "a scenario without an LSE base was written";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("lse_base"), std::string::npos) << e.what();
  }
  writer.on_event(make_event(1, "cpu", v1::EVENT_KIND_LAUNCH, "fine", 0, 1));  // still usable after a refusal
  writer.finish();
  EXPECT_THROW(writer.finish(), RuntimeError);
  const Trace t = read_trace(dir / "t.pb");
  ASSERT_EQ(t.sections.size(), 1u);
  ASSERT_EQ(t.sections[0].events.size(), 1u);
  EXPECT_EQ(t.sections[0].events[0].name(), "fine");
}

TEST(ProtobufTrace, GpuActivitiesAreChecked) {
  ScratchDir dir;
  auto write_with = [&](auto mutate) {
    ProtobufTraceWriter w(dir / "g.pb");
    w.on_header(make_header(v1::SOURCE_HW, {"dcpsim"}));
    w.on_scenario(testing::sample_scenario(2, 1, v1::STRATEGY_A2A));
    v1::GpuActivity a;
    a.set_rank(1);
    a.set_kind(v1::GpuActivity::KIND_KERNEL);
    a.set_start_ns(10);
    a.set_end_ns(20);
    mutate(a);
    w.on_gpu_activity(a);
    w.finish();
  };
  EXPECT_NO_THROW(write_with([](v1::GpuActivity&) {}));
  EXPECT_THROW(write_with([](v1::GpuActivity& a) { a.set_end_ns(5); }), RuntimeError);
  EXPECT_THROW(write_with([](v1::GpuActivity& a) { a.set_rank(2); }), RuntimeError);
  EXPECT_THROW(write_with([](v1::GpuActivity& a) { a.set_kind(v1::GpuActivity::KIND_UNSPECIFIED); }),
               RuntimeError);
  EXPECT_THROW(write_with([](v1::GpuActivity& a) { a.set_repetition(-1); }), RuntimeError);
}

TEST(ProtobufTrace, DuplicateEventIdsAreRefused) {
  ScratchDir dir;
  ProtobufTraceWriter writer(dir / "t.pb");
  writer.on_scenario(testing::sample_scenario(2, 4, v1::STRATEGY_AG_RS));
  auto e = make_event(0, "comm", v1::EVENT_KIND_SIGNAL, "flag", 0, 1);
  e.set_id(7);
  writer.on_event(e);
  EXPECT_THROW(writer.on_event(e), RuntimeError);
  writer.on_scenario(testing::sample_scenario(2, 4, v1::STRATEGY_AG_RS));
  writer.on_event(e);  // ids are per section
}

TEST(TraceCollector, TeeFeedsEverySink) {
  TraceCollector a;
  TraceCollector b;
  TeeTraceSink tee({&a, &b});
  replay(testing::sample_trace(), tee);
  EXPECT_TRUE(a.finished());
  EXPECT_TRUE(b.finished());
  expect_same_trace(a.trace(), testing::sample_trace());
  expect_same_trace(b.trace(), testing::sample_trace());
}

TEST(Provenance, HeaderNamesTheBuildTheCommandAndTheHost) {
  const v1::Header h = make_header(v1::SOURCE_EMULATED, {"dcpsim", "hw", "run", "--emulate"});
  EXPECT_EQ(h.source(), v1::SOURCE_EMULATED);
  EXPECT_FALSE(h.tool_version().empty());
  EXPECT_FALSE(h.git_sha().empty());
  ASSERT_EQ(h.argv_size(), 4);
  EXPECT_EQ(h.argv(3), "--emulate");
  EXPECT_GT(h.created_unix_ns(), int64_t{1600000000} * 1000000000);  // after September 2020
  EXPECT_FALSE(h.host_name().empty());
  const v1::Header own = make_header(v1::SOURCE_SIM);  // argv from the process itself
  ASSERT_GT(own.argv_size(), 0);
  EXPECT_NE(own.argv(0).find("traces_tests"), std::string::npos) << own.argv(0);
}

}  // namespace
}  // namespace dcpsim::traces
