// calibrate: the fit recovers a known perturbation of a profile from traces the simulator wrote under it;
// bounded least squares; the phase map; parameters the data cannot identify stay put; outputs load back.
#include <gtest/gtest.h>

#if DCPSIM_WITH_SIMGRID

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "calibration_test_support.h"
#include "dcpsim/analysis/calibrate.h"
#include "dcpsim/analysis/least_squares.h"
#include "dcpsim/analysis/phase_map.h"
#include "dcpsim/error.h"
#include "dcpsim/sim/step_result.h"
#include "dcpsim/traces/trace_collector.h"

namespace dcpsim::analysis {
namespace {

using testing::TempDir;

const ParameterResult& param(const CalibrationResult& r, const std::string& name) {
  for (const ParameterResult& p : r.parameters) {
    if (p.name == name) return p;
  }
  throw std::runtime_error("no parameter " + name);
}

double si(const models::HardwareProfile& p, const std::string& name) {
  return fit_parameter(name).quantity(p).si();
}

// One calibration of h200-sxm on the grid simulated under true_profile(), shared by the tests that inspect it
// (each fit re-simulates the grid a few hundred times).
struct Fixture {
  TempDir dir;
  models::HardwareProfile base = testing::base_profile();
  models::HardwareProfile truth = testing::true_profile();
  std::vector<MeasuredSection> sections;
  CalibrationResult result;

