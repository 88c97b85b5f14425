#pragma once
// Which decode-attention implementation the hardware runner launches, and the host-side pieces of the
// FlashInfer path that need no GPU: the geometry check and the vLLM-style page table over a rank's KV shard.
// Compiled in every build (the CPU-only stub too), so the CPU tests cover them.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dcpsim::hw {

enum class AttentionImpl {
  kAuto,        // MLA: FlashInfer where it supports the geometry (and the build has it); GQA and the rest:
                // dcpsim's kernel (faster than FlashInfer's paged decode on the H200, docs/PERFORMANCE.md)
  kFlashInfer,  // FlashInfer's kernels (flashinfer/attention/mla_hopper.cuh, decode.cuh); InputError
                // otherwise
  kDcpsim,      // dcpsim's split-KV tensor-core kernel (hw/ops/attention.cu)
};

AttentionImpl parse_attention_impl(std::string_view name);  // "auto", "flashinfer", "dcpsim"; else InputError
const char* attention_impl_name(AttentionImpl impl);

// True when this binary was built with FlashInfer's headers (DCPSIM_WITH_FLASHINFER).
bool built_with_flashinfer();

// What the FlashInfer path is asked to run. Element types are the runner's: true when Q, K, V and O are bf16.
struct FlashInferGeometry {
  int heads = 0, kv_heads = 1, qk_dim = 0, dim = 0;
  bool bf16 = true;
  bool row_stamps = false;  // per-row readiness stamps: only dcpsim's kernels write them
};

// Empty when FlashInfer runs this geometry; otherwise one sentence saying why and naming what is supported:
// MLA (D_qk 576, D 512, H_kv 1, Hopper sm_90a) and GQA (D_qk = D = 128, H/H_kv in {1, 2, 3, 4, 6, 8, 16}),
// bf16 in and out. Says so when the build has no FlashInfer.
std::string flashinfer_unsupported(const FlashInferGeometry& g);
// The same for the geometry alone, whatever this build has (a plan made on a CPU-only machine for a GPU one).
std::string flashinfer_geometry_unsupported(const FlashInferGeometry& g);

// kAuto: FlashInfer for MLA when flashinfer_unsupported() is empty, else dcpsim (`notice`, when given,
// receives one line saying why FlashInfer cannot run it; none for GQA, where dcpsim's kernel is the choice);
// kFlashInfer on an unsupported geometry: InputError with that line; kDcpsim: kDcpsim.
AttentionImpl resolve_attention_impl(AttentionImpl requested, const FlashInferGeometry& g,
                                     std::string* notice = nullptr);

// Tokens per KV page: 64 for MLA (FlashInfer's Hopper MLA tile, vLLM's usual block size there), 16 for GQA.
int kv_page_tokens(bool mla);

// First token of each row's KV in a shard whose rows start on page boundaries (rows packed in order, each
// rounded up to whole pages); the last entry is the total number of tokens to allocate.
std::vector<std::int64_t> paged_row_offsets(const std::vector<int>& lengths, int page_tokens);

// The vLLM/FlashInfer page table over such a shard: row b owns pages indices[indptr[b] .. indptr[b+1]), its
// last page holds last_page_len[b] tokens (0 for an empty row, which owns no page). Page p covers tokens
// [p·page_tokens, (p+1)·page_tokens) of the shard storage. Pages are listed in storage order: the storage is
// filled by the generator per (row, token), so any permutation here would also have to move the data.
struct PageTable {
  std::vector<int> indptr;         // [rows + 1]
  std::vector<int> indices;        // [Σ pages]
  std::vector<int> last_page_len;  // [rows]
};
// InputError when an offset is not page aligned or rows overlap.
PageTable build_page_table(const std::vector<std::int64_t>& offsets, const std::vector<int>& lengths,
                           int page_tokens);

}  // namespace dcpsim::hw
