// libFuzzer target: --contexts-file (one context length per row) through the scenario flags.
#include "dcpsim/analysis/scenario_flags.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = dcpsim::fuzz::scratch(".txt", data, size);
  return dcpsim::fuzz::expect_dcpsim_errors([&] {
    dcpsim::analysis::ScenarioFlags flags;
    flags.contexts_file = path.string();
    (void)dcpsim::analysis::to_scenario(flags);
  });
}
