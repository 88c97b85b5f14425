#pragma once
// Forked worker processes that time scenarios for `dcpsim replay` (SimGrid runs one engine per process, so
// parallel timing needs processes). Each worker inherits the parent's timing function (and with it a SimGrid
// engine whose platforms are built) and answers tasks over a pair of pipes: a task is (id, strategy,
// contexts), an answer (id, StepTiming) or an error that the parent rethrows (InputError or RuntimeError, one
// line). A worker holds at most kMaxOutstanding tasks, so neither side ever blocks on a full pipe for long.
#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "dcpsim/analysis/replay.h"

namespace dcpsim::analysis::detail {

struct TimingTask {
  std::int64_t id = 0;  // the caller's slot for the answer
  models::Strategy strategy = models::Strategy::kAgRs;
  std::vector<std::int64_t> contexts;
};

class WorkerPool {
 public:
  // Forks `workers` processes; each builds its scenarios from `geometry` (contexts and strategy per task).
  WorkerPool(int workers, models::Scenario geometry, ScenarioTiming timing);
  ~WorkerPool();  // stops the workers
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void submit(TimingTask task);
  // Hands queued tasks to workers with room and collects answers that are ready (wait: block until at least
  // one answer arrives, when any is outstanding). `done(id, timing)` is called per answer.
  void pump(bool wait, const std::function<void(std::int64_t, const StepTiming&)>& done);
  std::int64_t pending() const { return static_cast<std::int64_t>(queue_.size()) + outstanding_; }

 private:
  struct Worker {
    pid_t pid = -1;
    int to_worker = -1;    // task pipe (write end)
    int from_worker = -1;  // answer pipe (read end)
    int outstanding = 0;
    int slot = -1;  // interrupt's child slot
  };
  void dispatch();
  void stop();

  std::vector<Worker> workers_;
  std::deque<TimingTask> queue_;
  std::int64_t outstanding_ = 0;
};

}  // namespace dcpsim::analysis::detail
