#pragma once
// Streaming JSON for the importers: parses a document whose bulk is one big array of objects (a Chrome/Kineto
// "traceEvents" list) without ever holding that array, and keeps every floating-point number as the exact
// text it was written in, so that "4458677009853.422" µs becomes 4458677009853422 ns with no binary rounding
// on the way.
#include <cstdint>
#include <functional>
#include <istream>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace dcpsim::traces::import_json {

using Json = nlohmann::json;

// Parses `in`. Each element of the top-level array member named `stream_key` is handed to `on_element` as
// soon as it is complete and is not kept; everything else is returned as the document (with `stream_key`
// absent). Floating-point numbers appear as strings holding their source text. Throws InputError naming
// `origin` (and the byte offset) on malformed JSON or when the document has no such array.
Json parse_streaming(std::istream& in, std::string_view origin, std::string_view stream_key,
                     const std::function<void(Json&&)>& on_element);

// A time in µs as written (an integer, or a decimal string from parse_streaming) converted exactly to integer
// ns; digits past the ns are rounded half away from zero. Throws InputError naming `what` when `v` is not a
// number.
std::int64_t micros_to_ns(const Json& v, std::string_view what);

// An integer field (an integer, or a decimal string with no fractional part); throws InputError naming
// `what`.
std::int64_t to_int64(const Json& v, std::string_view what);

// A value shown as text: strings as they are, anything else as compact JSON.
std::string to_text(const Json& v);

// A JSON library error as a sentence: "type must be string, but is number" without nlohmann's
// "[json.exception.type_error.302] " prefix.
std::string json_error_text(const nlohmann::json::exception& e);

}  // namespace dcpsim::traces::import_json
