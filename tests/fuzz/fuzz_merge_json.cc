// libFuzzer target: the partials JSON of `dcpsim merge`, then the exact merge of what it held.
#include "dcpsim/analysis/merge_io.h"
#include "dcpsim/models/merge.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = dcpsim::fuzz::scratch(".json", data, size);
  return dcpsim::fuzz::expect_dcpsim_errors([&] {
    const auto partials = dcpsim::analysis::read_partials(path.string());
    dcpsim::models::MergeOptions options;
    if (partials.size() <= 64) (void)dcpsim::models::merge(partials, options);
  });
}
