#include "dcpsim/analysis/plot.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>
#include <vector>

#include "dcpsim/error.h"
#include "dcpsim/interrupt.h"
#include "dcpsim/traces/output_file.h"

extern char** environ;

namespace dcpsim::analysis {
namespace {

namespace fs = std::filesystem;

// Runs argv[0] (searched on PATH) with `argv`, optionally silenced (or with its stderr sent to
// `stderr_file`), and returns its exit status; nullopt when it could not be started or did not exit normally.
std::optional<int> run_program(const std::vector<std::string>& argv, bool quiet,
                               const std::string& stderr_file = {}) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (quiet) {
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  } else if (!stderr_file.empty()) {
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, stderr_file.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0600);
  }
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return std::nullopt;
  const int slot = interrupt::track_child(pid);  // stopped with the command when it is interrupted
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      interrupt::untrack_child(slot);
      return std::nullopt;
    }
  }
  interrupt::untrack_child(slot);
  if (!WIFEXITED(status)) return std::nullopt;
  return WEXITSTATUS(status);
}

// The last non-blank line of a file (a Python traceback's last line says what went wrong), at most 300 chars.
std::string last_line(const fs::path& file) {
  std::ifstream in(file);
  std::string line, last;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  }
  return last.substr(0, 300);
}

fs::path temp_beside(const fs::path& target, const std::string& suffix) {
  return interrupt::temp_name_beside(target, suffix);
}

std::vector<fs::path> script_candidates() {
  std::vector<fs::path> places;
  if (const char* env = std::getenv("DCPSIM_PLOT_SCRIPT"); env != nullptr && *env != '\0')
    places.emplace_back(env);
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) places.push_back(exe.parent_path().parent_path() / "share" / "dcpsim" / "plot.py");
  // This file is analysis/src/plot.cc of the source tree; the build passes its absolute path.
  places.push_back(fs::path(__FILE__).parent_path().parent_path().parent_path() / "scripts" / "plot.py");
  return places;
}

}  // namespace

fs::path plot_script() {
  std::string tried;
  for (const auto& p : script_candidates()) {
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) return p;
    tried += (tried.empty() ? "" : ", ") + p.string();
  }
  throw RuntimeError("cannot find plot.py (looked at " + tried + "; set DCPSIM_PLOT_SCRIPT)");
}

std::string python_with_matplotlib() {
  static std::mutex mutex;
  static std::optional<std::string> found;
  std::lock_guard lock(mutex);
  if (found) return *found;
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("DCPSIM_PYTHON"); env != nullptr && *env != '\0')
    candidates.emplace_back(env);
  candidates.emplace_back("python3");
  candidates.emplace_back("/usr/bin/python3");
  std::string tried;
  for (const auto& python : candidates) {
    if (run_program({python, "-c", "import matplotlib"}, true) == 0) {
      found = python;
      return python;
    }
    tried += (tried.empty() ? "" : ", ") + python;
  }
  throw RuntimeError("plotting needs python3 with matplotlib, and none of " + tried +
                     " has it (Debian/Ubuntu: apt-get install python3-matplotlib; or set DCPSIM_PYTHON)");
}

