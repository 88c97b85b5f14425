// algbw / busbw exactly as nccl-tests doc/PERFORMANCE.md defines them.
#include "dcpsim/models/cost_metrics.h"

#include <string>

#include "dcpsim/error.h"

namespace dcpsim::models {
namespace {

double bytes_per_rank_of_size_factor(Collective c, int ranks) {
  if (ranks < 1) throw InputError("nccl-tests size: ranks must be >= 1, got " + std::to_string(ranks));
  return 1.0 / (nccl_tests_size_bytes(c, ranks, 1.0));
}

}  // namespace

double nccl_tests_size_bytes(Collective c, int ranks, double bytes_per_rank) {
  switch (c) {
    case Collective::kAllGather:      // the whole receive buffer
    case Collective::kReduceScatter:  // the whole send buffer
      return static_cast<double>(ranks) * bytes_per_rank;
    case Collective::kAllReduce:
    case Collective::kAllToAll:
    case Collective::kSendRecv:  // the per-rank send buffer
      return bytes_per_rank;
  }
  return bytes_per_rank;
}

double bytes_per_rank_of_size(Collective c, int ranks, double size_bytes) {
  return size_bytes * bytes_per_rank_of_size_factor(c, ranks);
}

double algbw(double size_bytes, double time_s) {
  if (!(time_s > 0)) throw InputError("algbw: time must be positive, got " + std::to_string(time_s) + " s");
  return size_bytes / time_s;
}

// An all-reduce moves 2(N−1)/N of the buffer through each rank's link (reduce-scatter then all-gather); the
// others move (N−1)/N. With these factors busbw is comparable to the link bandwidth for every collective.
double busbw_factor(Collective c, int ranks) {
  if (ranks < 1) throw InputError("busbw: ranks must be >= 1, got " + std::to_string(ranks));
  const double n = ranks;
  if (c == Collective::kAllReduce) return 2.0 * (n - 1.0) / n;
  if (c == Collective::kSendRecv) return n > 1 ? 1.0 : 0.0;  // one peer: the whole buffer crosses a link
  return (n - 1.0) / n;
}

double busbw(Collective c, int ranks, double size_bytes, double time_s) {
  return algbw(size_bytes, time_s) * busbw_factor(c, ranks);
}

}  // namespace dcpsim::models
