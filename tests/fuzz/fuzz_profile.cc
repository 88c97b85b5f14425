// libFuzzer target: hardware profile JSON (models::parse_profile), then the profile checks and the JSON
// writer; and the same input as a kernel table file (models::parse_kernel_tables, whose points are read
// straight from the parser): it must give what the ordinary JSON reader gives, the same tables or the same
// message, else the target aborts.
#include <cstdlib>
#include <string>
#include <string_view>

#include "dcpsim/error.h"
#include "dcpsim/json_limits.h"
#include "dcpsim/models/kernel_table.h"
#include "dcpsim/models/profile.h"
#include "fuzz_support.h"
#include "kernel_table_json.h"

namespace {

// The canonical JSON of the tables a reader read, or its message.
template <class Read>
std::string outcome(Read&& read) {
  try {
    return dcpsim::models::kernel_tables_json(read());
  } catch (const dcpsim::InputError& e) {
    return std::string("error: ") + e.what();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string where = "fuzz.json";
  dcpsim::fuzz::expect_dcpsim_errors([&] {
    const std::string fast = outcome([&] { return dcpsim::models::parse_kernel_tables(text, where); });
    const std::string ordinary = outcome([&] {
      return dcpsim::models::detail::parse_kernel_tables_json(
          dcpsim::parse_json_checked<nlohmann::ordered_json>(text, where), where);
    });
    if (fast != ordinary) std::abort();
  });
  return dcpsim::fuzz::expect_dcpsim_errors([&] {
    const auto p = dcpsim::models::parse_profile(text, where);
    (void)dcpsim::models::to_json(p);
  });
}
