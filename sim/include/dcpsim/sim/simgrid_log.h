#pragma once
// SimGrid's log lines, routed into dcpsim's error handling (as traces/trace_reader.h's
// route_protobuf_logging() does for Protobuf's): nothing SimGrid logs reaches stderr on its own. Lines of
// warning level and above are kept (the threshold); a simulator error names what SimGrid said during the
// scenario, and a SimGrid failure that aborts the process (xbt_die) is reported as one "dcpsim: error:
// SimGrid: ..." line before the abort.
#include <string>

namespace dcpsim::sim {

// Installs the routing; the simulator's engine calls it once, right after SimGrid's engine exists.
void route_simgrid_logging();

// What SimGrid logged since the last call, its lines joined by "; " (at most about 300 characters, the
// latest kept), and forgets it. Empty when SimGrid said nothing.
std::string take_simgrid_log();

}  // namespace dcpsim::sim
