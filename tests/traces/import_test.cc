// Importers of measured timelines (Kineto/Chrome JSON, Nsight Systems SQLite) on real third-party traces
// (tests/data/README.md gives their origin), and their refusal of bad input.
#include <unistd.h>
#include <zlib.h>
#if __has_include(<sqlite3.h>)
#include <sqlite3.h>
#endif

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "dcpsim/error.h"
#include "dcpsim/traces/import_io.h"
#include "dcpsim/traces/import_kineto.h"
#include "dcpsim/traces/import_nsys.h"
#include "dcpsim/traces/protobuf_writer.h"
#include "dcpsim/traces/trace_collector.h"

namespace dcpsim::traces {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

fs::path data(const std::string& name) {
  return fs::path(DCPSIM_SOURCE_DIR) / "tests" / "data" / name;
}

class ImportScratchDir {
 public:
  ImportScratchDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("dcpsim_import_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  ~ImportScratchDir() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  fs::path file(const std::string& name, const std::string& content) const {
    std::ofstream(dir_ / name, std::ios::binary) << content;
    return dir_ / name;
  }
  fs::path operator/(const std::string& name) const { return dir_ / name; }

 private:
  fs::path dir_;
};

std::string gunzip(const fs::path& path) {
  InputFile in(path);
  std::string bytes((std::istreambuf_iterator<char>(in.stream())), std::istreambuf_iterator<char>());
  in.check();
  return bytes;
}

ImportOptions options_for(int dcp) {
  ImportOptions o;
  v1::Scenario& s = o.scenario;
  s.set_dcp(dcp);
  s.set_heads(128);
  s.set_kv_heads(1);
  s.set_head_dim(512);
  s.set_qk_dim(576);
  s.set_interleave(1);
  s.set_kv_dtype(v1::DTYPE_BF16);
  s.set_out_dtype(v1::DTYPE_BF16);
  s.set_lse_base(v1::LSE_BASE_E);
  s.set_strategy(v1::STRATEGY_AG_RS);
  s.set_launch_mode(v1::LAUNCH_MODE_GRAPH);
  o.argv = {"import_test"};
  return o;
}

const v1::Event* find_event(const TraceSection& section, const std::string& name) {
  for (const auto& e : section.events) {
    if (e.name() == name) return &e;
  }
  return nullptr;
}

std::map<v1::EventKind, int> kinds(const TraceSection& section) {
  std::map<v1::EventKind, int> n;
  for (const auto& e : section.events) ++n[e.kind()];
  return n;
}

TEST(KinetoImport, SimpleAddGpuActivitiesCountsTimesAndDevice) {
  TraceCollector sink;
  const ImportStats stats = import_kineto(data("kineto_simple_add.json.gz"), sink, options_for(1));
  EXPECT_EQ(stats.rank, 0);
  EXPECT_EQ(stats.kernels, 79);
  EXPECT_EQ(stats.collectives, 0);
  EXPECT_EQ(stats.copies, 16);
  EXPECT_EQ(stats.memsets, 3);
  EXPECT_EQ(stats.cpu_events, 0);
  EXPECT_EQ(stats.flows, 0);  // the launch end of every flow is a CPU event, not imported here
  // Time 0 is the earliest GPU activity, the first host-to-device copy at 1694039994071305 µs.
  EXPECT_EQ(stats.time_origin_ns, 1694039994071305000LL);

  const Trace& trace = sink.trace();
  ASSERT_TRUE(trace.header.has_value());
  EXPECT_EQ(trace.header->source(), v1::SOURCE_HW);
  EXPECT_EQ(trace.header->time_origin_ns(), stats.time_origin_ns);
  ASSERT_EQ(trace.header->devices_size(), 1);
  EXPECT_EQ(trace.header->devices(0).name(), "NVIDIA A100-PG509-200");
  EXPECT_EQ(trace.header->devices(0).compute_capability_major(), 8);
  ASSERT_EQ(trace.sections.size(), 1u);
  const TraceSection& s = trace.sections[0];
  EXPECT_EQ(s.events.size(), 98u);
  EXPECT_EQ(s.events.front().start_ns(), 0);
  EXPECT_EQ(s.events.front().kind(), v1::EVENT_KIND_COPY);
  EXPECT_EQ(s.events.front().bytes(), 92928);
  EXPECT_EQ(s.events.front().name(), "Memcpy HtoD (Pageable -> Device)");
  EXPECT_EQ(s.events.front().lane(), "stream7");

  const v1::Event* conv = find_event(s, "cudnn_ampere_scudnn_128x64_relu_xregs_large_nn_v1");
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(conv->kind(), v1::EVENT_KIND_KERNEL);
  EXPECT_EQ(conv->start_ns(), (1694040009743590LL - 1694039994071305LL) * 1000);
  EXPECT_EQ(conv->end_ns() - conv->start_ns(), 1035000);
  EXPECT_EQ(conv->args().at("correlation"), "5112");
  EXPECT_EQ(conv->args().at("kineto_cat"), "kernel");
  for (std::size_t i = 1; i < s.events.size(); ++i) {
    ASSERT_LE(s.events[i - 1].start_ns(), s.events[i].start_ns()) << "events are sorted by start";
  }
}

TEST(KinetoImport, CpuOpsBringLaunchFlowsThatMatchCorrelationIds) {
  ImportOptions o = options_for(1);
  o.cpu_ops = true;
  TraceCollector sink;
  const ImportStats stats = import_kineto(data("kineto_simple_add.json.gz"), sink, o);
  EXPECT_EQ(stats.kernels, 79);
  EXPECT_EQ(stats.cpu_events, 731);  // 359 cpu_op + 331 cuda_runtime + 41 cuda_sync
  EXPECT_EQ(stats.ranges, 8);        // user_annotation
  EXPECT_EQ(stats.flows, 139);
  // The earliest event is now a CPU annotation, 25.1 s before the first GPU copy.
  EXPECT_EQ(stats.time_origin_ns, 1694039968955744000LL);

  const TraceSection& s = sink.trace().sections.at(0);
  std::map<std::uint64_t, const v1::Event*> by_id;
  for (const auto& e : s.events) {
    if (e.has_id()) by_id[e.id()] = &e;
  }
  ASSERT_EQ(s.flows.size(), 139u);
  for (const auto& f : s.flows) {
    const v1::Event* from = by_id.at(f.from_event());
    const v1::Event* to = by_id.at(f.to_event());
    EXPECT_EQ(from->kind(), v1::EVENT_KIND_LAUNCH);
    EXPECT_EQ(from->args().at("correlation"), to->args().at("correlation"))
        << from->name() << " -> " << to->name();
    EXPECT_EQ(f.name(), "ac2g");
  }
}

TEST(KinetoImport, NcclKernelsBecomeCollectivesWithSizesAndExactTimes) {
  TraceCollector sink;
  const ImportStats stats = import_kineto(data("kineto_nccl_2rank.gpu_only.json.gz"), sink, options_for(2));
  EXPECT_EQ(stats.rank, 0);
  EXPECT_EQ(stats.collectives, 21);
  EXPECT_EQ(stats.kernels, 2700 - 21);
  EXPECT_EQ(stats.copies, 960);
  EXPECT_EQ(stats.memsets, 114);
  // baseTimeNanoseconds + the earliest ts, 4458676422880.181 µs, converted without rounding.
  EXPECT_EQ(stats.time_origin_ns, 1711964646000000000LL + 4458676422880181LL);
  const Trace& trace = sink.trace();
  EXPECT_EQ(trace.header->nccl_version(), "2.17.1");

  int allreduce = 0;
  int broadcast = 0;
  const v1::Event* first = nullptr;
  for (const auto& e : trace.sections.at(0).events) {
    if (e.kind() != v1::EVENT_KIND_COLLECTIVE) continue;
    if (first == nullptr) first = &e;
    EXPECT_EQ(e.args().at("group_size"), "2");
    allreduce += e.args().at("collective") == "allreduce";
    broadcast += e.args().at("collective") == "broadcast";
  }
  EXPECT_EQ(allreduce, 15);
  EXPECT_EQ(broadcast, 6);
  ASSERT_NE(first, nullptr);
  // The first: a broadcast of 53120 Float elements at 4458676423385.774 µs lasting 30.975 µs.
  EXPECT_EQ(first->args().at("collective"), "broadcast");
  EXPECT_EQ(first->args().at("in_nelems"), "53120");
  EXPECT_EQ(first->args().at("dtype"), "Float");
  EXPECT_EQ(first->bytes(), 53120 * 4);
  EXPECT_EQ(first->start_ns(), 4458676423385774LL - 4458676422880181LL);
  EXPECT_EQ(first->end_ns() - first->start_ns(), 30975);
  // Every Kineto arg travels along as text, floats exactly as written.
  EXPECT_EQ(first->args().at("Process Group Ranks"), "[0, 1]");
}

TEST(KinetoImport, RankComesFromOptionsWhenGivenAndMustFitTheGroup) {
  ImportOptions o = options_for(2);
  o.rank = 1;
  TraceCollector sink;
  EXPECT_EQ(import_kineto(data("kineto_nccl_2rank.gpu_only.json.gz"), sink, o).rank, 1);
  for (const auto& e : sink.trace().sections.at(0).events) ASSERT_EQ(e.rank(), 1);

  o.rank = 2;
  TraceCollector other;
  try {
    import_kineto(data("kineto_nccl_2rank.gpu_only.json.gz"), other, o);
    FAIL() << "rank 2 of a group of 2 was accepted";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("rank 2 is outside the DCP group [0, 2)"));
  }
}

