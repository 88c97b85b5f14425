// Profile JSON reading: parse_profile() walks the field list with a Reader that checks every value, unit and
// source and reports unknown and missing keys with the file and the field's path.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <string>
#include <vector>

#include "comm_table_json.h"
#include "dcpsim/json_limits.h"
#include "kernel_table_json.h"
#include "profile_embedded.h"
#include "profile_fields.h"

namespace dcpsim::models {
namespace {

using detail::Check;
using detail::check_value;
using detail::dimension_name;
using detail::dimension_units;
using detail::Json;
using detail::PathTracker;
using detail::physical_bound;

class Reader {
 public:
  Reader(const Json& root, std::string origin, std::string table_dir, bool builtin)
      : paths_(std::move(origin)), table_dir_(std::move(table_dir)), builtin_(builtin) {
    frames_.push_back({&root, {}, {}});
  }

  template <class T, class F>
  void optional_section(std::string_view key, std::optional<T>& out, F&& body) {
    allow(key);
    auto it = frames_.back().object->find(std::string(key));
    if (it == frames_.back().object->end()) return;
    out.emplace();
    section_of(key, *it, [&] { body(*out); });
  }

  // `tables`: optional; each entry a path (relative to the profile's directory) or an inline table object.
  void tables(std::string_view key, std::vector<KernelTables>& out) {
    allow(key);
    auto it = frames_.back().object->find(std::string(key));
    if (it == frames_.back().object->end()) return;
    if (!it->is_array())
      paths_.fail(key, "expected an array of table file paths or objects, got " + it->dump());
    for (std::size_t i = 0; i < it->size(); ++i) {
      const Json& entry = (*it)[i];
      const std::string where = paths_.origin() + ": " + paths_.path(key) + "[" + std::to_string(i) + "]";
      if (entry.is_object()) {
        out.push_back(detail::parse_kernel_tables_json(entry, where));
      } else if (entry.is_string() && !entry.get<std::string>().empty()) {
        out.push_back(load_table_file(entry.get<std::string>(), where));
      } else {
        throw InputError(where + ": expected a table file path or a table object, got " + entry.dump());
      }
    }
  }

  // `comm_tables`: optional; each entry a path, an inline table object, or {"path": ..., "borrowed": why}.
  void comm_tables(std::string_view key, std::vector<CommTables>& out) {
    allow(key);
    auto it = frames_.back().object->find(std::string(key));
    if (it == frames_.back().object->end()) return;
    if (!it->is_array())
      paths_.fail(key, "expected an array of communication table paths or objects, got " + it->dump());
    for (std::size_t i = 0; i < it->size(); ++i) {
      const Json& entry = (*it)[i];
      const std::string where = paths_.origin() + ": " + paths_.path(key) + "[" + std::to_string(i) + "]";
      if (entry.is_object() && entry.contains("format")) {
        Json table = entry;
        const Json borrowed = table.contains("borrowed") ? table["borrowed"] : Json();
        table.erase("borrowed");
        out.push_back(detail::parse_comm_tables_json(table, where));
        if (!borrowed.is_null()) {
          if (!borrowed.is_string() || borrowed.get<std::string>().empty())
            throw InputError(where + ".borrowed: expected a non-empty string saying why");
          out.back().borrowed = borrowed.get<std::string>();
        }
      } else if (entry.is_string() && !entry.get<std::string>().empty()) {
        out.push_back(load_comm_file(entry.get<std::string>(), where));
      } else if (entry.is_object() && entry.size() == 2 && entry.contains("path") &&
                 entry["path"].is_string() && entry.contains("borrowed") && entry["borrowed"].is_string() &&
                 !entry["borrowed"].get<std::string>().empty()) {
        out.push_back(load_comm_file(entry["path"].get<std::string>(), where));
        out.back().borrowed = entry["borrowed"].get<std::string>();
      } else {
        throw InputError(where +
                         ": expected a communication table path, a table object or {\"path\": ..., "
                         "\"borrowed\": \"why\"}, got " +
                         entry.dump());
      }
    }
  }

  void text(std::string_view key, std::string& out, bool required_nonempty) {
    const Json* j = member(key);
    if (j == nullptr) return;
    if (!j->is_string()) paths_.fail(key, "expected a string, got " + j->dump());
    out = j->get<std::string>();
    if (required_nonempty && out.empty()) paths_.fail(key, "expected a non-empty string");
  }

