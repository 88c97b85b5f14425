// dcpsim export: Convert a trace to Chrome/Perfetto JSON.
#include "commands.h"

namespace dcpsim::cli {

void add_export_command(CLI::App& app) {
  add_unavailable_command(app, "export", "Convert a trace to Chrome/Perfetto JSON", "not built yet");
}

}  // namespace dcpsim::cli
