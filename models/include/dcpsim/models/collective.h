#pragma once
// The collectives dcpsim prices, in the spelling its CLI and files use. Sizes and metrics: cost_collectives.h
// (bytes per rank) and cost_metrics.h (nccl-tests' size, algbw, busbw).
#include <string_view>

namespace dcpsim::models {

// kSendRecv is nccl-tests' sendrecv_perf: every rank sends its buffer to the next rank and receives from the
// previous one.
enum class Collective { kAllGather, kReduceScatter, kAllReduce, kAllToAll, kSendRecv };
// "all-gather" | "reduce-scatter" | "all-reduce" | "all-to-all" | "send-recv"
std::string_view to_string(Collective c);
// The spellings above, nccl-tests' binary names and NCCL's ("all_gather", "alltoall", "sendrecv",
// "AllGather", ...); InputError listing the allowed ones otherwise.
Collective parse_collective(std::string_view s);
inline constexpr Collective kAllCollectives[] = {Collective::kAllGather, Collective::kReduceScatter,
                                                 Collective::kAllReduce, Collective::kAllToAll,
                                                 Collective::kSendRecv};

}  // namespace dcpsim::models
