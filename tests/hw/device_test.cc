// What the runner reports about the machine (trace headers depend on it), and the stub's message in CPU-only
// builds.
#include <gtest/gtest.h>

#include "dcpsim/hw/bench.h"
#include "gpu_test_util.h"

namespace dcpsim::hw {
namespace {

TEST(Device, DescribesEveryVisibleDevice) {
  DCPSIM_REQUIRE_GPU(device_info(0));
  const int n = device_count();
  ASSERT_GT(n, 0);
  for (int i = 0; i < n; ++i) {
    const DeviceInfo d = device_info(i);
    EXPECT_EQ(d.index, i);
    EXPECT_FALSE(d.name.empty());
    EXPECT_EQ(d.uuid.rfind("GPU-", 0), 0u) << d.uuid;
    EXPECT_EQ(d.uuid.size(), 40u);
    EXPECT_NE(d.pci_bus_id.find(':'), std::string::npos);
    EXPECT_GT(d.sm_count, 0);
    EXPECT_GT(d.memory_bytes, 0);
    EXPECT_GE(d.cc_major, 7);
  }
  const SoftwareVersions v = software_versions();
  EXPECT_NE(v.cuda_runtime.find('.'), std::string::npos);
  EXPECT_NE(v.cuda_driver.find('.'), std::string::npos);
  EXPECT_EQ(std::count(v.nccl.begin(), v.nccl.end(), '.'), 2) << v.nccl;
}

TEST(Device, BenchRunnerReportsConsistentFigures) {
  DCPSIM_REQUIRE_GPU(run_op_bench(OpBenchConfig{}));
  OpBenchConfig c;
  c.op = "correct";
  c.shape = {3, 8, 16, 1, 128, 128, 0, true, 8};
  c.reps = 5;
  c.warmup = 1;
  const OpBenchResult r = run_op_bench(c);
  EXPECT_GT(r.median_ns, 0);
  EXPECT_LE(r.min_ns, r.median_ns);
  EXPECT_GE(r.max_ns, r.median_ns);
  EXPECT_DOUBLE_EQ(r.bytes, 2.0 * 2 * 8 * 16 * 128 + 4.0 * (3 + 1) * 8 * 16);  // O twice, N LSEs, merged LSE
  EXPECT_NEAR(r.bandwidth, r.bytes / (r.median_ns * 1e-9), 1e-6 * r.bandwidth);
  EXPECT_GT(r.copy_bandwidth, 1e11);
  c.op = "no-such-op";
  EXPECT_THROW(run_op_bench(c), InputError);
}

}  // namespace
}  // namespace dcpsim::hw
