// Decode attention through FlashInfer (the kernels production serving runs): Hopper MLA
// (mla::BatchMLAPageAttentionHopper, planner MLAPlan) and GQA batch decode
// (BatchDecodeWithPagedKVCacheDispatched, planner DecodePlan), over a vLLM-style page table built on the
// rank's shard storage. Around FlashInfer's kernels this op adds what dcpsim's contract needs and FlashInfer
// does not do: the query all-gather's head-block layout repacked to [B][H][D_qk], and one fix-up kernel that
// writes the LSE in the caller's base and layout and marks empty rows (no local KV) and CUDA-graph padding
// rows like dcpsim's kernel (empty_lse, O = empty_fill). FlashInfer itself is compiled in flashinfer_mla.cu
// and flashinfer_decode.cu (flashinfer_kernels.h).
#include <cuda_bf16.h>

#include <cmath>
#include <string>

#include "cuda_check.h"
#include "dcpsim/error.h"
#include "dcpsim/hw/attention_impl.h"
#include "device_buffer.h"
#include "flashinfer_kernels.h"
#include "ops.h"

namespace dcpsim::hw::ops {

#if defined(DCPSIM_WITH_FLASHINFER)
namespace {

namespace fk = flashinfer_kernels;

// Q (b, h, :) from the head-block layout to a dense [B][H][D_qk] copy, 16 bytes per thread and step.
struct RepackParams {
  const __nv_bfloat16* src;
  std::int64_t row_stride, block_stride;
  int block_heads, heads, dqk;
  __nv_bfloat16* dst;
};

__global__ void repack_q_kernel(RepackParams p) {
  const int b = blockIdx.y, h = blockIdx.x;
  const __nv_bfloat16* s = p.src + (h / p.block_heads) * p.block_stride + b * p.row_stride +
                           std::int64_t(h % p.block_heads) * p.dqk;
  __nv_bfloat16* d = p.dst + (std::int64_t(b) * p.heads + h) * p.dqk;
  for (int i = threadIdx.x; i < p.dqk / 8; i += blockDim.x)
    reinterpret_cast<uint4*>(d)[i] = reinterpret_cast<const uint4*>(s)[i];
}

struct FixupParams {
  int valid_rows, heads, dim;
  const int* kv_len;
  const float* src_lse;  // [B][H] as the kernel wrote it
  float lse_scale;       // 1, or ln 2 (base-2 LSE to base e)
  float o_scale;         // 1, or an fp8 V cache's scale (FlashInfer's decode has none of its own)
  LseOut lse;
  float empty_lse, empty_fill;
  __nv_bfloat16* o;
  std::int64_t o_row_stride, o_head_stride;
};

// One block per row: the LSE in the caller's base and layout; empty and padding rows get empty_lse and
// O = empty_fill, whatever FlashInfer left there; other rows' O times o_scale (a power of two: exact).
__global__ void fixup_kernel(FixupParams p) {
  const int b = blockIdx.x;
  const bool empty = b >= p.valid_rows || p.kv_len[b] == 0;
  for (int h = threadIdx.x; h < p.heads; h += blockDim.x) {
    const float l = empty ? p.empty_lse : p.src_lse[std::int64_t(b) * p.heads + h] * p.lse_scale;
    p.lse.ptr[b * p.lse.row_stride + h * p.lse.head_stride] = l;
  }
  if (!empty && p.o_scale != 1.f) {
    for (int i = threadIdx.x; i < p.heads * p.dim; i += blockDim.x) {
      __nv_bfloat16& o = p.o[b * p.o_row_stride + (i / p.dim) * p.o_head_stride + i % p.dim];
      o = __float2bfloat16(__bfloat162float(o) * p.o_scale);
    }
  }
  if (!empty) return;
  const __nv_bfloat16 fill = __float2bfloat16(p.empty_fill);
  for (int i = threadIdx.x; i < p.heads * p.dim; i += blockDim.x)
    p.o[b * p.o_row_stride + (i / p.dim) * p.o_head_stride + i % p.dim] = fill;
}

// Whether Q must be repacked for FlashInfer, which addresses (b, h) as b·stride_n + h·stride_h: not when the
// head-block layout is one block, nor for a batch of one row whose blocks lie back to back (row 0's head h is
// then at h·D_qk).
bool needs_q_repack(const AttentionArgs& a, int dqk) {
  if (a.q_block_heads == a.heads) return false;
  return !(a.valid_rows == 1 && a.q_block_stride == std::int64_t(a.q_block_heads) * dqk);
}

void require(bool ok, const std::string& what) {
  if (!ok) throw InputError("FlashInfer attention: " + what);
}

}  // namespace

struct FlashInferAttention::Impl {
  bool mla = false, fp8 = false;
  float kv_scale = 1.f;
  int rows = 0, valid_rows = 0, heads = 0, kv_heads = 1, dqk = 0, dv = 0, page = 0, device = 0;
  bool any_empty = false;
  std::vector<std::int64_t> plan;
  DeviceBuffer indptr, indices, last_page_len, float_ws, int_ws, q_dense, lse_scratch;
  void* int_host = nullptr;

