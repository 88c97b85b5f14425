// The Chrome/Perfetto JSON: parsed back with nlohmann_json and checked for the structure the viewers rely on.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "dcpsim/error.h"
#include "dcpsim/traces/chrome_writer.h"
#include "dcpsim/traces/protobuf_writer.h"
#include "dcpsim/traces/trace_collector.h"
#include "trace_test_support.h"

namespace dcpsim::traces {
namespace {

using nlohmann::json;
using testing::ScratchDir;

json export_and_parse(const Trace& trace, const ScratchDir& dir) {
  ChromeTraceWriter writer(dir / "t.json");
  replay(trace, writer);
  return json::parse(testing::read_bytes(dir / "t.json"));
}

std::vector<json> with_phase(const json& doc, const std::string& ph) {
  std::vector<json> out;
  for (const auto& e : doc.at("traceEvents")) {
    if (e.at("ph") == ph) out.push_back(e);
  }
  return out;
}

// (pid, tid) -> lane name, from the thread_name metadata.
std::map<std::pair<int, int>, std::string> lane_names(const json& doc) {
  std::map<std::pair<int, int>, std::string> out;
  for (const auto& m : with_phase(doc, "M")) {
    if (m.at("name") == "thread_name") out[{m.at("pid"), m.at("tid")}] = m.at("args").at("name");
  }
  return out;
}

// A single section whose events do not start at 0 and do not arrive in time order.
Trace one_section() {
  Trace t;
  t.header = make_header(v1::SOURCE_SIM, {"dcpsim", "simulate"});
  TraceSection& s = t.sections.emplace_back();
  s.scenario = testing::sample_scenario(3, 2, v1::STRATEGY_A2A);
  s.events.push_back(make_event(2, "stream0", v1::EVENT_KIND_KERNEL, "attention", 5001, 17333, 4096, 0, 2));
  s.events.push_back(make_event(0, "cpu", v1::EVENT_KIND_LAUNCH, "launch", 0, 1250));
  s.events.push_back(make_event(1, "comm", v1::EVENT_KIND_COLLECTIVE, "all-to-all", 17400, 29999, 123456));
  return t;
}

TEST(ChromeTrace, CompleteEventsCarryMicrosecondsMatchingTheNanoseconds) {
  ScratchDir dir;
  const Trace t = one_section();
  const json doc = export_and_parse(t, dir);
  ASSERT_TRUE(doc.contains("traceEvents"));
  ASSERT_TRUE(doc.at("traceEvents").is_array());
  const auto lanes = lane_names(doc);
  std::map<std::string, json> by_name;
  for (const auto& x : with_phase(doc, "X")) {
    for (const char* key : {"pid", "tid", "ts", "dur", "name"}) ASSERT_TRUE(x.contains(key)) << x.dump();
    by_name[x.at("name")] = x;
  }
  for (const v1::Event& e : t.sections[0].events) {
    SCOPED_TRACE(e.name());
    ASSERT_TRUE(by_name.count(e.name()));
    const json& x = by_name[e.name()];
    EXPECT_EQ(x.at("pid"), e.rank());
    EXPECT_EQ(lanes.at({x.at("pid"), x.at("tid")}), e.lane());
    // The first section starts at the trace's origin: ts is start_ns in µs, nothing subtracted or added.
    EXPECT_DOUBLE_EQ(x.at("ts").get<double>(), e.start_ns() / 1000.0);
    EXPECT_DOUBLE_EQ(x.at("dur").get<double>(), (e.end_ns() - e.start_ns()) / 1000.0);
    EXPECT_EQ(x.at("args").at("bytes"), e.bytes());
    EXPECT_EQ(x.at("args").at("kind"), to_string(e.kind()));
  }
  EXPECT_EQ(by_name["attention"].at("args").at("rows").at("begin"), 0);
  EXPECT_EQ(by_name["attention"].at("args").at("rows").at("end"), 2);
  EXPECT_FALSE(by_name["launch"].at("args").contains("rows"));
  EXPECT_EQ(by_name["launch"].at("ts"), 0.0);
}

TEST(ChromeTrace, ProducerArgsAreKeptButNeverReplaceTypedFields) {
  ScratchDir dir;
  Trace t = one_section();
  (*t.sections[0].events[0].mutable_args())["bytes"] = "not a number";
  (*t.sections[0].events[0].mutable_args())["epoch"] = "3";
  const json doc = export_and_parse(t, dir);
  for (const auto& x : with_phase(doc, "X")) {
    if (x.at("name") != "attention") continue;
    EXPECT_EQ(x.at("args").at("bytes"), 4096);
    EXPECT_EQ(x.at("args").at("epoch"), "3");
    return;
  }
  FAIL() << "attention slice missing";
}

TEST(ChromeTrace, MetadataNamesEveryRankAndLane) {
  ScratchDir dir;
  const json doc = export_and_parse(testing::sample_trace(), dir);
  std::map<int, std::string> processes;
  for (const auto& m : with_phase(doc, "M")) {
    if (m.at("name") == "process_name") processes[m.at("pid")] = m.at("args").at("name");
  }
  EXPECT_EQ(processes, (std::map<int, std::string>{{0, "rank 0"}, {1, "rank 1"}}));
  std::map<int, std::set<std::string>> lanes;
  for (const auto& [key, name] : lane_names(doc)) lanes[key.first].insert(name);
  EXPECT_EQ(lanes[1], (std::set<std::string>{"cpu", "stream0", "comm", "nvlink", "rows", "gpu stream 13"}));
  EXPECT_EQ(lanes[0], (std::set<std::string>{"scenario", "cpu", "stream0", "comm", "nvlink", "rows"}));
  // Every slice sits on a lane that has a name.
  const auto names = lane_names(doc);
  for (const auto& x : with_phase(doc, "X")) EXPECT_TRUE(names.count({x.at("pid"), x.at("tid")})) << x.dump();
}

TEST(ChromeTrace, FlowsComeInOrderedPairsBoundToTheirSlices) {
  ScratchDir dir;
  const Trace t = testing::sample_trace();
  const json doc = export_and_parse(t, dir);
  std::map<std::uint64_t, json> starts;
  std::map<std::uint64_t, json> finishes;
  for (const auto& s : with_phase(doc, "s"))
    EXPECT_TRUE(starts.emplace(s.at("id"), s).second) << "duplicate id";
  for (const auto& f : with_phase(doc, "f"))
    EXPECT_TRUE(finishes.emplace(f.at("id"), f).second) << "duplicate id";
  ASSERT_EQ(starts.size(), 4u);  // two flows in each of the two sections, each with its own id
  ASSERT_EQ(finishes.size(), starts.size());
  const auto lanes = lane_names(doc);
  for (const auto& [id, s] : starts) {
    ASSERT_TRUE(finishes.count(id)) << "flow " << id << " has no f";
    const json& f = finishes[id];
    EXPECT_GE(f.at("ts").get<double>(), s.at("ts").get<double>());
    EXPECT_EQ(f.at("bp"), "e");
    // The signal leaves rank r's comm lane and lands on the other rank's wait on stream0.
    EXPECT_EQ(lanes.at({s.at("pid"), s.at("tid")}), "comm");
    EXPECT_EQ(lanes.at({f.at("pid"), f.at("tid")}), "stream0");
    EXPECT_NE(s.at("pid"), f.at("pid"));
    // Both ends lie inside the slices they bind to.
    bool s_inside = false, f_inside = false;
    for (const auto& x : with_phase(doc, "X")) {
      const double ts = x.at("ts"), end = ts + x.at("dur").get<double>();
      auto inside = [&](const json& p) {
        return p.at("pid") == x.at("pid") && p.at("tid") == x.at("tid") && p.at("ts") >= ts &&
               p.at("ts") <= end;
      };
      s_inside = s_inside || (x.at("name") == "flag" && inside(s));
      f_inside = f_inside || (x.at("name") == "wait flags" && inside(f));
    }
    EXPECT_TRUE(s_inside) << s.dump();
    EXPECT_TRUE(f_inside) << f.dump();
  }
}

TEST(ChromeTrace, SectionsFollowEachOtherOnTheTimeAxis) {
  ScratchDir dir;
  const Trace t = testing::sample_trace();
  const json doc = export_and_parse(t, dir);
  std::vector<json> markers;
  for (const auto& x : with_phase(doc, "X")) {
    if (x.at("cat") == "scenario") markers.push_back(x);
  }
  ASSERT_EQ(markers.size(), 2u);
  EXPECT_EQ(markers[0].at("ts"), 0.0);
  EXPECT_NE(markers[0].at("name").get<std::string>().find("ag-rs"), std::string::npos);
  EXPECT_NE(markers[1].at("name").get<std::string>().find("direct"), std::string::npos);
  // Section 0 ends at its latest time (a row result at 26301 ns, the merge phase at 27000 ns).
  EXPECT_DOUBLE_EQ(markers[0].at("dur").get<double>(), 27.0);
  const double offset1 = (27000 + ChromeTraceWriter::kSectionGapNs) / 1000.0;
  EXPECT_DOUBLE_EQ(markers[1].at("ts").get<double>(), offset1);
  // An event of section 1 lands at its start plus the section's offset.
  bool found = false;
  for (const auto& x : with_phase(doc, "X")) {
    if (x.at("name") == "attention" && x.at("pid") == 1 && x.at("ts").get<double>() > offset1) {
      EXPECT_DOUBLE_EQ(x.at("ts").get<double>(), offset1 + (100 + 2000) / 1000.0);
      found = true;
    }
  }
  EXPECT_TRUE(found);
  EXPECT_DOUBLE_EQ(doc.at("otherData").at("sections").at(1).at("offset_us").get<double>(), offset1);
}

TEST(ChromeTrace, RowResultsAreInstantsOnTheRowsLane) {
  ScratchDir dir;
  const Trace t = testing::sample_trace();
  const json doc = export_and_parse(t, dir);
  const auto lanes = lane_names(doc);
  const auto instants = with_phase(doc, "i");
  std::size_t expected = 0;
  for (const auto& s : t.sections) expected += 2 * s.row_results.size();
  ASSERT_EQ(instants.size(), expected);
  for (const auto& i : instants) EXPECT_EQ(lanes.at({i.at("pid"), i.at("tid")}), "rows");
  // Row 3 on rank 1 of section 0: output ready at 26301 ns.
  bool found = false;
  for (const auto& i : instants) {
    if (i.at("name") == "output ready row 3" && i.at("pid") == 1 && i.at("ts").get<double>() < 27.0) {
      EXPECT_DOUBLE_EQ(i.at("ts").get<double>(), 26.301);
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

TEST(ChromeTrace, OtherDataKeepsHeaderScenariosAndSummaries) {
  ScratchDir dir;
  const json doc = export_and_parse(testing::sample_trace(), dir);
  const json& other = doc.at("otherData");
  EXPECT_EQ(other.at("header").at("source"), "SOURCE_HW");
  EXPECT_EQ(other.at("header").at("devices").at(1).at("uuid"), "GPU-1");
  ASSERT_EQ(other.at("sections").size(), 2u);
  EXPECT_EQ(other.at("sections").at(0).at("scenario").at("lse_base"), "LSE_BASE_2");
  EXPECT_EQ(other.at("sections").at(1).at("phase_summaries").size(), 3u);
  EXPECT_EQ(other.at("sections").at(1).at("summaries").at(0).at("merge_latency_ns"), 13000.0);
  EXPECT_EQ(doc.at("displayTimeUnit"), "ns");
}

TEST(ChromeTrace, EmulatedEventsAreMarked) {
  ScratchDir dir;
  const json doc = export_and_parse(testing::sample_trace(), dir);
  int emulated = 0;
  for (const auto& x : with_phase(doc, "X")) {
    const bool marked = x.at("args").value("emulated", false);
    EXPECT_EQ(marked, x.at("name") == "peer copy") << x.dump();
    if (marked) {
      EXPECT_EQ(x.at("cat"), "copy,emulated");
      ++emulated;
    }
  }
  EXPECT_EQ(emulated, 4);
}

// The GPU timeline of the repetition the events show is drawn on a "gpu stream S" lane of its rank.
TEST(ChromeTrace, GpuActivitiesOfTheShownRepetitionGetAStreamLane) {
  ScratchDir dir;
  Trace t = testing::sample_trace();
  (*t.sections[1].scenario.mutable_params())["timeline_repetition"] = "1";
  const json doc = export_and_parse(t, dir);
  const auto lanes = lane_names(doc);
  int gpu = 0;
  for (const auto& e : with_phase(doc, "X")) {
    if (e.at("cat") != "gpu") continue;
    ++gpu;
    EXPECT_EQ(e.at("pid"), 1);
    EXPECT_EQ(lanes.at({1, e.at("tid").get<int>()}), "gpu stream 13");
    if (e.at("name") == "memcpy DtoD")
      EXPECT_EQ(e.at("args").at("bytes"), 1 << 20);
    else
      EXPECT_EQ(e.at("args").at("grid"), json::array({4, 8, 64}));
  }
  EXPECT_EQ(gpu, 4);  // per section, the shown repetition only (0 by default, 1 here): a kernel and a copy
}

TEST(ChromeTrace, ExportFromProtobufMatchesDirectWriting) {
  ScratchDir dir;
  const Trace t = testing::sample_trace();
  {
    ProtobufTraceWriter pb(dir / "t.pb");
    replay(t, pb);
  }
  export_chrome(dir / "t.pb", dir / "via-file.json");
  const json direct = export_and_parse(t, dir);
  EXPECT_EQ(json::parse(testing::read_bytes(dir / "via-file.json")), direct);
}

TEST(ChromeTrace, ExportOfABadInputLeavesNoOutput) {
  ScratchDir dir;
  testing::write_bytes(dir / "bad.pb", "garbage!garbage!");
  EXPECT_THROW(export_chrome(dir / "bad.pb", dir / "out.json"), InputError);
  EXPECT_THROW(export_chrome(dir / "missing.pb", dir / "out.json"), InputError);
  EXPECT_FALSE(std::filesystem::exists(dir / "out.json"));
  EXPECT_EQ(dir.entries(), 1);
}

TEST(ChromeTrace, UnfinishedWriterLeavesNoFile) {
  ScratchDir dir;
  {
    ChromeTraceWriter writer(dir / "t.json");
    writer.on_scenario(testing::sample_scenario(2, 2, v1::STRATEGY_AG_AR));
    writer.on_event(make_event(0, "cpu", v1::EVENT_KIND_LAUNCH, "launch", 0, 10));
  }
  EXPECT_EQ(dir.entries(), 0);
}

TEST(ChromeTrace, NamesThatAreNotUtf8StillGiveValidJson) {
  ScratchDir dir;
  Trace t = one_section();
  t.sections[0].events[0].set_name("kernel \xff\xfe \"quoted\"\n");
  const json doc = export_and_parse(t, dir);
  EXPECT_EQ(with_phase(doc, "X").size(), 4u);  // three events and the section marker
}

}  // namespace
}  // namespace dcpsim::traces
