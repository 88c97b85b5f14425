#pragma once
// The temp-file-then-rename discipline both file writers follow: output appears complete or not at all.
#include <cstdio>
#include <filesystem>
#include <string>

namespace dcpsim::traces {

// Creates a uniquely named temporary file next to `target` and opens it for binary writing.
// Throws InputError naming `target` when its directory is missing or not writable.
std::FILE* open_temp_beside(const std::filesystem::path& target, std::filesystem::path& temp_path);

// Closes `file` and renames `temp_path` onto `target`; throws RuntimeError naming `target` if a write, the
// close or the rename failed (the temporary file is removed then). `file` is null afterwards.
void commit_temp(std::FILE*& file, const std::filesystem::path& temp_path,
                 const std::filesystem::path& target);

// As commit_temp, but what `file` holds is gzip-compressed into place (a second temporary file beside
// `target`, renamed onto it; the first is removed): a trace named *.gz is a gzip stream, as readers expect.
void commit_temp_gzip(std::FILE*& file, std::filesystem::path& temp_path,
                      const std::filesystem::path& target);

// Closes `file` if open and removes `temp_path` if set; never throws.
void discard_temp(std::FILE*& file, std::filesystem::path& temp_path) noexcept;

}  // namespace dcpsim::traces
