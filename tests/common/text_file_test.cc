// Text files that may be gzip: a gzip file of one member or several inflates whole, bytes after the last
// member and a cut stream are one-line errors naming the file, the cap on what an input expands to holds
// (not for the binary's own bytes), and X.json is found as X.json.gz.
#include "dcpsim/text_file.h"

#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "dcpsim/error.h"
#include "dcpsim/memory_budget.h"

namespace dcpsim {
namespace {

std::string gz(const std::string& text) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, text.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(out.size() - z.avail_out);
  deflateEnd(&z);
  return out;
}

std::string error_of(std::string_view bytes) {
  try {
    gunzip(bytes, "t.json.gz");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(TextFile, GzipMembersInflateWholeAndDamageIsOneLine) {
  EXPECT_EQ(gunzip(gz("{\"a\": 1}"), "t"), "{\"a\": 1}");
  EXPECT_EQ(gunzip(gz("ab") + gz("cd"), "t"), "abcd");  // `cat a.gz b.gz`, as gzip(1) reads it
  EXPECT_EQ(error_of(gz("abc") + "junk"), "t.json.gz: not a valid gzip stream: 4 bytes after its end");
  const std::string whole = gz(std::string(1000, 'x'));
  EXPECT_EQ(error_of(whole.substr(0, whole.size() / 2)), "t.json.gz: not a valid gzip stream: truncated");
  EXPECT_TRUE(is_gzip(whole));
  EXPECT_FALSE(is_gzip("{}"));
}

TEST(TextFile, TheInputCapHoldsButNotForTheBinarysOwnBytes) {
  const std::string big = gz(std::string(3u << 20, 'x'));  // 3 MiB of text
  memory::set_max_input_bytes(1 << 20);
  EXPECT_NE(error_of(big).find("t.json.gz: it expands to more than"), std::string::npos) << error_of(big);
  EXPECT_EQ(gunzip(big, "built-in", false).size(), 3u << 20);
  memory::set_max_input_bytes(0);  // back to the default
}

TEST(TextFile, APlainNameFindsItsGzipSibling) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "dcpsim-text-file-test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "t.json.gz", std::ios::binary) << gz("{\"t\": 2}");
  EXPECT_EQ(existing_or_gz(dir / "t.json"), dir / "t.json.gz");
  EXPECT_EQ(read_text_file(dir / "t.json", "table"), "{\"t\": 2}");
  std::ofstream(dir / "t.json") << "{\"plain\": 1}";  // both: the plain file is the one read
  EXPECT_EQ(read_text_file(dir / "t.json", "table"), "{\"plain\": 1}");
  EXPECT_EQ(existing_or_gz(dir / "none.json"), dir / "none.json");
  try {
    read_text_file(dir / "none.json", "kernel table file");
    ADD_FAILURE() << "a missing file was read";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), (dir / "none.json").string() +
                                         ": cannot open kernel table file (not found or not a regular file)");
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dcpsim
