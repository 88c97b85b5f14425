#pragma once
// Memory is bounded and estimated before work starts: a command adds up what it will hold at its peak, and
// refuses in one line — the estimate and the limit — what this machine cannot hold, instead of being killed
// by the kernel half-way. The limit is the least of the memory the kernel reports available (MemAvailable),
// the address-space limit (ulimit -v, less what is mapped already) and the cgroup's memory.max (less its
// usage).
#include <cstdint>
#include <string>

namespace dcpsim::memory {

struct HostLimit {
  double bytes = 0;   // what this process may still add
  std::string basis;  // "MemAvailable", "ulimit -v", "cgroup memory.max"
};

HostLimit host_limit();

// From /proc/self/status (0 where unavailable): resident set, its high-water mark, mapped address space.
double rss_bytes();
double peak_rss_bytes();
double vm_bytes();

// Throws InputError("<what> needs an estimated X GB of host memory at its peak; this machine allows Y GB
// (basis)") when `estimate_bytes` (what the work adds to the process) exceeds the limit.
void require_host(double estimate_bytes, const std::string& what);

// The cap on the bytes one input may decompress to (--max-input-gb; default: an eighth of the machine's
// memory, at most 2 GiB), so a small compressed file cannot expand without bound.
std::int64_t max_input_bytes();
void set_max_input_bytes(std::int64_t bytes);
// The cap a reader enforces while it decompresses: max_input_bytes(), lowered by limit_inputs_to_host() to
// what the host can hold for a reader that keeps `factor` bytes per input byte; and the phrase its message
// ends with ("(--max-input-gb 2; raise it to read larger inputs)" or the host limit's).
void limit_inputs_to_host(double factor);
std::int64_t input_cap_bytes();
std::string input_cap_hint();

// What --memory-report prints at the end of a command: the estimates made and the measured peaks.
void note_estimate(const std::string& kind, double bytes);  // "host", "device"
void note_measured(const std::string& kind, double bytes);
std::string report_line();

// "1.23 GB" (1e9).
std::string gigabytes(double bytes);

}  // namespace dcpsim::memory