void plot_csv(std::string_view kind, const fs::path& csv, const fs::path& png,
              const std::vector<std::string>& options) {
  if (kind != "scan" && kind != "replay" && kind != "validate" && kind != "plan") {
    throw InputError("plot kind '" + std::string(kind) + "' is unknown; allowed: scan, replay, validate");
  }
  std::error_code ec;
  if (!fs::is_regular_file(csv, ec)) throw InputError("cannot plot '" + csv.string() + "': no such file");
  const fs::path dir = png.has_parent_path() ? png.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec)) {
    throw InputError("cannot write plot '" + png.string() + "': directory '" + dir.string() +
                     "' does not exist");
  }
  if (fs::is_directory(png, ec))
    throw InputError("cannot write plot '" + png.string() + "': it is a directory");
  const std::string python = python_with_matplotlib();
  const fs::path script = plot_script();
  const fs::path errors = temp_beside(png, ".stderr");
  const interrupt::TrackedFile tracked_errors(errors);
  std::vector<std::string> argv = {python, script.string(), std::string(kind), csv.string(), png.string()};
  argv.insert(argv.end(), options.begin(), options.end());
  const auto status = run_program(argv, false, errors);
  const std::string why = last_line(errors);
  fs::remove(errors, ec);
  if (!status) throw RuntimeError("could not run " + python + " " + script.string());
  if (*status != 0) {
    throw RuntimeError("plot.py " + std::string(kind) + " failed (exit " + std::to_string(*status) +
                       ") on '" + csv.string() + "'" + (why.empty() ? "" : ": " + why));
  }
  if (!fs::is_regular_file(png, ec)) throw RuntimeError("plot.py did not write '" + png.string() + "'");
}

void check_scan_slice(const std::string& at) {
  static const std::vector<std::string> columns = {
      "profile", "model",   "tp",     "heads",    "head_dim",  "qk_dim",    "kv_heads",
      "batch",   "context", "launch", "kv_dtype", "out_dtype", "interleave"};
  std::vector<std::string> seen;
  std::size_t begin = 0;
  while (begin <= at.size()) {
    std::size_t end = at.find(',', begin);
    if (end == std::string::npos) end = at.size();
    const std::string item = at.substr(begin, end - begin);
    begin = end + 1;
    if (item.find_first_not_of(' ') == std::string::npos) continue;
    const auto eq = item.find('=');
    std::string column = item.substr(0, eq);
    std::replace(column.begin(), column.end(), '-', '_');
    column.erase(std::remove(column.begin(), column.end(), ' '), column.end());
    if (eq == std::string::npos || item.find_first_not_of(' ', eq + 1) == std::string::npos) {
      throw InputError("--at '" + item + "': expected column=value (e.g. --at batch=64,context=128k)");
    }
    if (std::find(columns.begin(), columns.end(), column) == columns.end()) {
      std::string list;
      for (const auto& c : columns) list += (list.empty() ? "" : ", ") + c;
      throw InputError("--at " + column + ": not a slice column (one of " + list + ")");
    }
    if (std::find(seen.begin(), seen.end(), column) != seen.end())
      throw InputError("--at " + column + ": given twice");
    seen.push_back(column);
  }
}

void write_with_plot(std::string_view kind, const std::vector<std::pair<fs::path, std::string>>& files,
                     const std::string& plot_csv_text, const fs::path& png,
                     const std::vector<std::string>& options) {
  if (png.empty()) {
    traces::write_files_atomically(files);
    return;
  }
  const fs::path csv = temp_beside(png, ".csv");
  const fs::path drawn = temp_beside(png, ".png");
  // Both temporaries are removed by an interruption (neither is a result: the plotter's input and its
  // output before the move), so neither is written through write_file_atomically, which reports its
  // files as written.
  const interrupt::TrackedFile tracked_csv(csv);
  const interrupt::TrackedFile tracked_drawn(drawn);
  std::error_code ec;
  try {
    {
      std::ofstream f(csv, std::ios::binary | std::ios::trunc);
      f << plot_csv_text;
      f.flush();
      if (!f) throw RuntimeError("cannot write the plot's data next to '" + png.string() + "'");
    }
    plot_csv(kind, csv, drawn, options);
    fs::remove(csv, ec);
    traces::write_files_atomically(files);
  } catch (...) {
    fs::remove(csv, ec);
    fs::remove(drawn, ec);
    throw;
  }
  {
    const interrupt::CriticalSection moving;
    fs::rename(drawn, png, ec);
    if (!ec) interrupt::note_written(png);
  }
  if (ec) {
    fs::remove(drawn, ec);
    throw RuntimeError("cannot move the plot into place at '" + png.string() + "'");
  }
}

}  // namespace dcpsim::analysis
