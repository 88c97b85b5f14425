// dcpsim validate: Compare simulated and measured traces.
#include "commands.h"

namespace dcpsim::cli {

void add_validate_command(CLI::App& app) {
  add_unavailable_command(app, "validate", "Compare simulated and measured traces", "not built yet");
}

}  // namespace dcpsim::cli
