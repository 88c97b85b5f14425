#include "dcpsim/analysis/requests.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

#include "dcpsim/checked.h"
#include "dcpsim/error.h"
#include "dcpsim/json_limits.h"
#include "dcpsim/traces/import_io.h"

namespace dcpsim::analysis {
namespace {

bool blank(const std::string& line) {
  return std::all_of(line.begin(), line.end(), [](unsigned char c) { return std::isspace(c) != 0; });
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::int64_t json_count(const nlohmann::json& row, const char* field, const std::string& where) {
  if (!row.contains(field)) throw InputError(where + ": field \"" + field + "\" is missing");
  const auto& v = row[field];
  if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<std::uint64_t>() > kMaxTokens) ||
      v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > kMaxTokens) {
    throw InputError(where + ": \"" + field + "\" is " + v.dump() + "; a whole number in [0, " +
                     std::to_string(kMaxTokens) + "] is needed");
  }
  return v.get<std::int64_t>();
}

std::int64_t json_timestamp_ns(const nlohmann::json& row, const std::string& where) {
  if (!row.contains("timestamp")) throw InputError(where + ": field \"timestamp\" is missing");
  const auto& v = row["timestamp"];
  constexpr std::int64_t kMaxMs = kMaxTimeNs / 1'000'000;
  if (v.is_number_integer() && !v.is_number_unsigned() && v.get<std::int64_t>() >= 0 &&
      v.get<std::int64_t>() <= kMaxMs) {
    return v.get<std::int64_t>() * 1'000'000;
  }
  if (v.is_number_unsigned() && v.get<std::uint64_t>() <= static_cast<std::uint64_t>(kMaxMs)) {
    return static_cast<std::int64_t>(v.get<std::uint64_t>()) * 1'000'000;
  }
  if (v.is_number_float() && v.get<double>() >= 0 && v.get<double>() <= static_cast<double>(kMaxMs)) {
    return std::llround(v.get<double>() * 1e6);
  }
  throw InputError(where + ": \"timestamp\" is " + v.dump() + "; milliseconds in [0, " +
                   std::to_string(kMaxMs) + "] are needed");
}

std::int64_t csv_count(std::string_view field, const char* column, const std::string& where) {
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
  if (ec != std::errc() || end != field.data() + field.size() || v < 0 || v > kMaxTokens) {
    throw InputError(where + ": " + column + " '" + std::string(field) + "' is not a whole number in [0, " +
                     std::to_string(kMaxTokens) + "]");
  }
  return v;
}

std::vector<std::string_view> split_csv(std::string_view line, const std::string& where) {
  if (line.find('"') != std::string_view::npos) {
    throw InputError(where + ": quoted fields are not supported in request traces");
  }
  std::vector<std::string_view> fields;
  std::size_t begin = 0;
  while (true) {
    const std::size_t comma = line.find(',', begin);
    std::string_view f =
        line.substr(begin, comma == std::string_view::npos ? std::string_view::npos : comma - begin);
    while (!f.empty() && std::isspace(static_cast<unsigned char>(f.front()))) f.remove_prefix(1);
    while (!f.empty() && std::isspace(static_cast<unsigned char>(f.back()))) f.remove_suffix(1);
    fields.push_back(f);
    if (comma == std::string_view::npos) break;
    begin = comma + 1;
  }
  return fields;
}

// Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (H. Hinnant's days_from_civil).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

bool leap(std::int64_t y) {
  return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

}  // namespace

std::int64_t parse_utc_datetime_ns(std::string_view text, std::string_view what) {
  const auto bad = [&](const char* why) -> InputError {
    return InputError(std::string(what) + " '" + std::string(text) + "' is not a date-time like " +
                      "2023-11-16 18:15:46.6805900 (" + why + ")");
  };
  std::string_view s = text;
  if (!s.empty() && s.back() == 'Z') s.remove_suffix(1);
  auto number = [&](std::size_t pos, std::size_t len) -> std::int64_t {
    if (pos + len > s.size()) throw bad("too short");
    std::int64_t v = 0;
    for (std::size_t i = pos; i < pos + len; ++i) {
      if (!std::isdigit(static_cast<unsigned char>(s[i]))) throw bad("a digit was expected");
      v = v * 10 + (s[i] - '0');
    }
    return v;
  };
  if (s.size() < 19 || s[4] != '-' || s[7] != '-' || (s[10] != ' ' && s[10] != 'T') || s[13] != ':' ||
      s[16] != ':') {
    throw bad("layout");
  }
  const std::int64_t year = number(0, 4), month = number(5, 2), day = number(8, 2);
  const std::int64_t hour = number(11, 2), minute = number(14, 2), second = number(17, 2);
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  // 1970..2200: the traces are server logs; dates outside would not fit in int64 ns relative to each other.
  if (year < 1970 || year > 2200) throw bad("year: 1970 to 2200");
  if (month < 1 || month > 12) throw bad("month");
  if (day < 1 || day > kDays[month - 1] + (month == 2 && leap(year) ? 1 : 0)) throw bad("day");
  if (hour > 23 || minute > 59 || second > 60) throw bad("time of day");
  std::int64_t nanos = 0;
  if (s.size() > 19) {
    if (s[19] != '.' || s.size() == 20 || s.size() > 29) throw bad("fraction of a second: 1 to 9 digits");
    const std::size_t digits = s.size() - 20;
    nanos = number(20, digits);
    for (std::size_t i = digits; i < 9; ++i) nanos *= 10;
  }
  const std::int64_t days = days_from_civil(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
  return ((days * 24 + hour) * 60 + minute) * 60'000'000'000 + second * 1'000'000'000 + nanos;
}

std::vector<Request> read_mooncake_jsonl(const std::filesystem::path& path) {
  traces::InputFile file(path);
  std::vector<Request> requests;
  std::string line;
  while (file.next_line(line)) {
    if (blank(line)) continue;
    const std::string where = file.where(file.line_number());
    nlohmann::json row;
    try {
      row = nlohmann::json::parse(line, json_depth_guard(where));
    } catch (const nlohmann::json::exception&) {
      throw InputError(where + ": not a JSON object (Mooncake traces hold one object per line)");
    }
    if (!row.is_object())
      throw InputError(where + ": not a JSON object (Mooncake traces hold one object per line)");
    Request r;
    r.id = static_cast<std::int64_t>(requests.size());
    r.arrival_ns = json_timestamp_ns(row, where);
    r.input_tokens = json_count(row, "input_length", where);
    r.output_tokens = json_count(row, "output_length", where);
    requests.push_back(r);
  }
  if (requests.empty()) throw InputError("'" + path.string() + "' holds no requests");
  return requests;
}

std::vector<Request> read_azure_csv(const std::filesystem::path& path) {
  traces::InputFile file(path);
  std::string line;
  if (!file.next_line(line)) throw InputError("'" + path.string() + "' is empty");
  if (!line.empty() && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);
  const std::string header = lower(line);
  if (header.find("timestamp,contexttokens,generatedtokens") != 0 || split_csv(line, "").size() != 3) {
    throw InputError(file.where(1) + ": header is '" + line +
                     "'; an Azure request trace starts with TIMESTAMP,ContextTokens,GeneratedTokens");
  }
  std::vector<Request> requests;
  while (file.next_line(line)) {
    if (blank(line)) continue;
    const std::string where = file.where(file.line_number());
    const auto fields = split_csv(line, where);
    if (fields.size() != 3) {
      throw InputError(where + ": " + std::to_string(fields.size()) +
                       " fields; TIMESTAMP,ContextTokens,GeneratedTokens are needed");
    }
    Request r;
    r.id = static_cast<std::int64_t>(requests.size());
    r.arrival_ns = parse_utc_datetime_ns(fields[0], where + ": TIMESTAMP");
    r.input_tokens = csv_count(fields[1], "ContextTokens", where);
    r.output_tokens = csv_count(fields[2], "GeneratedTokens", where);
    requests.push_back(r);
  }
  if (requests.empty()) throw InputError("'" + path.string() + "' holds a header but no requests");
  // Relative to the earliest row (the first, in the published traces, which are sorted).
  const std::int64_t t0 =
      std::min_element(requests.begin(), requests.end(), [](const Request& a, const Request& b) {
        return a.arrival_ns < b.arrival_ns;
      })->arrival_ns;
  for (auto& r : requests) r.arrival_ns -= t0;
  return requests;
}

RequestFormat request_format_of(const std::filesystem::path& path) {
  std::string name = lower(path.filename().string());
  if (name.ends_with(".gz")) name.resize(name.size() - 3);
  if (name.ends_with(".jsonl") || name.ends_with(".json")) return RequestFormat::kMooncakeJsonl;
  if (name.ends_with(".csv")) return RequestFormat::kAzureCsv;
  throw InputError("request trace '" + path.string() +
                   "': unknown format; allowed: .jsonl (Mooncake) or .csv (Azure), optionally .gz");
}

std::vector<Request> read_requests(const std::filesystem::path& path) {
  return request_format_of(path) == RequestFormat::kMooncakeJsonl ? read_mooncake_jsonl(path)
                                                                  : read_azure_csv(path);
}

}  // namespace dcpsim::analysis
