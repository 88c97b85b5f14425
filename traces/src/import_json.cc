#include "import_json.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <utility>
#include <vector>

#include "dcpsim/checked.h"
#include "dcpsim/error.h"
#include "dcpsim/json_limits.h"

namespace dcpsim::traces::import_json {
namespace {

// Builds the document like nlohmann's own DOM parser, except that the elements of the streamed array are
// built one at a time and handed off (a null entry on the stack stands for that array), and floats keep their
// text.
class StreamingHandler final : public nlohmann::json_sax<Json> {
 public:
  StreamingHandler(std::string_view origin, std::string_view stream_key,
                   const std::function<void(Json&&)>& on_element)
      : origin_(origin), stream_key_(stream_key), on_element_(on_element) {}

  Json take() { return std::move(root_); }
  bool streamed() const { return streamed_; }

  bool null() override { return scalar(Json(nullptr)); }
  bool boolean(bool v) override { return scalar(Json(v)); }
  bool number_integer(number_integer_t v) override { return scalar(Json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return scalar(Json(v)); }
  bool number_float(number_float_t, const string_t& text) override { return scalar(Json(text)); }
  bool string(string_t& v) override { return scalar(Json(std::move(v))); }
  bool binary(binary_t& v) override { return scalar(Json::binary(std::move(v))); }

  bool start_object(std::size_t) override {
    if (stack_.size() >= kMaxJsonDepth) throw json_too_deep(origin_);
    path_.object_start();
    stack_.push_back(put(Json::object()));
    return true;
  }
  bool key(string_t& k) override {
    path_.key(k);
    key_ = std::move(k);
    return true;
  }
  bool end_object() override {
    path_.end();
    return close();
  }

  bool start_array(std::size_t) override {
    if (stack_.size() >= kMaxJsonDepth) throw json_too_deep(origin_);
    path_.array_start();
    const bool is_stream = !streamed_ && stack_.size() == 1 && stack_.back() != nullptr &&
                           stack_.back()->is_object() && key_ == stream_key_;
    if (is_stream) {
      streamed_ = true;
      stack_.push_back(nullptr);
    } else {
      stack_.push_back(put(Json::array()));
    }
    return true;
  }
  bool end_array() override {
    path_.end();
    if (!stack_.empty() && stack_.back() == nullptr) {
      stack_.pop_back();
      return true;
    }
    return close();
  }

  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) override {
    std::string what = e.what();
    // nlohmann prefixes "[json.exception.parse_error.101] parse error at line 1, column 2: ": keep the
    // reason.
    if (auto colon = what.find(": "); colon != std::string::npos) what = what.substr(colon + 2);
    const std::string at = path_.path();
    throw InputError(std::string(origin_) + ": malformed JSON near byte " + std::to_string(position) +
                     (at.empty() ? "" : " (at " + at + ")") + ": " + what);
  }

 private:
  Json* put(Json&& v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    Json* top = stack_.back();
    if (top == nullptr) {
      element_ = std::move(v);
      return &element_;
    }
    if (top->is_array()) {
      top->push_back(std::move(v));
      return &top->back();
    }
    Json& slot = (*top)[key_];
    slot = std::move(v);
    return &slot;
  }

  bool scalar(Json&& v) {
    path_.element_done();
    put(std::move(v));
    deliver_if_complete();
    return true;
  }

  bool close() {
    stack_.pop_back();
    deliver_if_complete();
    return true;
  }

  void deliver_if_complete() {
    if (!stack_.empty() && stack_.back() == nullptr) on_element_(std::move(element_));
  }

