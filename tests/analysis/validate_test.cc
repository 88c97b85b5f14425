// validate: ~0 error with the profile that produced the traces, a failing gate with a wrong one, reports, the
// calibrated-domain warning, and one-line errors for files calibration cannot use (through the dcpsim CLI
// too).
#include <gtest/gtest.h>

#if DCPSIM_WITH_SIMGRID

#include <sys/wait.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "calibration_test_support.h"
#include "dcpsim/analysis/calibrate.h"
#include "dcpsim/analysis/phase_map.h"
#include "dcpsim/analysis/validate.h"
#include "dcpsim/error.h"
#include "dcpsim/models/scenario_proto.h"
#include "dcpsim/traces/protobuf_writer.h"
#include "dcpsim/traces/provenance.h"
#include "dcpsim/traces/trace_collector.h"

namespace dcpsim::analysis {
namespace {

using testing::TempDir;

// A few scenarios of each strategy: enough for every kind of figure, quick to simulate.
std::vector<models::Scenario> validate_grid() {
  std::vector<models::Scenario> out;
  const auto grid = testing::calibration_grid();
  for (std::size_t i = 0; i < grid.size(); i += 3) out.push_back(grid[i]);
  return out;
}

struct Traces {
  TempDir dir;
  std::filesystem::path path = dir / "truth.pb";
  Traces() { testing::write_sim_trace(path, testing::true_profile(), validate_grid()); }
};

const Traces& truth_traces() {
  static const Traces t;
  return t;
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs the dcpsim executable; returns its exit status and fills `err` with its stderr.
int run_dcpsim(const std::string& args, std::string* err = nullptr) {
  const std::filesystem::path exe = std::filesystem::path(DCPSIM_BINARY_DIR) / "analysis" / "dcpsim";
  const TempDir tmp;
  const std::string cmd =
      exe.string() + " " + args + " >" + (tmp / "out").string() + " 2>" + (tmp / "err").string();
  const int status = std::system(cmd.c_str());
  if (err) *err = read_text(tmp / "err");
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string error_of(const std::filesystem::path& p) {
  try {
    load_measured(p);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Validate, TheTrueProfileReproducesItsTraces) {
  const auto sections = load_measured(truth_traces().path).sections;
  const ValidationReport r = validate(testing::true_profile(), std::nullopt, sections);
  EXPECT_TRUE(r.passed);
  EXPECT_EQ(r.per_figure.back().within_tolerance, 1.0);
  // Phase figures are written as exact doubles; row ready times are rounded to whole nanoseconds in the
  // trace.
  for (const Comparison& c : r.comparisons) {
    const double slack = c.observation.kind == ObservationKind::kPhase ? 0.0 : 0.5e-9;
    EXPECT_LE(std::abs(c.predicted_s - c.observation.measured_s), slack + 1e-12 * c.observation.measured_s)
        << c.observation.phase << " rank " << c.observation.rank << " row " << c.observation.row;
  }
  // Every kind of figure is there: kernel and communication phases, the step, per-row ready times (the wait
  // phases of these scenarios are 0 ns: every flag is up before its owner looks).
  std::set<std::string> figures;
  for (const ErrorSummary& s : r.per_figure) figures.insert(s.key);
  for (const char* f : {"attention", "correction", "collective", "pack", "push+wait+combine", "combine",
                        "query_gather", "lse_gather", "step", "row_lse", "row_output"}) {
    EXPECT_TRUE(figures.count(f)) << f;
  }
  EXPECT_FALSE(r.has_intervals);
}

TEST(Validate, AWrongProfileFailsTheGate) {
  // h200-sxm is not the profile the traces were simulated under (its measured tables and analytic numbers
  // differ from true_profile()'s): it misses by a few percent, more than a 1% gate.
  const auto sections = load_measured(truth_traces().path).sections;
  ValidateOptions strict;
  strict.max_median_error = 0.01;
  const ValidationReport r = validate(models::load_profile("h200-sxm"), std::nullopt, sections, strict);
  EXPECT_FALSE(r.passed);
  EXPECT_GT(r.median_error, 0.01);
  ValidateOptions lax;
  lax.max_median_error = 10.0;
  EXPECT_TRUE(validate(models::load_profile("h200-sxm"), std::nullopt, sections, lax).passed);
}

// The floored p90 (a figure within the absolute floor counts as 0): the plain p90 with no floor, zero with a
// floor above every error, and in between the p90 of the errors left once those under the floor are zeroed.
TEST(Validate, FlooredPercentilesCountErrorsWithinTheFloorAsZero) {
  const auto sections = load_measured(truth_traces().path).sections;
  const auto profile = models::load_profile("h200-sxm");
  ValidateOptions none;
  none.tolerance_absolute_s = 0.0;
  const ValidationReport plain = validate(profile, std::nullopt, sections, none);
  ASSERT_GT(plain.per_figure.back().p90, 0.0);
  EXPECT_DOUBLE_EQ(plain.per_figure.back().p90_floored, plain.per_figure.back().p90);
  EXPECT_DOUBLE_EQ(plain.per_figure.back().median_floored, plain.per_figure.back().median);
  ValidateOptions huge;
  huge.tolerance_absolute_s = 1.0;
  const ValidationReport all_within = validate(profile, std::nullopt, sections, huge);
  EXPECT_EQ(all_within.per_figure.back().p90_floored, 0.0);
  EXPECT_DOUBLE_EQ(all_within.per_figure.back().p90, plain.per_figure.back().p90);
  // 0.5 µs: recomputed from the comparisons.
  const ValidationReport r = validate(profile, std::nullopt, sections);
  std::vector<double> floored;
  int zeroed = 0;
  for (const Comparison& c : r.comparisons) {
    const bool within = std::abs(c.predicted_s - c.observation.measured_s) <= 0.5e-6;
    zeroed += within ? 1 : 0;
    floored.push_back(within ? 0.0 : std::abs(c.relative_error));
  }
  ASSERT_GT(zeroed, 0);
  ASSERT_LT(zeroed, static_cast<int>(floored.size()));
  std::sort(floored.begin(), floored.end());
  const double pos = 0.9 * double(floored.size() - 1);
  const auto lo = static_cast<std::size_t>(pos);
  const double p90 =
      floored[lo] + (pos - double(lo)) * (floored[std::min(lo + 1, floored.size() - 1)] - floored[lo]);
  EXPECT_NEAR(r.per_figure.back().p90_floored, p90, 1e-15);
  EXPECT_LE(r.per_figure.back().p90_floored, r.per_figure.back().p90);
}

TEST(Validate, ReportsAndPredictionIntervals) {
  const auto sections = load_measured(truth_traces().path).sections;
  CalibrationInfo cal;
  cal.sigma = {{"attention", 0.02}, {"step", 0.0}};
  cal.domain = domain_of({sections.front()});
  const ValidationReport r = validate(testing::true_profile(), cal, sections);
  ASSERT_TRUE(r.has_intervals);
  for (const Comparison& c : r.comparisons) {
    if (c.observation.phase == "attention") {
      ASSERT_TRUE(c.interval_low_s.has_value());
      EXPECT_NEAR(*c.interval_high_s - *c.interval_low_s, 2 * 1.96 * 0.02 * c.predicted_s, 1e-15);
      EXPECT_TRUE(c.inside_interval);
    } else if (c.observation.kind == ObservationKind::kRowLse) {
      EXPECT_FALSE(c.interval_low_s.has_value());
    }
  }
  // The domain came from the first section only, so the others are outside it.
  ASSERT_FALSE(r.warnings.empty());
  EXPECT_NE(r.warnings.front().find("outside the calibrated domain"), std::string::npos)
      << r.warnings.front();

  const std::string md = validation_markdown(r, {}, "dcpsim validate ...");
  EXPECT_NE(md.find("**PASS**"), std::string::npos);
  EXPECT_NE(md.find("| attention |"), std::string::npos);
  EXPECT_NE(md.find("inside 95% interval"), std::string::npos);
  const std::string csv = validation_csv(r);
  EXPECT_EQ(static_cast<std::size_t>(std::count(csv.begin(), csv.end(), '\n')), r.comparisons.size() + 1);
}

// Each kernel-phase comparison says whether its kernels came from a measured table or the analytic model, and
// the report breaks the errors down by that source.
TEST(Validate, KernelPhasesSayWhereTheirPriceCameFrom) {
  const auto sections = load_measured(truth_traces().path).sections;
  models::HardwareProfile p = testing::true_profile();
  p.tables.clear();
  // An MLA attention table whose hull covers every scenario of the grid (H 128, 1-64 rows, up to 32k/2
  // tokens per rank), at one constant time.
  models::KernelTables t;
  models::KernelTable k;
  k.kernel = models::TableKernel::kAttention;
  k.key = "mla qk576 d512 bf16";
  for (double h : {64.0, 256.0})
    for (double b : {1.0, 128.0})
      for (double n : {16.0, 65536.0}) k.points.push_back({{h, b, n}, 40e3, 10, 39e3, 41e3});
  k.finalize("test");
  t.tables.push_back(k);
  p.tables.push_back(t);
  const ValidationReport r = validate(p, std::nullopt, sections);
  int table = 0, analytic = 0;
  for (const Comparison& c : r.comparisons) {
    const std::string& f = c.observation.phase;
    bool kernel = false;  // a figure with a kernel phase in it ("wait+combine" too)
    for (const std::string& ph : c.observation.sim_phases)
      kernel = kernel || ph == "attention" || ph == "correction" || ph == "pack" || ph == "combine";
    if (c.observation.kind != ObservationKind::kPhase || !kernel) {
      EXPECT_EQ(c.price_source, "") << f;
      continue;
    }
    const bool mla = sections[c.observation.section].scenario.kv_heads == 1;
    EXPECT_EQ(c.price_source, f == "attention" && mla ? "table" : "analytic") << f;
    (c.price_source == "table" ? table : analytic)++;
    if (c.price_source ==
        "table") {  // the table's 40 µs, plus at most a launch gap before a split-KV combine
      EXPECT_GE(c.predicted_s, 40e-6 - 1e-12);
      EXPECT_LT(c.predicted_s, 45e-6);
    }
  }
  EXPECT_GT(table, 0);
  EXPECT_GT(analytic, 0);
  ASSERT_GE(r.per_source.size(), 2u);
  EXPECT_EQ(r.per_source[r.per_source.size() - 2].key, "all [analytic]");
  EXPECT_EQ(r.per_source.back().key, "all [table]");
  EXPECT_EQ(r.per_source.back().count, table);
  EXPECT_EQ(r.per_source[r.per_source.size() - 2].count, analytic);
  EXPECT_NE(validation_markdown(r, {}, "x").find("| attention [table] |"), std::string::npos);
  EXPECT_NE(validation_csv(r).find(",table\n"), std::string::npos);
}

TEST(Validate, EmulatedTracesCompareKernelPhasesOnly) {
  TempDir dir;
  testing::write_sim_trace(dir / "emu.pb", testing::true_profile(), validate_grid(),
                           traces::v1::SOURCE_EMULATED);
  const ValidationReport r =
      validate(testing::true_profile(), std::nullopt, load_measured(dir / "emu.pb").sections);
  EXPECT_TRUE(r.emulated);
  for (const Comparison& c : r.comparisons) {
    EXPECT_EQ(c.observation.kind, ObservationKind::kPhase);
    EXPECT_TRUE(c.observation.phase == "attention" || c.observation.phase == "correction" ||
                c.observation.phase == "pack" || c.observation.phase == "combine")
        << c.observation.phase;
  }
  EXPECT_NE(validation_markdown(r, {}, "x").find("only the kernel phases"), std::string::npos);
}

TEST(BadTraces, TruncatedNotATraceNoSummariesAreOneLineErrors) {
  TempDir dir;
  const std::string full = read_text(truth_traces().path);
  // One byte short: the last record is always cut (half the file could end on a record boundary, and the
  // header's provenance makes the size differ from build to build).
  std::ofstream(dir / "cut.pb", std::ios::binary) << full.substr(0, full.size() - 1);
  std::ofstream(dir / "text.pb") << "timestamp,phase\n1,attention\n";
  {
    traces::ProtobufTraceWriter w(dir / "bare.pb");
    w.on_header(traces::make_header(traces::v1::SOURCE_HW));
    w.on_scenario(models::to_proto(validate_grid().front()));
    w.finish();
  }
  {
    traces::ProtobufTraceWriter w(dir / "odd.pb");
    w.on_header(traces::make_header(traces::v1::SOURCE_HW));
    w.on_scenario(models::to_proto(validate_grid().front()));
    traces::v1::PhaseSummary ph;
    ph.set_phase("warp_drive");
    ph.set_median_ns(1000);
    ph.set_min_ns(1000);
    ph.set_max_ns(1000);
    ph.set_repetitions(1);
    w.on_phase_summary(ph);
    w.finish();
  }
  for (const auto& [file, expect] : std::vector<std::pair<std::string, std::string>>{
           {"cut.pb", "cut.pb"},
           {"text.pb", "text.pb"},
           {"bare.pb", "no phase summaries"},
           {"odd.pb", "phase 'warp_drive' has no simulator counterpart"},
           {"missing.pb", "missing.pb"}}) {
    const std::string what = error_of(dir / file);
    EXPECT_NE(what.find(expect), std::string::npos) << file << ": " << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << file;
  }
}

TEST(MeasuredTraces, EmulatedH200RunnerTracesMapToKernelPhases) {
  const std::filesystem::path path =
      std::filesystem::path(DCPSIM_SOURCE_DIR) / "traces/measured/h200/mla_n2_b64_ctx1k_graph.pb.gz";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is not in this tree";
  const MeasuredTrace t = load_measured(path);
  EXPECT_EQ(t.header.source(), traces::v1::SOURCE_EMULATED);
  ASSERT_EQ(t.sections.size(), 5u);  // ag-rs, ag-ar, a2a, direct, row-stream
  std::set<std::string> figures;
  for (const MeasuredSection& s : t.sections) {
    for (const MeasuredPhase& p : s.phases) figures.insert(p.phase);
    for (const MeasuredRow& r : s.rows) EXPECT_LT(r.row, s.scenario.rows());  // padding rows are left out
  }
  EXPECT_TRUE(figures.count("attention") && figures.count("correction") && figures.count("pack"));
  EXPECT_TRUE(figures.count("combine"));            // a2a_combine
  EXPECT_TRUE(figures.count("push+wait+combine"));  // direct_merge: stores, flags, wait and combine
  const ObservationSet set = build_observations(t.sections);
  for (const Observation& o : set.observations) {
    // The one-kernel direct merge runs every logical rank in one launch under emulation: not one rank's.
    EXPECT_NE(o.phase, "push+wait+combine");
    EXPECT_TRUE(is_kernel_phase(o.phase)) << o.phase;
  }
}

// Sections measured with row stamps ran the instrumented merge kernels: they are priced from the " stamped"
// tables, the others never are.
TEST(MeasuredTraces, StampedSectionsArePricedFromStampedTables) {
  const std::filesystem::path dir = std::filesystem::path(DCPSIM_SOURCE_DIR) / "traces/measured/h200";
  if (!std::filesystem::exists(dir / "mla_n2_b64_ctx1k_graph.pb.gz"))
    GTEST_SKIP() << dir << " is not in this tree";
  const MeasuredSection stamped = load_measured(dir / "mla_n2_b64_ctx1k_graph.pb.gz").sections.at(0);
  const MeasuredSection plain = load_measured(dir / "mla_n2_b16_ctx8k_graph.pb.gz").sections.at(0);
  ASSERT_EQ(stamped.scenario.strategy, models::Strategy::kAgRs);
  ASSERT_EQ(plain.scenario.strategy, models::Strategy::kAgRs);
  EXPECT_TRUE(stamped.row_stamps);
  EXPECT_FALSE(plain.row_stamps);
  models::HardwareProfile p = models::load_profile("h200-sxm");
  p.tables.clear();
  models::KernelTables t;
  t.provenance.device = "NVIDIA H200";
  models::KernelTable k{models::TableKernel::kCorrection, "d512 bf16 stamped", {}, {}, {}, {}, {}, {}, {}};
  for (double n : {2.0, 4.0})
    for (double b : {1.0, 128.0})
      for (double h : {16.0, 64.0}) k.points.push_back({{n, b, h}, 7000.0, 10, 7000.0, 7000.0});
  k.finalize("test");
  t.tables.push_back(k);
  p.tables.push_back(t);
  const Predictor predictor(p);
  const Prediction a = predictor.predict(stamped);
  const Prediction b = predictor.predict(plain);
  EXPECT_EQ(a.phase_source.at({0, "correction"}), models::FigureSource::kTable);
  EXPECT_EQ(b.phase_source.at({0, "correction"}), models::FigureSource::kAnalytic);
  // The same stamped scenario priced as if unstamped: the stamped table does not apply.
  const Prediction c = predictor.predict(stamped.scenario, false, false);
  EXPECT_EQ(c.phase_source.at({0, "correction"}), models::FigureSource::kAnalytic);
}

// In an emulated eager step the runner's one host thread falls behind the GPU after the emulated query
// all-gather's copies: rank 0's attention (query repack, then FlashInfer's MLA kernel) waits on the GPU for
// its second launch. The GPU timeline shows it (an idle gap of several µs inside the phase; the later ranks'
// ~1 µs), and that figure is left out with a note; a graph-launched step leaves nothing out for it.
TEST(MeasuredTraces, EmulatedEagerPhasesThatWaitedForTheHostAreLeftOut) {
  const std::filesystem::path dir = std::filesystem::path(DCPSIM_SOURCE_DIR) / "traces/measured/h200";
  if (!std::filesystem::exists(dir / "mla_n4_b16_ctx8k_eager.pb.gz"))
    GTEST_SKIP() << dir << " is not in this tree";
  const MeasuredTrace eager = load_measured(dir / "mla_n4_b16_ctx8k_eager.pb.gz");
  const MeasuredSection& s = eager.sections.at(0);
  ASSERT_EQ(s.scenario.launch, models::LaunchMode::kEager);
  for (const MeasuredPhase& p : s.phases) {
    if (p.phase != "attention") continue;
    if (p.rank == 0) {
      EXPECT_GT(p.largest_inner_gap_s, 4e-6);
    } else {
      EXPECT_LT(p.largest_inner_gap_s, 2.5e-6) << p.rank;
    }
  }
  const ObservationSet set = build_observations(eager.sections);
  int attention = 0;
  for (const Observation& o : set.observations) {
    if (o.phase != "attention") continue;
    ++attention;
    EXPECT_NE(o.rank, 0) << "section " << o.section;
  }
  EXPECT_EQ(attention, 4 * 3);  // ranks 1-3 of the four sections with one attention per rank
  bool noted = false;
  for (const std::string& why : set.excluded) noted = noted || why.find("host thread") != std::string::npos;
  EXPECT_TRUE(noted);
  for (const std::string& why :
       build_observations(load_measured(dir / "mla_n4_b16_ctx8k_graph.pb.gz").sections).excluded)
    EXPECT_EQ(why.find("host thread"), std::string::npos) << why;
}

// The longest idle gap inside a phase, from the GPU activities: per repetition, overlapping activities
// counted as busy, the median over repetitions; a phase with one activity has none.
TEST(MeasuredTraces, InnerGapIsTheMedianOverRepetitionsOfTheLongestIdle) {
  TempDir dir;
  {
    traces::ProtobufTraceWriter w(dir / "g.pb");
    w.on_header(traces::make_header(traces::v1::SOURCE_EMULATED));
    w.on_scenario(models::to_proto(testing::make_scenario(
        2, 32, 1, 512, 576, 4, 4096, models::Strategy::kAgRs, models::LaunchMode::kEager)));
    for (int rank : {0, 1}) {
      for (const char* phase : {"attention", "correction"}) {
        traces::v1::PhaseSummary ph;
        ph.set_rank(rank);
        ph.set_phase(phase);
        ph.set_median_ns(20000);
        ph.set_min_ns(20000);
        ph.set_max_ns(20000);
        ph.set_repetitions(3);
        w.on_phase_summary(ph);
      }
    }
    const auto activity = [&](int rank, int rep, const char* phase, std::int64_t start, std::int64_t end) {
      traces::v1::GpuActivity a;
      a.set_rank(rank);
      a.set_repetition(rep);
      a.set_phase(phase);
      a.set_kind(traces::v1::GpuActivity::KIND_KERNEL);
      a.set_name("k");
      a.set_start_ns(start);
      a.set_end_ns(end);
      w.on_gpu_activity(a);
    };
    // Rank 0: gaps of 6, 7 and 1 µs in its three repetitions (median 6); the second kernel of repetition 1
    // overlaps the first's end, the third starts 7 µs after the busier one ended. Rank 1: 1 µs each time.
    activity(0, 0, "attention", 0, 3000), activity(0, 0, "attention", 9000, 20000);
    activity(0, 1, "attention", 0, 3000), activity(0, 1, "attention", 2000, 5000),
        activity(0, 1, "attention", 12000, 20000);
    activity(0, 2, "attention", 0, 3000), activity(0, 2, "attention", 4000, 20000);
    for (int rep = 0; rep < 3; ++rep) {
      activity(1, rep, "attention", 0, 3000), activity(1, rep, "attention", 4000, 20000);
      activity(1, rep, "correction", 30000, 32000);
    }
    w.finish();
  }
  const MeasuredSection s = load_measured(dir / "g.pb").sections.at(0);
  std::map<std::pair<int, std::string>, double> gap;
  for (const MeasuredPhase& p : s.phases) gap[{p.rank, p.measured_name}] = p.largest_inner_gap_s;
  EXPECT_NEAR(gap.at({0, "attention"}), 6e-6, 1e-15);
  EXPECT_NEAR(gap.at({1, "attention"}), 1e-6, 1e-15);
  EXPECT_EQ(gap.at({1, "correction"}), 0.0);  // one activity
  EXPECT_EQ(gap.at({0, "correction"}), 0.0);  // none at all
  int attention = 0;  // eager and emulated: rank 0's attention (6 µs > 4 µs) is left out, rank 1's is kept
  for (const Observation& o : build_observations({s}).observations) {
    if (o.phase == "attention") {
      ++attention;
      EXPECT_EQ(o.rank, 1);
    }
  }
  EXPECT_EQ(attention, 1);
}

TEST(MeasuredTraces, RealTwoGpuTracesCompareStepFromTheFirstPhase) {
  const std::filesystem::path path =
      std::filesystem::path(DCPSIM_SOURCE_DIR) / "traces/measured/h200x2/mla_n2_b64_ctx1k_graph.pb.gz";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is not in this tree";
  const MeasuredTrace t = load_measured(path);
  EXPECT_EQ(t.header.source(), traces::v1::SOURCE_HW);
  const ObservationSet set = build_observations(t.sections);
  bool wait_combine = false, step = false;
  for (const Observation& o : set.observations) {
    wait_combine = wait_combine || o.phase == "wait+combine";
    if (o.kind == ObservationKind::kStep) {
      step = true;
      EXPECT_TRUE(o.from_first_phase);
    }
  }
  EXPECT_TRUE(wait_combine);
  EXPECT_TRUE(step);
  // The runner's step runs from each rank's first phase to its last kernel: the slowest such span.
  Prediction p;
  p.step_s = 50e-6;
  p.first_begin_s = {3e-6, 4e-6};
  p.done_s = {40e-6, 42e-6};
  p.lse_ready_s = {{20e-6}, {21e-6}};
  Observation o;
  o.kind = ObservationKind::kStep;
  o.rank = -1;
  o.from_first_phase = true;
  EXPECT_DOUBLE_EQ(predicted(p, o), 38e-6);
  o.from_first_phase = false;
  EXPECT_DOUBLE_EQ(predicted(p, o), 50e-6);
  o = Observation{};
  o.kind = ObservationKind::kRowLse;
  o.rank = 1;
  o.row = 0;
  o.from_first_phase = true;
  EXPECT_DOUBLE_EQ(predicted(p, o), 17e-6);
}

TEST(Cli, CalibrateThenValidateExitCodes) {
  const std::string truth = truth_traces().path.string();
  TempDir dir;
  const std::string out = (dir / "cal.json").string();
  std::string err;
  // The traces come from the analytic models (no tables), so the fit leaves h200-sxm's tables out; eager
  // kernels' gap is not fitted, so the base gives them the graph's gap, as the truth does.
  // The truth has NCCL's model alone (no communication tables, no in-step terms): the closed loops' base.
  const models::HardwareProfile base = testing::base_profile();
  const std::string base_file = (dir / "base.json").string();
  std::ofstream(base_file) << models::to_json(base);
  ASSERT_EQ(run_dcpsim("calibrate --measured " + truth + " --profile " + base_file + " --no-tables --out " +
                           out + " --hold-out 3",
                       &err),
            0)
      << err;
  EXPECT_TRUE(std::filesystem::exists(dir / "cal.calibration.json"));
  EXPECT_NE(read_text(dir / "cal.calibration.json").find("holdout_residuals"), std::string::npos);
  // The fitted profile reproduces the traces; its sidecar gives intervals.
  const std::string report = (dir / "report.md").string(), csv = (dir / "report.csv").string();
  EXPECT_EQ(run_dcpsim("validate --measured " + truth + " --profile " + out + " --report " + report +
                           " --csv " + csv,
                       &err),
            0)
      << err;
  EXPECT_NE(read_text(report).find("inside 95% interval"), std::string::npos);
  // The uncalibrated profile misses by more than 1%: exit 1, one line naming the limit.
  EXPECT_EQ(run_dcpsim("validate --measured " + truth + " --profile h200-sxm --max-median-err 0.01", &err),
            1);
  EXPECT_NE(err.find("exceeds --max-median-err"), std::string::npos) << err;
  EXPECT_EQ(run_dcpsim("validate --measured " + (dir / "nope.pb").string() + " --profile h200-sxm", &err), 2);
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_EQ(run_dcpsim("calibrate --measured " + truth + " --profile h200-sxm --out " + out + " --hold-out 1",
                       &err),
            2);
}

}  // namespace
}  // namespace dcpsim::analysis

#endif  // DCPSIM_WITH_SIMGRID
