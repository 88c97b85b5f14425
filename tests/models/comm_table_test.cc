// Communication tables: the format (round trip, one-line errors), the lookup (exact at measured points,
// power law between sizes, the model's shape between group sizes, anchored and flagged outside), and the
// collective price built on it (table first, NCCL's model outside, the in-step term).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "dcpsim/error.h"
#include "dcpsim/models/comm_table.h"
#include "dcpsim/models/cost.h"

namespace dcpsim::models {
namespace {

// A small all-gather table: 2 and 8 GPUs on one node, 1 KiB to 1 MiB (time = 5 us + size / 100 GB/s at 2
// GPUs, twice that at 8).
CommTables small_table() {
  CommTables t;
  t.provenance = {"NVIDIA H100 80GB HBM3", "2.27.3", "test", "synthetic", "2026-12-06", "test"};
  CommTable ag;
  ag.op = Collective::kAllGather;
  ag.dtype = "half";
  for (int gpus : {2, 8}) {
    for (double size = 1024; size <= 1 << 20; size *= 4) {
      const double us = (gpus == 2 ? 1.0 : 2.0) * (5.0 + size / 100e3);
      ag.points.push_back({gpus, 1, size, us, us * 0.98, us * 1.02, 3});
    }
  }
  finalize_comm_table(ag, "test");
  t.tables.push_back(ag);
  return t;
}

CommQuery query(int gpus, double size) {
  CommQuery q;
  q.op = Collective::kAllGather;
  q.gpus = gpus;
  q.size_bytes = size;
  q.dtype = "half";
  return q;
}

double guide(int gpus, double size) {
  return 1e-6 * (gpus - 1) * (1.0 + size / 50e3);
}

TEST(CommTables, RoundTripsThroughItsJson) {
  const CommTables t = small_table();
  const CommTables back = parse_comm_tables(comm_tables_json(t), "round trip");
  EXPECT_EQ(back, t);
  EXPECT_THAT(describe_comm_tables(t),
              ::testing::HasSubstr("all-gather half out-of-place: 12 points; 2 gpus 1 KiB - 1 MiB"));
}

TEST(CommTables, BadFilesAreOneLineErrorsNamingTheField) {
  const std::string good = comm_tables_json(small_table());
  const auto fails = [](const std::string& text, const std::string& what) {
    try {
      (void)parse_comm_tables(text, "t.json");
      ADD_FAILURE() << "accepted " << what;
    } catch (const InputError& e) {
      EXPECT_THAT(std::string(e.what()), ::testing::StartsWith("t.json: ")) << e.what();
      EXPECT_THAT(std::string(e.what()), ::testing::HasSubstr(what)) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
  };
  CommTables negative = small_table();
  negative.tables[0].points[3].time_us = -1;
  fails(comm_tables_json(negative), "tables[0].points[3].time_us");
  std::string bad = good;
  bad.replace(bad.find("\"samples\":3"), 11, "\"sample\":3");
  fails(bad, "unknown field");
  bad = good;
  bad.replace(bad.find("all-gather"), 10, "allgathers");
  fails(bad, "tables[0].op");
  fails(R"({"format": "dcpsim-comm-tables/2", "provenance": {}, "tables": []})", "format");
  // The same point twice is a duplicate, not a merge.
  CommTables dup = small_table();
  dup.tables[0].points.push_back(dup.tables[0].points.front());
  fails(comm_tables_json(dup), "duplicate point");
  fails("{", "t.json");
}

TEST(CommTables, MergedPointsKeepTheMedianAndTheSpread) {
  CommTable t;
  for (double us : {10.0, 30.0, 11.0}) t.points.push_back({2, 1, 4096, us, us - 1, us + 1, 1});
  merge_comm_points(t);
  ASSERT_EQ(t.points.size(), 1u);
  EXPECT_EQ(t.points[0].time_us, 11.0);
  EXPECT_EQ(t.points[0].min_us, 9.0);
  EXPECT_EQ(t.points[0].max_us, 31.0);
  EXPECT_EQ(t.points[0].samples, 3);
}

TEST(CommTables, LookupIsExactAtMeasuredPointsAndAPowerLawBetween) {
  const std::vector<CommTables> files = {small_table()};
  const auto at = [&](int gpus, double size) { return lookup_comm_time(files, query(gpus, size), guide); };
  const auto exact = at(2, 16384);
  ASSERT_TRUE(exact);
  EXPECT_TRUE(exact->exact);
  EXPECT_DOUBLE_EQ(exact->time_s, 1e-6 * (5.0 + 16384 / 100e3));
  // Halfway in log(size) between 16 KiB and 64 KiB: the geometric mean of the two times.
  const auto mid = at(2, 32768);
  ASSERT_TRUE(mid);
  EXPECT_FALSE(mid->exact);
  EXPECT_NEAR(mid->time_s, std::sqrt(at(2, 16384)->time_s * at(2, 65536)->time_s), 1e-15);
}

TEST(CommTables, BetweenGroupSizesTheModelCarriesTheMeasuredRatio) {
  const std::vector<CommTables> files = {small_table()};
  const auto four = lookup_comm_time(files, query(4, 4096), guide);
  ASSERT_TRUE(four);
  EXPECT_TRUE(four->between_groups);
  // Ratio measured / guide at 2 and 8 GPUs, interpolated in log(gpus) (4 is halfway), times the guide at 4.
  const double r2 = 1e-6 * (5.0 + 4096 / 100e3) / guide(2, 4096);
  const double r8 = 2e-6 * (5.0 + 4096 / 100e3) / guide(8, 4096);
  EXPECT_NEAR(four->time_s, guide(4, 4096) * std::sqrt(r2 * r8), 1e-15);
}

TEST(CommTables, OutsideTheTableTheModelIsAnchoredAndMarked) {
  const std::vector<CommTables> files = {small_table()};
  // A larger size at 8 GPUs: the guide scaled by measured / guide at the nearest point (8 GPUs, 1 MiB).
  const auto big = lookup_comm_time(files, query(8, 4 << 20), guide);
  ASSERT_TRUE(big);
  EXPECT_TRUE(big->extrapolated);
  const double at = 2e-6 * (5.0 + (1 << 20) / 100e3);
  EXPECT_NEAR(big->time_s, guide(8, 4 << 20) * at / guide(8, 1 << 20), 1e-15);
  // A larger group: anchored at 8 GPUs.
  const auto sixteen = lookup_comm_time(files, query(16, 4096), guide);
  ASSERT_TRUE(sixteen && sixteen->extrapolated);
  // A table ten times or more away from the model at its own point anchors nothing: the model stands alone.
  for (const double factor : {1e-3, 0.05, 20.0, 1e4}) {
    std::vector<CommTables> far = {small_table()};
    for (CommTable& t : far[0].tables)
      for (CommPoint& p : t.points) p.time_us = 1e6 * guide(p.gpus, p.size_bytes) * factor;
    EXPECT_FALSE(lookup_comm_time(far, query(16, 4096), guide)) << factor;
  }
  {
    std::vector<CommTables> near = {small_table()};
    for (CommTable& t : near[0].tables)
      for (CommPoint& p : t.points) p.time_us = 1e6 * guide(p.gpus, p.size_bytes) * 5;
    const auto hit = lookup_comm_time(near, query(16, 4096), guide);
    ASSERT_TRUE(hit && hit->extrapolated);
    EXPECT_NEAR(hit->time_s, 5 * guide(16, 4096), 1e-12);
  }
  // Without anchoring, or on another layout (two nodes), the table says nothing.
  CommQuery plain = query(8, 4 << 20);
  plain.extrapolate = false;
  EXPECT_FALSE(lookup_comm_time(files, plain, guide));
  CommQuery two_nodes = query(16, 4096);
  two_nodes.nodes = 2;
  EXPECT_FALSE(lookup_comm_time(files, two_nodes, guide));
  // Another op, or a forced protocol the run did not force, is not in the table.
  CommQuery ar = query(2, 4096);
  ar.op = Collective::kAllReduce;
  EXPECT_FALSE(lookup_comm_time(files, ar, guide));
  CommQuery forced = query(2, 4096);
  forced.protocol = "ll";
  EXPECT_FALSE(lookup_comm_time(files, forced, guide));
}

TEST(CommTables, ProfilesRefuseAnotherGpusTableUnlessBorrowed) {
  const std::string table = comm_tables_json(small_table());
  std::string profile = to_json(load_profile("b200"));
  const std::size_t at = profile.find("\"comm_tables\"");
  ASSERT_NE(at, std::string::npos);
  const std::string head = profile.substr(0, at);
  EXPECT_THROW((void)parse_profile(head + "\"comm_tables\": [" + table + "]\n}\n", "b.json"), InputError);
  const HardwareProfile borrowed =
      parse_profile(head + "\"comm_tables\": [" + table.substr(0, table.rfind('}')) +
                        ", \"borrowed\": \"same NVLink\"}]\n}\n",
                    "b.json");
  ASSERT_EQ(borrowed.comm_tables.size(), 1u);
  EXPECT_EQ(borrowed.comm_tables[0].borrowed, "same NVLink");
  EXPECT_EQ(parse_profile(to_json(borrowed), "again"), borrowed);
}

// A GPU name without a model word ("NVIDIA RTX PRO 6000 Blackwell"): its own tables load by the device names
// the profile lists, another GPU's are refused.
TEST(CommTables, ProfilesTakeTablesOfTheDevicesTheyName) {
  std::string profile = to_json(load_profile("rtx-pro-6000"));
  const std::size_t at = profile.find("\"comm_tables\"");
  ASSERT_NE(at, std::string::npos);
  const std::string head = profile.substr(0, at);
  CommTables own = small_table();
  own.provenance.device = "NVIDIA RTX PRO 6000 Blackwell Server Edition";
  const HardwareProfile p =
      parse_profile(head + "\"comm_tables\": [" + comm_tables_json(own) + "]\n}\n", "r.json");
  ASSERT_EQ(p.comm_tables.size(), 1u);
  EXPECT_TRUE(p.comm_tables[0].borrowed.empty());
  try {
    (void)parse_profile(head + "\"comm_tables\": [" + comm_tables_json(small_table()) + "]\n}\n", "r.json");
    ADD_FAILURE() << "took an H100 table";
  } catch (const InputError& e) {
    EXPECT_THAT(std::string(e.what()), ::testing::HasSubstr("NVIDIA H100 80GB HBM3"));
  }
  // Exact names only: a profile of "NVIDIA H20" does not take a table of "NVIDIA H200".
  std::string h20 = head;
  h20.replace(h20.find("\"name\": \"NVIDIA RTX PRO 6000 Blackwell\""), 39, "\"name\": \"NVIDIA H20\"");
  const std::size_t devices = h20.find("\"devices\"");
  ASSERT_NE(devices, std::string::npos);
  h20.erase(devices, h20.find('\n', devices) + 1 - devices);
  CommTables h200 = small_table();
  h200.provenance.device = "NVIDIA H200";
  EXPECT_THROW(
      (void)parse_profile(h20 + "\"comm_tables\": [" + comm_tables_json(h200) + "]\n}\n", "h20.json"),
      InputError);
  h200.provenance.device = "NVIDIA H20";
  EXPECT_NO_THROW(
      (void)parse_profile(h20 + "\"comm_tables\": [" + comm_tables_json(h200) + "]\n}\n", "h20.json"));
}

TEST(CollectivePrice, TableFirstThenTheAnchoredModelThenTheInStepTerm) {
  HardwareProfile p = load_profile("h200-sxm");  // carries the H100 nccl-tests table (borrowed)
  // An all-gather of 4 KiB per rank on 2 GPUs: the table's point at 8 KiB (its nccl-tests size), exactly.
  const CollectivePrice table = price_collective(p, Collective::kAllGather, 2, 4096);
  EXPECT_EQ(table.source, FigureSource::kTable);
  EXPECT_TRUE(table.exact);
  const CommTable& ag = p.comm_tables[0].tables[0];
  ASSERT_EQ(ag.op, Collective::kAllGather);
  double measured = 0;
  for (const CommPoint& pt : ag.points)
    measured = pt.gpus == 2 && pt.size_bytes == 8192 ? pt.time_us : measured;
  EXPECT_DOUBLE_EQ(table.time_s, measured * 1e-6);
  EXPECT_EQ(table.source_text(), "table");
  // Beyond the measured sizes: the model, anchored and marked extrapolated.
  const CollectivePrice huge = price_collective(p, Collective::kAllGather, 2, 4.0e9);
  EXPECT_EQ(huge.source, FigureSource::kAnalytic);
  EXPECT_TRUE(huge.anchored);
  EXPECT_THAT(huge.source_text(), ::testing::HasSubstr("extrapolated"));
  // In a graph-launched step: the steady state plus nccl.in_step_graph.
  CollectiveCall in_step;
  in_step.in_step = true;
  const CollectivePrice step = price_collective(p, Collective::kAllGather, 2, 4096, {}, in_step);
  EXPECT_DOUBLE_EQ(step.time_s - step.steady_s, in_step_extra(p, LaunchMode::kGraph));
  EXPECT_GT(step.in_step_s, 0.0);
  // Without tables: NCCL's model, its plan's own time.
  p.comm_tables.clear();
  const CollectivePrice model = price_collective(p, Collective::kAllGather, 2, 4096);
  EXPECT_EQ(model.source, FigureSource::kAnalytic);
  EXPECT_DOUBLE_EQ(model.time_s, model.plan.analytic_time_s);
  EXPECT_EQ(price_collective(p, Collective::kAllGather, 1, 4096).time_s, 0.0);
}

TEST(CollectivePrice, APlanWithAGivenTimeKeepsItsStructure) {
  const HardwareProfile p = load_profile("h200-sxm");
  const CollectivePlan plan = plan_collective(p, Collective::kReduceScatter, 8, 1 << 20);
  for (double f : {0.3, 0.9, 1.0, 1.7}) {
    const CollectivePlan q = plan_with_time(plan, f * plan.analytic_time_s);
    EXPECT_EQ(q.steps, plan.steps);
    EXPECT_EQ(q.protocol, plan.protocol);
    const double again = q.base_latency_s + q.steps * q.per_step_latency_s +
                         q.steps * q.bytes_per_step_per_rank / q.link_bandwidth_Bps;
    EXPECT_NEAR(again, f * plan.analytic_time_s, 1e-12 * plan.analytic_time_s) << f;
  }
}

}  // namespace
}  // namespace dcpsim::models
