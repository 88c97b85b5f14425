// The interruption registry (interrupt.h). Everything the signal handler reads lives in fixed tables of
// atomics and character arrays: a slot is claimed with a compare-exchange, filled, then published, so the
// handler never sees half a path, and it uses async-signal-safe calls only.
#include "dcpsim/interrupt.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace dcpsim::interrupt {
namespace {

constexpr int kPathBytes = 4096;
constexpr int kFileSlots = 256;
constexpr int kDirSlots = 16;
constexpr int kChildSlots = 1100;  // scan and replay take up to 1024 workers

enum State : int { kFree = 0, kFilling = 1, kReady = 2 };

struct FileSlot {
  std::atomic<int> state{kFree};
  char path[kPathBytes];
};

struct DirSlot {
  std::atomic<int> state{kFree};
  char path[kPathBytes];
  char suffix[64];
  std::size_t count = 0;
};

FileSlot g_files[kFileSlots];
DirSlot g_dirs[kDirSlots];
std::atomic<pid_t> g_children[kChildSlots];
FileSlot g_checkpoint;
FileSlot g_written;
std::atomic<int> g_written_count{0};

const char* g_program = "dcpsim";
std::atomic<bool> g_worker{false};
std::atomic<int> g_critical{0};
std::atomic<int> g_pending{0};
std::atomic<bool> g_requested{false};
std::atomic<bool> g_finishing{false};
std::atomic<unsigned> g_temp_counter{0};

bool copy_path(char* dst, std::size_t capacity, const std::string& src) {
  if (src.empty() || src.size() + 1 > capacity) return false;
  std::memcpy(dst, src.c_str(), src.size() + 1);
  return true;
}

template <class Slot>
int claim(Slot* slots, int count) {
  for (int i = 0; i < count; ++i) {
    int expected = kFree;
    if (slots[i].state.compare_exchange_strong(expected, kFilling)) return i;
  }
  return -1;
}

// Async-signal-safe output.
void put(const char* s) {
  std::size_t n = std::strlen(s);
  while (n > 0) {
    const ssize_t w = ::write(STDERR_FILENO, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<std::size_t>(w);
  }
}

// "<dir>/<i><suffix>[.err]" into buf; false when it does not fit.
bool part_name(char* buf, std::size_t cap, const DirSlot& d, std::size_t i, bool err) {
  char digits[24];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + i % 10);
    i /= 10;
  } while (i > 0 && n < 23);
  const std::size_t dl = std::strlen(d.path), sl = std::strlen(d.suffix);
  const std::size_t total = dl + 1 + static_cast<std::size_t>(n) + sl + (err ? 4 : 0) + 1;
  if (total > cap) return false;
  char* p = buf;
  std::memcpy(p, d.path, dl);
  p += dl;
  *p++ = '/';
  while (n > 0) *p++ = digits[--n];
  std::memcpy(p, d.suffix, sl);
  p += sl;
  if (err) {
    std::memcpy(p, ".err", 4);
    p += 4;
  }
  *p = '\0';
  return true;
}

void stop_children() {
  for (auto& c : g_children) {
    const pid_t pid = c.load();
    if (pid > 0) ::kill(pid, SIGKILL);
  }
  for (auto& c : g_children) {
    const pid_t pid = c.exchange(0);
    if (pid > 0) ::waitpid(pid, nullptr, 0);
  }
}

void remove_debris() {
  for (FileSlot& f : g_files)
    if (f.state.load() == kReady) ::unlink(f.path);
  char name[kPathBytes + 96];
  for (DirSlot& d : g_dirs) {
    if (d.state.load() != kReady) continue;
    for (std::size_t i = 0; i < d.count; ++i) {
      if (part_name(name, sizeof name, d, i, false)) ::unlink(name);
      if (part_name(name, sizeof name, d, i, true)) ::unlink(name);
    }
    ::rmdir(d.path);
  }
}

[[noreturn]] void finish(int sig) {
  if (g_finishing.exchange(true)) {
    for (;;) ::pause();  // another thread is already cleaning up and will end the process
  }
  stop_children();
  remove_debris();
  put(g_program);
  put(": interrupted; ");
  if (g_written_count.load() == 0) {
    put("nothing written");
  } else {
    put("already written: ");
    put(g_written.path);
    if (g_written_count.load() > 1) put(" (and others)");
  }
  if (g_checkpoint.state.load() == kReady) {
    put("; checkpoint kept: ");
    put(g_checkpoint.path);
  }
  put("\n");
  ::_exit(128 + sig);
}

