// dcpsim profiles: Built-in hardware profiles and their key numbers.
#include "commands.h"

namespace dcpsim::cli {

void add_profiles_command(CLI::App& app) {
  add_unavailable_command(app, "profiles", "Built-in hardware profiles and their key numbers", "not built yet");
}

}  // namespace dcpsim::cli
