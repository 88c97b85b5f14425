// write_file_atomically: the whole text or nothing, the old file kept on failure, no temporary left behind,
// and a missing directory as a one-line InputError naming the file.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "dcpsim/error.h"
#include "dcpsim/traces/output_file.h"
#include "trace_test_support.h"

namespace dcpsim::traces {
namespace {

namespace fs = std::filesystem;

TEST(OutputFile, WritesTheWholeTextAndReplacesTheOldFile) {
  const testing::ScratchDir dir;
  const fs::path out = dir.path() / "summary.json";
  std::string big(3 << 20, 'x');
  big.back() = '\n';
  write_file_atomically(out, big);
  EXPECT_EQ(testing::read_bytes(out), big);
  write_file_atomically(out, "{}\n");
  EXPECT_EQ(testing::read_bytes(out), "{}\n");
  write_file_atomically(out, "");
  EXPECT_EQ(testing::read_bytes(out), "");
  EXPECT_EQ(dir.entries(), 1);  // no temporary file left beside it
}

TEST(OutputFile, AMissingDirectoryIsAnInputErrorAndWritesNothing) {
  const testing::ScratchDir dir;
  const fs::path out = dir.path() / "absent" / "steps.csv";
  try {
    write_file_atomically(out, "a,b\n");
    FAIL() << "wrote into a missing directory";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(out.string()), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
  EXPECT_EQ(dir.entries(), 0);
}

TEST(OutputFile, AFailedRenameKeepsTheTargetAndLeavesNoTemporary) {
  const testing::ScratchDir dir;
  const fs::path out = dir.path() / "target";
  fs::create_directory(out);  // a directory cannot be replaced by a file
  fs::create_directory(out / "keep");
  EXPECT_THROW(write_file_atomically(out, "text"), RuntimeError);
  EXPECT_TRUE(fs::is_directory(out / "keep"));
  EXPECT_EQ(dir.entries(), 1);
}

}  // namespace
}  // namespace dcpsim::traces
