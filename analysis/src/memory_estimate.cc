// Input-size based host memory estimates (memory_estimate.h).
#include "dcpsim/analysis/memory_estimate.h"

#include <filesystem>

#include "dcpsim/memory_budget.h"
#include "dcpsim/traces/import_io.h"
#include "dcpsim/traces/trace_reader.h"

namespace dcpsim::analysis::memory_estimate {

double expanded_bytes(const std::string& path) {
  std::error_code ec;
  if (path.empty() || !std::filesystem::is_regular_file(path, ec)) return 0;
  return traces::expanded_size_hint(path);
}

double expanded_bytes(const std::vector<std::string>& paths) {
  double total = 0;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (!std::filesystem::is_directory(p, ec)) {
      total += expanded_bytes(p);
      continue;
    }
    for (auto it = std::filesystem::recursive_directory_iterator(p, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_regular_file(ec) && traces::is_trace_file_name(it->path()))
        total += expanded_bytes(it->path().string());
    }
  }
  return total;
}

void require_for_input(const std::string& what, double factor, double bytes) {
  memory::require_host(factor * bytes, "dcpsim " + what);
  // A gzip trailer may understate (sizes past 4 GiB wrap, or it lies): while reading, the input is also cut
  // at what the host can hold.
  memory::limit_inputs_to_host(factor);
}

void require_for_kineto(const std::string& path) {
  const double bytes = expanded_bytes(path);
  const double events = bytes > 64e6 && bytes <= static_cast<double>(memory::input_cap_bytes())
                            ? static_cast<double>(traces::count_occurrences(path, "\"ph\"", bytes * 1.01 + 1))
                            : bytes / kKinetoMinEventBytes;
  memory::require_host(kKinetoJson * bytes + kKinetoEvent * events, "dcpsim import");
  memory::limit_inputs_to_host(kKinetoJson + kKinetoEvent / kKinetoMinEventBytes);
}

}  // namespace dcpsim::analysis::memory_estimate