  // An optional list of non-empty strings (gpu.devices).
  void text_list(std::string_view key, std::vector<std::string>& out) {
    allow(key);
    auto it = frames_.back().object->find(std::string(key));
    if (it == frames_.back().object->end()) return;
    const std::string expected = "expected a list of device names as CUDA reports them, got ";
    if (!it->is_array()) paths_.fail(key, expected + it->dump());
    for (const Json& name : *it) {
      if (!name.is_string() || name.get<std::string>().empty()) paths_.fail(key, expected + it->dump());
      out.push_back(name.get<std::string>());
    }
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
      if (const std::string bound = physical_bound(out, dim, check); !bound.empty()) {
        paths_.fail("value", "expected " + bound + ", got " + (value ? value->dump() : "the default"));
      }
      read_source(out.source);
    });
  }

  // A quantity the file may leave out (left unset then).
  void optional_number(std::string_view key, std::optional<Quantity>& out, Dimension dim, Check check) {
    allow(key);
    if (frames_.back().object->find(std::string(key)) == frames_.back().object->end()) return;
    out.emplace();
    number(key, *out, dim, check);
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
    for (Unit u :
         {Unit::kCount, Unit::kRatio, Unit::kBytes, Unit::kKB, Unit::kMB, Unit::kGB, Unit::kKiB, Unit::kMiB,
          Unit::kGiB, Unit::kBps, Unit::kGBps, Unit::kTBps, Unit::kGbps, Unit::kSeconds, Unit::kMilliseconds,
          Unit::kMicroseconds, Unit::kNanoseconds, Unit::kFlops, Unit::kTFlops}) {
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

  KernelTables load_table_file(const std::string& relative, const std::string& where) {
    KernelTables t;
    // A built-in profile's tables are embedded; so that a copy of one (`dcpsim profiles --show h200-sxm >
    // my.json`) loads anywhere, a path that does not exist next to the profile falls back to the embedded
    // table of the same file name.
    const std::string file = std::filesystem::path(relative).filename().string();
    std::error_code ec;
    const bool local = !builtin_ && std::filesystem::exists(
                                        existing_or_gz(std::filesystem::path(table_dir_) / relative), ec);
    const std::string embedded = local ? std::string() : detail::builtin_table_json(file);
    if (builtin_ || (!local && !embedded.empty())) {
      if (embedded.empty()) throw InputError(where + ": " + relative + ": no such built-in kernel table");
      t = parse_kernel_tables(embedded, file + " (built-in)");
    } else {
      const std::filesystem::path path = std::filesystem::path(table_dir_) / relative;
      try {
        t = load_kernel_tables(path);
      } catch (const InputError& e) {
        throw InputError(where + ": " + e.what());
      }
    }
    t.origin = relative;
    return t;
  }

  // A communication table file: next to the profile, else the built-in one of the same file name.
  CommTables load_comm_file(const std::string& relative, const std::string& where) {
    const std::string file = std::filesystem::path(relative).filename().string();
    std::error_code ec;
    const bool local = !builtin_ && std::filesystem::exists(
                                        existing_or_gz(std::filesystem::path(table_dir_) / relative), ec);
    const std::string embedded = local ? std::string() : detail::builtin_table_json(file);
    CommTables t;
    if (builtin_ || (!local && !embedded.empty())) {
      if (embedded.empty())
        throw InputError(where + ": " + relative + ": no such built-in communication table");
      t = parse_comm_tables(embedded, file + " (built-in)");
    } else {
      try {
        t = load_comm_tables(std::filesystem::path(table_dir_) / relative);
      } catch (const InputError& e) {
        throw InputError(where + ": " + e.what());
      }
    }
    t.origin = relative;
    return t;
  }

  PathTracker paths_;
  std::vector<Frame> frames_;
  std::string table_dir_;
  bool builtin_ = false;
};

std::string lowered(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

// A table measured on another GPU model would be silently wrong: refuse it, saying what to do when it is the
// same GPU under another name (CUDA names one board several ways across drivers and form factors).
void check_table_devices(const HardwareProfile& p, const std::string& where, bool builtin) {
  for (std::size_t i = 0; i < p.tables.size(); ++i) {
    const std::string& dev = p.tables[i].provenance.device;
    if (profile_describes_device(p, dev)) continue;
    std::string names = "gpu.name \"" + p.gpu.name + "\"";
    for (const std::string& d : p.gpu.devices) names += ", \"" + d + "\"";
    const std::string fix = builtin ? "`dcpsim profiles --show " + p.name +
                                          " > my.json`, add it to gpu.devices there and pass "
                                          "--profile my.json"
                                    : "add it to gpu.devices in " + where;
    throw InputError(where + ": tables[" + std::to_string(i) + "] (" +
                     (p.tables[i].origin.empty() ? "inline" : p.tables[i].origin) + "): measured on \"" +
                     dev + "\", a GPU the profile does not describe (" + names +
                     "); a table is only valid on the GPU it was measured on. If \"" + dev +
                     "\" is that GPU, " + fix + "; else measure this GPU's own with `dcpsim hw calibrate`");
  }
}

// The GPU model a device string names: its first word with letters then digits after "nvidia"
// ("NVIDIA H100 80GB HBM3" -> "h100", "NVIDIA B200 (GB200 superchip)" -> "b200", "H100-SXM-80GB" -> "h100").
std::vector<std::string> model_words(const std::string& device) {
  std::vector<std::string> words;
  std::string word;
  for (char c : lowered(device) + " ") {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      word += c;
      continue;
    }
    const bool model = !word.empty() && std::isalpha(static_cast<unsigned char>(word[0])) &&
                       std::isdigit(static_cast<unsigned char>(word.back())) && word != "nvidia";
    if (model) words.push_back(word);
    word.clear();
  }
  return words;
}

// A communication table is valid on a GPU the profile describes (profile_describes_device, as kernel tables),
// on its own GPU model (its first model word among the profile's gpu.name words: "NVIDIA GB200" fits
// "NVIDIA B200 (GB200 superchip)") or where the profile says why it borrows it.
void check_comm_table_devices(const HardwareProfile& p, const std::string& where) {
  const std::vector<std::string> gpu = model_words(p.gpu.name);
  for (std::size_t i = 0; i < p.comm_tables.size(); ++i) {
    const CommTables& t = p.comm_tables[i];
    if (!t.borrowed.empty() || profile_describes_device(p, t.provenance.device)) continue;
    const std::vector<std::string> dev = model_words(t.provenance.device);
    if (!dev.empty() && std::find(gpu.begin(), gpu.end(), dev.front()) != gpu.end()) continue;
    throw InputError(where + ": comm_tables[" + std::to_string(i) + "] (" +
                     (t.origin.empty() ? "inline" : t.origin) + "): measured on \"" + t.provenance.device +
                     "\", but the profile's gpu.name is \"" + p.gpu.name +
                     "\" (list it as {\"path\": ..., \"borrowed\": \"why\"} to use another GPU's table)");
  }
}

}  // namespace

bool profile_describes_device(const HardwareProfile& p, std::string_view device) {
  const std::string dev = lowered(device);
  if (dev.empty()) return false;
  for (const std::string& d : p.gpu.devices)
    if (lowered(d) == dev) return true;
  // One name a prefix of the other at a word boundary: "NVIDIA H100" describes "NVIDIA H100 SXM5", but
  // "NVIDIA H20" does not describe "NVIDIA H200".
  const std::string gpu = lowered(p.gpu.name);
  const auto prefix_at_word = [](const std::string& longer, const std::string& shorter) {
    return longer.starts_with(shorter) && (longer.size() == shorter.size() ||
                                           !std::isalnum(static_cast<unsigned char>(longer[shorter.size()])));
  };
  return prefix_at_word(gpu, dev) || prefix_at_word(dev, gpu);
}

HardwareProfile parse_profile(std::string_view json_text, std::string_view origin) {
  std::error_code ec;
  const std::filesystem::path path{std::string(origin)};
  const std::string dir = std::filesystem::is_regular_file(path, ec) ? path.parent_path().string() : ".";
  return parse_profile(json_text, origin, dir, false);
}

HardwareProfile parse_profile(std::string_view json_text, std::string_view origin,
                              const std::string& table_dir, bool builtin) {
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
  Reader reader(root, where, table_dir, builtin);
  reader.allow("format");  // optional, checked above
  detail::visit_profile(reader, p);
  reader.finish();
  check_table_devices(p, where, builtin);
  check_comm_table_devices(p, where);
  return p;
}

}  // namespace dcpsim::models
