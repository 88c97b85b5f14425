// Profile JSON: one list of fields (visit_profile) drives reading, writing and validating, so the three can never
// disagree about a field's name, dimension or allowed range.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dcpsim/error.h"
#include "dcpsim/models/profile.h"

namespace dcpsim::models {
namespace {

using Json = nlohmann::ordered_json;
constexpr std::string_view kFormat = "dcpsim-profile/1";

enum class Check { kPositive, kNonNegative, kFraction, kPositiveInteger };

template <class V, class Table>
void visit_latency_table(V& v, std::string_view algorithm, Table& table) {
  v.section(algorithm, [&] {
    for (Protocol proto : kAllProtocols) {
      auto& lat = table[static_cast<std::size_t>(proto)];
      v.section(to_string(proto), [&] {
        v.number("base_latency", lat.base_latency, Dimension::kTime, Check::kNonNegative);
        v.number("nvlink_hop_latency", lat.nvlink_hop_latency, Dimension::kTime, Check::kNonNegative);
        v.number("net_hop_latency", lat.net_hop_latency, Dimension::kTime, Check::kNonNegative);
      });
    }
  });
}

template <class V, class P>
void visit_nccl(V& v, P& n) {
  visit_latency_table(v, "ring", n.ring);
  visit_latency_table(v, "tree", n.tree);
  v.section("protocol_efficiency", [&] {
    for (Protocol proto : kAllProtocols) {
      v.number(to_string(proto), n.protocol_efficiency[static_cast<std::size_t>(proto)], Dimension::kRatio,
               Check::kFraction);
    }
  });
  v.number("ll_max_bus_bandwidth", n.ll_max_bus_bandwidth, Dimension::kBandwidth, Check::kPositive);
  v.section("nvls", [&] {
    v.flag("enabled", n.nvls_enabled);
    v.number("latency", n.nvls_latency, Dimension::kTime, Check::kNonNegative);
    v.number("bandwidth_efficiency", n.nvls_bandwidth_efficiency, Dimension::kRatio, Check::kFraction);
  });
  v.section("p2p", [&] {
    v.number("base_latency", n.p2p_base_latency, Dimension::kTime, Check::kNonNegative);
    v.number("ll_threshold", n.p2p_ll_threshold, Dimension::kBytes, Check::kNonNegative);
  });
}

// The field list. P is HardwareProfile (reading) or const HardwareProfile (writing, validating).
template <class V, class P>
void visit_profile(V& v, P& p) {
  constexpr Dimension kTime = Dimension::kTime, kBytes = Dimension::kBytes, kBw = Dimension::kBandwidth,
                      kCount = Dimension::kCount;
  v.text("name", p.name, true);
  v.text("description", p.description, false);
  v.section("gpu", [&] {
    v.text("name", p.gpu.name, true);
    v.number("sm_count", p.gpu.sm_count, kCount, Check::kPositiveInteger);
    v.number("hbm_capacity", p.gpu.hbm_capacity, kBytes, Check::kPositive);
    v.number("hbm_bandwidth_spec", p.gpu.hbm_bandwidth_spec, kBw, Check::kPositive);
    v.number("hbm_bandwidth_measured", p.gpu.hbm_bandwidth_measured, kBw, Check::kPositive);
    v.number("l2_size", p.gpu.l2_size, kBytes, Check::kPositive);
  });
  v.section("topology", [&] {
    v.number("gpus_per_nvlink_domain", p.topology.gpus_per_nvlink_domain, kCount, Check::kPositiveInteger);
    v.number("gpus_per_node", p.topology.gpus_per_node, kCount, Check::kPositiveInteger);
  });
  v.section("nvlink", [&] {
    v.number("bandwidth", p.nvlink.bandwidth, kBw, Check::kPositive);
    v.number("measured_bandwidth", p.nvlink.measured_bandwidth, kBw, Check::kPositive);
    v.number("hop_latency", p.nvlink.hop_latency, kTime, Check::kNonNegative);
  });
  v.section("internode", [&] {
    v.number("bandwidth", p.internode.bandwidth, kBw, Check::kPositive);
    v.number("latency", p.internode.latency, kTime, Check::kNonNegative);
  });
  v.section("launch", [&] {
    v.number("cpu_issue_eager", p.launch.cpu_issue_eager, kTime, Check::kNonNegative);
    v.number("cpu_issue_graph", p.launch.cpu_issue_graph, kTime, Check::kNonNegative);
    v.number("cpu_issue_pdl", p.launch.cpu_issue_pdl, kTime, Check::kNonNegative);
    v.number("gpu_launch_latency", p.launch.gpu_launch_latency, kTime, Check::kNonNegative);
    v.number("dependent_gap", p.launch.dependent_gap, kTime, Check::kNonNegative);
    v.number("dependent_gap_pdl", p.launch.dependent_gap_pdl, kTime, Check::kNonNegative);
  });
  v.section("kernel", [&] {
    v.number("hbm_efficiency_max", p.kernel.hbm_efficiency_max, Dimension::kRatio, Check::kFraction);
    v.number("half_efficiency_bytes", p.kernel.half_efficiency_bytes, kBytes, Check::kNonNegative);
    v.number("floor", p.kernel.floor, kTime, Check::kNonNegative);
  });
  v.section("attention", [&] {
    v.number("work_unit_tokens", p.attention.work_unit_tokens, kCount, Check::kPositiveInteger);
    v.number("ctas_per_sm", p.attention.ctas_per_sm, kCount, Check::kPositiveInteger);
    v.number("heads_per_cta", p.attention.heads_per_cta, kCount, Check::kPositiveInteger);
    v.number("cta_overhead", p.attention.cta_overhead, kTime, Check::kNonNegative);
    v.number("max_cta_bandwidth", p.attention.max_cta_bandwidth, kBw, Check::kPositive);
    v.number("floor", p.attention.floor, kTime, Check::kNonNegative);
  });
  v.section("nccl", [&] { visit_nccl(v, p.nccl); });
  v.section("signal", [&] {
    v.number("flag_write_latency", p.signal.flag_write_latency, kTime, Check::kNonNegative);
    v.number("poll_interval", p.signal.poll_interval, kTime, Check::kNonNegative);
    v.number("epoch_handshake", p.signal.epoch_handshake, kTime, Check::kNonNegative);
  });
}

std::string dimension_units(Dimension d) {
  std::string out;
  for (Unit u : {Unit::kCount, Unit::kRatio, Unit::kBytes, Unit::kKB, Unit::kMB, Unit::kGB, Unit::kKiB, Unit::kMiB,
                 Unit::kGiB, Unit::kBps, Unit::kGBps, Unit::kTBps, Unit::kGbps, Unit::kSeconds,
                 Unit::kMilliseconds, Unit::kMicroseconds, Unit::kNanoseconds}) {
    if (dimension_of(u) == d) out += (out.empty() ? "" : ", ") + std::string(to_string(u));
  }
  return out;
}

std::string_view dimension_name(Dimension d) {
  switch (d) {
    case Dimension::kCount: return "count";
    case Dimension::kRatio: return "ratio";
    case Dimension::kBytes: return "size";
    case Dimension::kBandwidth: return "bandwidth";
    case Dimension::kTime: return "time";
  }
  return "?";
}

// Empty when `value` passes `check`, otherwise what was expected.
std::string check_value(double value, Check check) {
  if (!std::isfinite(value)) return "a finite number";
  switch (check) {
    case Check::kPositive: return value > 0 ? "" : "a positive number";
    case Check::kNonNegative: return value >= 0 ? "" : "a non-negative number";
    case Check::kFraction: return value > 0 && value <= 1 ? "" : "a ratio in (0, 1]";
    case Check::kPositiveInteger: return value >= 1 && value == std::floor(value) ? "" : "a positive integer";
  }
  return "";
}

// Walks the tree of section names so every error can name its field.
class PathTracker {
 public:
  explicit PathTracker(std::string origin) : origin_(std::move(origin)) {}
  std::string path(std::string_view key) const {
    std::string out;
    for (const std::string& s : stack_) out += s + ".";
    return out + std::string(key);
  }
  [[noreturn]] void fail(std::string_view key, const std::string& what) const {
    throw InputError(origin_ + ": " + path(key) + ": " + what);
  }
  void push(std::string_view key) { stack_.emplace_back(key); }
  void pop() { stack_.pop_back(); }
  const std::string& origin() const { return origin_; }