TEST(KinetoImport, WritesAValidProtobufTraceThatReadsBack) {
  ImportScratchDir dir;
  {
    ProtobufTraceWriter writer(dir / "simple_add.pb");
    import_kineto(data("kineto_simple_add.json.gz"), writer, options_for(1));
  }
  const Trace back = read_trace(dir / "simple_add.pb");
  ASSERT_EQ(back.sections.size(), 1u);
  EXPECT_EQ(back.sections[0].events.size(), 98u);
  EXPECT_EQ(back.header->notes().at("import_format"), "kineto");
}

TEST(KinetoImport, ConvertsMicrosecondTextToNanosecondsExactly) {
  ImportScratchDir dir;
  // 1.0005 µs is 1000.5 ns: rounded half away from zero. 1e3 µs and 2.5E-1 µs use exponents.
  const auto path = dir.file("t.json", R"({"traceEvents": [
      {"ph": "X", "cat": "kernel", "name": "a", "pid": 0, "tid": 7, "ts": 10, "dur": 1.0005},
      {"ph": "X", "cat": "kernel", "name": "b", "pid": 0, "tid": 7, "ts": 1e3, "dur": 2.5E-1},
      {"ph": "X", "cat": "kernel", "name": "c", "pid": 0, "tid": 7, "ts": 12345678901234.567, "dur": 0}]})");
  TraceCollector sink;
  const ImportStats stats = import_kineto(path, sink, options_for(1));
  const auto& ev = sink.trace().sections.at(0).events;
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(stats.time_origin_ns, 10000);
  EXPECT_EQ(ev[0].end_ns(), 1001);
  EXPECT_EQ(ev[1].start_ns(), 1000000 - 10000);
  EXPECT_EQ(ev[1].end_ns() - ev[1].start_ns(), 250);
  EXPECT_EQ(ev[2].start_ns(), 12345678901234567LL - 10000);
}

