#include "dcpsim/hw/attention_impl.h"

#include <limits>

#include "dcpsim/error.h"

namespace dcpsim::hw {

AttentionImpl parse_attention_impl(std::string_view name) {
  if (name == "auto") return AttentionImpl::kAuto;
  if (name == "flashinfer") return AttentionImpl::kFlashInfer;
  if (name == "dcpsim") return AttentionImpl::kDcpsim;
  throw InputError("--attention '" + std::string(name) + "': expected auto, flashinfer or dcpsim");
}

const char* attention_impl_name(AttentionImpl impl) {
  switch (impl) {
    case AttentionImpl::kAuto:
      return "auto";
    case AttentionImpl::kFlashInfer:
      return "flashinfer";
    case AttentionImpl::kDcpsim:
      return "dcpsim";
  }
  return "?";
}

bool built_with_flashinfer() {
#if defined(DCPSIM_WITH_FLASHINFER)
  return true;
#else
  return false;
#endif
}

std::string flashinfer_unsupported(const FlashInferGeometry& g) {
  if (!built_with_flashinfer())
    return "this build has no FlashInfer (scripts/fetch_flashinfer.sh, then reconfigure with "
           "-DDCPSIM_WITH_FLASHINFER=ON)";
  return flashinfer_geometry_unsupported(g);
}

std::string flashinfer_geometry_unsupported(const FlashInferGeometry& g) {
  static const std::string kSupported =
      "FlashInfer runs MLA (D_qk 576, D 512, H_kv 1, sm_90a) and GQA (D_qk = D = 128, H/H_kv in "
      "{1,2,3,4,6,8,16}) with bf16 inputs and outputs";
  const std::string shape = "H=" + std::to_string(g.heads) + " H_kv=" + std::to_string(g.kv_heads) +
                            " D_qk=" + std::to_string(g.qk_dim) + " D=" + std::to_string(g.dim);
  if (!g.bf16) return "FlashInfer path needs bf16 KV and output dtypes; " + kSupported;
  if (g.row_stamps)
    return "--row-stamps needs dcpsim's attention kernel (FlashInfer's kernels do not stamp rows)";
  if (g.heads < 1 || g.kv_heads < 1 || g.heads % g.kv_heads != 0) return shape + ": " + kSupported;
  if (g.qk_dim == 576 && g.dim == 512 && g.kv_heads == 1) return "";
  const int group = g.heads / g.kv_heads;
  const bool group_ok =
      group == 1 || group == 2 || group == 3 || group == 4 || group == 6 || group == 8 || group == 16;
  if (g.qk_dim == 128 && g.dim == 128 && group_ok) return "";
  return shape + " is not supported: " + kSupported;
}

AttentionImpl resolve_attention_impl(AttentionImpl requested, const FlashInferGeometry& g,
                                     std::string* notice) {
  if (requested == AttentionImpl::kDcpsim) return AttentionImpl::kDcpsim;
  const std::string why = flashinfer_unsupported(g);
  // GQA: dcpsim's kernel by default. On one H200 it runs at 72–86% of copy where FlashInfer 0.7.2's paged
  // decode reaches 33–38%, and FlashInfer's decode LSE misses the runner's 1e-4 LSE bound on very short
  // shards (docs/PERFORMANCE.md); --attention flashinfer still selects it.
  const bool mla = g.qk_dim == 576;
  if (why.empty() && (mla || requested == AttentionImpl::kFlashInfer)) return AttentionImpl::kFlashInfer;
  if (why.empty()) return AttentionImpl::kDcpsim;
  if (requested == AttentionImpl::kFlashInfer) throw InputError("--attention flashinfer: " + why);
  if (notice) *notice = "attention: dcpsim's kernel (" + why + ")";
  return AttentionImpl::kDcpsim;
}

int kv_page_tokens(bool mla) {
  return mla ? 64 : 16;
}

std::vector<std::int64_t> paged_row_offsets(const std::vector<int>& lengths, int page_tokens) {
  if (page_tokens < 1) throw InputError("page size must be >= 1");
  std::vector<std::int64_t> offsets(lengths.size() + 1, 0);
  for (std::size_t b = 0; b < lengths.size(); ++b) {
    if (lengths[b] < 0) throw InputError("row " + std::to_string(b) + " has a negative KV length");
    const std::int64_t pages = (std::int64_t(lengths[b]) + page_tokens - 1) / page_tokens;
    offsets[b + 1] = offsets[b] + pages * page_tokens;
  }
  return offsets;
}

PageTable build_page_table(const std::vector<std::int64_t>& offsets, const std::vector<int>& lengths,
                           int page_tokens) {
  if (page_tokens < 1) throw InputError("page size must be >= 1");
  if (offsets.size() < lengths.size())
    throw InputError("page table: " + std::to_string(offsets.size()) + " offsets for " +
                     std::to_string(lengths.size()) + " rows");
  PageTable t;
  t.indptr.push_back(0);
  std::int64_t end = 0;  // first token past the previous row's pages
  for (std::size_t b = 0; b < lengths.size(); ++b) {
    const std::int64_t len = lengths[b], off = offsets[b];
    if (len < 0) throw InputError("page table: row " + std::to_string(b) + " has a negative KV length");
    if (len > 0 && off % page_tokens != 0)
      throw InputError("page table: row " + std::to_string(b) + " starts at token " + std::to_string(off) +
                       ", not on a page of " + std::to_string(page_tokens));
    if (len > 0 && off < end)
      throw InputError("page table: row " + std::to_string(b) + " overlaps the previous row's pages");
    const std::int64_t pages = (len + page_tokens - 1) / page_tokens;
    if ((off / page_tokens + pages) > std::numeric_limits<int>::max())
      throw InputError("page table: more than 2^31 pages");
    for (std::int64_t p = 0; p < pages; ++p) t.indices.push_back(static_cast<int>(off / page_tokens + p));
    t.indptr.push_back(static_cast<int>(t.indices.size()));
    t.last_page_len.push_back(len == 0 ? 0 : static_cast<int>(len - (pages - 1) * page_tokens));
    if (len > 0) end = off + pages * page_tokens;
  }
  return t;
}

}  // namespace dcpsim::hw
