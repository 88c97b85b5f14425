#pragma once
// Small output files (JSON summaries, CSVs, reports, profiles) written the way the trace writers write
// traces: into a temporary file beside the target, renamed into place when complete, so a reader never sees
// half a file and a failure leaves what was there before.
#include <filesystem>
#include <string_view>

namespace dcpsim::traces {

// Writes `text` to `path`. Throws InputError naming `path` when its directory is missing or not writable, and
// RuntimeError when writing or the final rename fails (the temporary file is removed then).
void write_file_atomically(const std::filesystem::path& path, std::string_view text);

}  // namespace dcpsim::traces
