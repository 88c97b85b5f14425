// Host entry points to the kernels (kernels.h): each uploads reference tensors, launches one operation on the
// current device and downloads the result in the reference's types.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "cuda_check.h"
#include "dcpsim/error.h"
#include "dcpsim/hw/kernels.h"
#include "device_buffer.h"
#include "host_convert.h"
#include "ops.h"

namespace dcpsim::hw {
namespace {

DeviceBuffer upload_as(ops::Elem e, const std::vector<double>& v) {
  return upload(to_device_bytes(e, v));
}

std::vector<double> download_as(ops::Elem e, const DeviceBuffer& d, std::size_t count) {
  return from_device_bytes(e, download<std::uint8_t>(d, count * ops::elem_bytes(e)));
}

int valid_rows_of(int valid_rows, int rows) {
  return valid_rows < 0 ? rows : std::min(valid_rows, rows);
}

}  // namespace

AttentionGeometry attention_geometry(int qk_dim, int dim, int kv_heads) {
  if (qk_dim == 128 && dim == 128) return AttentionGeometry::kGqa128;
  if (qk_dim == 576 && dim == 512 && kv_heads == 1) return AttentionGeometry::kMla576;
  throw InputError(
      "hw attention supports D_qk = D = 128 (GQA) or D_qk = 576, D = 512 with one KV head (MLA); got D_qk=" +
      std::to_string(qk_dim) + " D=" + std::to_string(dim) + " H_kv=" + std::to_string(kv_heads));
}

models::Partial gpu_local_attention(const models::Problem& problem, const models::KvShard& shard,
                                    const GpuAttentionOptions& options) {
  problem.validate();
  const auto geometry = attention_geometry(problem.qk_dim, problem.dim, problem.kv_heads);
  const bool mla = geometry == AttentionGeometry::kMla576;
  const ops::Elem in = ops::elem_of(options.kv_dtype), out = ops::elem_of(options.attention.out_dtype);
  const int B = problem.rows, H = problem.heads, Hkv = problem.kv_heads, Dqk = problem.qk_dim,
            D = problem.dim;
  if (static_cast<int>(shard.lengths.size()) != B)
    throw InputError("shard rows do not match the problem's rows");

  std::vector<int> lengths(B);
  std::vector<double> k, v;
  std::int64_t max_len = 0;
  for (int b = 0; b < B; ++b) {
    lengths[b] = static_cast<int>(shard.lengths[b]);
    max_len = std::max(max_len, shard.lengths[b]);
  }
  // Rows start on KV pages as in the runner (FlashInfer's page table needs it; dcpsim's kernel reads
  // offsets).
  std::vector<std::int64_t> offsets = paged_row_offsets(lengths, kv_page_tokens(mla));
  k.assign(offsets.back() * Hkv * Dqk, 0.0);
  if (!mla) v.assign(offsets.back() * Hkv * D, 0.0);
  offsets.pop_back();
  for (int b = 0; b < B; ++b) {
    std::copy(shard.k[b].begin(), shard.k[b].end(), k.begin() + offsets[b] * Hkv * Dqk);
    if (mla) {
      for (std::int64_t t = 0; t < shard.lengths[b]; ++t)
        for (int d = 0; d < D; ++d)
          if (shard.v[b][t * D + d] != shard.k[b][t * Dqk + d])
            throw InputError("MLA attention reads V from the latent: V must equal the first D lanes of K");
    } else {
      std::copy(shard.v[b].begin(), shard.v[b].end(), v.begin() + offsets[b] * Hkv * D);
    }
  }
  DeviceBuffer dq = upload_as(in, problem.q), dk = upload_as(in, k), dv = upload_as(in, v);
  DeviceBuffer doff = upload(offsets), dlen = upload(lengths);

  const auto& ao = options.attention;
  models::Partial result;
  result.out_layout = models::OutLayout::padded(B, H, D, ao.out_row_pad);
  result.lse_layout =
      ao.transposed_lse ? models::LseLayout::transposed(B, H) : models::LseLayout::dense(B, H);
  DeviceBuffer dout(result.out_layout.storage_size() * ops::elem_bytes(out));
  DeviceBuffer dlse(result.lse_layout.storage_size() * sizeof(float));
  if (dout.bytes())
    DCPSIM_CUDA(cudaMemset(dout.get(), 0xff, dout.bytes()));  // poison: every lane must be written

  ops::AttentionArgs a;
  a.geometry = mla ? ops::Geometry::kMla576 : ops::Geometry::kGqa128;
  a.in = in;
  a.out = out;
  a.rows = B;
  a.valid_rows = valid_rows_of(ao.valid_rows, B);
  a.heads = H;
  a.kv_heads = Hkv;
  a.q = dq.get();
  a.q_row_stride = std::int64_t(H) * Dqk;
  a.q_block_heads = H;
  a.q_block_stride = 0;
  a.k = dk.get();
  a.v = mla ? dk.get() : dv.get();
  a.k_token_stride = std::int64_t(Hkv) * Dqk;
  a.v_token_stride = mla ? std::int64_t(Dqk) : std::int64_t(Hkv) * D;
  a.kv_offset = doff.as<std::int64_t>();
  a.kv_len = dlen.as<int>();
  a.max_len = max_len;
  a.scale = static_cast<float>(ao.scale > 0 ? ao.scale : 1.0 / std::sqrt(double(Dqk)));
  a.base2 = ao.base == models::LseBase::k2;
  a.o = dout.get();
  a.o_row_stride = result.out_layout.row_stride;
  a.o_head_stride = result.out_layout.head_stride;
  a.lse = {dlse.as<float>(), result.lse_layout.row_stride, result.lse_layout.head_stride};
  const float inf = std::numeric_limits<float>::infinity();
  a.empty_lse = ao.empty == models::EmptyRowMarker::kPosInfZero ? inf : -inf;
  a.empty_fill =
      ao.empty == models::EmptyRowMarker::kNegInfNaN ? std::numeric_limits<float>::quiet_NaN() : 0.f;
  a.splits = options.splits;
  if (options.impl == AttentionImpl::kFlashInfer) {
    ops::FlashInferAttention fi(a, offsets, lengths);
    fi.launch(a, nullptr);
  } else {
    int device = 0;
    DCPSIM_CUDA(cudaGetDevice(&device));
    DeviceBuffer ws(ops::attention_workspace_bytes(a, ops::attention_splits(a, device)));
    a.workspace = ws.as<float>();
    ops::launch_attention(a, nullptr);
  }
  DCPSIM_CUDA(cudaDeviceSynchronize());

  result.out = download_as(out, dout, result.out_layout.storage_size());
  result.lse = to_doubles(download<float>(dlse, result.lse_layout.storage_size()));
  return result;
}

GpuCorrectResult gpu_lse_correct(std::span<const models::Partial> partials, int rank,
                                 const GpuCorrectOptions& o) {
  const int N = static_cast<int>(partials.size());
  if (N == 0 || rank < 0 || rank >= N)
    throw InputError("correction: rank " + std::to_string(rank) + " outside the group");
  const models::Partial& mine = partials[rank];
  mine.validate();
  const int B = mine.out_layout.rows, H = mine.out_layout.heads, D = mine.out_layout.dim;
  const auto& ll = mine.lse_layout;
  std::vector<float> lses;
  for (const auto& p : partials) {
    if (p.lse_layout.row_stride != ll.row_stride || p.lse_layout.head_stride != ll.head_stride ||
        p.lse_layout.rows != B || p.lse_layout.heads != H)
      throw InputError("correction: every rank's LSE must share one layout");
    lses.insert(lses.end(), p.lse.begin(), p.lse.end());
  }
  if (o.head_blocks && H % N != 0)
    throw InputError("correction: H=" + std::to_string(H) + " is not divisible by N=" + std::to_string(N));
  const ops::Elem e = ops::elem_of(o.out_dtype);
  DeviceBuffer din = upload_as(e, mine.out), dl = upload(lses), dm(std::size_t(B) * H * sizeof(float));
  const int hpb = o.head_blocks ? H / N : H;
  DeviceBuffer dout(o.head_blocks ? std::size_t(B) * H * D * ops::elem_bytes(e) : 0);

  auto a = ops::with_dims<ops::CorrectArgs>(
      {N, B, valid_rows_of(o.valid_rows, B), H, D, o.base == models::LseBase::k2, e});
  a.rank = rank;
  a.lse = {dl.as<float>(), static_cast<std::int64_t>(ll.storage_size()), ll.row_stride, ll.head_stride};
  a.in = din.get();
  a.in_row_stride = mine.out_layout.row_stride;
  a.in_head_stride = mine.out_layout.head_stride;
  if (o.head_blocks) {
    a.out = dout.get();
    a.out_block_heads = hpb;
    a.out_block_stride = std::int64_t(B) * hpb * D;
    a.out_row_stride = std::int64_t(hpb) * D;
    a.out_head_stride = D;
  } else {
    a.out = din.get();
    a.out_block_heads = H;
    a.out_block_stride = 0;
    a.out_row_stride = a.in_row_stride;
    a.out_head_stride = a.in_head_stride;
  }
  a.merged_lse = {dm.as<float>(), H, 1};
  a.variant = o.variant;
  ops::launch_correct(a, nullptr);
  DCPSIM_CUDA(cudaDeviceSynchronize());
  GpuCorrectResult r;
  r.out = o.head_blocks ? download_as(e, dout, std::size_t(B) * H * D) : download_as(e, din, mine.out.size());
  r.lse = to_doubles(download<float>(dm, std::size_t(B) * H));
  return r;
}

models::A2aBuffer gpu_a2a_pack(const models::Partial& partial, int dcp, models::DType dtype, int valid_rows) {
  partial.validate();
  const int B = partial.out_layout.rows, H = partial.out_layout.heads, D = partial.out_layout.dim;
  if (dcp < 1 || H % dcp != 0)
    throw InputError("a2a pack: H=" + std::to_string(H) + " is not divisible by N=" + std::to_string(dcp));
  const ops::Elem e = ops::elem_of(dtype);
  models::A2aBuffer buf;
  buf.dtype = dtype;
  buf.blocks = dcp;
  buf.rows = B;
  buf.heads_per_block = H / dcp;
  buf.dim = D;
  const std::size_t bytes = std::size_t(dcp) * B * buf.heads_per_block * buf.lanes() * ops::elem_bytes(e);
  DeviceBuffer dout = upload_as(e, partial.out), dl = upload(to_floats(partial.lse)), dsend(bytes);
  auto a = ops::with_dims<ops::PackArgs>({dcp, B, valid_rows_of(valid_rows, B), H, D, false, e});
  a.o = dout.get();
  a.o_row_stride = partial.out_layout.row_stride;
  a.o_head_stride = partial.out_layout.head_stride;
  a.lse = dl.as<float>();
  a.lse_row_stride = partial.lse_layout.row_stride;
  a.lse_head_stride = partial.lse_layout.head_stride;
  a.send = dsend.get();
  ops::launch_a2a_pack(a, nullptr);
  DCPSIM_CUDA(cudaDeviceSynchronize());
  buf.bytes = download<std::uint8_t>(dsend, bytes);
  return buf;
}

GpuSplitPack gpu_a2a_split_pack(const models::Partial& partial, int dcp, models::DType dtype,
                                int valid_rows) {
  partial.validate();
  const int B = partial.out_layout.rows, H = partial.out_layout.heads, D = partial.out_layout.dim;
  if (dcp < 1 || H % dcp != 0)
    throw InputError("a2a split pack: H=" + std::to_string(H) +
                     " is not divisible by N=" + std::to_string(dcp));
  const ops::Elem e = ops::elem_of(dtype);
  GpuSplitPack out{dcp, B, H / dcp, D, {}, {}};
  const std::size_t elems = std::size_t(B) * H * D, slots = std::size_t(B) * H;
  DeviceBuffer dout = upload_as(e, partial.out), dl = upload(to_floats(partial.lse));
  DeviceBuffer dsend(elems * ops::elem_bytes(e)), dlse(slots * sizeof(float));
  auto a = ops::with_dims<ops::PackArgs>({dcp, B, valid_rows_of(valid_rows, B), H, D, false, e});
  a.o = dout.get();
  a.o_row_stride = partial.out_layout.row_stride;
  a.o_head_stride = partial.out_layout.head_stride;
  a.lse = dl.as<float>();
  a.lse_row_stride = partial.lse_layout.row_stride;
  a.lse_head_stride = partial.lse_layout.head_stride;
  a.send = dsend.get();
  a.lse_send = dlse.as<float>();
  ops::launch_a2a_pack(a, nullptr);
  DCPSIM_CUDA(cudaDeviceSynchronize());
  out.out = download_as(e, dsend, elems);
  out.lse = download<float>(dlse, slots);
  return out;
}

GpuMergedBlock gpu_a2a_combine(const models::A2aBuffer& received, models::LseBase base,
                               models::DType out_dtype, int valid_rows, int variant) {
  const ops::Elem in = ops::elem_of(received.dtype), out = ops::elem_of(out_dtype);
  const int B = received.rows, J = received.heads_per_block, D = received.dim, lanes = received.lanes();
  DeviceBuffer drecv = upload(received.bytes), ddst(std::size_t(B) * J * D * ops::elem_bytes(out));
  DeviceBuffer dl(std::size_t(B) * J * sizeof(float));
  auto a = ops::with_dims<ops::CombineArgs>(
      {received.blocks, B, valid_rows_of(valid_rows, B), J, D, base == models::LseBase::k2, in});
  a.o = drecv.get();
  a.src_stride = std::int64_t(B) * J * lanes;
  a.o_lanes = lanes;
  a.out = out;
  a.dst = ddst.get();
  a.dst_row_stride = std::int64_t(J) * D;
  a.dst_head_stride = D;
  a.merged_lse = {dl.as<float>(), J, 1};
  a.variant = variant;
  ops::launch_combine(a, nullptr);
  DCPSIM_CUDA(cudaDeviceSynchronize());
  GpuMergedBlock r{B, J, D, download_as(out, ddst, std::size_t(B) * J * D),
                   to_doubles(download<float>(dl, std::size_t(B) * J))};
  return r;
}

GpuMergedBlock gpu_combine_slots(std::span<const models::Partial> partials, int owner,
                                 const GpuCombineOptions& o) {
  const int N = static_cast<int>(partials.size());
  if (N == 0 || owner < 0 || owner >= N)
    throw InputError("combine: owner " + std::to_string(owner) + " outside the group");
  for (const auto& p : partials) p.validate();
  const int B = partials[0].out_layout.rows, H = partials[0].out_layout.heads, D = partials[0].out_layout.dim;
  if (H % N != 0)
    throw InputError("combine: H=" + std::to_string(H) + " is not divisible by N=" + std::to_string(N));
  const int J = H / N;
  std::vector<double> slots;
  std::vector<float> lses;
  for (const auto& p : partials) {
    if (p.out_layout.rows != B || p.out_layout.heads != H || p.out_layout.dim != D)
      throw InputError("combine: every partial must have the same shape");
    for (int b = 0; b < B; ++b)
      for (int j = 0; j < J; ++j) {
        lses.push_back(static_cast<float>(p.l(b, owner * J + j)));
        for (int d = 0; d < D; ++d) slots.push_back(p.o(b, owner * J + j, d));
      }
  }
  const ops::Elem e = ops::elem_of(o.dtype);
  DeviceBuffer dslots = upload_as(e, slots), dl = upload(lses),
               ddst(std::size_t(B) * J * D * ops::elem_bytes(e));
  DeviceBuffer dm(std::size_t(B) * J * sizeof(float));
  auto a = ops::with_dims<ops::CombineArgs>(
      {N, B, valid_rows_of(o.valid_rows, B), J, D, o.base == models::LseBase::k2, e});
  a.out = e;
  a.o = dslots.get();
  a.o_lanes = D;
  a.src_stride = std::int64_t(B) * J * D;
  a.lse = dl.as<float>();
  a.lse_src_stride = std::int64_t(B) * J;
  a.dst = ddst.get();
  a.dst_row_stride = std::int64_t(J) * D;
  a.dst_head_stride = D;
  a.merged_lse = {dm.as<float>(), J, 1};
  a.variant = o.variant;
  ops::launch_combine(a, nullptr);
  DCPSIM_CUDA(cudaDeviceSynchronize());
  return GpuMergedBlock{B, J, D, download_as(e, ddst, std::size_t(B) * J * D),
                        to_doubles(download<float>(dm, std::size_t(B) * J))};
}

}  // namespace dcpsim::hw
