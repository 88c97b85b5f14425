// `dcpsim collectives` (nccl-tests' words), calibrate --comm-tables (a closed loop on tables made by the
// model itself), and trace-driven validation (validate --kernels measured) on simulated traces.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "calibration_test_support.h"
#include "dcpsim/analysis/calibrate_comm.h"
#include "dcpsim/analysis/collectives.h"
#include "dcpsim/analysis/validate.h"
#include "dcpsim/error.h"
#include "dcpsim/models/cost.h"

namespace dcpsim::analysis {
namespace {

using models::Collective;

TEST(Collectives, RowsSpeakNcclTestsWords) {
  const models::HardwareProfile p = models::load_profile("h200-sxm");
  CollectivesRequest req;
  req.ops = {Collective::kAllGather, Collective::kAllReduce, Collective::kSendRecv};
  req.gpus = {2, 8};
  req.sizes = {1000, 1 << 20};
  const std::vector<CollectiveRow> rows = predict_collectives(p, req);
  ASSERT_EQ(rows.size(), 12u);
  for (const CollectiveRow& r : rows) {
    EXPECT_NEAR(r.algbw_Bps, r.size_bytes / r.time_s, 1e-9 * r.algbw_Bps);
    const double factor = r.op == Collective::kAllReduce  ? 2.0 * (r.gpus - 1) / r.gpus
                          : r.op == Collective::kSendRecv ? 1.0
                                                          : (r.gpus - 1.0) / r.gpus;
    EXPECT_NEAR(r.busbw_Bps, factor * r.algbw_Bps, 1e-9 * r.busbw_Bps);
  }
  // 1000 B of half on 8 ranks is not whole elements per rank: nccl-tests rounds down to 8 x 2 x 62 = 992.
  EXPECT_EQ(rows[2].size_bytes, 992);
  // The all-gather sizes the borrowed H100 table measured are priced from it; send-recv it never measured.
  EXPECT_EQ(rows[3].source, models::FigureSource::kTable);
  EXPECT_NE(rows.back().source, models::FigureSource::kTable);
  const std::string csv = collectives_csv(rows);
  EXPECT_THAT(csv,
              ::testing::StartsWith("op,gpus,size_bytes,time_us,algbw_gbs,busbw_gbs,algorithm,protocol,"));
  EXPECT_THAT(collectives_text(rows, ""), ::testing::HasSubstr("from NCCL's tuning model (extrapolated"));
}

TEST(Collectives, AProfileMatchesTheTableItCarriesAndMissesAnother) {
  const models::HardwareProfile p = models::load_profile("h100-sxm");
  CollectivesRequest req;
  req.call.dtype = "half";
  const auto same = compare_collectives(p, p.comm_tables[0], req);
  ASSERT_GT(same.size(), 200u);
  // Exact at every measured point, up to SimGrid's clock (events within 10 ps are one: a few 1e-6 of a
  // 10 us collective) and how the simulator realises a large all-to-all of more than two ranks (its flows
  // bundled through the NVSwitch: 1.3e-4 of the price at 128 MiB on 4 GPUs).
  for (const CollectiveComparison& c : same) {
    EXPECT_NEAR(c.relative_error, 0.0, c.op == Collective::kAllToAll && c.gpus > 2 ? 5e-4 : 1e-5)
        << models::to_string(c.op) << " " << c.gpus << " gpus " << c.size_bytes << " B";
  }
  models::HardwareProfile bare = p;
  bare.comm_tables.clear();
  const auto model = summarise(compare_collectives(bare, p.comm_tables[0], req));
  EXPECT_EQ(model.back().key, "all");
  EXPECT_GT(model.back().median, 0.005);
  EXPECT_THROW(dtype_bytes("halfs"), InputError);
}

// Tables made from a "truth" profile's own model: calibrate --comm-tables must recover its numbers.
TEST(CalibrateComm, RecoversTheNumbersATableWasMadeWith) {
  models::HardwareProfile base = testing::base_profile();
  models::HardwareProfile truth = base;
  truth.nccl.ring[0].base_latency.value *= 1.3;
  truth.nccl.ring[0].nvlink_hop_latency.value *= 1.5;
  truth.nvlink.measured_bandwidth.value *= 0.85;
  truth.nccl.p2p_base_latency.value *= 1.2;
  models::CommTables t;
  t.provenance.device = truth.gpu.name;
  for (Collective c :
       {Collective::kAllGather, Collective::kReduceScatter, Collective::kAllReduce, Collective::kAllToAll}) {
    models::CommTable tab;
    tab.op = c;
    tab.dtype = "half";
    for (int gpus : {2, 4, 8}) {
      for (double size = 1024; size <= 256 << 20; size *= 4) {
        const double us =
            models::price_collective(truth, c, gpus, models::bytes_per_rank_of_size(c, gpus, size)).time_s *
            1e6;
        tab.points.push_back({gpus, 1, size, us, us, us, 1});
      }
    }
    t.tables.push_back(tab);
  }
  CalibrateOptions o;
  o.fixed = {"nccl.protocol_efficiency.ll", "nccl.protocol_efficiency.ll128"};
  const CalibrationResult r = calibrate_comm(base, {t}, {}, o);
  EXPECT_LT(r.residuals.back().max, 1e-4);
  for (const char* name : {"nccl.ring.ll.base_latency", "nccl.ring.ll.nvlink_hop_latency",
                           "nvlink.measured_bandwidth", "nccl.p2p.base_latency"}) {
    const FitParameter& f = fit_parameter(name);
    EXPECT_NEAR(f.quantity(r.profile).si() / f.quantity(truth).si(), 1.0, 0.01) << name;
  }
  // The kernel numbers are no part of a table fit.
  EXPECT_EQ(r.profile.kernel, base.kernel);
  EXPECT_THROW(calibrate_comm(base, {models::CommTables{}}, {}, o), InputError);
}

// Kernels priced from the trace itself: a profile whose kernel numbers are far off still reproduces the
// communication and the steps of traces its communication numbers made. The one-kernel direct merge is the
// exception the trace cannot lift: its pushes, wait and combine are one kernel, so the combine inside it is
// still the profile's, and exactly that difference remains.
TEST(TraceDriven, MeasuredKernelsIsolateTheDistributedHalf) {
  testing::TempDir dir;
  const std::filesystem::path trace = dir / "truth.pb";
  const models::HardwareProfile truth = testing::base_profile();
  std::vector<models::Scenario> grid;
  for (models::Strategy s : {models::Strategy::kAgRs, models::Strategy::kA2a, models::Strategy::kDirect}) {
    grid.push_back(testing::make_scenario(4, 64, 1, 512, 576, 8, 8192, s, models::LaunchMode::kGraph));
  }
  testing::write_sim_trace(trace, truth, grid);
  models::HardwareProfile wrong = truth;
  wrong.kernel.floor.value *= 3;
  wrong.attention.floor.value *= 3;
  wrong.attention.cta_overhead.value *= 2;
  const auto sections = all_sections({load_measured(trace)});
  ValidateOptions o;
  o.measured_kernels = true;
  const ValidationReport measured = validate(wrong, std::nullopt, sections, o);
  const double combine_off = models::direct_combine_time(wrong, models::merge_shape(grid[2])) -
                             models::direct_combine_time(truth, models::merge_shape(grid[2]));
  ASSERT_GT(combine_off, 1e-7);
  int direct = 0;
  for (const Comparison& c : measured.comparisons) {
    const Observation& ob = c.observation;
    const double off = c.predicted_s - ob.measured_s;
    // Traces store times to the nanosecond.
    if (sections[ob.section].scenario.strategy != models::Strategy::kDirect) {
      EXPECT_NEAR(off, 0.0, 1.5e-9) << figure_of(ob) << " rank " << ob.rank;
    } else if (ob.kind == ObservationKind::kStep || ob.kind == ObservationKind::kRowOutput ||
               ob.phase == "push+wait+combine") {
      EXPECT_NEAR(off, combine_off, 1.5e-9) << figure_of(ob) << " rank " << ob.rank;
      ++direct;
    } else {
      EXPECT_NEAR(off, 0.0, 1.5e-9) << figure_of(ob) << " rank " << ob.rank;
    }
  }
  EXPECT_GT(direct, 0);
  EXPECT_THAT(measured.excluded, ::testing::Contains(::testing::HasSubstr("kernels measured")));
  o.measured_kernels = false;
  EXPECT_GT(validate(wrong, std::nullopt, sections, o).median_error, 0.05);
}

}  // namespace
}  // namespace dcpsim::analysis