  std::string_view origin_;
  std::string_view stream_key_;
  const std::function<void(Json&&)>& on_element_;
  Json root_;
  Json element_;
  std::vector<Json*> stack_;
  std::string key_;
  JsonPathTracker path_;  // where the parser is, for its errors
  bool streamed_ = false;
};

[[noreturn]] void not_a_number(const Json& v, std::string_view what) {
  throw InputError(std::string(what) + " is '" + to_text(v) + "'; a number is needed");
}

__extension__ typedef __int128 Wide;  // products of two int64 values must not overflow
constexpr Wide kInt64Max = std::numeric_limits<std::int64_t>::max();

// Exact decimal text -> integer in units of 10^-scale_digits of the written unit, rounded half away from
// zero.
std::int64_t decimal_to_scaled(const std::string& text, int scale_digits, const Json& v,
                               std::string_view what) {
  std::size_t i = 0;
  const bool negative = i < text.size() && text[i] == '-';
  if (negative) ++i;
  std::string digits;
  int fraction = 0;
  bool seen_point = false;
  for (; i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'); ++i) {
    if (text[i] == '.') {
      if (seen_point) not_a_number(v, what);
      seen_point = true;
    } else {
      digits += text[i];
      if (seen_point) ++fraction;
    }
  }
  int exponent = 0;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    std::size_t used = 0;
    try {
      exponent = std::stoi(text.substr(i + 1), &used);
    } catch (const std::exception&) {
      not_a_number(v, what);
    }
    i += 1 + used;
  }
  if (digits.empty() || i != text.size() || digits.size() > 36 || std::abs(exponent) > 30)
    not_a_number(v, what);
  int shift = exponent + scale_digits - fraction;
  Wide value = 0;
  for (char c : digits) value = value * 10 + (c - '0');
  for (; shift > 0; --shift) {
    value *= 10;
    if (value > kInt64Max) throw InputError(std::string(what) + " = " + text + " is out of range");
  }
  if (shift < 0) {
    Wide divisor = 1;
    for (; shift < 0; ++shift) divisor *= 10;
    value = (value + divisor / 2) / divisor;
  }
  if (value > kInt64Max) throw InputError(std::string(what) + " = " + text + " is out of range");
  return static_cast<std::int64_t>(negative ? -value : value);
}

}  // namespace

Json parse_streaming(std::istream& in, std::string_view origin, std::string_view stream_key,
                     const std::function<void(Json&&)>& on_element) {
  StreamingHandler handler(origin, stream_key, on_element);
  Json::sax_parse(in, &handler);
  if (!handler.streamed()) {
    throw InputError(std::string(origin) + ": no \"" + std::string(stream_key) + "\" array at the top level");
  }
  return handler.take();
}

std::int64_t micros_to_ns(const Json& v, std::string_view what) {
  if (v.is_number_integer()) {
    const Wide ns = static_cast<Wide>(v.get<std::int64_t>()) * 1000;
    if (ns > kInt64Max || ns < -kInt64Max) throw InputError(std::string(what) + " is out of range");
    return static_cast<std::int64_t>(ns);
  }
  if (v.is_number_float()) {
    return to_int64_checked(v.get<double>() * 1000.0, std::string(what) + " in ns", -kInt64Max + 1,
                            static_cast<std::int64_t>(kInt64Max));
  }
  if (v.is_string()) return decimal_to_scaled(v.get<std::string>(), 3, v, what);
  not_a_number(v, what);
}

std::int64_t to_int64(const Json& v, std::string_view what) {
  if (v.is_number_integer()) {
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(kInt64Max)) {
      throw InputError(std::string(what) + " is out of range");
    }
    return v.get<std::int64_t>();
  }
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s.find_first_of(".eE") == std::string::npos) return decimal_to_scaled(s, 0, v, what);
    const std::int64_t milli = decimal_to_scaled(s, 3, v, what);
    if (milli % 1000 == 0) return milli / 1000;
  }
  if (v.is_number_float() && std::trunc(v.get<double>()) == v.get<double>()) {
    return to_int64_checked(v.get<double>(), what, -kInt64Max + 1, static_cast<std::int64_t>(kInt64Max));
  }
  throw InputError(std::string(what) + " is '" + to_text(v) + "'; an integer is needed");
}

std::string json_error_text(const nlohmann::json::exception& e) {
  std::string what = e.what();
  if (const auto bracket = what.find("] ");
      what.rfind("[json.exception", 0) == 0 && bracket != std::string::npos)
    what.erase(0, bracket + 2);
  return what;
}

std::string to_text(const Json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

}  // namespace dcpsim::traces::import_json
