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

// Parses `input` with the depth guard; a syntax error or a number out of range is an InputError naming
// `origin` and the JSON path of the value where it happened.
template <class Json = nlohmann::json, class Input>
Json parse_json_checked(Input&& input, const std::string& origin) {
  JsonPathTracker where;
  auto guard = json_depth_guard<Json>(origin);
  auto callback = [&](int depth, typename Json::parse_event_t event, Json& value) {
    using E = typename Json::parse_event_t;
    switch (event) {
      case E::object_start:
        where.object_start();
        break;
      case E::array_start:
        where.array_start();
        break;
      case E::key:
        where.key(value.is_string() ? value.template get<std::string>() : std::string());
        break;
      case E::object_end:
      case E::array_end:
        where.end();
        break;
      case E::value:
        where.element_done();
        break;
    }
    return guard(depth, event, value);
  };
  try {
    return Json::parse(std::forward<Input>(input), callback);
  } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for a number overflow
    std::string what = e.what();
    if (auto bracket = what.find("] ");
        what.rfind("[json.exception", 0) == 0 && bracket != std::string::npos) {
      what = what.substr(bracket + 2);
    }
    const std::string path = where.path();
    throw InputError(origin + ": invalid JSON" + (path.empty() ? "" : " at " + path) + ": " + what);
  }
}

}  // namespace dcpsim
