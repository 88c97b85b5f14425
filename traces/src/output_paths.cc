// check_output_paths: the older form of the guard (dcpsim/io_guard.h), kept for callers that list paths by
// hand. An input that does not exist is skipped here (a built-in profile's name is no file).
#include "dcpsim/io_guard.h"
#include "dcpsim/traces/output_file.h"

namespace dcpsim::traces {

void check_output_paths(const std::vector<PathFlag>& inputs, const std::vector<PathFlag>& outputs) {
  IoGuard io;
  for (const PathFlag& in : inputs) io.input_if_exists(in.flag, in.path);
  for (const PathFlag& out : outputs) io.output(out.flag, out.path);
  io.check();
}

}  // namespace dcpsim::traces
