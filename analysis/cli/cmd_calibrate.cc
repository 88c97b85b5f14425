// dcpsim calibrate: Fit a hardware profile to measured traces.
#include "commands.h"

namespace dcpsim::cli {

void add_calibrate_command(CLI::App& app) {
  add_unavailable_command(app, "calibrate", "Fit a hardware profile to measured traces", "not built yet");
}

}  // namespace dcpsim::cli
