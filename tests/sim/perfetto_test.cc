// The Chrome/Perfetto JSON of simulated DCP72 steps across nine 8-GPU nodes (ring steps pipelined on a link,
// waits beside the kernels they wait in): on every thread, slices nest or are disjoint (the viewers draw
// anything else wrongly), every event is there exactly once, and the section marker names the scenario once.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "dcpsim/traces/chrome_writer.h"
#include "dcpsim/traces/trace_collector.h"
#include "sim_test_support.h"

namespace dcpsim::sim {
namespace {

using models::Strategy;
using nlohmann::json;
using testing::builtin;
using testing::mla;

struct Slice {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::string name;
};

// Pairs of slices on one thread that overlap without one containing the other (times in whole ns, as
// Perfetto reads them).
int improperly_nested(std::vector<Slice> slices, std::string* example) {
  std::sort(slices.begin(), slices.end(), [](const Slice& a, const Slice& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
  });
  int bad = 0;
  std::vector<const Slice*> open;
  for (const Slice& s : slices) {
    while (!open.empty() && open.back()->end_ns <= s.start_ns) open.pop_back();
    if (!open.empty() && s.end_ns > open.back()->end_ns) {
      if (bad++ == 0) *example = open.back()->name + " / " + s.name;
    }
    open.push_back(&s);
  }
  return bad;
}

class DcpNineNodes : public ::testing::TestWithParam<Strategy> {};

TEST_P(DcpNineNodes, SlicesNestOnEveryThread) {
  const models::Scenario s = mla(72, 144, 4, 32768, GetParam());
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("dcpsim-perfetto-" + std::to_string(::getpid()) + ".json");
  traces::TraceCollector collector;
  {
    traces::ChromeTraceWriter chrome(path);
    traces::TeeTraceSink sink({&chrome, &collector});
    sink.on_header(sim_trace_header(builtin("h200-sxm")));
    Simulator(builtin("h200-sxm")).run(s, &sink);
    sink.finish();
  }
  std::ifstream in(path);
  const json doc = json::parse(in);
  std::filesystem::remove(path);

  std::map<std::pair<int, int>, std::string> thread_names;
  std::map<std::pair<int, int>, std::vector<Slice>> threads;
  std::vector<std::string> markers;
  std::size_t slices = 0;
  for (const json& e : doc.at("traceEvents")) {
    const std::pair<int, int> thread{e.value("pid", -1), e.value("tid", -1)};
    if (e.at("ph") == "M" && e.at("name") == "thread_name") thread_names[thread] = e.at("args").at("name");
    if (e.at("ph") != "X") continue;
    const std::int64_t start = std::llround(e.at("ts").get<double>() * 1000.0);
    const std::int64_t end = start + std::llround(e.at("dur").get<double>() * 1000.0);
    threads[thread].push_back({start, end, e.at("name")});
    if (e.at("cat") == "scenario") {
      markers.push_back(e.at("name"));
    } else {
      ++slices;
    }
  }
  for (const auto& [thread, list] : threads) {
    std::string example;
    EXPECT_EQ(improperly_nested(list, &example), 0)
        << "rank " << thread.first << " thread '" << thread_names[thread] << "': " << example;
  }
  ASSERT_EQ(collector.trace().sections.size(), 1u);
  EXPECT_EQ(slices, collector.trace().sections[0].events.size());
  // Pipelined ring steps overlap on a link: they need a second thread of the lane.
  bool extra = false;
  for (const auto& [thread, name] : thread_names) extra = extra || name == "nvlink (2)" || name == "net (2)";
  EXPECT_TRUE(extra);
  ASSERT_EQ(markers.size(), 1u);
  EXPECT_EQ(markers[0].find("dcp72"), markers[0].rfind("dcp72")) << markers[0];
}

INSTANTIATE_TEST_SUITE_P(EveryStrategy, DcpNineNodes,
                         ::testing::Values(Strategy::kAgRs, Strategy::kRowStream),
                         [](const ::testing::TestParamInfo<Strategy>& param) {
                           std::string name(models::to_string(param.param));
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace dcpsim::sim
