#pragma once
// Small vocabulary types shared by every module: LSE base, element types, merge strategies, launch modes.
// Each has to_string() (the spelling used in flags, files and traces) and parse_*() that throws InputError
// naming the bad value and the allowed ones.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace dcpsim::models {

// Natural-log LSE (FlashAttention/FlashInfer style) or base 2 (log2 Σ 2^(s·log2 e), as some MLA kernels
// emit).
enum class LseBase { kE, k2 };

// Element types. kF64 exists for the reference only. kFP8E4M3 ("fp8") is a KV-cache type only (vLLM's
// --kv-cache-dtype fp8: e4m3 with one per-tensor scale, the query and the output stay 16-bit).
enum class DType { kF32, kBF16, kF16, kF64, kFP8E4M3 };

// How the partial outputs are merged and delivered (SPEC "delivery strategies"). kRowStream is direct
// delivery with each row pushed as soon as its attention finishes: same mathematics as kDirect, different
// timing. kFlashInferA2a is FlashInfer's fused DCP all-to-all + LSE merge (comm/dcp_lse_reduce.cuh), a peer
// to compare with: the same mathematics, its heads interleaved across the owners (see interleaves_heads).
// kA2aTwoCall is the all-to-all in two NCCL calls, the partial outputs in one and the LSEs in the other
// (vLLM's
// --dcp-comm-backend a2a, vllm/v1/attention/ops/dcp_alltoall.py): kA2a's arithmetic without the packing.
// New values go at the end (traces number them).
enum class Strategy { kAgRs, kAgAr, kA2a, kDirect, kRowStream, kFlashInferA2a, kA2aTwoCall };

// How the CPU issues kernels: one launch per kernel, one CUDA-graph replay per step, or programmatic
// dependent launch (kernel N+1 starts its prologue while kernel N drains).
enum class LaunchMode { kEager, kGraph, kPdl };

std::string_view to_string(LseBase v);
std::string_view to_string(DType v);
std::string_view to_string(Strategy v);
std::string_view to_string(LaunchMode v);

LseBase parse_lse_base(std::string_view s);  // "e" | "2"
DType parse_dtype(std::string_view s);       // "fp32" | "bf16" | "fp16" | "fp64" | "fp8" (or "fp8_e4m3")
// "ag-rs" | "ag-ar" | "a2a" | "a2a-2call" | "direct" | "row-stream" | "flashinfer-a2a", or an alias: the
// serving engines' names (strategy_aliases()).
Strategy parse_strategy(std::string_view s);
// Other spellings parse_strategy accepts: every name with '_' for '-' (vLLM's and SGLang's ag_rs), SGLang's
// fi_a2a for flashinfer-a2a, and vllm-a2a / sglang-a2a for the engine each "a2a" means (vLLM: two calls,
// a2a-2call; SGLang: one packed call, a2a).
struct StrategyAlias {
  std::string_view alias;
  Strategy strategy;
};
const std::vector<StrategyAlias>& strategy_aliases();
LaunchMode parse_launch_mode(std::string_view s);  // "eager" | "graph" | "pdl"

const std::vector<Strategy>& all_strategies();
// Every element type parse_dtype accepts, in its order (help texts list them from here).
const std::vector<DType>& all_dtypes();
std::size_t dtype_bytes(DType v);
// The element type of the query (and of everything attention computes in) when the KV cache is `kv`: the
// KV type itself, except bf16 for an fp8 cache (the kernels dequantize the cache; the query stays 16-bit).
DType query_dtype(DType kv);

// True for strategies whose output on rank r is H/N of the heads (they need N | H): the block
// [r·H/N, (r+1)·H/N), or, where interleaves_heads(s), the heads r, r + N, r + 2N, ...
bool scatters_heads(Strategy s);
// FlashInfer's fused merge reads a rank's O [B][H][D] as [B][H/N][N][D] (destination second to last), so
// owner r keeps heads r + k·N.
bool interleaves_heads(Strategy s);
// True when the strategy accumulates in fp32 and rounds once (a2a, direct, row-stream, flashinfer-a2a);
// AG+RS/AG+AR round
// each rank's scaled partial to the output dtype before the sum.
bool accumulates_in_fp32(Strategy s);

}  // namespace dcpsim::models
