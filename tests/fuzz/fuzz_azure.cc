// libFuzzer target: Azure LLM inference request traces (CSV).
#include "dcpsim/analysis/requests.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = dcpsim::fuzz::scratch(".csv", data, size);
  return dcpsim::fuzz::expect_dcpsim_errors([&] { (void)dcpsim::analysis::read_azure_csv(path); });
}
