#pragma once
// The nesting limit of every JSON document dcpsim reads (profiles, partials, request rows, Kineto traces).
// nlohmann's parser is iterative but its serializer and our readers recurse, so a document nested 100,000
// deep would overflow the stack; no legitimate input is nested more than a handful of levels.
#include <string>
#include <string_view>

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

// Parses `input` with the depth guard; a syntax error or a number out of range is an InputError naming
// `origin`.
template <class Json = nlohmann::json, class Input>
Json parse_json_checked(Input&& input, const std::string& origin) {
  try {
    return Json::parse(std::forward<Input>(input), json_depth_guard<Json>(origin));
  } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for a number overflow
    std::string what = e.what();
    if (auto bracket = what.find("] ");
        what.rfind("[json.exception", 0) == 0 && bracket != std::string::npos) {
      what = what.substr(bracket + 2);
    }
    throw InputError(origin + ": invalid JSON: " + what);
  }
}

}  // namespace dcpsim
