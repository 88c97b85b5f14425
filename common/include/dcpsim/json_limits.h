#pragma once
// The nesting limit of every JSON document dcpsim reads (profiles, partials, request rows, Kineto traces).
// nlohmann's parser is iterative but its serializer and our readers recurse, so a document nested 100,000
// deep would overflow the stack; no legitimate input is nested more than a handful of levels.
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "dcpsim/error.h"

namespace dcpsim {

inline constexpr int kMaxJsonDepth = 128;

inline InputError json_too_deep(std::string_view origin) {
  return InputError(std::string(origin) + ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                    " levels");
}

// A parser callback for Json::parse that refuses documents nested deeper than kMaxJsonDepth.
template <class Json = nlohmann::json>
typename Json::parser_callback_t json_depth_guard(std::string origin) {
  return [origin = std::move(origin)](int depth, typename Json::parse_event_t event, Json&) {
    if ((event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start) &&
        depth >= kMaxJsonDepth) {
      throw json_too_deep(origin);
    }
    return true;
  };
}

// Where the parser is in a document, as a JSON path ("gpu.sm_count.value", "traceEvents[3].dur"), kept up to
// date by parse_json_checked's callback so that an error the parser raises inside a value (a number out of
// range) can name the value.
class JsonPathTracker {
 public:
  void object_start() { frames_.push_back({false, 0, {}}); }
  void array_start() { frames_.push_back({true, 0, {}}); }
  void key(std::string k) {
    if (!frames_.empty()) frames_.back().key = std::move(k);
  }
  void end() {
    if (!frames_.empty()) frames_.pop_back();
    element_done();
  }
  void element_done() {
    if (!frames_.empty() && frames_.back().array) ++frames_.back().index;
  }
  std::string path() const {
    std::string out;
    for (const Frame& f : frames_) {
      if (f.array) {
        out += "[" + std::to_string(f.index) + "]";
      } else if (!f.key.empty()) {
        out += (out.empty() ? "" : ".") + f.key;
      }
    }
    return out;
  }

 private:
  struct Frame {
    bool array = false;
    long index = 0;   // arrays: the element being read
    std::string key;  // objects: the member being read
  };
  std::vector<Frame> frames_;
};

namespace detail {

// Builds the document from the parser's SAX events, refusing nesting deeper than kMaxJsonDepth and keeping
// the path of the value being read. (nlohmann's own parser with a callback does the same, but it searches the
// parent container for a discarded value at every object's end: quadratic in an array of objects, seconds for
// a kernel table of 10,000 points.)
template <class Json>
class CheckedDomBuilder {
 public:
  using number_integer_t = typename Json::number_integer_t;
  using number_unsigned_t = typename Json::number_unsigned_t;
  using number_float_t = typename Json::number_float_t;
  using string_t = typename Json::string_t;
  using binary_t = typename Json::binary_t;

  explicit CheckedDomBuilder(const std::string& origin) : origin_(origin) {}

  bool null() { return scalar(Json(nullptr)); }
  bool boolean(bool v) { return scalar(Json(v)); }
  bool number_integer(number_integer_t v) { return scalar(Json(v)); }
  bool number_unsigned(number_unsigned_t v) { return scalar(Json(v)); }
  bool number_float(number_float_t v, const string_t&) { return scalar(Json(v)); }
  bool string(string_t& v) { return scalar(Json(std::move(v))); }
  bool binary(binary_t& v) { return scalar(Json(std::move(v))); }

  bool start_object(std::size_t) {
    open(Json::value_t::object);
    where_.object_start();
    return true;
  }
  bool key(string_t& k) {
    where_.key(k);
    key_ = std::move(k);
    return true;
  }
  bool end_object() { return close(); }
  bool start_array(std::size_t) {
    open(Json::value_t::array);
    where_.array_start();
    return true;
  }
  bool end_array() { return close(); }

  template <class Exception>
  bool parse_error(std::size_t, const std::string&, const Exception& e) {
    std::string what = e.what();
    if (auto bracket = what.find("] "); what.rfind("[json.exception", 0) == 0 && bracket != std::string::npos)
      what = what.substr(bracket + 2);
    const std::string path = where_.path();
    throw InputError(origin_ + ": invalid JSON" + (path.empty() ? "" : " at " + path) + ": " + what);
  }

  Json take() { return std::move(root_); }

 private:
  // Where the next value goes: the root, the end of the open array, or the open object's current key.
  Json* put(Json&& v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    Json& top = *stack_.back();
    if (top.is_array()) {
      top.push_back(std::move(v));
      return &top.back();
    }
    Json& slot = top[key_];
    slot = std::move(v);
    return &slot;
  }
  bool scalar(Json&& v) {
    where_.element_done();
    put(std::move(v));
    return true;
  }
  void open(typename Json::value_t type) {
    if (stack_.size() >= static_cast<std::size_t>(kMaxJsonDepth)) throw json_too_deep(origin_);
    stack_.push_back(put(Json(type)));
  }
  bool close() {
    stack_.pop_back();
    where_.end();
    return true;
  }

  const std::string& origin_;
  Json root_;
  std::vector<Json*> stack_;
  string_t key_;
  JsonPathTracker where_;
};

}  // namespace detail

// Parses `input`, refusing documents nested deeper than kMaxJsonDepth; a syntax error or a number out of
// range is an InputError naming `origin` and the JSON path of the value where it happened.
template <class Json = nlohmann::json, class Input>
Json parse_json_checked(Input&& input, const std::string& origin) {
  detail::CheckedDomBuilder<Json> builder(origin);
  Json::sax_parse(std::forward<Input>(input), &builder);
  return builder.take();
}

}  // namespace dcpsim
