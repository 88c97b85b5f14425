#include "dcpsim/sim/simgrid_log.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include <xbt/log.h>

namespace dcpsim::sim {
namespace {

constexpr std::size_t kKeep = 300;

// Lines SimGrid logged, newest last, joined by "; " and trimmed from the front to kKeep characters.
std::string& kept() {
  static std::string text;
  return text;
}
std::string& partial() {  // a line SimGrid is still writing (its appender may write in pieces)
  static std::string text;
  return text;
}
// The last complete line, in a fixed buffer the SIGABRT handler can read without allocating.
char last_line[kKeep + 1] = {};

void keep_line(const std::string& line) {
  if (line.empty()) return;
  std::string& k = kept();
  if (!k.empty()) k += "; ";
  k += line;
  if (k.size() > kKeep) k.erase(0, k.size() - kKeep);
  const std::size_t n = std::min(line.size(), kKeep);
  std::memcpy(last_line, line.data(), n);
  last_line[n] = '\0';
}

ssize_t write_log(void*, const char* data, size_t size) {
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == '\n') {
      keep_line(partial());
      partial().clear();
    } else if (partial().size() < 4 * kKeep) {
      partial() += data[i];
    }
  }
  return static_cast<ssize_t>(size);
}

// xbt_die() logs, then aborts: say what SimGrid said, on one line, before the process goes.
void on_abort(int) {
  if (last_line[0] != '\0') {
    static const char prefix[] = "dcpsim: error: SimGrid: ";
    [[maybe_unused]] ssize_t r = ::write(STDERR_FILENO, prefix, sizeof prefix - 1);
    r = ::write(STDERR_FILENO, last_line, std::strlen(last_line));
    r = ::write(STDERR_FILENO, "\n", 1);
  }
  ::signal(SIGABRT, SIG_DFL);
  ::raise(SIGABRT);
}

}  // namespace

void route_simgrid_logging() {
  static bool routed = false;
  if (routed) return;
  routed = true;
  cookie_io_functions_t io{};
  io.write = &write_log;
  std::FILE* sink = ::fopencookie(nullptr, "w", io);
  if (sink == nullptr) return;  // keep SimGrid's own stderr appender rather than lose its messages
  std::setvbuf(sink, nullptr, _IONBF, 0);
  xbt_log_category_t root = &_XBT_LOGV(XBT_LOG_ROOT_CAT);
  xbt_log_appender_set(root, xbt_log_appender_stream(sink));
  xbt_log_layout_set(root, xbt_log_layout_format_new("%c %p: %m%n"));
  xbt_log_control_set("root.thresh:warning");
  ::signal(SIGABRT, &on_abort);
}

std::string take_simgrid_log() {
  std::string out;
  out.swap(kept());
  last_line[0] = '\0';
  return out;
}

}  // namespace dcpsim::sim
