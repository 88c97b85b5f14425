#include "dcpsim/traces/import_io.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <streambuf>
#include <string_view>
#include <system_error>

#include "dcpsim/error.h"
#include "dcpsim/memory_budget.h"

namespace dcpsim::traces {

// zlib's gz* functions read plain files as they are, so one buffer serves both kinds of input.
class InputFile::GzipBuffer final : public std::streambuf {
 public:
  explicit GzipBuffer(const std::filesystem::path& path) : file_(gzopen(path.c_str(), "rb")) {
    if (file_ == nullptr) {
      throw InputError("cannot open '" + path.string() +
                       "': " + (errno != 0 ? std::strerror(errno) : "out of memory"));
    }
    gzbuffer(file_, 1 << 17);
  }
  ~GzipBuffer() override { gzclose(file_); }
  GzipBuffer(const GzipBuffer&) = delete;
  GzipBuffer& operator=(const GzipBuffer&) = delete;

  bool direct() const { return gzdirect(file_) != 0; }
  const std::string& error() const { return error_; }
  bool too_large() const { return too_large_; }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    if (!error_.empty()) return traits_type::eof();
    const int n = gzread(file_, data_.data(), static_cast<unsigned>(data_.size()));
    if (n < 0) {
      record_error();
      return traits_type::eof();
    }
    if (n == 0) {
      // gzread reports a stream cut short only once the data before the cut has been delivered.
      record_error();
      return traits_type::eof();
    }
    delivered_ += n;
    if (!direct() && delivered_ > memory::input_cap_bytes()) {
      error_ = "it expands to more than " +
               memory::gigabytes(static_cast<double>(memory::input_cap_bytes())) + " (" +
               memory::input_cap_hint() + ")";
      too_large_ = true;
      return traits_type::eof();
    }
    setg(data_.data(), data_.data(), data_.data() + n);
    return traits_type::to_int_type(*gptr());
  }

 private:
  void record_error() {
    int code = Z_OK;
    const char* message = gzerror(file_, &code);
    if (code != Z_OK && code != Z_STREAM_END) {
      error_ = (message != nullptr && *message != '\0') ? message : "decompression failed";
    }
  }

  gzFile file_;
  std::array<char, 1 << 16> data_{};
  std::string error_;
  std::int64_t delivered_ = 0;
  bool too_large_ = false;
};

InputFile::InputFile(std::filesystem::path path) : path_(std::move(path)) {
  std::error_code ec;
  const auto status = std::filesystem::status(path_, ec);
  if (ec || !std::filesystem::exists(status)) throw InputError("'" + path_.string() + "' does not exist");
  if (std::filesystem::is_directory(status)) {
    throw InputError("'" + path_.string() + "' is a directory; a file is needed");
  }
  buffer_ = std::make_unique<GzipBuffer>(path_);
  stream_ = std::make_unique<std::istream>(buffer_.get());
  // A gzip stream's trailer states its size (modulo 2^32): past the cap, refuse before inflating anything.
  if (gzipped()) {
    const double expands = expanded_size_hint(path_);
    if (expands > static_cast<double>(memory::input_cap_bytes())) {
      throw InputError("'" + path_.string() + "': it expands to " + memory::gigabytes(expands) +
                       " (its gzip trailer), more than " +
                       memory::gigabytes(static_cast<double>(memory::input_cap_bytes())) + " (" +
                       memory::input_cap_hint() + ")");
    }
  }
}

InputFile::~InputFile() = default;

std::istream& InputFile::stream() {
  return *stream_;
}

bool InputFile::too_large() const {
  return buffer_->too_large();
}

bool InputFile::gzipped() const {
  return !buffer_->direct();
}

void InputFile::check() const {
  if (buffer_->too_large()) throw InputError("'" + path_.string() + "': " + buffer_->error());
  if (!buffer_->error().empty()) {
    throw InputError("'" + path_.string() + "': corrupt or truncated gzip data (" + buffer_->error() + ")");
  }
}

bool InputFile::next_line(std::string& line) {
  if (!std::getline(*stream_, line)) {
    check();
    return false;
  }
  check();
  if (!line.empty() && line.back() == '\r') line.pop_back();
  ++line_number_;
  return true;
}

std::int64_t count_occurrences(const std::filesystem::path& path, std::string_view needle, double max_bytes) {
  InputFile file(path);
  std::string block(1 << 20, '\0'), carry;
  std::int64_t count = 0;
  double read = 0;
  while (read < max_bytes) {
    file.stream().read(block.data(), static_cast<std::streamsize>(block.size()));
    const std::streamsize n = file.stream().gcount();
    if (n <= 0) break;
    read += static_cast<double>(n);
    // The last needle.size() - 1 bytes of the previous block join this one, so no occurrence is split.
    const std::string text = carry + block.substr(0, static_cast<std::size_t>(n));
    for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++count;
    const std::size_t keep = std::min(text.size(), needle.size() - 1);
    carry = text.substr(text.size() - keep);
  }
  file.check();
  return count;
}

double expanded_size_hint(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char head[2] = {0, 0};
  if (!in.read(reinterpret_cast<char*>(head), 2)) return 0;
  in.seekg(0, std::ios::end);
  const double size = static_cast<double>(in.tellg());
  if (head[0] != 0x1f || head[1] != 0x8b || size < 18) return size;
  unsigned char trailer[4] = {0, 0, 0, 0};
  in.seekg(-4, std::ios::end);
  in.read(reinterpret_cast<char*>(trailer), 4);
  const std::uint32_t isize =
      trailer[0] | (trailer[1] << 8) | (trailer[2] << 16) | (std::uint32_t(trailer[3]) << 24);
  // Deflate expands at most 1032-fold: a larger claim is no size (a truncated file's last bytes, say).
  if (static_cast<double>(isize) > 1032.0 * size) return size;
  return std::max(static_cast<double>(isize), size);
}

std::string InputFile::where(std::int64_t line) const {
  return path_.string() + ":" + std::to_string(line);
}

}  // namespace dcpsim::traces
