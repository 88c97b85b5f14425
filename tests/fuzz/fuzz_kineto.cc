// libFuzzer target: Kineto / Chrome trace JSON import, into the .pb writer's checks via a collecting sink.
#include "dcpsim/models/scenario_proto.h"
#include "dcpsim/traces/import_kineto.h"
#include "dcpsim/traces/trace_collector.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = dcpsim::fuzz::scratch(".json", data, size);
  return dcpsim::fuzz::expect_dcpsim_errors([&] {
    dcpsim::traces::ImportOptions options;
    dcpsim::models::Scenario scenario;
    scenario.dcp = 8;
    scenario.contexts = {1024};
    options.scenario = dcpsim::models::to_proto(scenario);
    dcpsim::traces::TraceCollector sink;
    (void)dcpsim::traces::import_kineto(path, sink, options);
  });
}
