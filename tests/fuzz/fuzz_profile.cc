// libFuzzer target: hardware profile JSON (models::parse_profile), then the profile checks and the JSON
// writer; and the same input as a kernel table file (models::parse_kernel_tables), whose fast read of points
// must agree with the ordinary reader's: the same tables, or the same message.
#include <cstdlib>
#include <string>
#include <string_view>

#include "dcpsim/error.h"
#include "dcpsim/models/kernel_table.h"
#include "dcpsim/models/profile.h"
#include "fuzz_support.h"

namespace {

// parse_kernel_tables's result as text: the canonical JSON of the tables it read, or its message.
std::string read_tables(const std::string& text) {
  try {
    return dcpsim::models::kernel_tables_json(dcpsim::models::parse_kernel_tables(text, "fuzz.json"));
  } catch (const dcpsim::InputError& e) {
    return std::string("error: ") + e.what();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  dcpsim::fuzz::expect_dcpsim_errors([&] {
    const std::string fast = read_tables(text);
    if (fast.rfind("error: ", 0) == 0) return;  // the ordinary reader's message (the fast read gave up)
    // Read: the first "tables" is the top level's member. A first, empty "tables" before it (JSON keeps the
    // last of a repeated member) makes the fast read give up, so the ordinary reader reads the same document.
    const std::size_t at = text.find("\"tables\"");
    if (at == std::string::npos) std::abort();
    std::string ordinary = text;
    ordinary.insert(at, "\"tables\": [], ");
    if (read_tables(ordinary) != fast) std::abort();
  });
  return dcpsim::fuzz::expect_dcpsim_errors([&] {
    const auto p = dcpsim::models::parse_profile(text, "fuzz.json");
    (void)dcpsim::models::to_json(p);
  });
}
