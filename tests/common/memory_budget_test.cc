// The host memory budget: the limit follows ulimit -v, a request past it is refused in one line with the
// estimate and the limit, and the input cap defaults well under the machine's memory and follows the host
// bound a reader sets.
#include "dcpsim/memory_budget.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include <gtest/gtest.h>

#include "dcpsim/error.h"

namespace dcpsim::memory {
namespace {

TEST(MemoryBudget, RefusesWhatDoesNotFitInOneLine) {
  try {
    require_host(1e18, "dcpsim merge");
    FAIL() << "1 EB was allowed";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("dcpsim merge needs an estimated 1000000000.00 GB"), std::string::npos) << what;
    EXPECT_NE(what.find("this machine allows"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos);
  }
  EXPECT_NO_THROW(require_host(1e6, "a megabyte"));
}

TEST(MemoryBudget, FollowsUlimitV) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer: no ulimit -v";
#else
  const pid_t pid = ::fork();
  if (pid == 0) {
    const double limit = vm_bytes() + 300e6;
    const rlimit r{static_cast<rlim_t>(limit), static_cast<rlim_t>(limit)};
    ::setrlimit(RLIMIT_AS, &r);
    const HostLimit l = host_limit();
    // What is left of the address space, counted for two thirds.
    ::_exit(l.basis == "ulimit -v" && l.bytes > 150e6 && l.bytes < 210e6 ? 0 : 1);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
#endif
}

TEST(MemoryBudget, TheInputCapDefaultsWellUnderTheMachineAndFollowsTheHost) {
  const std::int64_t cap = max_input_bytes();
  EXPECT_LE(cap, std::int64_t(2) << 30);
  EXPECT_GT(cap, 0);
  EXPECT_EQ(input_cap_bytes(), cap);
  EXPECT_NE(input_cap_hint().find("--max-input-gb"), std::string::npos);
  set_max_input_bytes(12345678);
  EXPECT_EQ(max_input_bytes(), 12345678);
  limit_inputs_to_host(1e12);  // a reader holding 1e12 bytes per input byte: far less may be read
  EXPECT_LT(input_cap_bytes(), 12345678);
  EXPECT_NE(input_cap_hint().find("bytes per input byte"), std::string::npos);
}

TEST(MemoryBudget, ReportsTheProcessFigures) {
  EXPECT_GT(rss_bytes(), 0);
  EXPECT_GE(peak_rss_bytes(), rss_bytes());
  EXPECT_GE(vm_bytes(), rss_bytes());
  note_estimate("device", 2e9);
  EXPECT_NE(report_line().find("estimated device 2.00 GB"), std::string::npos) << report_line();
  EXPECT_EQ(gigabytes(1.5e9), "1.50 GB");
  EXPECT_EQ(gigabytes(5e6), "0.005 GB");
}

}  // namespace
}  // namespace dcpsim::memory
