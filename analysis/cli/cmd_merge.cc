// dcpsim merge: Exact reference merge of user-supplied partials.
#include "commands.h"

namespace dcpsim::cli {

void add_merge_command(CLI::App& app) {
  add_unavailable_command(app, "merge", "Exact reference merge of user-supplied partials", "not built yet");
}

}  // namespace dcpsim::cli
