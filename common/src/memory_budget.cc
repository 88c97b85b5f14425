// Host memory limits and the process's own figures (memory_budget.h), read from /proc and the cgroup files.
#include "dcpsim/memory_budget.h"

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "dcpsim/error.h"

namespace dcpsim::memory {
namespace {

// "Key:   1234 kB" from a /proc file, in bytes (-1 when absent).
double proc_kb(const char* file, const std::string& key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) != 0) continue;
    std::istringstream fields(line.substr(key.size() + 1));
    double kb = -1;
    fields >> kb;
    return kb < 0 ? -1 : kb * 1024.0;
  }
  return -1;
}

double cgroup_number(const char* file) {
  std::ifstream in(file);
  std::string text;
  if (!(in >> text) || text == "max") return -1;
  try {
    return std::stod(text);
  } catch (const std::exception&) {
    return -1;
  }
}

std::int64_t default_max_input() {
  const double total = proc_kb("/proc/meminfo", "MemTotal");
  const double cap = 2.0 * (1 << 30);
  return static_cast<std::int64_t>(total > 0 ? std::min(cap, total / 8) : cap);
}

std::atomic<std::int64_t> g_max_input{0};
std::atomic<std::int64_t> g_host_input{0};  // 0: no host bound set
std::atomic<double> g_host_factor{0};
std::atomic<double> g_host_limit{0};

struct Notes {
  std::mutex mu;
  std::map<std::string, double> estimate, measured;
};
Notes& notes() {
  static Notes n;
  return n;
}

}  // namespace

std::string gigabytes(double bytes) {
  char buf[48];
  std::snprintf(buf, sizeof buf, bytes >= 1e8 ? "%.2f GB" : "%.3f GB", bytes / 1e9);
  return buf;
}

double rss_bytes() {
  return std::max(0.0, proc_kb("/proc/self/status", "VmRSS"));
}
double peak_rss_bytes() {
  return std::max(0.0, proc_kb("/proc/self/status", "VmHWM"));
}
double vm_bytes() {
  return std::max(0.0, proc_kb("/proc/self/status", "VmSize"));
}

HostLimit host_limit() {
  HostLimit l{proc_kb("/proc/meminfo", "MemAvailable"), "MemAvailable"};
  if (l.bytes < 0) l = {1e18, "no limit known"};
  rlimit as{};
  if (::getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
    // Address space goes faster than resident memory (allocator arenas, capacity reserved as containers
    // grow, thread stacks): what is left of it counts for two thirds.
    const double left = (static_cast<double>(as.rlim_cur) - vm_bytes()) / 1.5;
    if (left < l.bytes) l = {std::max(0.0, left), "ulimit -v"};
  }
  const double max = cgroup_number("/sys/fs/cgroup/memory.max");
  const double used = cgroup_number("/sys/fs/cgroup/memory.current");
  if (max > 0 && used >= 0 && max - used < l.bytes) l = {std::max(0.0, max - used), "cgroup memory.max"};
  return l;
}

void require_host(double estimate_bytes, const std::string& what) {
  note_estimate("host", estimate_bytes);
  const HostLimit l = host_limit();
  if (estimate_bytes <= l.bytes) return;
  throw InputError(what + " needs an estimated " + gigabytes(estimate_bytes) +
                   " of host memory at its peak; this machine allows " + gigabytes(l.bytes) + " (" + l.basis +
                   ")");
}

std::int64_t max_input_bytes() {
  const std::int64_t v = g_max_input.load();
  return v > 0 ? v : default_max_input();
}

void set_max_input_bytes(std::int64_t bytes) {
  g_max_input = bytes;
}

void limit_inputs_to_host(double factor) {
  if (!(factor > 0)) return;
  const HostLimit l = host_limit();
  g_host_factor = factor;
  g_host_limit = l.bytes;
  g_host_input = static_cast<std::int64_t>(std::clamp(l.bytes / factor, 1.0, 9e18));
}

std::int64_t input_cap_bytes() {
  const std::int64_t host = g_host_input.load();
  return host > 0 ? std::min(host, max_input_bytes()) : max_input_bytes();
}

std::string input_cap_hint() {
  char buf[160];
  const std::int64_t host = g_host_input.load();
  if (host > 0 && host < max_input_bytes()) {
    std::snprintf(buf, sizeof buf, "this command holds %.3g bytes per input byte and %s may be added here",
                  g_host_factor.load(), gigabytes(g_host_limit.load()).c_str());
  } else {
    std::snprintf(buf, sizeof buf, "--max-input-gb %.3g; raise it to read larger inputs",
                  static_cast<double>(max_input_bytes()) / 1e9);
  }
  return buf;
}

void note_estimate(const std::string& kind, double bytes) {
  Notes& n = notes();
  std::lock_guard lock(n.mu);
  n.estimate[kind] = std::max(n.estimate[kind], bytes);
}

void note_measured(const std::string& kind, double bytes) {
  Notes& n = notes();
  std::lock_guard lock(n.mu);
  n.measured[kind] = std::max(n.measured[kind], bytes);
}

std::string report_line() {
  Notes& n = notes();
  std::lock_guard lock(n.mu);
  std::string out = "memory:";
  for (const auto& [kind, bytes] : n.estimate) out += " estimated " + kind + " " + gigabytes(bytes) + ",";
  for (const auto& [kind, bytes] : n.measured) out += " measured " + kind + " " + gigabytes(bytes) + ",";
  out += " peak RSS " + gigabytes(peak_rss_bytes()) + ", address space " + gigabytes(vm_bytes());
  return out;
}

}  // namespace dcpsim::memory
