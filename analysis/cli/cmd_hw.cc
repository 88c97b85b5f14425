// dcpsim hw: Run the real kernels and collectives on GPUs.
#include "commands.h"

namespace dcpsim::cli {

void add_hw_command(CLI::App& app) {
  add_unavailable_command(app, "hw", "Run the real kernels and collectives on GPUs", "not built yet");
}

}  // namespace dcpsim::cli