 private:
  std::string origin_;
  std::vector<std::string> stack_;
};

class Reader {
 public:
  Reader(const Json& root, std::string origin) : paths_(std::move(origin)) { frames_.push_back({&root, {}, {}}); }

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
    const std::string expected =
        "expected a " + std::string(dimension_name(dim)) + " unit (" + dimension_units(dim) + "), got " + j.dump();
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
      paths_.fail("source", "expected a non-empty string naming where the value comes from, got " + source->dump());
    }
    out = source->get<std::string>();
  }

  PathTracker paths_;
  std::vector<Frame> frames_;
};

class Writer {
 public:
  Json root;

  void text(std::string_view key, const std::string& value, bool) { top()[std::string(key)] = value; }

  void number(std::string_view key, const Quantity& q, Dimension, Check) {
    Json j = Json::object();
    // Integral values print without ".0" so that counts read naturally; both spellings parse to the same double.
    if (q.value == std::floor(q.value) && std::fabs(q.value) < 1e15) {
      j["value"] = static_cast<std::int64_t>(q.value);
    } else {
      j["value"] = q.value;
    }
    j["unit"] = std::string(to_string(q.unit));
    j["source"] = q.source;
    top()[std::string(key)] = std::move(j);
  }

  void flag(std::string_view key, const Switch& s) {
    top()[std::string(key)] = Json{{"value", s.value}, {"source", s.source}};
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

  void number(std::string_view key, const Quantity& q, Dimension dim, Check check) {
    paths_.push(key);
    const std::string expected = check_value(q.value, check);
    if (!expected.empty()) paths_.fail("value", "expected " + expected + ", got " + Json(q.value).dump());
    if (dimension_of(q.unit) != dim) {
      paths_.fail("unit", "expected a " + std::string(dimension_name(dim)) + " unit (" + dimension_units(dim) +
                              "), got \"" + std::string(to_string(q.unit)) + "\"");
    }
    if (q.source.empty()) paths_.fail("source", "expected a non-empty string naming where the value comes from");
    paths_.pop();
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

HardwareProfile parse_profile(std::string_view json_text, std::string_view origin) {
  const std::string where(origin);
  Json root;
  try {
    root = Json::parse(json_text.begin(), json_text.end());
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(where + ": invalid JSON: " + e.what());
  }
  if (!root.is_object()) throw InputError(where + ": expected a JSON object at the top level, got " + root.dump());
  auto format = root.find("format");
  if (format != root.end() && *format != Json(std::string(kFormat))) {
    throw InputError(where + ": format: expected \"" + std::string(kFormat) + "\", got " + format->dump());
  }
  HardwareProfile p;
  Reader reader(root, where);
  reader.allow("format");  // optional, checked above
  visit_profile(reader, p);
  reader.finish();
  return p;
}

std::string to_json(const HardwareProfile& p) {
  Writer writer;
  writer.root["format"] = std::string(kFormat);
  visit_profile(writer, p);
  std::string out;
  print(writer.root, 0, out);
  return out + "\n";
}

void validate_profile(const HardwareProfile& p, std::string_view origin) {
  Validator validator{std::string(origin)};
  visit_profile(validator, p);
}

}  // namespace dcpsim::models
