#include "plan.h"

#include <cstdio>

#include "dcpsim/error.h"
#include "dcpsim/hw/device.h"
#include "dcpsim/hw/kernels.h"
#include "dcpsim/models/sharding.h"
#include "strategy.h"

namespace dcpsim::hw {

// The step vocabulary of traces/phases.h: the simulator writes the same names.
const char* phase_name(Phase p) {
  switch (p) {
    case Phase::kQAllGather:
      return "query_all_gather";
    case Phase::kAttention:
      return "attention";
    case Phase::kLseAllGather:
      return "lse_all_gather";
    case Phase::kCorrect:
      return "correction";
    case Phase::kReduceScatter:
      return "reduce_scatter";
    case Phase::kAllReduce:
      return "all_reduce";
    case Phase::kA2aPack:
      return "a2a_pack";
    case Phase::kAllToAll:
      return "all_to_all";
    case Phase::kAllToAllLse:
      return "all_to_all_lse";
    case Phase::kA2aCombine:
      return "a2a_combine";
    case Phase::kDirectMerge:
      return "direct_merge";
    case Phase::kFlashInferMerge:
      return "flashinfer_merge";
    case Phase::kRowCombine:
      return "row_stream_combine";
  }
  return "?";
}

bool is_collective(Phase p) {
  return p == Phase::kQAllGather || p == Phase::kLseAllGather || p == Phase::kReduceScatter ||
         p == Phase::kAllReduce || p == Phase::kAllToAll || p == Phase::kAllToAllLse;
}

std::int64_t StepPlan::local_len(int row, int rank) const {
  return models::local_length(contexts[row], rank, N, I);
}

std::int64_t StepPlan::q_index(int row, int head, int d) const {
  if (!gather_q) return (std::int64_t(row) * H + head) * Dqk + d;
  // Filled per rank as [N][B][H/N][D_qk] blocks (rank n holds block n before the gather).
  return ((std::int64_t(head / J) * rows_total + row) * J + head % J) * Dqk + d;
}

namespace {

// An fp8 KV cache runs only on FlashInfer's FP8-KV kernels (hw/README.md): MLA 576/512 on sm_90a and GQA
// decode D = 128 on sm_90/sm_100, bf16 query and output. Anything else is refused in one line saying why;
// never a silent fallback to a bf16 cache.
AttentionImpl fp8_kv_attention(const RunConfig& c, const StepPlan& p, FlashInferGeometry g) {
  const std::string no = "--kv-dtype fp8: ";
  const std::string kernels =
      "FlashInfer's FP8-KV kernels (MLA D_qk 576/D 512 on sm_90a, GQA decode D 128 on sm_90/sm_100)";
  if (c.attention == AttentionImpl::kDcpsim)
    throw InputError(no + "dcpsim's attention kernel reads bf16/fp16 KV only; fp8 runs on " + kernels +
                     " (--attention flashinfer or auto)");
  if (p.N > 1 && p.s.strategy == models::Strategy::kRowStream)
    throw InputError(no + "row-stream pushes rows from dcpsim's attention kernel, which reads no fp8 KV");
  if (p.out != ops::Elem::kBF16)
    throw InputError(no + kernels + " write bf16 output, not --out-dtype " +
                     std::string(models::to_string(p.s.out_dtype)));
  g.bf16 = true;  // the query is bf16 beside an fp8 cache
  if (const std::string why = flashinfer_unsupported(g); !why.empty())
    throw InputError(no + "needs " + kernels + ": " + why);
  const auto geometry = p.mla ? ops::Geometry::kMla576 : ops::Geometry::kGqa128;
  std::vector<int> devices = c.devices;
  if (devices.empty() || c.mode == ProcessMode::kMpi) devices = {0};
  const int visible = device_count();
  for (int d : devices) {
    if (d < 0 || d >= visible || ops::flashinfer_runs_on(geometry, d))
      continue;  // the runner reports bad ids
    const DeviceInfo info = device_info(d);
    throw InputError(no + "device " + std::to_string(d) + " (" + info.name + ", sm_" +
                     std::to_string(info.cc_major) + std::to_string(info.cc_minor) + ") is not a GPU " +
                     kernels + " run on");
  }
  return AttentionImpl::kFlashInfer;
}

// FlashInfer where it runs this geometry on the run's devices (auto), or as asked; a fallback says why once.
AttentionImpl resolve_attention(const RunConfig& c, const StepPlan& p) {
  const FlashInferGeometry g{
      p.H, p.Hkv, p.Dqk, p.D, p.in == ops::Elem::kBF16 && p.out == ops::Elem::kBF16, c.row_stamps};
  std::string notice;
  if (p.kv_fp8) return fp8_kv_attention(c, p, g);
  if (p.N > 1 && p.s.strategy == models::Strategy::kRowStream) {
    // FlashInfer's kernels have no epilogue to push rows from, and a push after them was tried: at N = 8,
    // B = 64, H = 128 its Hopper MLA kernel did not finish beside the owners' spinning combines
    // (hw/README.md).
    if (c.attention == AttentionImpl::kFlashInfer)
      throw InputError(
          "--attention flashinfer: row-stream pushes rows from the attention's epilogue, which FlashInfer's "
          "kernels do not have; use --attention dcpsim (or auto)");
    if (c.attention == AttentionImpl::kAuto)
      std::fprintf(stderr, "attention: dcpsim's kernel (row-stream pushes rows from its epilogue)\n");
    return AttentionImpl::kDcpsim;
  }
  AttentionImpl impl = resolve_attention_impl(c.attention, g, &notice);
  if (impl == AttentionImpl::kFlashInfer) {
    const auto geometry = p.mla ? ops::Geometry::kMla576 : ops::Geometry::kGqa128;
    std::vector<int> devices = c.devices;
    if (devices.empty() || c.mode == ProcessMode::kMpi) devices = {0};
    const int visible = device_count();
    for (int d : devices) {
      if (d < 0 || d >= visible || ops::flashinfer_runs_on(geometry, d))
        continue;  // the runner reports bad ids
      const std::string why =
          "device " + std::to_string(d) + " is not a GPU this build's FlashInfer " +
          (p.mla ? "MLA kernel runs on (sm_90a)" : "decode kernel runs on (sm_90, sm_100)");
      if (c.attention == AttentionImpl::kFlashInfer) throw InputError("--attention flashinfer: " + why);
      notice = "attention: dcpsim's kernel (" + why + ")";
      impl = AttentionImpl::kDcpsim;
      break;
    }
  }
  if (!notice.empty()) std::fprintf(stderr, "%s\n", notice.c_str());
  return impl;
}

}  // namespace

StepPlan make_plan(const RunConfig& c) {
  const models::Scenario& s = c.scenario;
  s.validate();
  StepPlan p;
  p.s = s;
  p.N = s.dcp;
  p.B = s.rows();
  if (c.padded_rows < 0) throw InputError("--padded-rows " + std::to_string(c.padded_rows) + " must be >= 0");
  p.rows_total = p.B + c.padded_rows;
  p.H = s.heads;
  p.Hkv = s.kv_heads;
  p.Dqk = s.qk_dim;
  p.D = s.head_dim;
  p.I = s.interleave;
  p.seed = c.seed;
  p.mla = attention_geometry(p.Dqk, p.D, p.Hkv) == AttentionGeometry::kMla576;
  if (s.kv_dtype == models::DType::kF32 || s.kv_dtype == models::DType::kF64)
    throw InputError("--kv-dtype " + std::string(models::to_string(s.kv_dtype)) +
                     ": the hw kernels take bf16 or fp16 inputs");
  if (s.out_dtype == models::DType::kF64)
    throw InputError("--out-dtype fp64: the hw kernels write bf16, fp16 or fp32");
  // An fp8 KV cache: e4m3 K/V with a per-tensor scale, the query bf16 (vLLM's --kv-cache-dtype fp8).
  p.kv_fp8 = s.kv_dtype == models::DType::kFP8E4M3;
  p.kv_scale = static_cast<float>(kFp8KvScale);
  p.in = p.kv_fp8 ? ops::Elem::kBF16 : ops::elem_of(s.kv_dtype);
  p.out = ops::elem_of(s.out_dtype);
  const HwStrategy& strategy = hw_strategy(s.strategy);  // InputError for a simulator-only strategy
  if (c.reps < 1 || c.warmup < 0) throw InputError("--reps must be >= 1 and --warmup >= 0");
  p.contexts = s.contexts;
  p.contexts.resize(p.rows_total, 0);
  p.global_row_base.resize(p.rows_total);
  std::int64_t base = 0;
  for (int b = 0; b < p.rows_total; ++b) {
    p.global_row_base[b] = base;
    base += p.contexts[b];
  }
  p.gather_q = p.N > 1 && p.H % p.N == 0;
  p.attention = resolve_attention(c, p);
  p.J = p.H % p.N == 0 ? p.H / p.N : 0;
  p.row_stamps = c.row_stamps || (p.N > 1 && s.strategy == models::Strategy::kRowStream);

  if (p.gather_q) p.phases.push_back(Phase::kQAllGather);
  p.phases.push_back(Phase::kAttention);
  if (p.N > 1) {
    strategy.check(p, c);
    const std::vector<Phase> merge = strategy.phases();
    p.phases.insert(p.phases.end(), merge.begin(), merge.end());
  }
  return p;
}

}  // namespace dcpsim::hw
