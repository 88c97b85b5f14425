// dcpsim replay: Replay a request trace through continuous batching.
#include "commands.h"

namespace dcpsim::cli {

void add_replay_command(CLI::App& app) {
  add_unavailable_command(app, "replay", "Replay a request trace through continuous batching", "not built yet");
}

}  // namespace dcpsim::cli
