#include "replay_workers.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>

#include "dcpsim/error.h"
#include "dcpsim/interrupt.h"

namespace dcpsim::analysis::detail {
namespace {

constexpr int kMaxOutstanding = 32;

struct TaskHeader {
  std::int64_t id;
  std::int32_t strategy;
  std::int32_t rows;
};

struct AnswerHeader {
  std::int64_t id;
  std::int32_t status;  // 0 ok, 1 RuntimeError, 2 InputError
  std::int32_t message_bytes;
  double step_s, merge_s, comm_s;
};

bool read_all(int fd, void* data, std::size_t size) {
  auto* p = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t n = ::read(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

bool write_all(int fd, const void* data, std::size_t size) {
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

// The worker's life: answer tasks until the parent closes the task pipe.
[[noreturn]] void serve(int in, int out, models::Scenario geometry, const ScenarioTiming& timing) {
  interrupt::enter_worker();
  TaskHeader h{};
  while (read_all(in, &h, sizeof h)) {
    geometry.contexts.resize(static_cast<std::size_t>(h.rows));
    if (!read_all(in, geometry.contexts.data(), sizeof(std::int64_t) * geometry.contexts.size())) break;
    geometry.strategy = static_cast<models::Strategy>(h.strategy);
    AnswerHeader a{h.id, 0, 0, 0, 0, 0};
    std::string message;
    try {
      const StepTiming t = timing(geometry);
      a.step_s = t.step_s;
      a.merge_s = t.merge_s;
      a.comm_s = t.comm_s;
    } catch (const InputError& e) {
      a.status = 2;
      message = e.what();
    } catch (const std::exception& e) {
      a.status = 1;
      message = e.what();
    }
    message.resize(std::min<std::size_t>(message.size(), 2000));
    a.message_bytes = static_cast<std::int32_t>(message.size());
    std::string buffer(reinterpret_cast<const char*>(&a), sizeof a);
    buffer += message;
    if (!write_all(out, buffer.data(), buffer.size()) || a.status != 0) std::_Exit(a.status ? 3 : 1);
  }
  std::_Exit(0);
}

}  // namespace

WorkerPool::WorkerPool(int workers, models::Scenario geometry, ScenarioTiming timing) {
  // A worker that dies must show up as an error here, not as SIGPIPE killing the parent.
  std::signal(SIGPIPE, SIG_IGN);
  std::fflush(nullptr);
  for (int w = 0; w < workers; ++w) {
    int tasks[2], answers[2];
    if (::pipe(tasks) != 0 || ::pipe(answers) != 0) {
      stop();
      throw RuntimeError("replay: cannot create pipes for worker processes");
    }
    int slot = -1;
    const pid_t pid = interrupt::fork_worker(&slot);
    if (pid < 0) {
      stop();
      throw RuntimeError("replay: cannot start a worker process");
    }
    if (pid == 0) {
      for (const Worker& other : workers_) {
        ::close(other.to_worker);
        ::close(other.from_worker);
      }
      ::close(tasks[1]);
      ::close(answers[0]);
      serve(tasks[0], answers[1], geometry, timing);
    }
    ::close(tasks[0]);
    ::close(answers[1]);
    workers_.push_back({pid, tasks[1], answers[0], 0, slot});
  }
}

WorkerPool::~WorkerPool() {
  stop();
}

void WorkerPool::stop() {
  for (Worker& w : workers_) {
    if (w.to_worker >= 0) ::close(w.to_worker);
    if (w.from_worker >= 0) ::close(w.from_worker);
    w.to_worker = w.from_worker = -1;
  }
  for (Worker& w : workers_) {
    if (w.pid > 0) {
      ::kill(w.pid, SIGTERM);
      ::waitpid(w.pid, nullptr, 0);
      interrupt::untrack_child(w.slot);
      w.pid = -1;
    }
  }
}

void WorkerPool::submit(TimingTask task) {
  queue_.push_back(std::move(task));
}

void WorkerPool::dispatch() {
  while (!queue_.empty()) {
    Worker* best = nullptr;
    for (Worker& w : workers_) {
      if (w.outstanding < kMaxOutstanding && (best == nullptr || w.outstanding < best->outstanding))
        best = &w;
    }
    if (best == nullptr) return;
    const TimingTask& t = queue_.front();
    const TaskHeader h{t.id, static_cast<std::int32_t>(t.strategy),
                       static_cast<std::int32_t>(t.contexts.size())};
    std::string buffer(reinterpret_cast<const char*>(&h), sizeof h);
    buffer.append(reinterpret_cast<const char*>(t.contexts.data()), sizeof(std::int64_t) * t.contexts.size());
    if (!write_all(best->to_worker, buffer.data(), buffer.size())) {
      // A worker ends after answering a task with an error; that answer may still be in its pipe, unread
      // while the schedule kept sending: report the worker's error, not the closed pipe.
      AnswerHeader a{};
      while (read_all(best->from_worker, &a, sizeof a)) {
        std::string message(static_cast<std::size_t>(std::max(0, a.message_bytes)), '\0');
        if (!read_all(best->from_worker, message.data(), message.size())) break;
        if (a.status == 2) throw InputError(message);
        if (a.status != 0) throw RuntimeError(message);
      }
      throw RuntimeError("replay: a worker process stopped answering");
    }
    ++best->outstanding;
    ++outstanding_;
    queue_.pop_front();
  }
}

void WorkerPool::pump(bool wait, const std::function<void(std::int64_t, const StepTiming&)>& done) {
  dispatch();
  bool block = wait && outstanding_ > 0;
  while (outstanding_ > 0) {
    std::vector<pollfd> fds;
    for (const Worker& w : workers_) fds.push_back({w.from_worker, POLLIN, 0});
    const int ready = ::poll(fds.data(), fds.size(), block ? -1 : 0);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return;
    block = false;  // after the first answers, take what is ready and go back to the schedule
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      Worker& w = workers_[i];
      AnswerHeader a{};
      if (!read_all(w.from_worker, &a, sizeof a))
        throw RuntimeError("replay: a worker process failed (it ended without answering)");
      if (a.status != 0) {
        std::string message(static_cast<std::size_t>(std::max(0, a.message_bytes)), '\0');
        read_all(w.from_worker, message.data(), message.size());
        if (a.status == 2) throw InputError(message);
        throw RuntimeError(message);
      }
      --w.outstanding;
      --outstanding_;
      done(a.id, StepTiming{a.step_s, a.merge_s, a.comm_s});
    }
    dispatch();
  }
}

}  // namespace dcpsim::analysis::detail
