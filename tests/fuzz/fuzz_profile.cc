// libFuzzer target: hardware profile JSON (models::parse_profile), then the profile checks and the JSON
// writer.
#include <string_view>

#include "dcpsim/models/profile.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return dcpsim::fuzz::expect_dcpsim_errors([&] {
    const auto p = dcpsim::models::parse_profile(std::string_view(reinterpret_cast<const char*>(data), size),
                                                 "fuzz.json");
    (void)dcpsim::models::to_json(p);
  });
}
