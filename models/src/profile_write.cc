// Profile JSON writing and validation: to_json() walks the field list with a Writer and prints sections
// indented with each quantity on one line; validate_profile() walks it with a Validator for profiles edited
// in code.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "comm_table_json.h"
#include "kernel_table_json.h"
#include "profile_fields.h"

namespace dcpsim::models {
namespace {

using detail::Check;
using detail::check_value;
using detail::dimension_name;
using detail::dimension_units;
using detail::Json;
using detail::PathTracker;

class Writer {
 public:
  Json root;

  void text(std::string_view key, const std::string& value, bool) { top()[std::string(key)] = value; }

  void text_list(std::string_view key, const std::vector<std::string>& values) {
    if (!values.empty()) top()[std::string(key)] = values;
  }

  void number(std::string_view key, const Quantity& q, Dimension, Check) {
    Json j = Json::object();
    // Integral values print without ".0" so that counts read naturally; both spellings parse to the same
    // double.
    if (q.value == std::floor(q.value) && std::fabs(q.value) < 1e15) {
      j["value"] = static_cast<std::int64_t>(q.value);
    } else {
      j["value"] = q.value;
    }
    j["unit"] = std::string(to_string(q.unit));
    j["source"] = q.source;
    top()[std::string(key)] = std::move(j);
  }

  void optional_number(std::string_view key, const std::optional<Quantity>& q, Dimension dim, Check check) {
    if (q) number(key, *q, dim, check);
  }

  void flag(std::string_view key, const Switch& s) {
    top()[std::string(key)] = Json{{"value", s.value}, {"source", s.source}};
  }

  template <class T, class F>
  void optional_section(std::string_view key, const std::optional<T>& spec, F&& body) {
    if (spec) section(key, [&] { body(*spec); });
  }

  // Tables read from a file are written as that reference, inline ones inline.
  void tables(std::string_view key, const std::vector<KernelTables>& tables) {
    if (tables.empty()) return;
    Json list = Json::array();
    for (const KernelTables& t : tables) {
      if (t.origin.empty()) {
        list.push_back(detail::kernel_tables_to_json(t));
      } else {
        list.push_back(t.origin);
      }
    }
    top()[std::string(key)] = std::move(list);
  }

  // The same for communication tables; a borrowed file keeps its reason.
  void comm_tables(std::string_view key, const std::vector<CommTables>& tables) {
    if (tables.empty()) return;
    Json list = Json::array();
    for (const CommTables& t : tables) {
      if (t.origin.empty()) {
        list.push_back(detail::comm_tables_to_json(t));
        if (!t.borrowed.empty()) list.back()["borrowed"] = t.borrowed;
      } else if (!t.borrowed.empty()) {
        list.push_back(Json{{"path", t.origin}, {"borrowed", t.borrowed}});
      } else {
        list.push_back(t.origin);
      }
    }
    top()[std::string(key)] = std::move(list);
  }

  template <class F>
  void section(std::string_view key, F&& body) {
    stack_.push_back(Json::object());
    body();
    Json done = std::move(stack_.back());
    stack_.pop_back();
    top()[std::string(key)] = std::move(done);
  }

 private:
  Json& top() { return stack_.empty() ? root : stack_.back(); }
  std::vector<Json> stack_;
};

class Validator {
 public:
  explicit Validator(std::string origin) : paths_(std::move(origin)) {}

  void text(std::string_view key, const std::string& value, bool required_nonempty) {
    if (required_nonempty && value.empty()) paths_.fail(key, "expected a non-empty string");
  }

  void text_list(std::string_view key, const std::vector<std::string>& values) {
    for (const std::string& v : values)
      if (v.empty()) paths_.fail(key, "expected non-empty device names");
  }

  void number(std::string_view key, const Quantity& q, Dimension dim, Check check) {
    paths_.push(key);
    const std::string expected = check_value(q.value, check);
    if (!expected.empty()) paths_.fail("value", "expected " + expected + ", got " + Json(q.value).dump());
    if (dimension_of(q.unit) != dim) {
      paths_.fail("unit", "expected a " + std::string(dimension_name(dim)) + " unit (" +
                              dimension_units(dim) + "), got \"" + std::string(to_string(q.unit)) + "\"");
    }
    if (const std::string bound = detail::physical_bound(q, dim, check); !bound.empty())
      paths_.fail("value", "expected " + bound + ", got " + Json(q.value).dump());
    if (q.source.empty())
      paths_.fail("source", "expected a non-empty string naming where the value comes from");
    paths_.pop();
  }

  void optional_number(std::string_view key, const std::optional<Quantity>& q, Dimension dim, Check check) {
    if (q) number(key, *q, dim, check);
  }

  void flag(std::string_view key, const Switch& s) {
    if (s.source.empty()) {
      paths_.push(key);
      paths_.fail("source", "expected a non-empty string naming where the value comes from");
    }
  }

  template <class F>
  void section(std::string_view key, F&& body) {
    paths_.push(key);
    body();
    paths_.pop();
  }

  template <class T, class F>
  void optional_section(std::string_view key, const std::optional<T>& spec, F&& body) {
    if (spec) section(key, [&] { body(*spec); });
  }

  void tables(std::string_view, const std::vector<KernelTables>&) {}     // checked when read
  void comm_tables(std::string_view, const std::vector<CommTables>&) {}  // checked when read

 private:
  PathTracker paths_;
};

bool is_leaf(const Json& j) {
  if (!j.is_object()) return true;
  for (const auto& item : j.items()) {
    if (item.value().is_structured()) return false;
  }
  return true;
}

// Sections indented two spaces; each quantity on one line, as the hand-written files are laid out.
void print(const Json& j, int indent, std::string& out) {
  if (is_leaf(j)) {
    if (!j.is_object()) {
      out += j.dump();
      return;
    }
    out += "{";
    bool first = true;
    for (const auto& item : j.items()) {
      out += (first ? "" : ", ") + Json(item.key()).dump() + ": " + item.value().dump();
      first = false;
    }
    out += "}";
    return;
  }
  out += "{\n";
  std::size_t i = 0;
  for (const auto& item : j.items()) {
    out += std::string(indent + 2, ' ') + Json(item.key()).dump() + ": ";
    print(item.value(), indent + 2, out);
    out += ++i < j.size() ? ",\n" : "\n";
  }
  out += std::string(indent, ' ') + "}";
}

}  // namespace

std::string to_json(const HardwareProfile& p) {
  Writer writer;
  writer.root["format"] = std::string(detail::kFormat);
  detail::visit_profile(writer, p);
  std::string out;
  print(writer.root, 0, out);
  return out + "\n";
}

void validate_profile(const HardwareProfile& p, std::string_view origin) {
  Validator validator{std::string(origin)};
  detail::visit_profile(validator, p);
}

}  // namespace dcpsim::models
