// dcpsim simulate: Simulate one DCP decode step on SimGrid.
#include "commands.h"

namespace dcpsim::cli {

void add_simulate_command(CLI::App& app) {
  add_unavailable_command(app, "simulate", "Simulate one DCP decode step on SimGrid", "not built yet");
}

}  // namespace dcpsim::cli
