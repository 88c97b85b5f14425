// IoGuard: every way an output can be an input (same path spelled differently, a symlink, a hard link, a file
// an input directory's scan reads), outputs colliding, inputs that are directories or missing, and that a
// check creates nothing.
#include "dcpsim/io_guard.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "dcpsim/error.h"

namespace dcpsim {
namespace {

namespace fs = std::filesystem;

class IoGuardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dcpsim-guard-" + std::to_string(::getpid()));
    fs::create_directories(dir_ / "sub");
    write("in.json");
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path path(const std::string& name) const { return dir_ / name; }
  void write(const std::string& name) const { std::ofstream(path(name)) << "x"; }
  std::string error(const IoGuard& io) const {
    try {
      io.check();
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  }
  fs::path dir_;
};

TEST_F(IoGuardTest, DistinctFilesPass) {
  IoGuard io;
  io.input("--in", path("in.json")).output("--out", path("out.json")).output("--json", path("sub/o.json"));
  EXPECT_EQ(error(io), "");
  EXPECT_FALSE(fs::exists(path("out.json")));  // a check creates nothing
}

TEST_F(IoGuardTest, TheSameFileSpelledDifferently) {
  for (const fs::path& out : {path("in.json"), dir_ / "sub" / ".." / "in.json", dir_ / "." / "in.json"}) {
    IoGuard io;
    io.input("--model", path("in.json")).output("--json", out);
    EXPECT_NE(error(io).find("--json"), std::string::npos) << out;
    EXPECT_NE(error(io).find("input --model"), std::string::npos) << out;
  }
}

TEST_F(IoGuardTest, SymlinksAndHardLinks) {
  fs::create_symlink(path("in.json"), path("soft.json"));
  fs::create_hard_link(path("in.json"), path("hard.json"));
  for (const char* out : {"soft.json", "hard.json"}) {
    IoGuard io;
    io.input("--profile", path("in.json")).output("--out", path(out));
    EXPECT_NE(error(io).find("would be overwritten"), std::string::npos) << out;
  }
  EXPECT_TRUE(same_file(path("hard.json"), path("in.json")));
  EXPECT_FALSE(same_file(path("in.json"), path("other.json")));
}

TEST_F(IoGuardTest, OutputsMustDiffer) {
  IoGuard io;
  io.output("--out", path("a.pb")).output("--chrome", dir_ / "sub" / ".." / "a.pb");
  EXPECT_NE(error(io).find("each output needs its own path"), std::string::npos);
}

TEST_F(IoGuardTest, InputsMustExistAndBeFiles) {
  IoGuard missing;
  missing.input("--requests", path("none.jsonl"));
  EXPECT_NE(error(missing).find("--requests"), std::string::npos);
  IoGuard directory;
  directory.input("--input", path("sub"));
  EXPECT_NE(error(directory).find("is a directory; a file is needed"), std::string::npos);
  IoGuard optional;  // a built-in name is no file
  optional.input_if_exists("--profile", "h200-sxm");
  EXPECT_EQ(error(optional), "");
  EXPECT_TRUE(optional.inputs().empty());
}

TEST_F(IoGuardTest, AnInputDirectoryGuardsWhatItsScanReads) {
  write("sub/a.pb");
  write("sub/notes.txt");
  const auto traces = [](const fs::path& p) { return p.extension() == ".pb"; };
  IoGuard existing;
  existing.input_dir("--measured", path("sub"), traces).output("--out", path("sub/a.pb"));
  EXPECT_NE(error(existing).find("same file as the input --measured"), std::string::npos);
  EXPECT_EQ(existing.inputs().size(), 1u);  // notes.txt is not read
  IoGuard fresh;
  fresh.input_dir("--measured", path("sub"), traces).output("--out", path("sub/new.pb"));
  EXPECT_NE(error(fresh).find("lies in the input directory --measured"), std::string::npos);
  IoGuard elsewhere;
  elsewhere.input_dir("--measured", path("sub"), traces).output("--out", path("sub/table.json"));
  EXPECT_EQ(error(elsewhere), "");
}

TEST_F(IoGuardTest, OutputsNeedAWritableDirectoryAndAFileName) {
  IoGuard no_dir;
  no_dir.output("--out", path("missing/o.pb"));
  EXPECT_NE(error(no_dir).find("does not exist"), std::string::npos);
  IoGuard is_dir;
  is_dir.output("--out", path("sub"));
  EXPECT_NE(error(is_dir).find("is a directory"), std::string::npos);
  IoGuard device;
  device.output("--out", "/dev/null");
  EXPECT_NE(error(device).find("not a regular file"), std::string::npos);
}

}  // namespace
}  // namespace dcpsim
