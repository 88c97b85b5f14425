// Profile vocabulary (units, NCCL protocol and algorithm names), the built-in table and load_profile().
#include "dcpsim/models/profile.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

#include "dcpsim/error.h"
#include "dcpsim/json_limits.h"
#include "dcpsim/text_file.h"
#include "profile_embedded.h"

namespace dcpsim::models {
namespace {

struct UnitInfo {
  Unit unit;
  std::string_view name;
  Dimension dimension;
  double factor;
};

constexpr UnitInfo kUnits[] = {
    {Unit::kCount, "count", Dimension::kCount, 1.0},
    {Unit::kRatio, "ratio", Dimension::kRatio, 1.0},
    {Unit::kBytes, "B", Dimension::kBytes, 1.0},
    {Unit::kKB, "KB", Dimension::kBytes, 1e3},
    {Unit::kMB, "MB", Dimension::kBytes, 1e6},
    {Unit::kGB, "GB", Dimension::kBytes, 1e9},
    {Unit::kKiB, "KiB", Dimension::kBytes, 1024.0},
    {Unit::kMiB, "MiB", Dimension::kBytes, 1024.0 * 1024.0},
    {Unit::kGiB, "GiB", Dimension::kBytes, 1024.0 * 1024.0 * 1024.0},
    {Unit::kBps, "B/s", Dimension::kBandwidth, 1.0},
    {Unit::kGBps, "GB/s", Dimension::kBandwidth, 1e9},
    {Unit::kTBps, "TB/s", Dimension::kBandwidth, 1e12},
    {Unit::kGbps, "Gb/s", Dimension::kBandwidth, 1e9 / 8.0},
    {Unit::kSeconds, "s", Dimension::kTime, 1.0},
    {Unit::kMilliseconds, "ms", Dimension::kTime, 1e-3},
    {Unit::kMicroseconds, "us", Dimension::kTime, 1e-6},
    {Unit::kNanoseconds, "ns", Dimension::kTime, 1e-9},
    {Unit::kFlops, "FLOP/s", Dimension::kComputeRate, 1.0},
    {Unit::kTFlops, "TFLOP/s", Dimension::kComputeRate, 1e12},
};

const UnitInfo& info(Unit u) {
  for (const UnitInfo& i : kUnits) {
    if (i.unit == u) return i;
  }
  throw InputError("unknown unit enumerator");
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string join_names() {
  std::string out;
  for (const std::string& n : builtin_profile_names()) out += (out.empty() ? "" : ", ") + n;
  return out;
}

std::string read_profile_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw InputError(path.string() + ": cannot open profile file (not a regular file)");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path.string() + ": cannot open profile file");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::string_view to_string(Unit u) {
  return info(u).name;
}
Dimension dimension_of(Unit u) {
  return info(u).dimension;
}
double si_factor(Unit u) {
  return info(u).factor;
}

Unit parse_unit(std::string_view s) {
  for (const UnitInfo& i : kUnits) {
    if (i.name == s) return i.unit;
  }
  std::string allowed;
  for (const UnitInfo& i : kUnits) allowed += (allowed.empty() ? "" : ", ") + std::string(i.name);
  throw InputError("unknown unit \"" + std::string(s) + "\" (allowed: " + allowed + ")");
}

Quantity quantity_from_si(double base_value, Unit unit, std::string source) {
  return Quantity{base_value / si_factor(unit), unit, std::move(source)};
}

std::string_view to_string(MemoryKernel k) {
  switch (k) {
    case MemoryKernel::kCorrection:
      return "correction";
    case MemoryKernel::kA2aPack:
      return "a2a_pack";
    case MemoryKernel::kA2aCombine:
      return "a2a_combine";
    case MemoryKernel::kDirectCombine:
      return "direct_combine";
    case MemoryKernel::kQRepack:
      return "q_repack";
  }
  return "?";
}

std::string_view to_string(Protocol p) {
  switch (p) {
    case Protocol::kLL:
      return "ll";
    case Protocol::kLL128:
      return "ll128";
    case Protocol::kSimple:
      return "simple";
  }
  return "?";
}

std::string_view to_string(Algorithm a) {
  switch (a) {
    case Algorithm::kRing:
      return "ring";
    case Algorithm::kTree:
      return "tree";
    case Algorithm::kNvls:
      return "nvls";
    case Algorithm::kP2p:
      return "p2p";
  }
  return "?";
}

Protocol parse_protocol(std::string_view s) {
  const std::string l = lower(s);
  for (Protocol p : kAllProtocols) {
    if (to_string(p) == l) return p;
  }
  throw InputError("unknown NCCL protocol \"" + std::string(s) + "\" (allowed: ll, ll128, simple)");
}

Algorithm parse_algorithm(std::string_view s) {
  const std::string l = lower(s);
  for (Algorithm a : {Algorithm::kRing, Algorithm::kTree, Algorithm::kNvls, Algorithm::kP2p}) {
    if (to_string(a) == l) return a;
  }
  throw InputError("unknown NCCL algorithm \"" + std::string(s) + "\" (allowed: ring, tree, nvls, p2p)");
}

const std::vector<std::string>& builtin_profile_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const detail::EmbeddedProfile& e : detail::embedded_profiles()) out.emplace_back(e.name);
    std::sort(out.begin(), out.end());
    return out;
  }();
  return names;
}