void on_signal(int sig) {
  g_requested = true;
  if (g_worker.load()) ::_exit(128 + sig);
  if (g_critical.load() > 0) {
    g_pending = sig;
    return;
  }
  finish(sig);
}

std::atomic<bool> g_installed{false};

}  // namespace

void install(const char* program) {
  g_program = program;
  g_installed = true;
  reinstall();
}

void reinstall() {
  if (!g_installed.load()) return;
  struct sigaction sa {};
  sa.sa_handler = &on_signal;
  sigemptyset(&sa.sa_mask);
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&sa.sa_mask, s);
  sa.sa_flags = SA_RESTART;
  for (int s : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(s, &sa, nullptr);
}

bool requested() {
  return g_requested.load();
}

void enter_worker() {
  g_worker = true;
}

pid_t fork_worker(int* slot) {
  sigset_t held, old;
  sigemptyset(&held);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&held, sig);
  pthread_sigmask(SIG_BLOCK, &held, &old);
  const pid_t pid = ::fork();
  if (pid == 0) enter_worker();
  if (pid > 0) *slot = track_child(pid);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);  // a signal that came meanwhile is handled now
  return pid;
}

int track_file(const std::filesystem::path& path) {
  const int i = claim(g_files, kFileSlots);
  if (i < 0) return -1;
  if (!copy_path(g_files[i].path, kPathBytes, path.string())) {
    g_files[i].state = kFree;
    return -1;
  }
  g_files[i].state = kReady;
  return i;
}

void untrack_file(int slot) {
  if (slot >= 0 && slot < kFileSlots) g_files[slot].state = kFree;
}

void untrack_file(const std::filesystem::path& path) {
  const std::string text = path.string();
  for (FileSlot& f : g_files) {
    if (f.state.load() == kReady && text == f.path) f.state = kFree;
  }
}

int track_part_dir(const std::filesystem::path& dir, const std::string& suffix, std::size_t count) {
  const int i = claim(g_dirs, kDirSlots);
  if (i < 0) return -1;
  DirSlot& d = g_dirs[i];
  if (!copy_path(d.path, kPathBytes, dir.string()) || suffix.size() + 1 > sizeof d.suffix) {
    d.state = kFree;
    return -1;
  }
  std::memcpy(d.suffix, suffix.c_str(), suffix.size() + 1);
  d.count = count;
  d.state = kReady;
  return i;
}

void untrack_part_dir(int slot) {
  if (slot >= 0 && slot < kDirSlots) g_dirs[slot].state = kFree;
}

int track_child(pid_t pid) {
  for (int i = 0; i < kChildSlots; ++i) {
    pid_t expected = 0;
    if (g_children[i].compare_exchange_strong(expected, pid)) return i;
  }
  return -1;
}

void untrack_child(int slot) {
  if (slot >= 0 && slot < kChildSlots) g_children[slot] = 0;
}

void keep_checkpoint(const std::filesystem::path& path) {
  g_checkpoint.state = kFilling;
  if (copy_path(g_checkpoint.path, kPathBytes, path.string())) g_checkpoint.state = kReady;
}

void note_written(const std::filesystem::path& path) {
  const std::string text = path.string();
  for (const FileSlot& f : g_files)
    if (f.state.load() == kReady && text == f.path) return;
  if (g_written_count.fetch_add(1) == 0) {
    g_written.state = kFilling;
    if (!copy_path(g_written.path, kPathBytes, path.string())) copy_path(g_written.path, kPathBytes, "?");
    g_written.state = kReady;
  }
}

CriticalSection::CriticalSection() {
  ++g_critical;
}

CriticalSection::~CriticalSection() {
  if (--g_critical == 0) {
    const int sig = g_pending.exchange(0);
    if (sig != 0) finish(sig);
  }
}

TrackedFile& TrackedFile::operator=(TrackedFile&& o) noexcept {
  if (this != &o) {
    release();
    slot_ = o.slot_;
    o.slot_ = -1;
  }
  return *this;
}

void TrackedFile::release() noexcept {
  untrack_file(slot_);
  slot_ = -1;
}

std::filesystem::path temp_name_beside(const std::filesystem::path& target, const std::string& suffix) {
  const std::filesystem::path dir = target.has_parent_path() ? target.parent_path() : ".";
  std::string name(".");
  name += target.filename().string();
  name += ".tmp-";
  name += std::to_string(::getpid());
  name += '-';
  name += std::to_string(g_temp_counter.fetch_add(1));
  name += suffix;
  return dir / name;
}

}  // namespace dcpsim::interrupt
