#pragma once
// Small output files (JSON summaries, CSVs, reports, profiles) written the way the trace writers write
// traces: into a temporary file beside the target, renamed into place when complete, so a reader never sees
// half a file and a failure leaves what was there before.
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dcpsim::traces {

// Writes `text` to `path`. Throws InputError naming `path` when its directory is missing or not writable, and
// RuntimeError when writing or the final rename fails (the temporary file is removed then).
void write_file_atomically(const std::filesystem::path& path, std::string_view text);

// Writes several files that belong together (a profile and its sidecar): every temporary file is written
// first and the renames follow only when all succeeded, so either all appear or none changes.
void write_files_atomically(const std::vector<std::pair<std::filesystem::path, std::string>>& files);

// A path given on the command line, with the flag that named it ("--out", or "input" for a positional).
struct PathFlag {
  std::string flag;
  std::filesystem::path path;
};

// The guard of dcpsim/io_guard.h over paths listed by hand: empty paths and inputs that do not exist are
// skipped. Each output must name a file (not a directory or a device) in an existing, writable directory, and
// differ from every input and every other output (resolved paths, and st_dev + st_ino). Throws InputError
// naming the flags. New code lists its inputs in an IoGuard (analysis/io_inputs.h adds a profile's tables,
// a model file and the traces of a directory).
void check_output_paths(const std::vector<PathFlag>& inputs, const std::vector<PathFlag>& outputs);

}  // namespace dcpsim::traces
