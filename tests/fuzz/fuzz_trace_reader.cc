// libFuzzer target: the .pb trace reader (both framings), streamed into a sink that keeps nothing.
#include "dcpsim/traces/trace_reader.h"
#include "fuzz_support.h"

namespace {
class NullSink final : public dcpsim::traces::TraceSink {
 public:
  void on_header(const dcpsim::traces::v1::Header&) override {}
  void on_scenario(const dcpsim::traces::v1::Scenario&) override {}
  void on_event(const dcpsim::traces::v1::Event&) override {}
  void on_flow(const dcpsim::traces::v1::Flow&) override {}
  void on_row_result(const dcpsim::traces::v1::RowResult&) override {}
  void on_phase_summary(const dcpsim::traces::v1::PhaseSummary&) override {}
  void on_summary(const dcpsim::traces::v1::Summary&) override {}
  void finish() override {}
};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const bool routed = (dcpsim::traces::route_protobuf_logging(), true);
  (void)routed;
  const auto path = dcpsim::fuzz::scratch(".pb", data, size);
  return dcpsim::fuzz::expect_dcpsim_errors([&] {
    NullSink sink;
    dcpsim::traces::stream_trace(path, sink);
  });
}
