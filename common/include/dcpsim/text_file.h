#pragma once
// Text files that may be stored gzip-compressed. The repository keeps its large measured kernel tables as
// `X.json.gz` (models/tables/README.md); every reader that is handed `X.json` finds `X.json.gz` beside it,
// and a file's content is inflated when it starts with gzip's magic bytes, whatever its name.
#include <filesystem>
#include <string>
#include <string_view>

namespace dcpsim {

// `path` when it exists; else `path` + ".gz" when that exists; else `path` (for the caller's error message).
std::filesystem::path existing_or_gz(const std::filesystem::path& path);

// The whole text of `path` (or of `path`.gz), inflated if it is gzip. Throws InputError "<path>: cannot open
// <what> (not found or not a regular file)" or "<path>: <what> is not a valid gzip stream: <why>"; the
// inflated size is capped by memory::input_cap_bytes().
std::string read_text_file(const std::filesystem::path& path, std::string_view what);

// True when `bytes` starts with gzip's magic (1f 8b).
bool is_gzip(std::string_view bytes);

// `bytes` (a whole gzip stream) inflated; `where` names it in the InputError thrown for a corrupt or
// truncated stream or one that expands past memory::input_cap_bytes().
std::string gunzip(std::string_view bytes, std::string_view where);

}  // namespace dcpsim