void expect_input_error(const fs::path& path, const std::string& needle) {
  TraceCollector sink;
  try {
    import_kineto(path, sink, options_for(1));
    FAIL() << "accepted " << path;
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr(path.filename().string()));
    EXPECT_THAT(e.what(), HasSubstr(needle));
  }
}

TEST(KinetoImport, RejectsMissingCorruptAndMalformedFiles) {
  ImportScratchDir dir;
  expect_input_error(dir / "absent.json", "does not exist");
  const std::string gz = [] {
    std::ifstream in(data("kineto_simple_add.json.gz"), std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }();
  expect_input_error(dir.file("cut.json.gz", gz.substr(0, gz.size() / 2)), "truncated gzip");
  expect_input_error(dir.file("broken.json", R"({"traceEvents": [{"ph": "X", "ts": )"), "malformed JSON");
  expect_input_error(dir.file("none.json", R"({"schemaVersion": 1})"), "no \"traceEvents\" array");
  expect_input_error(dir.file("empty.json", ""), "malformed JSON");
  expect_input_error(dir.file("deep.json", R"({"traceEvents": [{"ph": "X"}, {"args": {"a": [1, 2, tru]}}]})"),
                     "(at traceEvents[1].args.a[2])");
  expect_input_error(
      dir.file("ts.json", R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": "x"}]})"),
      "ts is 'x'; a number is needed");
  expect_input_error(
      dir.file("cpu_only.json", R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "k", "ts": 1}]})"),
      "holds no activity");
}

TEST(KinetoImport, RejectsAScenarioTheSchemaWouldRefuse) {
  ImportOptions o = options_for(1);
  o.scenario.set_lse_base(v1::LSE_BASE_UNSPECIFIED);
  TraceCollector sink;
  EXPECT_THROW(import_kineto(data("kineto_simple_add.json.gz"), sink, o), InputError);
}

class NsysImport : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!nsys_import_available()) GTEST_SKIP() << "built without SQLite3";
  }
};

