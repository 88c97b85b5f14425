#pragma once
// Statistics of a replay over its steps. Every per-step figure is a function of the step's composition (its
// timed contexts fix the rows, hence the non-attention time too), so the statistics are weighted ones over
// the compositions — exact nearest-rank figures over the steps, at the cost of the compositions, not the
// steps.
#include <cstdint>
#include <utility>
#include <vector>

#include "dcpsim/analysis/replay.h"

namespace dcpsim::analysis::detail {

// (value, weight) pairs; percentiles are nearest-rank over the weighted multiset.
class Weighted {
 public:
  void add(double value, std::int64_t weight) {
    if (weight > 0) items_.emplace_back(value, weight), total_ += weight;
  }
  bool empty() const { return total_ == 0; }
  // p in [0, 100]; 0 gives the minimum.
  double percentile(double p);
  double mean() const;
  LatencyStats stats();

 private:
  void sort();
  std::vector<std::pair<double, std::int64_t>> items_;
  std::int64_t total_ = 0;
  bool sorted_ = false;
};

// Steps per composition (ReplayResult::timings / strategies).
std::vector<std::int64_t> composition_weights(const ReplayResult& r);

// The figures of composition c, strategy k.
double decode_step_of(const ReplayResult& r, std::size_t c, std::size_t k,
                      const std::vector<double>& non_attention);
// Non-attention time of each composition (from any step that uses it).
std::vector<double> non_attention_of(const ReplayResult& r);

std::vector<StrategySummary> summarise(const ReplayResult& r);

}  // namespace dcpsim::analysis::detail
