#pragma once
// Shared by the GPU tests: skip without a device, and in CPU-only builds check the stub's message instead.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "dcpsim/error.h"
#include "dcpsim/hw/device.h"
#include "dcpsim/models/dtype.h"
#include "dcpsim/models/problem.h"

namespace dcpsim::hw::testing {

// True when the test can run its GPU part. In a stub build it first checks that `call` fails with the stub's
// message (so the CPU-only build still tests something real about this API).
inline bool gpu_ready(const std::function<void()>& call) {
  if (!built_with_cuda()) {
    try {
      call();
      ADD_FAILURE() << "the stub returned instead of throwing";
    } catch (const RuntimeError& e) {
      EXPECT_NE(std::string(e.what()).find("built without CUDA"), std::string::npos) << e.what();
    }
    return false;
  }
  return device_count() > 0;
}

#define DCPSIM_REQUIRE_GPU(call)                                             \
  do {                                                                       \
    if (!::dcpsim::hw::testing::gpu_ready([&] { call; })) {                  \
      if (::dcpsim::hw::built_with_cuda()) GTEST_SKIP() << "no CUDA device"; \
      return;                                                                \
    }                                                                        \
  } while (0)

// MLA reads V from the latent: make the problem's V the first D lanes of K.
inline void share_latent(models::Problem& p) {
  for (int b = 0; b < p.rows; ++b) {
    const std::int64_t S = p.contexts[b];
    for (std::int64_t t = 0; t < S; ++t)
      for (int d = 0; d < p.dim; ++d) p.v[b][t * p.dim + d] = p.k[b][t * p.qk_dim + d];
  }
}

inline bool same_nonfinite(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || (std::isinf(a) && a == b);
}

}  // namespace dcpsim::hw::testing
