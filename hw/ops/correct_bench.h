#pragma once
// What `hw sweep --warm-lse` needs of the correction's bench (lse_correct.cu) beyond BenchOp: its gathered
// LSEs, which the emulated LSE all-gather has just written when a step's correction runs.
#include <cstddef>
#include <optional>
#include <utility>

#include "bench_op.h"

namespace dcpsim::hw::ops {

// The LSE buffer call `call` of a correction bench (make_correct_bench) reads; nullopt for any other
// operation.
std::optional<std::pair<const void*, std::size_t>> correct_bench_lse(const BenchOp& op, int call);

}  // namespace dcpsim::hw::ops
