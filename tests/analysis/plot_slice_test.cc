// The scan plot's slice (--at) is checked before a scan runs: a bad column or item is one InputError naming
// it.
#include <gtest/gtest.h>

#include <string>

#include "dcpsim/analysis/plot.h"
#include "dcpsim/error.h"

namespace dcpsim::analysis {
namespace {

std::string slice_error(const std::string& at) {
  try {
    check_scan_slice(at);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(ScanSlice, ColumnsOfTheSliceAreAccepted) {
  EXPECT_EQ(slice_error(""), "");
  EXPECT_EQ(slice_error("batch=64,context=128k"), "");
  EXPECT_EQ(slice_error("head-dim=512, kv_heads=1 ,profile=h200-sxm,model=deepseek-v3,tp=8"), "");
}

TEST(ScanSlice, BadItemsAreNamed) {
  EXPECT_NE(slice_error("strategy=a2a").find("--at strategy: not a slice column"), std::string::npos);
  EXPECT_NE(slice_error("dcp=8").find("dcp"), std::string::npos);  // the plot varies N itself
  EXPECT_NE(slice_error("batch").find("'batch': expected column=value"), std::string::npos);
  EXPECT_NE(slice_error("batch=").find("expected column=value"), std::string::npos);
  EXPECT_NE(slice_error("batch=1,batch=2").find("--at batch: given twice"), std::string::npos);
  EXPECT_NE(slice_error("head-dim=128,head_dim=512").find("given twice"), std::string::npos);
}

}  // namespace
}  // namespace dcpsim::analysis
