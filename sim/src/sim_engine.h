#pragma once
// The process's one SimGrid engine (SimGrid allows a single Engine per process, for the process's lifetime).
//
// It creates the engine with the network configuration that makes SimGrid's flow model exact for NVLink
// (CM02, no cross-traffic, no TCP window bound, equal sharing whatever the latency), builds every platform
// the process will use on first use, and gives each scenario a clean origin on the clock.
//
// Determinism: every scenario starts at a multiple of 2^-20 s inside [4096 s, 8192 s), where doubles are
// evenly spaced (2^-40 s apart). A time origin + x then rounds the same way for every origin, and differences
// are exact, so a scenario's relative times are bit-identical wherever it runs on the clock. The process has
// 4096 s of simulated time; a run that would leave the interval throws RuntimeError (scans run chunks in
// fresh workers).
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "platform.h"

namespace dcpsim::sim::detail {

// Receives the completion of every SimGrid activity a simulation started (its data is the id given to
// start()).
class CompletionListener {
 public:
  virtual ~CompletionListener() = default;
  virtual void on_activity_done(std::intptr_t id) = 0;
};

// The simulated time one step or collective may take: SimGrid's clock keeps its resolution for 4096 s per
// process, and no scenario starts within 1024 s of the end of that range.
constexpr double kStepClockBudget_s = 512.0;

class SimEngine {
 public:
  static SimEngine& instance();

  // Asks for a platform of at least `gpus` GPUs in domains of `domain_size`. Before the first run this adds
  // to what will be built; afterwards it throws RuntimeError unless a built platform already fits.
  void reserve(int domain_size, int gpus);
  // The platform for a domain size; builds all reserved platforms on first call.
  Platform& platform(int domain_size);

  // Moves the clock to the next scenario origin and returns it.
  double begin_epoch();
  // Runs the simulation until nothing is left to do, reporting completions to `listener`.
  void run(CompletionListener& listener);
  static double now();

 private:
  SimEngine();
  void build();

  std::map<int, int> reserved_;  // domain size -> GPUs
  std::map<int, std::unique_ptr<Platform>> platforms_;
  bool built_ = false;
  CompletionListener* listener_ = nullptr;
};

// " (SimGrid logged: ...)" with what SimGrid logged during the scenario (simgrid_log.h), or "": the tail of
// a simulator error's message.
std::string simgrid_said();

}  // namespace dcpsim::sim::detail
