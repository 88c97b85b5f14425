// Trace I/O throughput: how many events per second the .pb writer, the streaming reader and the Chrome
// exporter handle. A simulated scan emits ~10^2–10^4 events per scenario, so these bound what tracing adds to
// a scan.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "dcpsim/traces/chrome_writer.h"
#include "dcpsim/traces/protobuf_writer.h"
#include "dcpsim/traces/provenance.h"
#include "dcpsim/traces/trace_reader.h"

namespace {

namespace tr = dcpsim::traces;
namespace v1 = dcpsim::traces::v1;

std::filesystem::path scratch(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("dcpsim-bench-" + std::to_string(::getpid()) + "-" + name);
}

v1::Scenario scenario() {
  v1::Scenario s;
  s.set_dcp(8);
  s.set_heads(128);
  s.set_kv_heads(1);
  s.set_head_dim(512);
  s.set_qk_dim(576);
  s.set_interleave(1);
  s.set_kv_dtype(v1::DTYPE_BF16);
  s.set_out_dtype(v1::DTYPE_BF16);
  s.set_lse_base(v1::LSE_BASE_E);
  for (int b = 0; b < 64; ++b) s.add_contexts(131072);
  s.set_strategy(v1::STRATEGY_AG_RS);
  s.set_launch_mode(v1::LAUNCH_MODE_GRAPH);
  return s;
}

void write_events(tr::TraceSink& sink, int events) {
  sink.on_header(tr::make_header(v1::SOURCE_SIM));
  sink.on_scenario(scenario());
  v1::Event e = tr::make_event(0, "stream0", v1::EVENT_KIND_KERNEL, "attention", 0, 0, 1 << 20, 0, 64);
  for (int i = 0; i < events; ++i) {
    e.set_rank(i % 8);
    e.set_start_ns(100 * i);
    e.set_end_ns(100 * i + 90);
    sink.on_event(e);
  }
  sink.finish();
}

void BM_ProtobufWrite(benchmark::State& state) {
  const auto path = scratch("write.pb");
  for (auto _ : state) {
    tr::ProtobufTraceWriter writer(path);
    write_events(writer, static_cast<int>(state.range(0)));
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(std::filesystem::file_size(path)));
  std::filesystem::remove(path);
}
BENCHMARK(BM_ProtobufWrite)->Arg(100000)->Unit(benchmark::kMillisecond);

void BM_ProtobufRead(benchmark::State& state) {
  const auto path = scratch("read.pb");
  {
    tr::ProtobufTraceWriter writer(path);
    write_events(writer, static_cast<int>(state.range(0)));
  }
  for (auto _ : state) {
    tr::TraceReader reader(path);
    v1::Record record;
    int64_t n = 0;
    while (reader.next(record)) ++n;
    benchmark::DoNotOptimize(n);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(std::filesystem::file_size(path)));
  std::filesystem::remove(path);
}
BENCHMARK(BM_ProtobufRead)->Arg(100000)->Unit(benchmark::kMillisecond);

void BM_ChromeExport(benchmark::State& state) {
  const auto in = scratch("export.pb");
  const auto out = scratch("export.json");
  {
    tr::ProtobufTraceWriter writer(in);
    write_events(writer, static_cast<int>(state.range(0)));
  }
  for (auto _ : state) tr::export_chrome(in, out);
  state.SetItemsProcessed(state.iterations() * state.range(0));
  std::filesystem::remove(in);
  std::filesystem::remove(out);
}
BENCHMARK(BM_ChromeExport)->Arg(100000)->Unit(benchmark::kMillisecond);

}  // namespace
