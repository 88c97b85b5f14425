#pragma once
// Clean interruption (SIGINT, SIGTERM, SIGHUP): whatever a command is doing, it stops its worker processes,
// removes every temporary and part file it made, prints one line ("dcpsim: interrupted; nothing written") and
// exits 128 + the signal (130 for Ctrl-C, 143 for SIGTERM). A finished output is never half replaced: outputs
// appear by rename, and a group of outputs that belong together is renamed inside a critical section, which
// holds the interruption back until it ends.
//
// The signal handler does the cleanup itself (SimGrid's run or a long reference computation never polls a
// flag), so the registry below is a fixed table read with async-signal-safe calls only: kill, waitpid,
// unlink, rmdir, write, _exit. Register a path before the file exists (pick the name, track it, then create
// it with O_EXCL) so that no window leaves debris.
#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <string>

namespace dcpsim::interrupt {

// Installs the handlers (main() does). `program` prefixes the message ("dcpsim"). A library that puts in its
// own handlers (SimGrid's engine takes SIGINT) calls reinstall() after it: a no-op unless install() ran.
void install(const char* program);
void reinstall();

// True once a signal arrived (for loops that can stop early on their own; the handler exits anyway unless a
// critical section holds it back).
bool requested();

// In a forked worker process: an interruption only ends the worker (exit 128 + signal, no message, nothing
// removed); the parent, which owns the files, cleans up.
void enter_worker();
// fork() for a worker process, with SIGINT, SIGTERM and SIGHUP held back across it: the child is a worker
// (enter_worker) and the parent tracks it (track_child, its slot in *slot) before either can be interrupted.
// (A signal between a plain fork and enter_worker made the child clean up and print as if it were the
// parent.)
pid_t fork_worker(int* slot);

// A temporary file removed on interruption until untracked. Returns a slot for untrack_file (-1 when the
// table is full or the path too long: the caller's own cleanup still runs on errors).
int track_file(const std::filesystem::path& path);
void untrack_file(int slot);
void untrack_file(const std::filesystem::path& path);  // every slot holding `path`

// A directory of numbered part files "<dir>/<i><suffix>" and "<dir>/<i><suffix>.err", i < count, removed
// with the directory on interruption.
int track_part_dir(const std::filesystem::path& dir, const std::string& suffix, std::size_t count);
void untrack_part_dir(int slot);

// A child process killed (SIGKILL) and reaped on interruption.
int track_child(pid_t pid);
void untrack_child(int slot);

// A deliberate checkpoint: kept on interruption and named in the message, so the run can be resumed.
void keep_checkpoint(const std::filesystem::path& path);
// A finished output (moved into place): the message then says what was already written. A tracked path (a
// temporary file written whole, as a plot's CSV) is not an output and is not noted.
void note_written(const std::filesystem::path& path);

// Holds an interruption back while alive (nestable); a signal that arrived meanwhile takes effect when the
// outermost section ends.
class CriticalSection {
 public:
  CriticalSection();
  ~CriticalSection();
  CriticalSection(const CriticalSection&) = delete;
  CriticalSection& operator=(const CriticalSection&) = delete;
};

// RAII forms of the tracking calls.
class TrackedFile {
 public:
  TrackedFile() = default;
  explicit TrackedFile(const std::filesystem::path& path) : slot_(track_file(path)) {}
  ~TrackedFile() { release(); }
  TrackedFile(TrackedFile&& o) noexcept : slot_(o.slot_) { o.slot_ = -1; }
  TrackedFile& operator=(TrackedFile&& o) noexcept;
  void release() noexcept;

 private:
  int slot_ = -1;
};

// A fresh, unique name beside `target` for its temporary file (".<name>.tmp-<pid>-<n><suffix>"): not created.
std::filesystem::path temp_name_beside(const std::filesystem::path& target, const std::string& suffix = "");

}  // namespace dcpsim::interrupt
