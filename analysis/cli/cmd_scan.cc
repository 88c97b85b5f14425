// dcpsim scan: Simulate a grid of scenarios into CSV.
#include "commands.h"

namespace dcpsim::cli {

void add_scan_command(CLI::App& app) {
  add_unavailable_command(app, "scan", "Simulate a grid of scenarios into CSV", "not built yet");
}

}  // namespace dcpsim::cli