TEST_F(NsysImport, SaxpyKernelsCopiesAndNvtxRanges) {
  // The importer reads a plain SQLite file; the copy in tests/data is gzip, so unpack it first.
  ImportScratchDir dir;
  const fs::path db = dir.file("saxpy.sqlite", gunzip(data("nsys_saxpy.reduced.sqlite.gz")));
  TraceCollector sink;
  const ImportStats stats = import_nsys(db, sink, options_for(1));
  EXPECT_EQ(stats.kernels, 5);
  EXPECT_EQ(stats.collectives, 0);
  EXPECT_EQ(stats.copies, 15);
  EXPECT_EQ(stats.memsets, 0);
  EXPECT_EQ(stats.ranges, 22);  // NVTX push/pop ranges (MPI calls, "saxpy")
  EXPECT_EQ(stats.cpu_events, 0);
  // Time 0 is the earliest range (MPI_Init at 65117824 ns into the session, which began at utcEpochNs).
  EXPECT_EQ(stats.time_origin_ns, 1687813257637297504LL + 65117824LL);

  const Trace& trace = sink.trace();
  ASSERT_EQ(trace.header->devices_size(), 1);
  EXPECT_EQ(trace.header->devices(0).name(), "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(trace.header->devices(0).uuid(), "74e128b2-90b6-b409-07c8-33bee5ff6f88");
  EXPECT_EQ(trace.header->devices(0).sm_count(), 108);
  EXPECT_EQ(trace.header->notes().at("nsys_PRODUCT_VERSION"), "2022.2.1.31");

  std::vector<const v1::Event*> kernels;
  std::int64_t copied = 0;
  for (const auto& e : trace.sections.at(0).events) {
    if (e.kind() == v1::EVENT_KIND_KERNEL) kernels.push_back(&e);
    if (e.kind() == v1::EVENT_KIND_COPY) copied += e.bytes();
  }
  EXPECT_EQ(copied, 3932160000LL);
  ASSERT_EQ(kernels.size(), 5u);
  const v1::Event& k = *kernels.front();
  EXPECT_EQ(k.name(), "saxpy(double *, double *, double *, double, int)");
  EXPECT_EQ(k.args().at("short_name"), "saxpy");
  EXPECT_EQ(k.lane(), "stream7");
  EXPECT_EQ(k.start_ns(), 924922186 - 65117824);
  EXPECT_EQ(k.end_ns() - k.start_ns(), 942626994 - 924922186);
  EXPECT_EQ(k.args().at("gridX"), "2");
  EXPECT_EQ(k.args().at("blockX"), "512");
  EXPECT_NE(find_event(trace.sections[0], "MPI_Init"), nullptr);
}

TEST_F(NsysImport, GzipInputAndOptionsChangeWhatIsRead) {
  ImportOptions o = options_for(4);
  o.nvtx = false;
  o.cpu_ops = true;
  o.rank = 3;
  TraceCollector sink;
  const ImportStats stats = import_nsys(data("nsys_saxpy.reduced.sqlite.gz"), sink, o);
  EXPECT_EQ(stats.kernels, 5);
  EXPECT_EQ(stats.ranges, 0);
  EXPECT_EQ(stats.cpu_events, 95);  // CUDA runtime API calls
  EXPECT_EQ(stats.rank, 3);
  const auto n = kinds(sink.trace().sections.at(0));
  EXPECT_EQ(n.at(v1::EVENT_KIND_LAUNCH), 95);
  for (const auto& e : sink.trace().sections[0].events) ASSERT_EQ(e.rank(), 3);
}

TEST_F(NsysImport, RejectsFilesThatAreNotExportsOrLackColumns) {
  ImportScratchDir dir;
  TraceCollector sink;
  try {
    import_nsys(
        dir.file("text.sqlite", "this is not a database, just text long enough to have a header......."),
        sink, options_for(1));
    FAIL() << "a text file was accepted";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("text.sqlite"));
    EXPECT_THAT(e.what(), HasSubstr("not an Nsight Systems SQLite export"));
  }
  EXPECT_THROW(import_nsys(dir / "absent.sqlite", sink, options_for(1)), InputError);
}

#if __has_include(<sqlite3.h>)
TEST_F(NsysImport, NamesTheMissingColumnAndTheColumnsPresent) {
  ImportScratchDir dir;
  const fs::path path = dir / "old.sqlite";
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(
      sqlite3_exec(db,
                   "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, "
                   "shortName INTEGER); INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1, 2, 0, 1);",
                   nullptr, nullptr, nullptr),
      SQLITE_OK);
  sqlite3_close(db);
  TraceCollector sink;
  try {
    import_nsys(path, sink, options_for(1));
    FAIL() << "a kernel table without streamId was accepted";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("CUPTI_ACTIVITY_KIND_KERNEL lacks column(s) streamId"));
    EXPECT_THAT(e.what(), HasSubstr("it has: start, end, deviceId, shortName"));
  }
}
#endif

}  // namespace
}  // namespace dcpsim::traces
