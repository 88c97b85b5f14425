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
}

}  // namespace dcpsim::analysis::memory_estimate
