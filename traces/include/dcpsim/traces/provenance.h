#pragma once
// Provenance for trace headers: which dcpsim built the trace, how it was invoked, when and where.
#include <string>
#include <vector>

#include "dcpsim/traces/schema.h"

namespace dcpsim::traces {

// Sets tool_version and git_sha (from the build), argv, created_unix_ns (now) and host_name. With an empty
// argv the process's own command line is read from /proc/self/cmdline where the system has it.
void fill_provenance(v1::Header& header, std::vector<std::string> argv = {});

// A header for `source` with provenance filled in.
v1::Header make_header(v1::Source source, std::vector<std::string> argv = {});

}  // namespace dcpsim::traces
