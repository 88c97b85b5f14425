#include "sim_engine.h"

#include <algorithm>
#include <cmath>
#include <string>

#include <simgrid/s4u.hpp>

#include "dcpsim/error.h"
#include "dcpsim/interrupt.h"
#include "dcpsim/sim/simgrid_log.h"
#include "dcpsim/sim/simulator.h"

namespace dcpsim::sim::detail {
namespace {

namespace sg4 = simgrid::s4u;

constexpr double kClockOrigin = 4096.0;   // 2^12 s: the first scenario starts here
constexpr double kClockLimit = 8192.0;    // 2^13 s: past this, doubles are spaced twice as far apart
constexpr double kClockReserve = 1024.0;  // no scenario starts this close to the limit
const double kEpochQuantum = std::ldexp(1.0, -20);

}  // namespace

SimEngine& SimEngine::instance() {
  static SimEngine* engine = new SimEngine();  // lives as long as the process, like SimGrid's engine
  return *engine;
}

SimEngine::SimEngine() {
  static int argc = 2;
  static char arg0[] = "dcpsim";
  static char arg1[] = "--log=root.thresh:critical";
  static char* argv[] = {arg0, arg1, nullptr};
  new sg4::Engine(&argc, argv);  // owned by SimGrid for the rest of the process
  interrupt::reinstall();        // SimGrid's engine takes SIGINT; dcpsim's clean interruption takes it back
  route_simgrid_logging();       // from here on SimGrid's log lines are kept, never printed
  // DESIGN.md "Simulator notes": with these an 8-GPU star matches alpha-beta hand calculations to 1e-15.
  sg4::Engine::set_config("network/model:CM02");
  sg4::Engine::set_config("network/crosstraffic:0");
  sg4::Engine::set_config("network/TCP-gamma:0");
  // Sharing weight = Σ_route weight-S / bandwidth + latency: large weight-S makes the latency term vanish, so
  // flows with routes of different latency still share a link equally.
  sg4::Engine::set_config("network/weight-S:1e15");
  // SimGrid ends every network action due within surf/precision of the current date at that date (default
  // 1e-9 s). Ring steps that pile up on a link then end up to 1 ns early, the next steps start early, and
  // over a 71-step ring the drift reached 1.3% of a DCP72 step; the clocks here are spaced 2^-40 s apart
  // (about 0.9 ps), so 10 ps still groups what rounding separates (docs/PERFORMANCE.md).
  sg4::Engine::set_config("surf/precision:1e-11");
  // Full updates of the sharing solution instead of SimGrid's default lazy ones: a decode step has tens to a
  // few hundred activities, each short, and the lazy model's heap of action end dates cost more than it
  // saved (bench_sim, docs/PERFORMANCE.md "Simulator speed": DCP 8 steps 14-27% less, DCP 72 steps 8-20%
  // less). The steps' simulated times came out the same (bench_sim's step_us counters); each event now
  // rounds every flow's remaining bytes, so dates move by picoseconds in a step and, over the ~40,000
  // transfers of a nine-node DCP 72 ring without pipes, by 2.5e-5 of the step (tests/sim/pipes_test.cc).
  sg4::Engine::set_config("network/optim:Full");
  sg4::Engine::set_config("cpu/optim:Full");
  sg4::Activity::on_completion_cb([this](sg4::Activity const& activity) {
    if (listener_ != nullptr && activity.get_state() == sg4::Activity::State::FINISHED) {
      listener_->on_activity_done(reinterpret_cast<std::intptr_t>(activity.get_data<void>()));
    }
  });
  for (const std::string& name : models::builtin_profile_names())
    reserve(models::builtin_nvlink_domain_size(name), kDefaultMaxGpus);
}

void SimEngine::reserve(int domain_size, int gpus) {
  gpus = std::max(gpus, domain_size);
  if (built_) {
    auto it = platforms_.find(domain_size);
    if (it == platforms_.end() || it->second->gpus() < gpus) {
      throw RuntimeError("the SimGrid platform is already built (the first simulation seals it) and has no " +
                         std::to_string(gpus) + "-GPU platform with NVLink domains of " +
                         std::to_string(domain_size) + " GPUs: create every Simulator before the first run");
    }
    return;
  }
  int& want = reserved_[domain_size];
  want = std::max(want, gpus);
}

void SimEngine::build() {
  // The first zone created is SimGrid's root; each platform is a child zone with no route to the others.
  sg4::create_full_zone("dcpsim");
  for (const auto& [domain_size, gpus] : reserved_) {
    platforms_[domain_size] = std::make_unique<Platform>(domain_size, gpus);
  }
  sg4::Engine::get_instance()->get_netzone_root()->seal();
  built_ = true;
}

Platform& SimEngine::platform(int domain_size) {
  if (!built_) build();
  auto it = platforms_.find(domain_size);
  if (it == platforms_.end()) {
    throw RuntimeError("no SimGrid platform with NVLink domains of " + std::to_string(domain_size) + " GPUs");
  }
  return *it->second;
}

double SimEngine::begin_epoch() {
  if (!built_) build();
  const double now = sg4::Engine::get_clock();
  const double origin = std::max(kClockOrigin, std::ceil(now / kEpochQuantum) * kEpochQuantum);
  if (origin >= kClockLimit - kClockReserve) {
    throw RuntimeError(
        "this process has simulated " + std::to_string(now - kClockOrigin) +
        " s, its budget for reproducible clocks; simulate the remaining scenarios in a new process");
  }
  take_simgrid_log();  // what SimGrid says from here on concerns this scenario
  if (origin > now) sg4::Engine::get_instance()->run_until(origin);
  if (sg4::Engine::get_clock() != origin) {
    throw RuntimeError("SimGrid's clock did not stop at the scenario origin " + std::to_string(origin) +
                       " s");
  }
  return origin;
}

void SimEngine::run(CompletionListener& listener) {
  listener_ = &listener;
  try {
    sg4::Engine::get_instance()->run();
  } catch (const InputError&) {  // dcpsim's own, from a completion callback
    listener_ = nullptr;
    throw;
  } catch (const RuntimeError&) {
    listener_ = nullptr;
    throw;
  } catch (const std::exception& e) {  // SimGrid's
    listener_ = nullptr;
    throw RuntimeError("SimGrid: " + std::string(e.what()) + simgrid_said());
  }
  listener_ = nullptr;
  if (sg4::Engine::get_clock() >= kClockLimit) {
    throw RuntimeError("a scenario ran past the simulator's reproducible clock range (" +
                       std::to_string(kClockLimit) + " s)");
  }
}

std::string simgrid_said() {
  const std::string log = take_simgrid_log();
  return log.empty() ? std::string() : " (SimGrid logged: " + log + ")";
}

double SimEngine::now() {
  return sg4::Engine::get_clock();
}

}  // namespace dcpsim::sim::detail
