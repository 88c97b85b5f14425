// The grid of a kernel sweep (sweep_grid.h), and the parts of sweep.h that need no device.
#include "sweep_grid.h"

#include <algorithm>

#include "dcpsim/error.h"
#include "dcpsim/hw/attention_impl.h"
#include "dcpsim/models/cost_kernels.h"
#include "dcpsim/models/kernel_plan.h"

namespace dcpsim::hw {
namespace detail {
namespace {

using models::TableKernel;

// The implementation a point's key names. FlashInfer asked for by name is planned as such even in a build
// without it (a plan printed on a CPU-only machine for a GPU one); running such a sweep is refused up front
// (run_kernel_sweep). An fp8 cache runs on FlashInfer's kernels whatever was asked (check_grid refuses
// dcpsim's), as `hw run --kv-dtype fp8` resolves it.
AttentionImpl planned_impl(AttentionImpl requested, const FlashInferGeometry& g, bool kv_fp8) {
  if (kv_fp8) return AttentionImpl::kFlashInfer;
  if (requested == AttentionImpl::kFlashInfer && !built_with_flashinfer()) return AttentionImpl::kFlashInfer;
  return resolve_attention_impl(requested, g);
}

bool fp8(const KernelSweepConfig& c) {
  return c.kv_dtype == models::DType::kFP8E4M3;
}

// What refuses an fp8 sweep: a kernel other than attention, dcpsim's kernel, a geometry FlashInfer's FP8-KV
// kernels do not run (as hw run refuses them, hw/src/plan.cc).
void check_fp8(const KernelSweepConfig& c) {
  const std::string no = "kernel sweep: --kv-dtype fp8: ";
  for (const std::string& k : c.kernels)
    if (k != "attention")
      throw InputError(no +
                       "an fp8 cache is attention's alone (the merge kernels read no KV); give --kernels "
                       "attention, not " +
                       k);
  if (c.attention == AttentionImpl::kDcpsim)
    throw InputError(no +
                     "dcpsim's attention kernel reads bf16/fp16 KV only; fp8 runs on FlashInfer's FP8-KV "
                     "kernels (--attention flashinfer or auto)");
  for (const SweepGeometry& g : c.geometries) {
    for (int h : c.heads) {
      if (!g.mla && h % g.group != 0) continue;
      FlashInferGeometry fg{h, 1, 576, 512, true, false};
      if (!g.mla) fg = {h, h / g.group, 128, 128, true, false};
      if (const std::string why = flashinfer_geometry_unsupported(fg); !why.empty())
        throw InputError(no + sweep_geometry_name(g) + " has no FlashInfer FP8-KV kernel: " + why);
    }
  }
}

std::string kernel_op(TableKernel k) {
  switch (k) {
    case TableKernel::kAttention:
      return "attention";
    case TableKernel::kCorrection:
      return "correct";
    case TableKernel::kA2aPack:
      return "a2a-pack";
    case TableKernel::kA2aCombine:
      return "a2a-combine";
    default:
      break;
  }
  throw InputError("kernel sweep: '" + std::string(models::to_string(k)) +
                   "' cannot be swept (attention, correction, a2a_pack, a2a_combine)");
}

}  // namespace

std::vector<SweepPoint> grid_points(const KernelSweepConfig& c, std::vector<std::string>* skipped) {
  std::vector<SweepPoint> out;
  for (const std::string& name : c.kernels) {
    const TableKernel k = models::parse_table_kernel(name);
    const std::string op = kernel_op(k);
    if (k == TableKernel::kAttention) {
      for (const SweepGeometry& g : c.geometries) {
        for (int h : c.heads) {
          if (!g.mla && h % g.group != 0) continue;
          for (int b : c.rows) {
            for (std::int64_t n : c.tokens) {
              SweepPoint p{k, op, {}, "", {double(h), double(b), double(n)}, ""};
              p.shape.rows = b;
              p.shape.heads = h;
              p.shape.kv_heads = g.mla ? 1 : h / g.group;
              p.shape.dim = g.mla ? 512 : 128;
              p.shape.qk_dim = g.mla ? 576 : 128;
              p.shape.context = n;
              p.shape.attention = c.attention;
              models::AttentionShape a;
              a.heads = h;
              a.kv_heads = p.shape.kv_heads;
              a.head_dim = p.shape.dim;
              a.qk_dim = p.shape.qk_dim;
              a.shared_kv = g.mla;
              a.kv_dtype = c.kv_dtype;
              p.shape.kv_fp8 = fp8(c);
              // The key names the implementation that runs (auto resolves as `hw run` does).
              const AttentionImpl impl = planned_impl(
                  c.attention, {h, p.shape.kv_heads, p.shape.qk_dim, p.shape.dim, true, false}, fp8(c));
              p.key = models::attention_table_key(a) + " " + attention_impl_name(impl);
              p.shape.attention = impl;
              p.label = "attention " + sweep_geometry_name(g) + (fp8(c) ? " fp8" : "") +
                        " H=" + std::to_string(h) + " B=" + std::to_string(b) +
                        " tokens=" + std::to_string(n);
              const double kv = double(b) * double(n) * models::kv_bytes_per_token(a);
              if (kv > c.max_kv_bytes) {
                if (skipped) skipped->push_back(p.label + ": KV cache over the size limit");
                continue;
              }
              out.push_back(std::move(p));
            }
          }
        }
      }
      continue;
    }
    for (int d : c.merge_dims) {
      for (int n : c.merge_dcp) {
        for (int b : c.merge_rows) {
          const bool per_owner = models::heads_per_rank_axis(k);
          for (int v : per_owner ? c.merge_heads_per_rank : c.merge_heads) {
            // The correction in place (AG+AR) and into the reduce-scatter's layout (AG+RS, H divisible by N).
            for (bool rs : {false, true}) {
              const int h = per_owner ? n * v : v;  // H
              if (rs && (k != TableKernel::kCorrection || h % n != 0)) continue;
              SweepPoint p{k, op, {}, "", {double(n), double(b), double(v)}, ""};
              p.shape.dcp = n;
              p.shape.rows = b;
              p.shape.heads = h;
              p.shape.dim = d;
              p.shape.row_stamps = c.row_stamps;
              p.shape.rs_layout = rs;
              p.shape.split_lse = c.split_lse;
              models::MergeShape m;
              m.dcp = n;
              m.rows = b;
              m.heads = h;
              m.head_dim = d;
              m.cold_inputs = c.cold_merge_inputs;
              m.warm_lse = c.warm_lse && k == TableKernel::kCorrection;
              m.row_stamps = c.row_stamps;
              m.rs_layout = rs;
              m.split_lse = c.split_lse;
              p.key = models::merge_table_key(m);
              m.pdl = true;
              if (c.pdl) p.pdl_key = models::merge_table_key(m);
              p.label = std::string(models::to_string(k)) + " d" + std::to_string(d) +
                        " N=" + std::to_string(n) + " B=" + std::to_string(b) + " H=" + std::to_string(h) +
                        (rs ? " rs" : "") + (c.split_lse ? " split" : "");
              out.push_back(std::move(p));
            }
          }
        }
      }
    }
  }
  return out;
}

void check_grid(const KernelSweepConfig& c) {
  auto positive = [](const auto& v, const char* what) {
    if (v.empty()) throw InputError(std::string("kernel sweep: the ") + what + " list is empty");
    for (auto x : v)
      if (x < 1) throw InputError(std::string("kernel sweep: ") + what + " must be >= 1");
  };
  if (c.kernels.empty()) throw InputError("kernel sweep: no kernel to sweep");
  positive(c.heads, "heads");
  positive(c.rows, "rows");
  positive(c.tokens, "tokens");
  positive(c.merge_dcp, "merge N");
  positive(c.merge_rows, "merge rows");
  positive(c.merge_heads, "merge heads");
  positive(c.merge_heads_per_rank, "merge heads per rank");
  for (int n : c.merge_dcp)
    if (n < 2) throw InputError("kernel sweep: merge N must be >= 2 (a group of one merges nothing)");
  for (int d : c.merge_dims)
    if (d != 128 && d != 512) throw InputError("kernel sweep: merge head dims are 128 or 512");
  if (c.geometries.empty()) throw InputError("kernel sweep: no attention geometry");
  if (c.kv_dtype != models::DType::kBF16 && !fp8(c))
    throw InputError("kernel sweep: --kv-dtype " + std::string(models::to_string(c.kv_dtype)) +
                     ": attention is swept with a bf16 or an fp8 (e4m3) KV cache");
  if (fp8(c)) check_fp8(c);
  // A point is recorded at its heads, so only heads the simulator reads a table at (models::
  // attention_table_heads): dcpsim's MLA kernel at whole 64-head CTA tiles above 64; FlashInfer's at H up to
  // 128 (72 at least above 64) and whole 128-head cluster tiles above. A point at H = 160 would be recorded
  // where H = 256 is read.
  for (const SweepGeometry& g : c.geometries) {
    if (!g.mla) continue;
    for (int h : c.heads) {
      const AttentionImpl impl = planned_impl(c.attention, {h, 1, 576, 512, true, false}, fp8(c));
      if (impl == AttentionImpl::kDcpsim && h > 64 && h % 64 != 0)
        throw InputError(
            "kernel sweep: MLA heads above 64 must be multiples of 64 for dcpsim's kernel (its "
            "head tile), got " +
            std::to_string(h));
      if (impl != AttentionImpl::kDcpsim && models::flashinfer_mla_table_heads(h) != h)
        throw InputError(
            "kernel sweep: MLA heads for FlashInfer's kernel are up to 64, 72 to 128, or multiples of 128 "
            "above (where the simulator reads its tables), got " +
            std::to_string(h));
    }
  }
  if (c.row_stamps) {
    for (const std::string& k : c.kernels)
      if (k != "correction" && k != "a2a_combine")
        throw InputError(
            "kernel sweep: --row-stamps times correction and a2a_combine only (the kernels that "
            "stamp rows), not " +
            k);
  }
  if (c.split_lse) {
    for (const std::string& k : c.kernels)
      if (k != "a2a_pack" && k != "a2a_combine")
        throw InputError(
            "kernel sweep: --split-lse times a2a_pack and a2a_combine only (a2a-2call's layout), not " + k +
            ": give --kernels a2a_pack,a2a_combine");
    if (c.row_stamps && std::find(c.kernels.begin(), c.kernels.end(), "a2a_pack") != c.kernels.end())
      throw InputError(
          "kernel sweep: --split-lse --row-stamps times a2a_combine only (the pack stamps no rows)");
  }
  if (c.pdl) {
    for (const std::string& k : c.kernels)
      if (k == "attention")
        throw InputError(
            "kernel sweep: only merge kernels are timed under --pdl (give --kernels without attention)");
    if (c.pdl_chain < 2 || c.pdl_chain > 16)
      throw InputError("kernel sweep: --pdl-chain must be in [2, 16], got " + std::to_string(c.pdl_chain));
    if (c.cold_merge_inputs && c.pdl_chain > kPdlColdChainMax)
      throw InputError("kernel sweep: a cold --pdl-chain is at most " + std::to_string(kPdlColdChainMax) +
                       " calls long (each call reads its own input set), got " + std::to_string(c.pdl_chain));
  } else if (c.pdl_chain != 3) {
    throw InputError("kernel sweep: --pdl-chain needs --pdl");
  }
  if (c.reps < 3 || c.warmup < 0) throw InputError("kernel sweep: --reps must be >= 3 and --warmup >= 0");
}

}  // namespace detail

SweepGeometry parse_sweep_geometry(const std::string& s) {
  if (s == "mla") return {true, 1};
  if (s.rfind("gqa:", 0) == 0) {
    const std::string g = s.substr(4);
    if (!g.empty() && g.size() <= 3 && g.find_first_not_of("0123456789") == std::string::npos) {
      const int group = std::stoi(g);
      if (group >= 1 && group <= 128) return {false, group};
    }
  }
  throw InputError("attention geometry '" + s +
                   "': expected mla or gqa:G (G query heads per KV head, 1-128)");
}

std::string sweep_geometry_name(const SweepGeometry& g) {
  return g.mla ? "mla" : "gqa:" + std::to_string(g.group);
}

int kernel_sweep_points(const KernelSweepConfig& config) {
  detail::check_grid(config);
  return static_cast<int>(detail::grid_points(config, nullptr).size());
}

std::vector<SweepPointPlan> kernel_sweep_plan(const KernelSweepConfig& config) {
  detail::check_grid(config);
  std::vector<std::string> skipped;
  std::vector<SweepPointPlan> out;
  for (detail::SweepPoint& p : detail::grid_points(config, &skipped))
    out.push_back({p.kernel, std::move(p.key), std::move(p.at), p.shape});
  return out;
}

}  // namespace dcpsim::hw
