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

// Element types. kF64 exists for the reference only.
enum class DType { kF32, kBF16, kF16, kF64 };

// How the partial outputs are merged and delivered (SPEC "delivery strategies"). kRowStream is direct
// delivery with each row pushed as soon as its attention finishes: same mathematics as kDirect, different
// timing.
enum class Strategy { kAgRs, kAgAr, kA2a, kDirect, kRowStream };

// How the CPU issues kernels: one launch per kernel, one CUDA-graph replay per step, or programmatic
// dependent launch (kernel N+1 starts its prologue while kernel N drains).
enum class LaunchMode { kEager, kGraph, kPdl };

std::string_view to_string(LseBase v);
std::string_view to_string(DType v);
std::string_view to_string(Strategy v);
std::string_view to_string(LaunchMode v);

LseBase parse_lse_base(std::string_view s);        // "e" | "2"
DType parse_dtype(std::string_view s);             // "fp32" | "bf16" | "fp16" | "fp64"
Strategy parse_strategy(std::string_view s);       // "ag-rs" | "ag-ar" | "a2a" | "direct" | "row-stream"
LaunchMode parse_launch_mode(std::string_view s);  // "eager" | "graph" | "pdl"

const std::vector<Strategy>& all_strategies();
std::size_t dtype_bytes(DType v);

// True for strategies whose output on rank r is the head block [r·H/N, (r+1)·H/N) (they need N | H).
bool scatters_heads(Strategy s);
// True when the strategy accumulates in fp32 and rounds once (a2a, direct, row-stream); AG+RS/AG+AR round
// each rank's scaled partial to the output dtype before the sum.
bool accumulates_in_fp32(Strategy s);

}  // namespace dcpsim::models
