// The nccl-tests reader on real logs (tests/data/nccl-tests, sources in tests/data/README.md): launcher
// prefixes, old and new layouts, cut and failed runs; its -J JSON and -I columns; CSV tables; several files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "dcpsim/error.h"
#include "dcpsim/models/nccl_tests.h"

namespace dcpsim::models {
namespace {

std::filesystem::path data(const std::string& name) {
  return std::filesystem::path(DCPSIM_SOURCE_DIR) / "tests" / "data" / "nccl-tests" / name;
}

std::string read(const std::string& name) {
  std::ifstream in(data(name), std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

NcclTestsImport parse(const std::string& text, const std::string& name, NcclTestsOptions o = {}) {
  NcclTestsImport out;
  parse_nccl_tests(text, name, o, out);
  return out;
}

const CommPoint* point(const CommTables& t, bool in_place, int gpus, double size) {
  for (const CommTable& tab : t.tables) {
    if (tab.in_place != in_place) continue;
    for (const CommPoint& p : tab.points)
      if (p.gpus == gpus && p.size_bytes == size) return &p;
  }
  return nullptr;
}

std::string error_of(const std::string& text, const std::string& name, NcclTestsOptions o = {}) {
  try {
    (void)parse(text, name, o);
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    return e.what();
  }
  return "";
}

TEST(NcclTests, MpiLogWithDevicesOnTwoHosts) {
  const NcclTestsImport r = import_nccl_tests({data("b200-gke-a4-2node-mpi16-allgather.log")}, {});
  ASSERT_EQ(r.runs.size(), 1u);
  EXPECT_EQ(r.runs[0].op, Collective::kAllGather);  // from the file name: this nccl-tests prints no op
  EXPECT_EQ(r.runs[0].gpus, 16);
  EXPECT_EQ(r.runs[0].nodes, 2);
  EXPECT_EQ(r.tables.provenance.device, "NVIDIA B200");
  // Out-of-place and in-place become two tables; the first row is exact.
  ASSERT_EQ(r.tables.tables.size(), 2u);
  EXPECT_FALSE(r.tables.tables[0].in_place);
  EXPECT_TRUE(r.tables.tables[1].in_place);
  EXPECT_EQ(r.tables.tables[0].dtype, "float");
}

TEST(NcclTests, LauncherPrefixesAreStripped) {
  // srun --label ("0: ") and mpirun --tag-output ("[1,0]<stdout>:"), device lists cut by the docs page.
  NcclTestsOptions o;
  o.gpus = 16;
  const NcclTestsImport srun = import_nccl_tests({data("a100-p4de-2node-srun-label-allreduce.log")}, o);
  EXPECT_EQ(srun.runs[0].op, Collective::kAllReduce);
  const CommPoint* p = point(srun.tables, false, 16, 8);
  ASSERT_NE(p, nullptr);
  EXPECT_DOUBLE_EQ(p->time_us, 164.3);
  EXPECT_DOUBLE_EQ(point(srun.tables, true, 16, 8)->time_us, 163.3);
  const NcclTestsImport tag = import_nccl_tests({data("h100-p5-awsbatch-mpi-tagoutput-allreduce.log")}, o);
  EXPECT_DOUBLE_EQ(point(tag.tables, false, 16, 8)->time_us, 12.90);
  EXPECT_DOUBLE_EQ(point(tag.tables, true, 16, 32)->time_us, 13.34);
  // Without --gpus such a log cannot say its group: one line asking for it.
  EXPECT_THAT(error_of(read("a100-p4de-2node-srun-label-allreduce.log"), "srun_allreduce.log"),
              ::testing::AllOf(::testing::HasSubstr("srun_allreduce.log:"), ::testing::HasSubstr("--gpus")));
}

TEST(NcclTests, NewLayoutWithVersionAndAHeadCutDeviceList) {
  const NcclTestsImport r = import_nccl_tests({data("gb200-nvl72-32node-128rank-allreduce-headcut.log")}, {});
  ASSERT_EQ(r.runs.size(), 1u);
  EXPECT_EQ(r.runs[0].gpus, 128);  // the list starts at rank 127
  EXPECT_EQ(r.runs[0].op, Collective::kAllReduce);
  EXPECT_EQ(r.tables.provenance.nccl, "2.29.2");
  EXPECT_EQ(r.tables.provenance.device, "NVIDIA GB200");
}

TEST(NcclTests, OldLayoutWithAnErrorColumnAndNcclInfoLines) {
  const NcclTestsImport r = import_nccl_tests({data("k80-azureml-mpi4-allreduce-ncclinfo-errorcol.log")}, {});
  ASSERT_EQ(r.runs.size(), 1u);
  EXPECT_EQ(r.runs[0].gpus, 4);
  EXPECT_EQ(r.tables.provenance.device, "Tesla K80");
  EXPECT_GT(r.runs[0].rows, 3);
}

TEST(NcclTests, HeadersWithoutHashesAndAVersionLine) {
  NcclTestsOptions o;
  o.gpus = 16;
  const NcclTestsImport r =
      import_nccl_tests({data("b200-lambda-2node-mpi16-allreduce-hashstripped.log")}, o);
  EXPECT_EQ(r.runs[0].op, Collective::kAllReduce);  // "Collective test starting: all_reduce_perf"
  EXPECT_EQ(r.tables.provenance.nccl, "2.26.2");
}

TEST(NcclTests, CutAndFailedRunsAreOneLineErrorsNamingTheLine) {
  // Stopped after the column header (a hung run).
  EXPECT_THAT(error_of(read("b200-gke-2pod-4gpu-allgather-header-only.log"), "hung.log"),
              ::testing::MatchesRegex("hung\\.log:[0-9]+: .*no result row.*"));
  // A row cut in the middle (the file truncated while being written).
  const std::string full = read("b200-gke-a4-2node-mpi16-allgather.log");
  const std::size_t row = full.find("       65536");
  const std::string cut = full.substr(0, full.find('\n', row) - 30);
  EXPECT_THAT(error_of(cut, "cut_allgather.log"),
              ::testing::MatchesRegex("cut_allgather\\.log:[0-9]+: truncated result row.*"));
  // A malformed number: the first row's out-of-place time.
  const std::size_t r0 = full.find('\n', full.find("(elements)")) + 1;
  std::istringstream fields(full.substr(r0, full.find('\n', r0) - r0));
  std::string edited, word;
  for (int i = 0; fields >> word; ++i) edited += " " + (i == 5 ? std::string("12.3.4") : word);
  const std::string bad = full.substr(0, r0) + edited + full.substr(full.find('\n', r0));
  EXPECT_THAT(error_of(bad, "bad_allgather.log"),
              ::testing::MatchesRegex(
                  "bad_allgather\\.log:[0-9]+: malformed result row: '12\\.3\\.4' under 'time'.*"));
  // A run that failed after its device list.
  const std::string failed =
      "# nThread 1 nGpus 8 minBytes 8 maxBytes 128 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 "
      "validation: 1 graph: 0\n#\n# Using devices\ntest: Test CUDA failure common.cu:941 'system not yet "
      "initialized'\n";
  EXPECT_THAT(error_of(failed, "f.log"), ::testing::StartsWith("f.log:4: the run failed"));
  EXPECT_THAT(error_of("hello\n", "x.log"),
              ::testing::IsEmpty());  // parses to nothing; the importer refuses:
  std::ofstream("nccl_empty_test.log") << "hello\n";
  EXPECT_THROW(import_nccl_tests({"nccl_empty_test.log"}, {}), InputError);
  std::filesystem::remove("nccl_empty_test.log");
}

TEST(NcclTests, ElidedLogsKeepTheRowsTheyShow) {
  const NcclTestsImport r = import_nccl_tests({data("b200-gke-1pod-2gpu-allgather-elided.log")}, {});
  EXPECT_EQ(r.runs[0].gpus, 2);
  EXPECT_EQ(r.tables.provenance.nccl, "2.26.6");
  EXPECT_THAT(r.notes, ::testing::Contains(::testing::HasSubstr("no trailer")));
}

// nccl-tests 2.19's -I (per-iteration columns), its -C cputime and the op named by the header line; made
// from the layout its source prints (no public log has them yet).
TEST(NcclTests, PerIterationColumnsAndCpuTime) {
  const std::string log =
      "# nccl-tests version 2.19.6 nccl-headers=22803 nccl-library=22803\n"
      "# Collective test starting: reduce_scatter_perf\n"
      "# nThread 1 nGpus 2 minBytes 1024 maxBytes 2048 step: 2(factor) warmup iters: 5 iters: 20 agg iters: "
      "1 "
      "validation: 1 graph: 1 unalign: 0\n"
      "# Per-Iteration Report: CUDA event timing; i_* uses max over process rows \n#\n# Using devices\n"
      "#  Rank  0 Group  0 Pid   1000 on host device  0 [0000:18:00] NVIDIA H100 80GB HBM3\n"
      "#  Rank  1 Group  0 Pid   1000 on host device  1 [0000:2a:00] NVIDIA H100 80GB HBM3\n#\n"
      "#       size         count      type   redop    root  cputime   algbw   busbw  #wrong    i_min    "
      "i_max"
      "    i_p99    i_cv%  cputime   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%\n"
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)     "
      "(us)"
      "     (us)      (%)     (us)  (GB/s)  (GB/s)             (us)     (us)     (us)      (%)\n"
      "        1024           512      half     sum      -1     6.10    0.17    0.08       0     5.90     "
      "7.10"
      "     7.00     3.10     6.00    0.17    0.09       0     5.80     6.90     6.80     2.90\n"
      "        2048          1024      half     sum      -1     6.20    0.33    0.17       0     6.00     "
      "7.20"
      "     7.10     3.00     6.15    0.33    0.17       0     5.90     7.00     6.90     2.80\n"
      "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0.12 \n#\n"
      "# Collective test concluded: reduce_scatter_perf\n";
  const NcclTestsImport r = parse(log, "perit.log");
  ASSERT_EQ(r.runs.size(), 1u);
  EXPECT_EQ(r.runs[0].op, Collective::kReduceScatter);
  EXPECT_TRUE(r.runs[0].graph);
  EXPECT_EQ(r.tables.provenance.nccl, "2.28.3");
  EXPECT_DOUBLE_EQ(point(r.tables, false, 2, 2048)->time_us, 6.20);
  EXPECT_DOUBLE_EQ(point(r.tables, true, 2, 1024)->time_us, 6.00);
  EXPECT_THAT(r.notes, ::testing::Contains(::testing::HasSubstr("CPU times")));
}

TEST(NcclTests, JsonOutput) {
  const std::string json = R"({"version": 3, "start_time": "2026-12-06 10:00:00",
    "args": ["/opt/nccl-tests/build/all_gather_perf", "-b", "1K", "-e", "2K", "-J", "out.json"],
    "env": ["NCCL_PROTO=Simple", "HOME=/root"], "nccl_version": 22703,
    "config": {"nthreads": 1, "ngpus": 8, "graph": 0, "per_iter_timing": "false"},
    "devices": [{"rank": 0, "group": 0, "pid": 1, "hostname": "h", "device": 0, "device_hex": "0000:18:00",
                 "device_info": "NVIDIA H100 80GB HBM3"},
                {"rank": 7, "group": 0, "pid": 1, "hostname": "h", "device": 7, "device_hex": "0000:db:00",
                 "device_info": "NVIDIA H100 80GB HBM3"}],
    "results": [
      {"size": 1024, "count": 32, "type": "half", "redop": "none", "root": "    -1",
       "out_of_place": {"time": 10.5, "alg_bw": 0.1, "bus_bw": 0.09, "nwrong": null},
       "in_place": {"time": 10.25, "alg_bw": 0.1, "bus_bw": 0.09, "nwrong": null}},
      {"size": 2048, "count": 64, "type": "half", "redop": "none", "root": "    -1",
       "out_of_place": {"time": "nan", "alg_bw": 0.2, "bus_bw": 0.18, "nwrong": 0}, "in_place": null}]})";
  EXPECT_THAT(error_of(json, "out.json"), ::testing::HasSubstr("out.json: results[1].out_of_place.time"));
  std::string ok = json;
  ok.replace(ok.find("\"nan\""), 5, "11.0");
  const NcclTestsImport r = parse(ok, "out.json");
  ASSERT_EQ(r.runs.size(), 1u);
  EXPECT_EQ(r.runs[0].op, Collective::kAllGather);
  EXPECT_EQ(r.runs[0].gpus, 8);
  EXPECT_EQ(r.tables.provenance.nccl, "2.27.3");
  // NCCL_PROTO from the recorded environment: a forced-protocol table.
  EXPECT_EQ(r.tables.tables[0].protocol, "simple");
  EXPECT_DOUBLE_EQ(point(r.tables, false, 8, 2048)->time_us, 11.0);
  EXPECT_EQ(point(r.tables, true, 8, 2048), nullptr);
}

TEST(NcclTests, CsvTablesWithFilters) {
  const std::string csv =
      "# source: a test\n"
      "op,gpus,device_string,nccl,dtype,size_bytes,time_us,inplace,graph\n"
      "all_gather,2,NVIDIA H100 80GB HBM3,2.27.3,half,4096,6.0,0,0\n"
      "all_gather,2,NVIDIA H100 80GB HBM3,2.27.3,half,4096,7.0,0,0\n"
      "all_gather,2,NVIDIA H100 80GB HBM3,2.27.3,half,4096,8.0,0,0\n"
      "alltoall,8,NVIDIA H100 80GB HBM3,2.23,half,4096,9.0,0,0\n";
  NcclTestsOptions o;
  o.where = {{"nccl", {"2.27.3"}}};
  NcclTestsImport r = parse(csv, "t.csv", o);
  for (CommTable& t : r.tables.tables) merge_comm_points(t);
  ASSERT_EQ(r.tables.tables.size(), 1u);  // the 2.23 row filtered out
  EXPECT_EQ(r.tables.tables[0].points.size(), 1u);
  EXPECT_DOUBLE_EQ(r.tables.tables[0].points[0].time_us, 7.0);  // the median of three repetitions
  EXPECT_EQ(r.tables.tables[0].points[0].samples, 3);
  EXPECT_EQ(r.source_comment, "source: a test");
  EXPECT_THAT(error_of("op,gpus,size_bytes\nall_gather,2,1\n", "x.csv"), ::testing::HasSubstr("time_us"));
  EXPECT_THAT(error_of(csv + "all_gather,2,x\n", "y.csv"), ::testing::StartsWith("y.csv:7:"));
}

TEST(NcclTests, VersionCodesAndNames) {
  EXPECT_EQ(nccl_version_text(22703), "2.27.3");
  EXPECT_EQ(nccl_version_text(21903), "2.19.3");
  EXPECT_EQ(nccl_version_text(2708), "2.7.8");
  NcclTestsOptions o;
  o.op = Collective::kAllToAll;  // --op for a log that does not say
  const std::string log =
      "# nThread 1 nGpus 2 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 validation: 1\n"
      "#       size         count      type   redop     time   algbw   busbw  error     time   algbw   busbw "
      " "
      "error\n"
      "           8             2     float     sum    12.00    0.00    0.00  0e+00    11.00    0.00    0.00 "
      " "
      "0e+00\n";
  EXPECT_THAT(error_of(log, "run.log"), ::testing::HasSubstr("--op"));
  EXPECT_EQ(parse(log, "run.log", o).runs[0].op, Collective::kAllToAll);
  EXPECT_EQ(parse(log, "all_gather_perf.log").runs[0].op, Collective::kAllGather);
}

}  // namespace
}  // namespace dcpsim::models
