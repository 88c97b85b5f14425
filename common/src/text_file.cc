#include "dcpsim/text_file.h"

#include <zlib.h>

#include <fstream>
#include <sstream>
#include <system_error>

#include "dcpsim/error.h"
#include "dcpsim/memory_budget.h"

namespace dcpsim {

std::filesystem::path existing_or_gz(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) return path;
  std::filesystem::path gz = path;
  gz += ".gz";
  if (std::filesystem::exists(gz, ec)) return gz;
  return path;
}

bool is_gzip(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

std::string gunzip(std::string_view bytes, std::string_view where, bool capped) {
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) throw InputError(std::string(where) + ": out of memory");
  const auto fail = [&](const std::string& why) {
    inflateEnd(&z);
    throw InputError(std::string(where) + ": " + why);
  };
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  std::string out;
  char buf[1 << 16];
  while (true) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    const int rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END)
      fail("not a valid gzip stream: " +
           std::string(rc == Z_BUF_ERROR ? "truncated" : (z.msg != nullptr ? z.msg : "corrupt")));
    out.append(buf, sizeof buf - z.avail_out);
    if (capped && static_cast<std::int64_t>(out.size()) > memory::input_cap_bytes())
      fail("it expands to more than " + memory::gigabytes(static_cast<double>(memory::input_cap_bytes())) +
           " (" + memory::input_cap_hint() + ")");
    if (rc != Z_STREAM_END) continue;
    // A gzip file may hold several members (`cat a.gz b.gz`), read one after the other as gzip(1) does;
    // anything else after the last is an error, not silently dropped.
    const std::string_view rest(reinterpret_cast<const char*>(z.next_in), z.avail_in);
    if (rest.empty()) break;
    if (!is_gzip(rest))
      fail("not a valid gzip stream: " + std::to_string(rest.size()) + " bytes after its end");
    inflateReset(&z);
  }
  inflateEnd(&z);
  return out;
}

std::string read_text_file(const std::filesystem::path& requested, std::string_view what) {
  const std::filesystem::path path = existing_or_gz(requested);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw InputError(path.string() + ": cannot open " + std::string(what) +
                     " (not found or not a regular file)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path.string() + ": cannot open " + std::string(what));
  std::ostringstream text;
  text << in.rdbuf();
  std::string bytes = std::move(text).str();
  if (is_gzip(bytes)) return gunzip(bytes, path.string());
  return bytes;
}

}  // namespace dcpsim
