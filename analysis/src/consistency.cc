// Mismatch checks between a profile and the files used with it (consistency.h).
#include "dcpsim/analysis/consistency.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "dcpsim/error.h"

namespace dcpsim::analysis {
namespace {

std::string lower_case(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool same_gpu(const std::string& a, const std::string& b) {
  const std::string x = lower_case(a), y = lower_case(b);
  return x.starts_with(y) || y.starts_with(x);
}

}  // namespace

void require_calibration_matches(const CalibrationInfo& c, const models::HardwareProfile& profile) {
  if (c.profile.empty() || c.profile == profile.name) return;
  throw InputError(c.path.string() + " is the calibration of profile '" + c.profile + "'" +
                   (c.base_profile.empty() ? "" : " (calibrated from '" + c.base_profile + "')") +
                   ", not of '" + profile.name +
                   "': its prediction bands describe that fit; validate that profile, or drop --calibration");
}

std::string device_mismatch(const models::HardwareProfile& profile,
                            const std::vector<MeasuredTrace>& traces) {
  std::set<std::string> devices;
  int count = 0;
  std::string first;
  for (const MeasuredTrace& t : traces) {
    bool other = false;
    for (const auto& d : t.header.devices()) {
      // The profile's GPU by its name or any name the devices report for it (gpu.devices).
      const bool listed = std::any_of(profile.gpu.devices.begin(), profile.gpu.devices.end(),
                                      [&](const std::string& n) { return same_gpu(d.name(), n); });
      if (d.name().empty() || listed || same_gpu(d.name(), profile.gpu.name)) continue;
      devices.insert(d.name());
      other = true;
    }
    if (!other) continue;
    if (++count == 1) first = t.path.string();
  }
  if (count == 0) return "";
  std::string names;
  for (const std::string& d : devices) names += (names.empty() ? "" : ", ") + ("\"" + d + "\"");
  return std::to_string(count) + " trace(s) (" + first + (count > 1 ? ", ..." : "") + ") measured on " +
         names + ", not on the profile's GPU \"" + profile.gpu.name + "\" (" + profile.name +
         "): the comparison mixes two GPUs";
}

}  // namespace dcpsim::analysis