  ~Impl() {
    if (int_host) cudaFreeHost(int_host);
  }
};

FlashInferAttention::FlashInferAttention(const AttentionArgs& a, const std::vector<std::int64_t>& kv_offset,
                                         const std::vector<int>& kv_len)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.mla = a.geometry == Geometry::kMla576;
  m.rows = a.rows;
  m.valid_rows = a.valid_rows;
  m.heads = a.heads;
  m.kv_heads = a.kv_heads;
  m.dqk = m.mla ? 576 : 128;
  m.dv = m.mla ? 512 : 128;
  m.page = kv_page_tokens(m.mla);
  m.fp8 = a.kv_fp8;
  m.kv_scale = a.kv_scale;
  // The fp8 scale multiplies FlashInfer's bf16 values (MLA: the dequantized tile; decode: the output); a
  // power of two keeps that exact.
  require(!m.fp8 || (a.kv_scale > 0 && std::exp2(std::round(std::log2(a.kv_scale))) == a.kv_scale),
          "the fp8 KV scale must be a power of two");
  FlashInferGeometry g{a.heads,
                       a.kv_heads,
                       m.dqk,
                       m.dv,
                       a.in == Elem::kBF16 && a.out == Elem::kBF16,
                       a.stamps.stamps != nullptr};
  if (std::string why = flashinfer_unsupported(g); !why.empty()) throw InputError(why);
  require(a.valid_rows >= 0 && a.valid_rows <= a.rows, "valid_rows outside [0, rows]");
  require(static_cast<int>(kv_len.size()) >= a.rows && static_cast<int>(kv_offset.size()) >= a.rows,
          "host KV offsets/lengths for fewer rows than the batch");
  DCPSIM_CUDA(cudaGetDevice(&m.device));
  require(flashinfer_runs_on(a.geometry, m.device),
          m.mla ? "MLA needs a Hopper GPU (sm_90a)" : "GQA decode needs an sm_90 or sm_100 GPU");
  if (!m.mla) {
    require(a.k_token_stride == a.v_token_stride, "GQA decode reads K and V with the same strides");
    require(a.o_row_stride == std::int64_t(a.heads) * m.dv && a.o_head_stride == m.dv,
            "GQA decode writes O as a dense [B][H][128] tensor");
  }

  // The page table over the real rows only (padding rows are not part of FlashInfer's batch).
  const int n = a.valid_rows;
  std::vector<int> lens(kv_len.begin(), kv_len.begin() + n);
  for (int b = 0; b < a.rows; ++b) m.any_empty = m.any_empty || b >= n || kv_len[b] == 0;
  const PageTable t =
      build_page_table(std::vector<std::int64_t>(kv_offset.begin(), kv_offset.begin() + n), lens, m.page);
  m.indptr = upload(t.indptr);
  m.indices = upload(t.indices.empty() ? std::vector<int>{0} : t.indices);
  m.last_page_len = upload(t.last_page_len.empty() ? std::vector<int>{0} : t.last_page_len);
  if (n == 0) return;

