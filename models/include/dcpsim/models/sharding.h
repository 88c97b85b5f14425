#pragma once
// KV ownership across the DCP group (SPEC "KV ownership"): token t of a request lives on rank (t / I) mod N
// at local position (t / (N·I))·I + t mod I; local positions are dense. All functions throw InputError for N
// < 1, I < 1, a rank outside [0, N) or a negative token/length.
#include <cstdint>
#include <vector>

#include "dcpsim/models/problem.h"

namespace dcpsim::models {

int owner_rank(std::int64_t token, int dcp, int interleave);
std::int64_t local_position(std::int64_t token, int dcp, int interleave);
// Inverse of (owner_rank, local_position): the request position of local slot `local` on `rank`.
std::int64_t global_position(std::int64_t local, int rank, int dcp, int interleave);

// Tokens of a `context`-token request held by `rank`: base + clamp(rem − r·I, 0, I) with base = ⌊S/(I·N)⌋·I.
std::int64_t local_length(std::int64_t context, int rank, int dcp, int interleave);
std::vector<std::int64_t> local_lengths(std::int64_t context, int dcp, int interleave);  // one entry per rank

// One rank's share of every row's KV cache, in local-position order.
struct KvShard {
  int rank = 0;
  int dcp = 1;
  int interleave = 1;
  std::vector<std::int64_t> lengths;   // per row: local length
  std::vector<std::vector<double>> k;  // per row: [lengths[b]][H_kv][D_qk]
  std::vector<std::vector<double>> v;  // per row: [lengths[b]][H_kv][D]
};

KvShard shard_kv(const Problem& problem, int rank, int dcp, int interleave);

// The whole cache as a single shard (rank 0 of a group of one): the input of the no-DCP ground truth.
KvShard whole_kv(const Problem& problem);

}  // namespace dcpsim::models
