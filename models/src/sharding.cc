// KV ownership formulas from SPEC, and the copy of each row's cache into per-rank local order.
#include "dcpsim/models/sharding.h"

#include <algorithm>
#include <string>

#include "dcpsim/error.h"

namespace dcpsim::models {
namespace {

void check_group(int dcp, int interleave) {
  if (dcp < 1) throw InputError("dcp = " + std::to_string(dcp) + " is not allowed (must be >= 1)");
  if (interleave < 1) {
    throw InputError("interleave = " + std::to_string(interleave) + " is not allowed (must be >= 1)");
  }
}

void check_rank(int rank, int dcp) {
  if (rank < 0 || rank >= dcp) {
    throw InputError("rank " + std::to_string(rank) + " is outside the group [0, " + std::to_string(dcp) +
                     ")");
  }
}

void check_count(const char* what, std::int64_t v) {
  if (v < 0) throw InputError(std::string(what) + " " + std::to_string(v) + " is negative (must be >= 0)");
}

}  // namespace

int owner_rank(std::int64_t token, int dcp, int interleave) {
  check_group(dcp, interleave);
  check_count("token", token);
  return static_cast<int>((token / interleave) % dcp);
}

std::int64_t local_position(std::int64_t token, int dcp, int interleave) {
  check_group(dcp, interleave);
  check_count("token", token);
  const std::int64_t round = token / (static_cast<std::int64_t>(dcp) * interleave);
  return round * interleave + token % interleave;
}

std::int64_t global_position(std::int64_t local, int rank, int dcp, int interleave) {
  check_group(dcp, interleave);
  check_rank(rank, dcp);
  check_count("local position", local);
  const std::int64_t round = local / interleave;
  return (round * dcp + rank) * interleave + local % interleave;
}

std::int64_t local_length(std::int64_t context, int rank, int dcp, int interleave) {
  check_group(dcp, interleave);
  check_rank(rank, dcp);
  check_count("context", context);
  const std::int64_t base = context / (static_cast<std::int64_t>(interleave) * dcp) * interleave;
  const std::int64_t rem = context - base * dcp;
  return base + std::clamp<std::int64_t>(rem - static_cast<std::int64_t>(rank) * interleave, 0, interleave);
}

std::vector<std::int64_t> local_lengths(std::int64_t context, int dcp, int interleave) {
  check_group(dcp, interleave);
  std::vector<std::int64_t> lengths(static_cast<std::size_t>(dcp));
  for (int r = 0; r < dcp; ++r) lengths[r] = local_length(context, r, dcp, interleave);
  return lengths;
}

KvShard shard_kv(const Problem& problem, int rank, int dcp, int interleave) {
  problem.validate();
  check_group(dcp, interleave);
  check_rank(rank, dcp);
  KvShard shard{rank, dcp, interleave, {}, {}, {}};
  const std::int64_t k_token = static_cast<std::int64_t>(problem.kv_heads) * problem.qk_dim;
  const std::int64_t v_token = static_cast<std::int64_t>(problem.kv_heads) * problem.dim;
  for (int b = 0; b < problem.rows; ++b) {
    const std::int64_t length = local_length(problem.contexts[b], rank, dcp, interleave);
    shard.lengths.push_back(length);
    std::vector<double> k(static_cast<std::size_t>(length * k_token));
    std::vector<double> v(static_cast<std::size_t>(length * v_token));
    for (std::int64_t l = 0; l < length; ++l) {
      const std::int64_t t = global_position(l, rank, dcp, interleave);
      std::copy_n(problem.k[b].begin() + t * k_token, k_token, k.begin() + l * k_token);
      std::copy_n(problem.v[b].begin() + t * v_token, v_token, v.begin() + l * v_token);
    }
    shard.k.push_back(std::move(k));
    shard.v.push_back(std::move(v));
  }
  return shard;
}

KvShard whole_kv(const Problem& problem) {
  return shard_kv(problem, 0, 1, 1);
}

}  // namespace dcpsim::models
