#include "dcpsim/traces/import_io.h"

#include <zlib.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <streambuf>
#include <system_error>

#include "dcpsim/error.h"

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
}

InputFile::~InputFile() = default;

std::istream& InputFile::stream() {
  return *stream_;
}

bool InputFile::gzipped() const {
  return !buffer_->direct();
}

void InputFile::check() const {
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

std::string InputFile::where(std::int64_t line) const {
  return path_.string() + ":" + std::to_string(line);
}

}  // namespace dcpsim::traces
