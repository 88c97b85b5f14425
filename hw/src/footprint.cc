// hw run's memory estimate (footprint.h). The device side mirrors what make_rank_state, prepare_rank and the
// strategies' allocate() ask for; the host side what the check and the runtime hold.
#include "footprint.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>

#include "check.h"
#include "cuda_check.h"
#include "dcpsim/error.h"
#include "dcpsim/hw/attention_impl.h"
#include "dcpsim/memory_budget.h"
#include "rank_state.h"
#include "row_stream.h"  // RankState holds one
#include "step.h"

namespace dcpsim::hw {
namespace {

// The CUDA runtime, driver, CUPTI and NCCL libraries' resident memory once a context exists (host), measured
// on the GPU machine (docs/PERFORMANCE.md "hw run memory"); a device's context itself is not counted: it is
// in use before the run allocates anything.
constexpr double kRuntimeHostBytes = 0.6e9;

// The KV shard of `rank`: every row starts on a page (FlashInfer's page table addresses the same storage).
double kv_tokens(const StepPlan& p, int rank, std::int64_t& max_len) {
  std::vector<int> len(p.rows_total);
  for (int b = 0; b < p.rows_total; ++b) {
    len[b] = static_cast<int>(p.local_len(b, rank));
    max_len = std::max<std::int64_t>(max_len, len[b]);
  }
  return static_cast<double>(std::max<std::int64_t>(paged_row_offsets(len, kv_page_tokens(p.mla)).back(), 1));
}

// The local attention's scratch: dcpsim's split-KV workspace (as prepare_rank sizes it), or FlashInfer's
// planned workspaces (partial O and LSE per cluster tile, its int work lists).
double attention_workspace(const StepPlan& p, const RunConfig& c, int rank, std::int64_t max_len) {
  const int device = c.devices.empty() ? 0 : c.devices[std::min<std::size_t>(rank, c.devices.size() - 1)];
  int sms = 0;
  DCPSIM_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  // FlashInfer MLA: 2 · SMs · 128 rows of bf16 partial O and fp32 LSE, and 0.7 MB of work lists.
  if (p.attention == AttentionImpl::kFlashInfer) return 2.0 * sms * 128 * (512 * 2 + 4) + 1e6;
  RankState r;
  r.rank = rank;
  r.device = device;
  r.max_len = max_len;
  const ops::AttentionArgs a = attention_args(p, r);
  return static_cast<double>(ops::attention_workspace_bytes(a, ops::attention_splits(a, device)));
}

// The strategy's per-rank buffers (strategy_*.cc allocate()).
double strategy_buffers(const StepPlan& p) {
  if (p.N == 1) return 0;
  const double B = p.rows_total, H = p.H, J = p.J, D = p.D, N = p.N, ob = double(ops::elem_bytes(p.out));
  const double lse_all = N * B * H * 4;
  switch (p.s.strategy) {
    case models::Strategy::kAgRs:
      return lse_all + B * H * 4 + B * H * D * ob + B * J * D * ob;
    case models::Strategy::kAgAr:
      return lse_all + B * H * 4 + B * H * D * ob;
    case models::Strategy::kA2a:
      return 2 * N * B * J * (D + double(ops::lse_lanes(p.out))) * ob + B * J * (D * ob + 4);
    case models::Strategy::kA2aTwoCall:
      // The O rows and the LSEs in send/receive buffers of their own (strategy_collective.cc).
      return 2 * N * B * J * (D * ob + 4) + B * J * (D * ob + 4);
    case models::Strategy::kDirect:
    case models::Strategy::kFlashInferA2a:
    case models::Strategy::kRowStream:
      // Two parities of N sources' slots (O and LSE) per owner, flags, and the owner's output.
      return 2 * N * B * J * (D * ob + 4) + 2 * N * B * 8 * 3 + B * J * (D * ob + 4);
  }
  return 0;
}

}  // namespace

double kv_shard_bytes(const StepPlan& p, int rank, std::int64_t& max_len) {
  // An fp8 cache holds one byte per K/V element (the query stays bf16).
  return kv_tokens(p, rank, max_len) * double(p.k_width() + (p.mla ? 0 : p.v_width())) *
         double(p.kv_elem_bytes());
}

Footprint estimate_footprint(const StepPlan& p, const RunConfig& c) {
  Footprint f;
  const std::size_t ib = ops::elem_bytes(p.in), ob = ops::elem_bytes(p.out);
  const bool one_device = c.mode == ProcessMode::kEmulate;
  double busiest = 0;
  for (int rank = 0; rank < p.N; ++rank) {
    std::int64_t max_len = 0;
    const double kv = kv_shard_bytes(p, rank, max_len);
    const double q = double(p.rows_total) * p.H * p.Dqk * ib * (p.gather_q ? 2.0 : 1.0);
    const double local = double(p.rows_total) * p.H * (p.D * double(ob) + 4) + 20.0 * p.rows_total;
    const double stamps = p.row_stamps ? 24.0 * p.rows_total + 16 : 0;
    const double rank_bytes =
        kv + q + local + stamps + attention_workspace(p, c, rank, max_len) + strategy_buffers(p);
    if (one_device) {
      busiest += rank_bytes;
      f.kv_bytes += kv;
    } else {
      busiest = std::max(busiest, rank_bytes);
      f.kv_bytes = std::max(f.kv_bytes, kv);
    }
    if (c.mode == ProcessMode::kMpi) break;  // one rank per process; all alike
  }
  f.device_bytes = busiest;
  f.host_added = kRuntimeHostBytes + check_host_bytes(p, c.check_rows);
  f.host_bytes = memory::rss_bytes() + f.host_added;
  return f;
}

void require_footprint(const Footprint& f, const RunConfig& c, int ranks_per_device) {
  memory::note_estimate("device", f.device_bytes);
  memory::require_host(f.host_added, "hw run");
  const std::vector<int> devices = c.devices.empty() ? std::vector<int>{0} : c.devices;
  for (int d : devices) {
    DCPSIM_CUDA(cudaSetDevice(d));
    std::size_t free = 0, total = 0;
    DCPSIM_CUDA(cudaMemGetInfo(&free, &total));
    // 2% and 256 MB for what the estimate leaves out: allocation granularity, graphs, NCCL's own buffers.
    const double limit = 0.98 * static_cast<double>(free) - 256e6;
    if (f.device_bytes > limit) {
      throw InputError("hw run needs an estimated " + memory::gigabytes(f.device_bytes) +
                       " of device memory on device " + std::to_string(d) + " (" +
                       std::to_string(ranks_per_device) + " rank(s), KV " + memory::gigabytes(f.kv_bytes) +
                       "); it has " + memory::gigabytes(static_cast<double>(free)) + " free of " +
                       memory::gigabytes(static_cast<double>(total)));
    }
  }
}

double device_used_bytes(int device) {
  DCPSIM_CUDA(cudaSetDevice(device));
  std::size_t free = 0, total = 0;
  DCPSIM_CUDA(cudaMemGetInfo(&free, &total));
  return static_cast<double>(total - free);
}

}  // namespace dcpsim::hw
