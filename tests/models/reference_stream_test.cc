// The streamed fp64 reference: equal to full_attention on GQA and MLA-shaped rows (both LSE bases, empty
// rows, chunk edges, one or several threads), and bounded in memory at a context whose K/V could not be held.
#include "dcpsim/models/reference_stream.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "dcpsim/models/attention.h"
#include "dcpsim/models/problem.h"

namespace dcpsim::models {
namespace {

struct Case {
  int heads, kv_heads, qk_dim, dim;
  bool v_in_k;
};

// A one-row problem whose V is the first D lanes of K when `v_in_k` (MLA's latent).
Problem one_row(const Case& c, std::int64_t tokens, std::uint64_t seed) {
  GenerateOptions g;
  g.seed = seed;
  Problem p = generate_problem(c.heads, c.kv_heads, c.qk_dim, c.dim, {tokens}, g);
  if (c.v_in_k) {
    for (std::int64_t t = 0; t < tokens; ++t)
      for (int kh = 0; kh < c.kv_heads; ++kh)
        for (int d = 0; d < c.dim; ++d)
          p.v[0][(t * c.kv_heads + kh) * c.dim + d] = p.k[0][(t * c.kv_heads + kh) * c.qk_dim + d];
  }
  return p;
}

StreamedRow stream(const Case& c, const Problem& p, LseBase base, int threads) {
  const KvStreamShape shape{c.heads, c.kv_heads, c.qk_dim, c.dim, p.contexts[0], c.v_in_k};
  const auto source = [&](std::int64_t first, std::int64_t count, double* k, double* v) {
    const std::int64_t kw = std::int64_t(c.kv_heads) * c.qk_dim, vw = std::int64_t(c.kv_heads) * c.dim;
    std::memcpy(k, p.k[0].data() + first * kw, sizeof(double) * count * kw);
    if (v != nullptr) std::memcpy(v, p.v[0].data() + first * vw, sizeof(double) * count * vw);
  };
  return streamed_attention(shape, p.q, 0.0, base, source, threads);
}

TEST(StreamedAttention, EqualsFullAttention) {
  const Case cases[] = {{8, 2, 16, 16, false}, {4, 1, 24, 16, true}, {3, 3, 8, 8, false}};
  for (const Case& c : cases) {
    for (std::int64_t tokens : {1, 255, 256, 257, 1000}) {
      const Problem p = one_row(c, tokens, 7 + tokens);
      for (LseBase base : {LseBase::kE, LseBase::k2}) {
        AttentionOptions o;
        o.base = base;
        o.empty = EmptyRowMarker::kNegInfZero;
        const Partial truth = full_attention(p, o);
        for (int threads : {1, 3}) {
          const StreamedRow r = stream(c, p, base, threads);
          for (int h = 0; h < c.heads; ++h) {
            EXPECT_NEAR(r.lse[h], truth.l(0, h), 1e-12) << tokens << " tokens, head " << h;
            for (int d = 0; d < c.dim; ++d) {
              EXPECT_NEAR(r.o[h * c.dim + d], truth.o(0, h, d), 1e-12) << tokens << " tokens";
              EXPECT_GE(r.abs[h * c.dim + d], std::fabs(r.o[h * c.dim + d]) - 1e-12);
            }
          }
        }
      }
    }
  }
}

TEST(StreamedAttention, AbsIsAttentionWithAbsoluteValues) {
  const Case c{2, 1, 8, 8, false};
  Problem p = one_row(c, 300, 3);
  const StreamedRow r = stream(c, p, LseBase::kE, 2);
  for (double& x : p.v[0]) x = std::fabs(x);
  AttentionOptions o;
  const Partial truth = full_attention(p, o);
  for (int h = 0; h < c.heads; ++h)
    for (int d = 0; d < c.dim; ++d) EXPECT_NEAR(r.abs[h * c.dim + d], truth.o(0, h, d), 1e-12);
}

TEST(StreamedAttention, EmptyRowIsZeroWithNegInfLse) {
  const Case c{4, 2, 8, 8, false};
  const Problem p = one_row(c, 0, 1);
  const StreamedRow r = stream(c, p, LseBase::k2, 4);
  for (double l : r.lse) EXPECT_EQ(l, -std::numeric_limits<double>::infinity());
  for (double o : r.o) EXPECT_EQ(o, 0.0);
}

TEST(StreamedAttention, MemoryEstimateDoesNotGrowWithContext) {
  KvStreamShape s{128, 1, 576, 512, 1 << 10, true};
  const double small = streamed_attention_bytes(s, 16);
  s.tokens = std::int64_t(1) << 22;
  EXPECT_EQ(streamed_attention_bytes(s, 16), small);
  EXPECT_LT(small, 100e6);  // 16 threads at H = 128, D = 512: a few tens of MB, not the row's 4.6 GB of K
}

#if defined(__SANITIZE_ADDRESS__)
#define DCPSIM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DCPSIM_ASAN 1
#endif
#endif

#ifndef DCPSIM_ASAN
double vm_size_bytes() {
  std::ifstream in("/proc/self/status");
  std::string key;
  double kb = 0;
  while (in >> key) {
    if (key == "VmSize:") {
      in >> kb;
      return kb * 1024;
    }
  }
  return 0;
}
#endif

// 2M tokens: materialising the row's K and V as doubles (what the runner's check did) would take 256 MB; the
// streamed reference runs in a child whose address space may grow by 96 MB only (one thread: each thread's
// malloc arena reserves 64 MB of address space).
TEST(StreamedAttention, TwoMillionTokensUnderAnAddressSpaceLimit) {
#ifdef DCPSIM_ASAN
  GTEST_SKIP() << "AddressSanitizer reserves terabytes of address space: no ulimit -v";
#else
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const rlim_t limit = static_cast<rlim_t>(vm_size_bytes() + 96e6);
    const rlimit r{limit, limit};
    if (::setrlimit(RLIMIT_AS, &r) != 0) ::_exit(3);
    const KvStreamShape s{2, 1, 8, 8, std::int64_t(1) << 21, false};
    const std::vector<double> q(16, 0.25);
    const auto source = [](std::int64_t first, std::int64_t count, double* k, double* v) {
      for (std::int64_t i = 0; i < count * 8; ++i) {
        k[i] = double((first * 8 + i) % 7 - 3) / 3.0;
        v[i] = double((first * 8 + i) % 5 - 2) / 2.0;
      }
    };
    try {
      const StreamedRow row = streamed_attention(s, q, 0.0, LseBase::kE, source, 1);
      // Every output is a convex combination of values in [-1, 1].
      for (double o : row.o)
        if (!(std::fabs(o) <= 1.0)) ::_exit(2);
      ::_exit(std::isfinite(row.lse[0]) ? 0 : 2);
    } catch (...) {
      ::_exit(1);
    }
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
#endif
}

}  // namespace
}  // namespace dcpsim::models
