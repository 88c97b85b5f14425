#pragma once
// Text files that may be stored gzip-compressed. The repository keeps its measured kernel tables as
// `X.json.gz` (models/profiles/README.md); every reader that is handed `X.json` finds `X.json.gz` beside it,
// and a file's content is inflated when it starts with gzip's magic bytes, whatever its name.
#include <filesystem>
#include <string>
#include <string_view>

namespace dcpsim {

// `path` when it exists; else `path` + ".gz" when that exists; else `path` (for the caller's error message).
std::filesystem::path existing_or_gz(const std::filesystem::path& path);

// The whole text of `path` (or of `path`.gz), inflated if it is gzip. Throws InputError "<file>: cannot open
// <what> (not found or not a regular file)" or "<file>: not a valid gzip stream: <why>", <file> the one read;
// the inflated size is capped by memory::input_cap_bytes().
std::string read_text_file(const std::filesystem::path& path, std::string_view what);

// True when `bytes` starts with gzip's magic (1f 8b).
bool is_gzip(std::string_view bytes);

// `bytes` (a whole gzip file: one member or several) inflated; `where` names it in the InputError thrown for
// a corrupt or truncated stream, bytes after its end that are not another member, or (`capped`) one that
// expands past memory::input_cap_bytes() (the built-in tables, embedded in the binary, are not capped).
std::string gunzip(std::string_view bytes, std::string_view where, bool capped = true);

}  // namespace dcpsim