  std::size_t float_bytes = 0, int_bytes = 0;
  if (m.mla) {
    float_bytes = fk::mla_float_workspace_bytes(m.device);
    int_bytes = fk::mla_int_workspace_bytes();
  } else {
    fk::decode_workspace_bytes(float_bytes, int_bytes, t.indptr.data(), n, a.heads, a.kv_heads, m.page,
                               m.fp8);
  }
  m.float_ws = DeviceBuffer(std::max<std::size_t>(float_bytes, 16));
  m.int_ws = DeviceBuffer(std::max<std::size_t>(int_bytes, 16));
  DCPSIM_CUDA(cudaMallocHost(&m.int_host, m.int_ws.bytes()));
  if (m.mla) {
    std::vector<int> qo_indptr(n + 1);
    for (int b = 0; b <= n; ++b) qo_indptr[b] = b;  // one query per row; empty rows plan a zero-length work
    std::size_t used = 0;
    m.plan = fk::mla_plan(m.float_ws.get(), m.float_ws.bytes(), m.int_ws.get(), m.int_host, m.int_ws.bytes(),
                          used, qo_indptr.data(), t.indptr.data(), lens.data(), n, a.heads);
    DCPSIM_CUDA(cudaMemcpy(m.int_ws.get(), m.int_host, used, cudaMemcpyHostToDevice));
  } else {
    m.plan =
        fk::decode_plan(m.float_ws.get(), m.float_ws.bytes(), m.int_ws.get(), m.int_host, m.int_ws.bytes(),
                        t.indptr.data(), n, a.heads, a.kv_heads, m.page, m.fp8, nullptr);
    DCPSIM_CUDA(cudaDeviceSynchronize());
  }
  if (needs_q_repack(a, m.dqk)) m.q_dense = DeviceBuffer(std::size_t(n) * a.heads * m.dqk * 2);
  const bool dense_lse = a.lse.row_stride == a.heads && a.lse.head_stride == 1;
  if (!dense_lse) m.lse_scratch = DeviceBuffer(std::size_t(n) * a.heads * sizeof(float));
}

FlashInferAttention::~FlashInferAttention() = default;

