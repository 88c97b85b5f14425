// Wall time of simulating one DCP decode step (engine reused, as scans do): items_per_second is scenarios per
// second; counters give the SimGrid activities per step and the simulated step latency. Targets (docs/
// PERFORMANCE.md): <= 1 ms per DCP8 / batch-64 step, <= 20 ms per DCP72 / batch-256 step.
#include <benchmark/benchmark.h>

#ifdef DCPSIM_WITH_SIMGRID
#include <algorithm>
#include <string>
#include <vector>

#include "dcpsim/models/profile.h"
#include "dcpsim/sim/simulator.h"

namespace {

using namespace dcpsim;

void run_step(benchmark::State& state, const std::string& profile, int dcp, int heads, int batch,
              models::Strategy strategy, sim::SimOptions options = {}) {
  options.max_gpus = std::max(options.max_gpus, dcp);
  const sim::Simulator simulator(models::load_profile(profile), options);
  models::Scenario s;
  s.dcp = dcp;
  s.heads = heads;
  s.contexts = models::uniform_contexts(batch, 131072);
  s.strategy = strategy;
  sim::StepResult r = simulator.run(s);  // the first run builds the platform
  for (auto _ : state) {
    r = simulator.run(s);
    // An integer: DoNotOptimize on a double lvalue is miscompiled by this benchmark/GCC pair ("+r").
    benchmark::DoNotOptimize(r.activities);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["activities"] = static_cast<double>(r.activities);
  state.counters["pipe_transfers"] = static_cast<double>(r.pipe_transfers);
  state.counters["nodes"] = static_cast<double>(r.graph_nodes);
  state.counters["edges"] = static_cast<double>(r.graph_edges);
  state.counters["step_us"] = r.step_latency_s * 1e6;
}

// On a shared machine the least of several repetitions is the figure least disturbed by other work
// (--benchmark_repetitions=N adds it next to mean, median and stddev).
double least(const std::vector<double>& v) {
  return v.empty() ? 0.0 : *std::min_element(v.begin(), v.end());
}

// Args: dcp, batch, strategy index (models::all_strategies()), options (0: defaults, 1: no pipes, every ring
// step a SimGrid transfer: the reference the pipes are checked against in tests/sim/pipes_test.cc).
void BM_StepH200(benchmark::State& state) {
  const auto strategy = models::all_strategies()[state.range(2)];
  sim::SimOptions options;
  std::string label(models::to_string(strategy));
  if (state.range(3) == 1) {
    options.pipes = false;
    label += " pipes=off";
  }
  state.SetLabel(label);
  // 128 heads up to DCP32; 144 at DCP72 (nine nodes), where 128 is not divisible.
  const int dcp = static_cast<int>(state.range(0));
  run_step(state, "h200-sxm", dcp, dcp == 72 ? 144 : 128, static_cast<int>(state.range(1)), strategy,
           options);
}
BENCHMARK(BM_StepH200)
    ->ArgsProduct({{8}, {64}, {0, 1, 2, 3, 4, 6}, {0}})
    ->ArgsProduct({{8}, {1, 16, 256}, {0}, {0}})
    ->ArgsProduct({{2, 4, 16, 32}, {64}, {0}, {0}})
    ->ArgsProduct({{72}, {256}, {0, 1, 2, 3, 4, 5}, {0, 1}})
    ->ComputeStatistics("min", least)
    ->Unit(benchmark::kMillisecond);

// 144 heads: divisible by 72, so every strategy is valid at DCP72.
// Args: dcp, batch, strategy index, options (0: defaults, 1: --flows pair, 2: --nccl-algo ring).
void BM_StepGb200(benchmark::State& state) {
  const auto strategy = models::all_strategies()[state.range(2)];
  sim::SimOptions options;
  std::string label(models::to_string(strategy));
  if (state.range(3) == 1) {
    options.flows = sim::FlowGrain::kPair;
    label += " flows=pair";
  } else if (state.range(3) == 2) {
    options.collective.algorithm = models::Algorithm::kRing;
    label += " nccl-algo=ring";
  }
  state.SetLabel(label);
  run_step(state, "gb200-nvl72", static_cast<int>(state.range(0)), 144, static_cast<int>(state.range(1)),
           strategy, options);
}

BENCHMARK(BM_StepGb200)
    ->ArgsProduct({{72}, {256}, {0, 1, 2, 3, 4, 5}, {0}})
    ->ArgsProduct({{72}, {256}, {2, 3}, {1}})
    ->ArgsProduct({{72}, {256}, {0, 1}, {2}})
    ->ArgsProduct({{8, 16, 36, 72}, {64}, {0}, {0}})
    ->ArgsProduct({{72}, {1, 16, 64}, {0}, {0}})
    ->ComputeStatistics("min", least)
    ->Unit(benchmark::kMillisecond);

}  // namespace

#else

static void BM_SimulatorUnavailable(benchmark::State& state) {
  state.SkipWithError("built without SimGrid (DCPSIM_WITH_SIMGRID=OFF)");
  for (auto _ : state) {
  }
}
BENCHMARK(BM_SimulatorUnavailable);

#endif
