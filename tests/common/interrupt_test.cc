// Clean interruption, in forked children that install the handlers and are signalled: temporary and part
// files removed, a tracked child process stopped, one line, exit 128 + signal; a critical section holds the
// signal back until it ends; a checkpoint is kept and named; a worker ends silently and removes nothing.
#include "dcpsim/interrupt.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace dcpsim::interrupt {
namespace {

namespace fs = std::filesystem;

struct Outcome {
  int status = 0;
  std::string stderr_text;
};

// Runs `body` in a child with stderr captured; the body signals itself, or returns (exit 0).
Outcome in_child(const std::function<void()>& body) {
  const fs::path err = fs::temp_directory_path() / ("dcpsim-int-err-" + std::to_string(::getpid()));
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, STDERR_FILENO);
    install("dcpsim");
    body();
    ::_exit(0);
  }
  Outcome o;
  ::waitpid(pid, &o.status, 0);
  std::ifstream in(err);
  std::stringstream text;
  text << in.rdbuf();
  o.stderr_text = text.str();
  fs::remove(err);
  return o;
}

class InterruptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dcpsim-int-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

int exit_code(const Outcome& o) {
  return WIFEXITED(o.status) ? WEXITSTATUS(o.status) : -1;
}

TEST_F(InterruptTest, SigtermRemovesDebrisStopsChildrenAndSaysSo) {
  const fs::path temp = temp_name_beside(dir_ / "out.pb");
  const fs::path parts = dir_ / ".parts";
  pid_t sleeper = 0;
  const Outcome o = in_child([&] {
    track_file(temp);
    std::ofstream(temp) << "half";
    fs::create_directory(parts);
    track_part_dir(parts, ".csv", 3);
    for (int i = 0; i < 3; ++i) std::ofstream(parts / (std::to_string(i) + ".csv")) << i;
    std::ofstream(parts / "1.csv.err") << "why";
    sleeper = ::fork();
    if (sleeper == 0) {
      ::pause();
      ::_exit(0);
    }
    track_child(sleeper);
    std::ofstream(dir_ / "sleeper") << sleeper;
    ::raise(SIGTERM);
  });
  EXPECT_EQ(exit_code(o), 143);
  EXPECT_EQ(o.stderr_text, "dcpsim: interrupted; nothing written\n");
  EXPECT_FALSE(fs::exists(temp));
  EXPECT_FALSE(fs::exists(parts));
  pid_t child = 0;
  std::ifstream(dir_ / "sleeper") >> child;
  ASSERT_GT(child, 0);
  EXPECT_NE(::kill(child, 0), 0) << "the tracked child still runs";
}

TEST_F(InterruptTest, SigintExits130) {
  const Outcome o = in_child([] { ::raise(SIGINT); });
  EXPECT_EQ(exit_code(o), 130);
}

TEST_F(InterruptTest, ACriticalSectionHoldsTheSignalBack) {
  const Outcome o = in_child([&] {
    {
      const CriticalSection renaming;
      ::raise(SIGTERM);
      std::ofstream(dir_ / "finished") << "the section ran to its end";
    }
    std::ofstream(dir_ / "after") << "never";
  });
  EXPECT_EQ(exit_code(o), 143);
  EXPECT_TRUE(fs::exists(dir_ / "finished"));
  EXPECT_FALSE(fs::exists(dir_ / "after"));
}

TEST_F(InterruptTest, WrittenOutputsAndCheckpointsAreNamed) {
  const fs::path done = dir_ / "a.pb", checkpoint = dir_ / "fit.checkpoint";
  const Outcome o = in_child([&] {
    note_written(done);
    std::ofstream(checkpoint) << "state";
    keep_checkpoint(checkpoint);
    ::raise(SIGTERM);
  });
  EXPECT_EQ(exit_code(o), 143);
  EXPECT_EQ(o.stderr_text, "dcpsim: interrupted; already written: " + done.string() +
                               "; checkpoint kept: " + checkpoint.string() + "\n");
  EXPECT_TRUE(fs::exists(checkpoint));
}

TEST_F(InterruptTest, AWorkerEndsSilentlyAndLeavesTheCleanupToItsParent) {
  const fs::path temp = dir_ / "part";
  const Outcome o = in_child([&] {
    track_file(temp);
    std::ofstream(temp) << "rows";
    enter_worker();
    ::raise(SIGINT);
  });
  EXPECT_EQ(exit_code(o), 130);
  EXPECT_EQ(o.stderr_text, "");
  EXPECT_TRUE(fs::exists(temp));
}

TEST_F(InterruptTest, UntrackedFilesStayAndTempNamesAreUnique) {
  const fs::path kept = dir_ / "kept";
  const Outcome o = in_child([&] {
    const int slot = track_file(kept);
    std::ofstream(kept) << "finished";
    untrack_file(slot);
    ::raise(SIGTERM);
  });
  EXPECT_EQ(exit_code(o), 143);
  EXPECT_TRUE(fs::exists(kept));
  EXPECT_NE(temp_name_beside(dir_ / "x.csv"), temp_name_beside(dir_ / "x.csv"));
  EXPECT_EQ(temp_name_beside(dir_ / "x.csv").parent_path(), dir_);
}

}  // namespace
}  // namespace dcpsim::interrupt
