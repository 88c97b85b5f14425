// libFuzzer target: Nsight Systems SQLite exports. Most inputs are not SQLite at all; the seed corpus (a real
// export) lets the fuzzer mutate inside a valid database.
#include "dcpsim/models/scenario_proto.h"
#include "dcpsim/traces/import_nsys.h"
#include "dcpsim/traces/trace_collector.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = dcpsim::fuzz::scratch(".sqlite", data, size);
  return dcpsim::fuzz::expect_dcpsim_errors([&] {
    dcpsim::traces::ImportOptions options;
    dcpsim::models::Scenario scenario;
    scenario.dcp = 8;
    scenario.contexts = {1024};
    options.scenario = dcpsim::models::to_proto(scenario);
    dcpsim::traces::TraceCollector sink;
    (void)dcpsim::traces::import_nsys(path, sink, options);
  });
}
