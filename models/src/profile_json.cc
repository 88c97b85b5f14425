// Profile JSON reading: parse_profile() walks the field list with a Reader that checks every value, unit and
// source and reports unknown and missing keys with the file and the field's path.
#include <algorithm>
#include <string>
#include <vector>

#include "dcpsim/json_limits.h"
#include "profile_fields.h"

namespace dcpsim::models {
namespace {

using detail::Check;
using detail::check_value;
using detail::dimension_name;
using detail::dimension_units;
using detail::Json;
using detail::PathTracker;

// Physical bounds on every profile quantity, in SI units: far above any real GPU, low enough that sizes and
// times derived from them stay finite and SimGrid's clock stays exact (a launch latency of 1e300 s or 1e18
// SMs is a typo, not hardware).
std::string physical_bound(const Quantity& q, Dimension dim) {
  const double si = q.si();
  switch (dim) {
    case Dimension::kTime:
      return si <= 10.0 ? "" : "10 s";
    case Dimension::kBandwidth:
      return si <= 1e15 ? "" : "1 PB/s";
    case Dimension::kBytes:
      return si <= 1e15 ? "" : "1 PB";
    case Dimension::kCount:
      return si <= 1e6 ? "" : "1e6";
    case Dimension::kRatio:
      return "";
  }
  return "";
}

class Reader {
 public:
  Reader(const Json& root, std::string origin) : paths_(std::move(origin)) {
    frames_.push_back({&root, {}, {}});
  }

  void text(std::string_view key, std::string& out, bool required_nonempty) {
    const Json* j = member(key);
    if (j == nullptr) return;
    if (!j->is_string()) paths_.fail(key, "expected a string, got " + j->dump());
    out = j->get<std::string>();
    if (required_nonempty && out.empty()) paths_.fail(key, "expected a non-empty string");
  }

  void number(std::string_view key, Quantity& out, Dimension dim, Check check) {
    const Json* j = member(key);
    if (j == nullptr) return;
    section_of(key, *j, [&] {
      const Json* value = member("value");
      if (value != nullptr) {
        if (!value->is_number()) paths_.fail("value", "expected a number, got " + value->dump());
        out.value = value->get<double>();
        const std::string expected = check_value(out.value, check);
        if (!expected.empty()) paths_.fail("value", "expected " + expected + ", got " + value->dump());
      }
      const Json* unit = member("unit");
      if (unit != nullptr) out.unit = read_unit(*unit, dim);
      if (const std::string bound = physical_bound(out, dim); !bound.empty()) {
        paths_.fail("value",
                    "expected at most " + bound + ", got " + (value ? value->dump() : "the default"));
      }
      read_source(out.source);
    });
  }

  void flag(std::string_view key, Switch& out) {
    const Json* j = member(key);
    if (j == nullptr) return;
    section_of(key, *j, [&] {
      const Json* value = member("value");
      if (value != nullptr) {
        if (!value->is_boolean()) paths_.fail("value", "expected true or false, got " + value->dump());
        out.value = value->get<bool>();
      }
      read_source(out.source);
    });
  }

  template <class F>
  void section(std::string_view key, F&& body) {
    const Json* j = member(key);
    if (j != nullptr) section_of(key, *j, body);
  }

  // Marks an optional key of the current object as known.
  void allow(std::string_view key) { frames_.back().known.emplace_back(key); }

  // Reports the top-level object's unknown or missing fields; call after visiting.
  void finish() { close_frame(); }

 private:
  struct Frame {
    const Json* object;
    std::vector<std::string> known;  // every key the field list asked for, in order
    std::string first_missing;
  };

  const Json* member(std::string_view key) {
    Frame& f = frames_.back();
    f.known.emplace_back(key);
    auto it = f.object->find(std::string(key));
    if (it == f.object->end()) {
      if (f.first_missing.empty()) f.first_missing = std::string(key);
      return nullptr;
    }
    return &*it;
  }

  template <class F>
  void section_of(std::string_view key, const Json& j, F&& body) {
    if (!j.is_object()) paths_.fail(key, "expected an object, got " + j.dump());
    paths_.push(key);
    frames_.push_back({&j, {}, {}});
    body();
    close_frame();
    frames_.pop_back();
    paths_.pop();
  }

  // Unknown fields first: a misspelt key is also a missing one, and the misspelling is the useful message.
  void close_frame() {
    const Frame& f = frames_.back();
    for (auto it = f.object->begin(); it != f.object->end(); ++it) {
      if (std::find(f.known.begin(), f.known.end(), it.key()) != f.known.end()) continue;
      std::string allowed;
      for (const std::string& k : f.known) allowed += (allowed.empty() ? "" : ", ") + k;
      paths_.fail(it.key(), "unknown field (allowed: " + allowed + ")");
    }
    if (!f.first_missing.empty()) paths_.fail(f.first_missing, "missing required field");
  }

  Unit read_unit(const Json& j, Dimension dim) {
    const std::string expected = "expected a " + std::string(dimension_name(dim)) + " unit (" +
                                 dimension_units(dim) + "), got " + j.dump();
    if (!j.is_string()) paths_.fail("unit", expected);
    for (Unit u : {Unit::kCount, Unit::kRatio, Unit::kBytes, Unit::kKB, Unit::kMB, Unit::kGB, Unit::kKiB,
                   Unit::kMiB, Unit::kGiB, Unit::kBps, Unit::kGBps, Unit::kTBps, Unit::kGbps, Unit::kSeconds,
                   Unit::kMilliseconds, Unit::kMicroseconds, Unit::kNanoseconds}) {
      if (to_string(u) == j.get<std::string>() && dimension_of(u) == dim) return u;
    }
    paths_.fail("unit", expected);
  }

  void read_source(std::string& out) {
    const Json* source = member("source");
    if (source == nullptr) return;
    if (!source->is_string() || source->get<std::string>().empty()) {
      paths_.fail("source",
                  "expected a non-empty string naming where the value comes from, got " + source->dump());
    }
    out = source->get<std::string>();
  }

  PathTracker paths_;
  std::vector<Frame> frames_;
};

}  // namespace

HardwareProfile parse_profile(std::string_view json_text, std::string_view origin) {
  const std::string where(origin);
  const Json root = parse_json_checked<Json>(json_text, where);
  if (!root.is_object())
    throw InputError(where + ": expected a JSON object at the top level, got " + root.dump());
  auto format = root.find("format");
  if (format != root.end() && *format != Json(std::string(detail::kFormat))) {
    throw InputError(where + ": format: expected \"" + std::string(detail::kFormat) + "\", got " +
                     format->dump());
  }
  HardwareProfile p;
  Reader reader(root, where);
  reader.allow("format");  // optional, checked above
  detail::visit_profile(reader, p);
  reader.finish();
  return p;
}

}  // namespace dcpsim::models