  explicit Fixture(traces::v1::Source source) {
    testing::write_sim_trace(dir / "truth.pb", truth, testing::calibration_grid(), source);
    sections = load_measured(dir / "truth.pb").sections;
    result = calibrate(base, sections, {});
  }
};

const Fixture& sim_fit() {
  static const Fixture f(traces::v1::SOURCE_SIM);
  return f;
}

// The tolerance a recovered parameter must meet. The traces are exact up to the simulator's clock resolution
// (2^-40 s, ~1e-12 s, on figures of >= ~1 µs: relative noise <= 1e-6), and the fit stops once a Gauss-Newton
// step gains less than 1e-10 of the cost: the weakest-determined coordinate (b, the half-efficiency size,
// seen only through the attention kernel's total bytes) then sits within ~1e-5 of the truth. So: five
// reported standard errors, at least 1e-4 (ten times that convergence floor), never looser than the brief's
// 1%.
double tolerance(const ParameterResult& p) {
  return std::min(0.01, std::max(5 * p.relative_std_error, 1e-4));
}

TEST(CalibrateClosedLoop, RecoversPerturbedKernelNumbersWithinOnePercent) {
  const Fixture& f = sim_fit();
  for (const char* name : {"kernel.floor", "kernel.hbm_efficiency_max", "kernel.half_efficiency_bytes",
                           "attention.floor", "attention.cta_overhead"}) {
    const ParameterResult& p = param(f.result, name);
    ASSERT_TRUE(p.fitted) << name << ": " << p.status;
    const double want = si(f.truth, name), got = si(f.result.profile, name);
    EXPECT_NEAR(got / want, 1.0, tolerance(p)) << name << " base " << si(f.base, name);
  }
}

TEST(CalibrateClosedLoop, RecoversLaunchCollectiveAndSignalNumbers) {
  const Fixture& f = sim_fit();
  for (const char* name : {"launch.dependent_gap", "launch.cpu_issue_eager", "nvlink.measured_bandwidth",
                           "nccl.ring.ll.base_latency", "signal.flag_write_latency"}) {
    const ParameterResult& p = param(f.result, name);
    ASSERT_TRUE(p.fitted) << name << ": " << p.status;
    EXPECT_NEAR(si(f.result.profile, name) / si(f.truth, name), 1.0, tolerance(p)) << name;
  }
}

TEST(CalibrateClosedLoop, ResidualsVanishOnExactData) {
  const Fixture& f = sim_fit();
  ASSERT_FALSE(f.result.residuals.empty());
  const ResidualStats& all = f.result.residuals.back();
  EXPECT_EQ(all.figure, "all");
  EXPECT_EQ(all.count, f.result.observations);
  EXPECT_GT(all.count, 200);
  EXPECT_LT(all.max, 1e-4);
}

TEST(CalibrateClosedLoop, UnidentifiedParametersKeepBaseValueAndSource) {
  const Fixture& f = sim_fit();
  // No scenario spans two NVLink domains, so nothing depends on the inter-node fabric.
  for (const char* name : {"internode.latency", "internode.bandwidth"}) {
    const ParameterResult& p = param(f.result, name);
    EXPECT_FALSE(p.fitted) << name;
    EXPECT_NE(p.status.find("not identified"), std::string::npos) << p.status;
    EXPECT_EQ(fit_parameter(name).quantity(f.result.profile), fit_parameter(name).quantity(f.base)) << name;
  }
}

TEST(CalibrateClosedLoop, EmulatedTracesFitKernelsAndLaunchGapsOnly) {
  const Fixture f(traces::v1::SOURCE_EMULATED);
  // Kernel phases identify the kernel numbers.
  for (const char* name : {"kernel.hbm_efficiency_max", "attention.floor"}) {
    const ParameterResult& p = param(f.result, name);
    ASSERT_TRUE(p.fitted) << name << ": " << p.status;
    EXPECT_NEAR(si(f.result.profile, name) / si(f.truth, name), 1.0, tolerance(p)) << name;
  }
  // Without a measured table, every emulated phase holds one dependent gap and one kernel floor (the
  // attention phase: decode kernel, gap, split-KV combine; a merge phase: gap, kernel), so the data see only
  // their sum: the fit says so and keeps the gap, and the sum is still exact.
  const ParameterResult& gap = param(f.result, "launch.dependent_gap");
  EXPECT_FALSE(gap.fitted);
  EXPECT_NE(gap.status.find("confounded"), std::string::npos) << gap.status;
  EXPECT_LT(f.result.residuals.back().max, 1e-4);
  // With the floor known, the attention and merge phases find the gap.
  models::HardwareProfile floor_known = f.base;
  floor_known.kernel.floor = f.truth.kernel.floor;
  CalibrateOptions opt;
  opt.fixed = {"kernel.floor"};
  const CalibrationResult r = calibrate(floor_known, f.sections, {}, opt);
  const ParameterResult& found = param(r, "launch.dependent_gap");
  ASSERT_TRUE(found.fitted) << found.status;
  EXPECT_NEAR(si(r.profile, "launch.dependent_gap") / si(f.truth, "launch.dependent_gap"), 1.0,
              tolerance(found));
  for (const char* name : {"nvlink.measured_bandwidth", "nccl.ring.ll.base_latency",
                           "signal.flag_write_latency", "launch.cpu_issue_eager"}) {
    const ParameterResult& p = param(f.result, name);
    EXPECT_FALSE(p.fitted) << name;
    EXPECT_EQ(fit_parameter(name).quantity(f.result.profile), fit_parameter(name).quantity(f.base)) << name;
  }
  EXPECT_NE(param(f.result, "nvlink.measured_bandwidth").status.find("emulated"), std::string::npos);
  ASSERT_FALSE(f.result.excluded.empty());
  EXPECT_NE(f.result.excluded.front().find("emulat"), std::string::npos);
}

// Each merge kernel type with its own floor and efficiency, and a tensor-core rate that makes MLA attention
// at 128 heads and long shards compute-bound: the fit finds each type's numbers and the rate from kernel
// phases alone (emulated traces), starting from h200-sxm where every type shares one set. (The shared floor,
// left to the split-KV combine alone, is confounded with the dependent gap there: see the test above.)
TEST(CalibrateClosedLoop, RecoversPerKernelTypeNumbersAndTheTensorRate) {
  TempDir dir;
  models::HardwareProfile truth = testing::true_profile();
  auto own = [&](models::MemoryKernel k, double floor_us, double efficiency) {
    models::MemoryKernelSpec spec = truth.kernel;
    spec.floor.value = floor_us;  // us, as h200-sxm writes it
    spec.hbm_efficiency_max.value = efficiency;
    truth.kernel.per_type[static_cast<std::size_t>(k)] = spec;
  };
  own(models::MemoryKernel::kCorrection, 5.1, 0.84);
  own(models::MemoryKernel::kA2aPack, 6.5, 0.45);
  own(models::MemoryKernel::kA2aCombine, 7.3, 0.3);
  truth.attention.tensor_rate.value = 200;  // TFLOP/s, base 660
  testing::write_sim_trace(dir / "truth.pb", truth, testing::calibration_grid(), traces::v1::SOURCE_EMULATED);
  models::HardwareProfile base = models::load_profile("h200-sxm");
  base.tables.clear();
  base.launch.dependent_gap_eager.reset();  // as the truth's (testing::base_profile)
  const CalibrationResult r = calibrate(base, load_measured(dir / "truth.pb").sections, {});
  for (const char* name :
       {"kernel.correction.floor", "kernel.correction.hbm_efficiency_max", "kernel.a2a_pack.floor",
        "kernel.a2a_pack.hbm_efficiency_max", "kernel.a2a_combine.floor",
        "kernel.a2a_combine.hbm_efficiency_max", "attention.tensor_rate", "kernel.hbm_efficiency_max"}) {
    const ParameterResult& p = param(r, name);
    ASSERT_TRUE(p.fitted) << name << ": " << p.status;
    EXPECT_NEAR(si(r.profile, name) / si(truth, name), 1.0, tolerance(p))
        << name << " base " << si(base, name);
  }
  EXPECT_LT(r.residuals.back().max, 1e-4);
  // The fitted profile carries the types' own sections and loads back.
  EXPECT_TRUE(r.profile.kernel.per_type[static_cast<std::size_t>(models::MemoryKernel::kCorrection)]);
  EXPECT_EQ(models::parse_profile(models::to_json(r.profile), "again.json"), r.profile);
}

// The PDL savings (launch.pdl_saving_<kernel>, absent from the base) are seen only in PDL steps' merge
// kernels: from emulated PDL traces, with every other number fixed, the fit finds each kernel type's; a fit
// on traces without PDL steps leaves them out of the profile altogether.
TEST(CalibrateClosedLoop, RecoversPdlSavingsFromPdlStepsOnly) {
  TempDir dir;
  models::HardwareProfile truth = testing::true_profile();
  const double want_us[] = {0.3, 0.2, 0.1};  // correction, a2a_pack, a2a_combine (kPdlChainKernels)
  for (std::size_t i = 0; i < models::kPdlChainKernels.size(); ++i)
    truth.launch.pdl_saving[static_cast<std::size_t>(models::kPdlChainKernels[i])] =
        models::quantity_from_si(want_us[i] * 1e-6, models::Unit::kMicroseconds, "truth");
  std::vector<models::Scenario> grid;
  for (models::Scenario s : testing::calibration_grid()) {
    if (s.strategy == models::Strategy::kDirect) continue;
    s.launch = models::LaunchMode::kPdl;
    grid.push_back(s);
  }
  truth.launch.pdl_saving_attention = models::quantity_from_si(0.8e-6, models::Unit::kMicroseconds, "truth");
  testing::write_sim_trace(dir / "pdl.pb", truth, grid, traces::v1::SOURCE_EMULATED);
  CalibrateOptions opt;
  for (const FitParameter& f : fit_parameters())
    if (f.name.rfind("launch.pdl_saving_", 0) != 0) opt.fixed.push_back(f.name);
  models::HardwareProfile base = truth;
  base.launch.pdl_saving = {};
  base.launch.pdl_saving_attention.reset();
  const CalibrationResult r = calibrate(base, load_measured(dir / "pdl.pb").sections, {}, opt);
  for (std::size_t i = 0; i < models::kPdlChainKernels.size(); ++i) {
    const std::string name =
        "launch.pdl_saving_" + std::string(models::to_string(models::kPdlChainKernels[i]));
    const ParameterResult& p = param(r, name);
    ASSERT_TRUE(p.fitted) << name << ": " << p.status;
    EXPECT_NEAR(si(r.profile, name) / (want_us[i] * 1e-6), 1.0, tolerance(p)) << name;
  }
  const ParameterResult& attention = param(r, "launch.pdl_saving_attention");
  ASSERT_TRUE(attention.fitted) << attention.status;
  EXPECT_NEAR(si(r.profile, "launch.pdl_saving_attention") / 0.8e-6, 1.0, tolerance(attention));
  EXPECT_EQ(models::parse_profile(models::to_json(r.profile), "again.json"), r.profile);
  for (const auto& q : sim_fit().result.profile.launch.pdl_saving) EXPECT_FALSE(q.has_value());
  EXPECT_FALSE(sim_fit().result.profile.launch.pdl_saving_attention.has_value());
}

// Each merge kernel's own copy-node term (launch.kernel_after_copy_node_<kernel>, absent from the base: it
// reads the shared one) and the graph savings (launch.graph_saving_<kernel>) are seen only in emulated
// graph-launched steps: rank 0's correction and A2A combine after the copies, every rank's chain kernels.
// With every other number fixed the fit finds each; a fit on real steps leaves them out of the profile.
TEST(CalibrateClosedLoop, RecoversCopyNodeTermsAndGraphSavingsFromEmulatedGraphSteps) {
  TempDir dir;
  models::HardwareProfile truth = testing::true_profile();
  const auto us = [](double v) {
    return models::quantity_from_si(v * 1e-6, models::Unit::kMicroseconds, "truth");
  };
  truth.launch.kernel_after_copy_node = us(0.16);
  truth.launch.after_copy_node[static_cast<std::size_t>(models::MemoryKernel::kCorrection)] = us(0.05);
  truth.launch.after_copy_node[static_cast<std::size_t>(models::MemoryKernel::kA2aCombine)] = us(0.4);
  const double saving_us[] = {0.06, 0.04, 0.1};  // correction, a2a_pack, a2a_combine (kPdlChainKernels)
  for (std::size_t i = 0; i < models::kPdlChainKernels.size(); ++i)
    truth.launch.graph_saving[static_cast<std::size_t>(models::kPdlChainKernels[i])] = us(saving_us[i]);
  std::vector<models::Scenario> grid;
  for (models::Scenario s : testing::calibration_grid()) {
    if (s.strategy == models::Strategy::kDirect) continue;
    s.launch = models::LaunchMode::kGraph;
    grid.push_back(s);
  }
  testing::write_sim_trace(dir / "graph.pb", truth, grid, traces::v1::SOURCE_EMULATED);
  const auto free = [](const std::string& name) {
    return name.rfind("launch.graph_saving_", 0) == 0 || name.rfind("launch.kernel_after_copy_node_", 0) == 0;
  };
  CalibrateOptions opt;
  for (const FitParameter& f : fit_parameters())
    if (!free(f.name)) opt.fixed.push_back(f.name);
  models::HardwareProfile base = truth;
  base.launch.after_copy_node = {};
  base.launch.graph_saving = {};
  const CalibrationResult r = calibrate(base, load_measured(dir / "graph.pb").sections, {}, opt);
  const std::vector<std::pair<std::string, double>> want = {
      {"launch.kernel_after_copy_node_correction", 0.05e-6},
      {"launch.kernel_after_copy_node_a2a_combine", 0.4e-6},
      {"launch.graph_saving_correction", 0.06e-6},
      {"launch.graph_saving_a2a_pack", 0.04e-6},
      {"launch.graph_saving_a2a_combine", 0.1e-6}};
  for (const auto& [name, value] : want) {
    const ParameterResult& p = param(r, name);
    ASSERT_TRUE(p.fitted) << name << ": " << p.status;
    EXPECT_NEAR(si(r.profile, name) / value, 1.0, tolerance(p)) << name;
  }
  EXPECT_EQ(models::parse_profile(models::to_json(r.profile), "again.json"), r.profile);
  for (const auto& q : sim_fit().result.profile.launch.after_copy_node) EXPECT_FALSE(q.has_value());
  for (const auto& q : sim_fit().result.profile.launch.graph_saving) EXPECT_FALSE(q.has_value());
}

// Multiplies every phase median of `in` by (1 + relative × g), g a fixed pseudo-random standard normal draw.
void add_noise(const std::filesystem::path& in, const std::filesystem::path& out, double relative) {
  traces::Trace t = traces::read_trace(in);
  std::mt19937_64 rng(20261129);
  std::normal_distribution<double> g(0.0, 1.0);
  for (traces::TraceSection& s : t.sections) {
    for (auto& ph : s.phase_summaries) {
      const double v = ph.median_ns() * (1.0 + relative * g(rng));
      ph.set_median_ns(v);
      ph.set_min_ns(std::min(ph.min_ns(), v));
      ph.set_max_ns(std::max(ph.max_ns(), v));
    }
  }
  traces::ProtobufTraceWriter w(out);
  traces::replay(t, w);
}

TEST(CalibrateClosedLoop, NoisyMeasurementsGiveHonestStandardErrors) {
  const Fixture& exact = sim_fit();
  TempDir dir;
  add_noise(exact.dir / "truth.pb", dir / "noisy.pb", 0.02);
  const CalibrationResult r = calibrate(exact.base, load_measured(dir / "noisy.pb").sections, {});
  // The fit's residual sigma estimates the 2% noise.
  const ResidualStats& all = r.residuals.back();
  EXPECT_GT(all.sigma, 0.015);
  EXPECT_LT(all.sigma, 0.025);
  // The numbers most figures depend on are pinned to well under 1% and land within four of their reported
  // standard errors of the truth (a 1-in-15000 miss for an honest standard error). Fixed costs that trade off
  // against each other (kernel floor vs half-efficiency size) are not: their standard errors say so.
  // (launch.cpu_issue_eager is left out: behind h200-sxm's compute-bound tables and kernels, few eager
  // figures show the issue cost, and under 2% noise the fit reports it confounded and keeps the base value.)
  for (const char* name : {"kernel.hbm_efficiency_max", "nvlink.measured_bandwidth",
                           "nccl.ring.ll.base_latency", "nccl.p2p.base_latency"}) {
    const ParameterResult& p = param(r, name);
    ASSERT_TRUE(p.fitted) << name << ": " << p.status;
    EXPECT_GT(p.relative_std_error, 0.0) << name;
    EXPECT_LT(p.relative_std_error, 0.05) << name;
    EXPECT_NEAR(si(r.profile, name) / si(exact.truth, name), 1.0, 4 * p.relative_std_error) << name;
  }
  // Whatever was not fitted says why.
  for (const ParameterResult& p : r.parameters) {
    if (!p.fitted) {
      EXPECT_NE(p.status.find("kept from the base profile"), std::string::npos) << p.name;
    }
  }
}

// Multiplies the attention median of every 20th section's rank 0 by 20: a pathological kernel.
void corrupt(const std::filesystem::path& in, const std::filesystem::path& out) {
  traces::Trace t = traces::read_trace(in);
  for (std::size_t i = 0; i < t.sections.size(); i += 20) {
    for (auto& ph : t.sections[i].phase_summaries) {
      if (ph.rank() != 0 || ph.phase() != "attention") continue;
      ph.set_median_ns(ph.median_ns() * 20);
      ph.set_max_ns(ph.median_ns());
    }
  }
  traces::ProtobufTraceWriter w(out);
  traces::replay(t, w);
}

TEST(CalibrateClosedLoop, HubersLossShrugsOffAFewPathologicalFigures) {
  const Fixture& exact = sim_fit();
  TempDir dir;
  corrupt(exact.dir / "truth.pb", dir / "bad.pb");
  const auto sections = load_measured(dir / "bad.pb").sections;
  const CalibrationResult robust = calibrate(exact.base, sections, {});
  CalibrateOptions plain_options;
  plain_options.robust = false;
  const CalibrationResult plain = calibrate(exact.base, sections, {}, plain_options);
  // The corrupted attention figures drag the gap between dependent kernels (seen in every attention phase)
  // to its bound under squared loss; Huber's loss keeps it.
  const char* name = "launch.dependent_gap";
  EXPECT_NEAR(si(robust.profile, name) / si(exact.truth, name), 1.0, 1e-3);
  EXPECT_GT(std::abs(si(plain.profile, name) / si(exact.truth, name) - 1.0), 1e-2);
  EXPECT_GE(robust.downweighted, 2);
  ASSERT_FALSE(robust.outliers.empty());
  EXPECT_NE(robust.outliers.front().find("attention rank 0"), std::string::npos) << robust.outliers.front();
}

TEST(CalibrateClosedLoop, HoldOutSectionsAreNotFittedButReported) {
  const Fixture& f = sim_fit();
  std::vector<MeasuredSection> fit, held;
  for (std::size_t i = 0; i < f.sections.size(); ++i) (i % 4 == 3 ? held : fit).push_back(f.sections[i]);
  const CalibrationResult r = calibrate(f.base, fit, held);
  EXPECT_EQ(r.fit_sections, static_cast<int>(fit.size()));
  EXPECT_EQ(r.holdout_sections, static_cast<int>(held.size()));
  ASSERT_FALSE(r.holdout_residuals.empty());
  EXPECT_GT(r.holdout_residuals.back().count, 50);
  // The truth generalises to unseen scenarios: within 1%. The fit sections pin the eager CPU issue cost only
  // weakly (see NoisyMeasurementsGiveHonestStandardErrors), and how weakly depends on which shapes h200-sxm's
  // committed table prices: 0.2% with the 2026-11-29 table, 0.7% with the one rebuilt from the GPU timeline.
  EXPECT_LT(r.holdout_residuals.back().p90, 1e-2);
}

TEST(CalibrateClosedLoop, FixedParametersAreNotFitted) {
  const Fixture& f = sim_fit();
  CalibrateOptions opt;
  opt.fixed = {"kernel.floor"};
  std::vector<MeasuredSection> few(f.sections.begin(), f.sections.begin() + 12);
  const CalibrationResult r = calibrate(f.base, few, {}, opt);
  EXPECT_FALSE(param(r, "kernel.floor").fitted);
  EXPECT_EQ(r.profile.kernel.floor, f.base.kernel.floor);
  opt.fixed = {"kernel.flor"};
  EXPECT_THROW(calibrate(f.base, few, {}, opt), InputError);
}

TEST(CalibrateClosedLoop, WritesLoadableProfileAndSidecar) {
  const Fixture& f = sim_fit();
  CalibrationResult r = f.result;
  CalibrationProvenance prov;
  prov.traces = {f.dir / "truth.pb"};
  prov.headers = {load_measured(f.dir / "truth.pb").header};
  prov.date = "2026-11-29";
  stamp_sources(r, prov);
  TempDir out;
  write_calibration(r, prov, out / "h200-cal.json");
  const models::HardwareProfile loaded = models::load_profile((out / "h200-cal.json").string());
  EXPECT_EQ(loaded, r.profile);
  EXPECT_EQ(loaded.name, "h200-sxm-calibrated");
  EXPECT_EQ(loaded.kernel.floor.source.rfind("calibrated: robust (Huber) least squares over ", 0), 0u)
      << loaded.kernel.floor.source;
  EXPECT_NE(loaded.kernel.floor.source.find("2026-11-29"), std::string::npos);
  EXPECT_EQ(loaded.internode.latency.source, f.base.internode.latency.source);

  std::ifstream in(out / "h200-cal.calibration.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j.at("format"), "dcpsim-calibration/1");
  EXPECT_EQ(j.at("base_profile"), "h200-sxm");
  EXPECT_TRUE(j.at("domain").at("dcp").get<std::set<int>>() == (std::set<int>{2, 4, 8}));
  EXPECT_TRUE(j.at("residuals").contains("attention"));
  EXPECT_GE(j.at("residuals").at("attention").at("sigma").get<double>(), 0.0);
  EXPECT_EQ(j.at("provenance").at("traces").size(), 1u);
  std::vector<std::filesystem::path> leftovers;
  for (const auto& e : std::filesystem::directory_iterator(out.path()))
    leftovers.push_back(e.path().filename());
  EXPECT_EQ(leftovers.size(), 2u);  // no temporary file left behind
}

TEST(Calibrate, NothingToFitIsAnInputError) {
  EXPECT_THROW(calibrate(models::load_profile("h200-sxm"), {}, {}), InputError);
}

TEST(LeastSquares, NonNegativeSolutionMatchesKnownAnswer) {
  // Unconstrained optimum (1, -1); with x >= 0 the second is held at 0 and the first re-solved: x1 = 1/2.
  Eigen::MatrixXd a(3, 2);
  a << 1, 0, 0, 1, 1, 1;
  Eigen::VectorXd b(3);
  b << 1, -1, 0;
  const Eigen::VectorXd free = a.colPivHouseholderQr().solve(b);
  EXPECT_NEAR(free(1), -1.0, 1e-12);
  const Eigen::VectorXd x = solve_nonnegative(a, b);
  EXPECT_NEAR(x(0), 0.5, 1e-12);
  EXPECT_EQ(x(1), 0.0);
}

TEST(LeastSquares, InteriorOptimumIsTheUnconstrainedOne) {
  Eigen::MatrixXd a(4, 2);
  a << 1, 1, 1, 2, 1, 3, 1, 4;
  const Eigen::VectorXd truth = (Eigen::VectorXd(2) << 0.5, 2.0).finished();
  const Eigen::VectorXd x = solve_lower_bounded(a, a * truth, Eigen::VectorXd::Constant(2, 0.25));
  EXPECT_NEAR(x(0), 0.5, 1e-12);
  EXPECT_NEAR(x(1), 2.0, 1e-12);
  const Eigen::VectorXd held = solve_lower_bounded(a, a * truth, (Eigen::VectorXd(2) << 1.0, 0.0).finished());
  EXPECT_DOUBLE_EQ(held(0), 1.0);  // the bound binds
}

TEST(LeastSquares, IndependentColumnsAndCovariance) {
  Eigen::MatrixXd a(4, 3);
  a << 1, 2, 1, 1, 2, 2, 1, 2, 3, 1, 2, 5;  // column 1 = 2 x column 0
  EXPECT_EQ(independent_columns(a, {0, 1, 2}), (std::vector<int>{0, 2}));
  EXPECT_EQ(independent_columns(a, {1, 0, 2}), (std::vector<int>{1, 2}));
  Eigen::MatrixXd full(4, 2);
  full << a.col(0), a.col(2);
  const Eigen::MatrixXd want = (full.transpose() * full).inverse();
  EXPECT_TRUE(normal_inverse(full).isApprox(want, 1e-12));
}

TEST(PhaseMap, SimulatorAndRunnerNamesMap) {
  using V = std::vector<std::string>;
  constexpr auto kSim = traces::v1::SOURCE_SIM;
  for (std::string_view p : {sim::kPhaseQueryGather, sim::kPhaseAttention, sim::kPhaseLseGather,
                             sim::kPhaseCorrection, sim::kPhaseCollective, sim::kPhaseLseCollective,
                             sim::kPhasePack, sim::kPhasePush, sim::kPhaseWait, sim::kPhaseCombine}) {
    EXPECT_EQ(map_phase(p, kSim, "t"), V{std::string(p)});
  }
  EXPECT_EQ(map_phase("A2A-Pack", traces::v1::SOURCE_HW, "t"), V{"pack"});
  EXPECT_EQ(map_phase("reduce_scatter", traces::v1::SOURCE_HW, "t"), V{"collective"});
  EXPECT_EQ(map_phase("direct_combine", traces::v1::SOURCE_HW, "t"), (V{"wait", "combine"}));
  EXPECT_EQ(map_phase("direct_combine", traces::v1::SOURCE_EMULATED, "t"), V{"combine"});
  EXPECT_EQ(map_phase("step", kSim, "t"), std::nullopt);
  try {
    map_phase("warp_drive", kSim, "x.pb#2");
    FAIL() << "an unknown phase must be an error";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("x.pb#2: phase 'warp_drive' has no simulator counterpart", 0), 0u) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos);
  }
  EXPECT_TRUE(measures_faithfully(traces::v1::SOURCE_EMULATED, "attention"));
  EXPECT_FALSE(measures_faithfully(traces::v1::SOURCE_EMULATED, "collective"));
  EXPECT_FALSE(measures_faithfully(traces::v1::SOURCE_EMULATED, V{"wait", "combine"}));
  EXPECT_TRUE(measures_faithfully(traces::v1::SOURCE_HW, "collective"));
}

TEST(FitParameters, CoordinatesRoundTrip) {
  models::HardwareProfile p = models::load_profile("h200-sxm");
  const models::HardwareProfile base = p;
  for (const FitParameter& fp : fit_parameters()) {
    const double x = fp.value(base);
    const double y = x != 0 ? x * 1.1 : fp.typical;  // a saving may be 0 (launch.pdl_saving_a2a_combine)
    fp.assign(p, y);
    EXPECT_NEAR(fp.value(p) / y, 1.0, 1e-12) << fp.name;
    fp.assign(p, x);
    EXPECT_NEAR(fp.quantity(p).value, fp.quantity(base).value, 1e-12 * std::abs(fp.quantity(base).value))
        << fp.name;
    EXPECT_LE(fp.lower_bound(base), x) << fp.name;
  }
  // a = 1/(bw x max) at its bound means max = 1.
  const FitParameter& rate = fit_parameter("kernel.hbm_efficiency_max");
  rate.assign(p, rate.lower_bound(base));
  EXPECT_NEAR(p.kernel.hbm_efficiency_max.value, 1.0, 1e-12);
}

}  // namespace
}  // namespace dcpsim::analysis

#endif  // DCPSIM_WITH_SIMGRID