std::string_view builtin_profile_json(std::string_view name) {
  for (const detail::EmbeddedProfile& e : detail::embedded_profiles()) {
    if (e.name == name) return e.json;
  }
  throw InputError("unknown profile \"" + std::string(name) + "\" (built-in: " + join_names() + ")");
}

int builtin_nvlink_domain_size(std::string_view name) {
  const nlohmann::json doc =
      parse_json_checked(builtin_profile_json(name), std::string(name) + ".json (built-in)");
  return doc.at("topology").at("gpus_per_nvlink_domain").at("value").get<int>();
}

HardwareProfile load_profile(std::string_view name_or_path) {
  for (const detail::EmbeddedProfile& e : detail::embedded_profiles()) {
    if (e.name != name_or_path) continue;
    // A built-in profile is parsed once per process and copied out: its embedded text never changes, and
    // parsing its kernel tables is nearly all of a command's start-up (a copy costs a few ms).
    static std::mutex mutex;
    static std::map<std::string, std::shared_ptr<const HardwareProfile>, std::less<>> parsed;
    std::shared_ptr<const HardwareProfile> profile;
    {
      const std::lock_guard lock(mutex);
      if (const auto it = parsed.find(e.name); it != parsed.end()) profile = it->second;
    }
    if (profile == nullptr) {
      auto fresh = std::make_shared<const HardwareProfile>(
          parse_profile(e.json, std::string(e.name) + ".json (built-in)", "", true));
      const std::lock_guard lock(mutex);
      profile = parsed.emplace(std::string(e.name), std::move(fresh)).first->second;
    }
    return *profile;
  }
  const std::filesystem::path path{std::string(name_or_path)};
  std::error_code ec;
  if (std::filesystem::exists(path, ec))
    return parse_profile(read_profile_file(path), path.string(), path.parent_path().string(), false);
  const bool looks_like_path = name_or_path.find('/') != std::string_view::npos ||
                               (name_or_path.size() > 5 && name_or_path.ends_with(".json"));
  if (looks_like_path) throw InputError(path.string() + ": profile file not found");
  throw InputError("unknown profile \"" + std::string(name_or_path) + "\" (built-in: " + join_names() +
                   "; or a path to a JSON profile file)");
}

std::vector<std::filesystem::path> profile_files(std::string_view name_or_path) {
  for (const detail::EmbeddedProfile& e : detail::embedded_profiles())
    if (e.name == name_or_path) return {};
  const std::filesystem::path path{std::string(name_or_path)};
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return {};
  std::vector<std::filesystem::path> files{path};
  try {
    const nlohmann::json doc = parse_json_checked(read_profile_file(path), path.string());
    if (!doc.is_object()) return files;
    // Kernel tables and communication tables: a path, or (communication) {"path": ..., "borrowed": why}.
    for (const char* key : {"tables", "comm_tables"}) {
      const auto list = doc.find(key);
      if (list == doc.end() || !list->is_array()) continue;
      for (const nlohmann::json& entry : *list) {
        const nlohmann::json* name = &entry;
        if (entry.is_object() && entry.contains("path")) name = &entry["path"];
        if (!name->is_string() || name->get<std::string>().empty()) continue;
        // X.json may be stored as X.json.gz (text_file.h): the file read is the one guarded.
        const std::filesystem::path table = existing_or_gz(path.parent_path() / name->get<std::string>());
        if (std::filesystem::exists(table, ec)) files.push_back(table);
      }
    }
  } catch (const std::exception&) {  // load_profile reports what is wrong with the file
  }
  return files;
}

const NcclLatency& nccl_latency(const HardwareProfile& p, Algorithm a, Protocol proto) {
  const auto i = static_cast<std::size_t>(proto);
  if (a == Algorithm::kRing) return p.nccl.ring[i];
  if (a == Algorithm::kTree) return p.nccl.tree[i];
  throw InputError("NCCL latency table has no entry for algorithm \"" + std::string(to_string(a)) +
                   "\" (allowed: ring, tree)");
}

}  // namespace dcpsim::models
