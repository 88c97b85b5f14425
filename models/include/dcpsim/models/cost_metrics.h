#pragma once
// Bandwidth metrics exactly as nccl-tests defines them (doc/PERFORMANCE.md there), written once and used by
// both sim/ and hw/. "size" here is nccl-tests' size: for all-gather the whole receive buffer (N × the
// per-rank shard), for reduce-scatter the whole send buffer, for all-reduce the buffer, for all-to-all a
// rank's whole send buffer, for send-recv a rank's send buffer.
//   algbw = size / time
//   busbw = algbw × factor:  all-reduce 2(N−1)/N;  all-gather, reduce-scatter, all-to-all (N−1)/N;
//                            send-recv 1
#include "dcpsim/models/cost_collectives.h"

namespace dcpsim::models {

// nccl-tests' size for a collective given dcpsim's bytes per rank (see cost_collectives.h).
double nccl_tests_size_bytes(Collective c, int ranks, double bytes_per_rank);
// The inverse: dcpsim's bytes per rank of a collective whose nccl-tests size is `size_bytes`.
double bytes_per_rank_of_size(Collective c, int ranks, double size_bytes);
// size / time (bytes per second); throws InputError for time <= 0.
double algbw(double size_bytes, double time_s);
// The busbw factor of a collective on N ranks (0 for N = 1: nothing crosses a link).
double busbw_factor(Collective c, int ranks);
// algbw(size, time) × busbw_factor(c, ranks).
double busbw(Collective c, int ranks, double size_bytes, double time_s);

}  // namespace dcpsim::models