void FlashInferAttention::launch(const AttentionArgs& a, cudaStream_t stream) {
  const Impl& m = *impl_;
  if (a.rows != m.rows || a.valid_rows != m.valid_rows || a.heads != m.heads || a.kv_heads != m.kv_heads)
    throw InputError("FlashInfer attention: launched with another shape than it was planned for");
  const int n = m.valid_rows;
  float* lse_out = m.lse_scratch.get() ? m.lse_scratch.as<float>() : a.lse.ptr;
  // MLA reports base e on request; FlashInfer's decode always reports base 2.
  const float lse_scale = (m.mla || a.base2) ? 1.f : static_cast<float>(std::log(2.0));
  if (n > 0) {
    const auto* q = static_cast<const __nv_bfloat16*>(a.q);
    std::int64_t q_row_stride = a.q_row_stride;  // dense Q, or one row (its stride then never used)
    if (m.q_dense.get()) {
      RepackParams rp{q,
                      a.q_row_stride,
                      a.q_block_stride,
                      a.q_block_heads,
                      a.heads,
                      m.dqk,
                      m.q_dense.as<__nv_bfloat16>()};
      repack_q_kernel<<<dim3(a.heads, n), 64, 0, stream>>>(rp);
      DCPSIM_CUDA_LAUNCHED("repack_q_kernel");
      q = m.q_dense.as<__nv_bfloat16>();
      q_row_stride = std::int64_t(a.heads) * m.dqk;
    }
    if (m.mla) {
      fk::MlaRun r;
      r.q_nope = q;
      r.q_pe = q + 512;
      r.q_stride_n = static_cast<std::uint32_t>(q_row_stride);
      r.q_stride_h = static_cast<std::uint32_t>(m.dqk);
      r.fp8 = m.fp8;
      r.kv_scale = m.kv_scale;
      r.ckv = a.k;
      r.kpe = static_cast<const unsigned char*>(a.k) + 512 * (m.fp8 ? 1 : sizeof(__nv_bfloat16));
      r.kv_stride_page = static_cast<std::uint32_t>(a.k_token_stride * m.page);
      r.kv_stride_n = static_cast<std::uint32_t>(a.k_token_stride);
      r.kv_indices = m.indices.as<int>();
      r.o = a.o;
      r.o_stride_n = static_cast<std::uint32_t>(a.o_row_stride);
      r.o_stride_h = static_cast<std::uint32_t>(a.o_head_stride);
      r.lse = lse_out;
      r.lse_base_e = !a.base2;
      r.heads = a.heads;
      r.page_tokens = m.page;
      r.sm_scale = a.scale;
      fk::mla_run(r, m.plan, m.float_ws.get(), m.int_ws.get(), stream);
    } else {
      fk::DecodeRun r;
      r.fp8 = m.fp8;
      r.q = q;
      r.q_stride_n = static_cast<std::int32_t>(q_row_stride);
      r.q_stride_h = m.dqk;
      r.k = a.k;
      r.v = a.v;
      r.stride_page = a.k_token_stride * m.page;
      r.stride_n = a.k_token_stride;
      r.stride_h = m.dqk;
      r.indptr = m.indptr.as<int>();
      r.indices = m.indices.as<int>();
      r.last_page_len = m.last_page_len.as<int>();
      r.o = a.o;
      r.lse = lse_out;
      r.batch = n;
      r.heads = a.heads;
      r.kv_heads = a.kv_heads;
      r.page_tokens = m.page;
      r.sm_scale = a.scale * (m.fp8 ? m.kv_scale : 1.f);  // K's scale folded into the softmax scale
      fk::decode_run(r, m.plan, m.float_ws.get(), m.int_ws.get(), stream);
    }
  }
  // V's scale on the output (decode: FlashInfer's MLA applies it in its dequantization).
  const float o_scale = m.fp8 && !m.mla ? m.kv_scale : 1.f;
  if (!m.any_empty && lse_out == a.lse.ptr && lse_scale == 1.f && o_scale == 1.f) return;
  FixupParams fp{n,
                 a.heads,
                 m.dv,
                 a.kv_len,
                 lse_out,
                 lse_scale,
                 o_scale,
                 a.lse,
                 a.empty_lse,
                 a.empty_fill,
                 static_cast<__nv_bfloat16*>(a.o),
                 a.o_row_stride,
                 a.o_head_stride};
  fixup_kernel<<<a.rows, 128, 0, stream>>>(fp);
  DCPSIM_CUDA_LAUNCHED("flashinfer fixup_kernel");
}

bool flashinfer_runs_on(Geometry geometry, int device) {
  int major = 0, minor = 0;
  DCPSIM_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  DCPSIM_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  if (geometry == Geometry::kMla576) return major == 9 && minor == 0;  // sm_90a code runs on sm_90 only
#if defined(DCPSIM_FLASHINFER_DECODE_SM100)
  if (major == 10 && minor == 0) return true;
#endif
  return major == 9 && minor == 0;
}

#else  // built without FlashInfer: the same API, every call says so

struct FlashInferAttention::Impl {};

FlashInferAttention::FlashInferAttention(const AttentionArgs&, const std::vector<std::int64_t>&,
                                         const std::vector<int>&) {
  throw InputError(flashinfer_unsupported({}));
}
FlashInferAttention::~FlashInferAttention() = default;
void FlashInferAttention::launch(const AttentionArgs&, cudaStream_t) {
  throw InputError(flashinfer_unsupported({}));
}
bool flashinfer_runs_on(Geometry, int) {
  return false;
}

#endif

}  // namespace dcpsim::hw::ops
