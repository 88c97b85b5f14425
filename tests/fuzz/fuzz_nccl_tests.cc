// libFuzzer target: nccl-tests output (text in every layout, -J JSON, CSV tables) into communication tables,
// and the table format itself.
#include <string>
#include <string_view>

#include "dcpsim/models/comm_table.h"
#include "dcpsim/models/nccl_tests.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  dcpsim::fuzz::expect_dcpsim_errors([&] {
    dcpsim::models::NcclTestsImport out;
    dcpsim::models::parse_nccl_tests(text, "fuzz_all_reduce.log", {}, out);
    for (dcpsim::models::CommTable& t : out.tables.tables) {
      dcpsim::models::merge_comm_points(t);
      dcpsim::models::finalize_comm_table(t, "fuzz");
    }
  });
  return dcpsim::fuzz::expect_dcpsim_errors(
      [&] { (void)dcpsim::models::parse_comm_tables(text, "fuzz.json"); });
}
