// Which implementation each kernel family ran and what prices it (implementations.h).
#include "dcpsim/analysis/implementations.h"

#include <map>

#include "dcpsim/models/cost_kernels.h"

namespace dcpsim::analysis {
namespace {

constexpr const char* kFamilies[] = {"attention", "correction", "pack", "combine"};

models::TableKernel table_kernel_of(const std::string& family) {
  return family == "attention"    ? models::TableKernel::kAttention
         : family == "correction" ? models::TableKernel::kCorrection
         : family == "pack"       ? models::TableKernel::kA2aPack
                                  : models::TableKernel::kA2aCombine;
}

models::MemoryKernel memory_kernel_of(const std::string& family) {  // a merge family
  return family == "correction" ? models::MemoryKernel::kCorrection
         : family == "pack"     ? models::MemoryKernel::kA2aPack
                                : models::MemoryKernel::kA2aCombine;
}

// The implementation of the table a key ends in, "" for none ("d512 bf16": dcpsim's own merge kernels).
const models::KernelTable* find_table(const models::HardwareProfile& p, models::TableKernel k,
                                      const std::string& key) {
  for (const models::KernelTables& file : p.tables)
    for (const models::KernelTable& t : file.tables)
      if (t.kernel == k && t.key == key) return &t;
  return nullptr;
}

// The first attention table of this geometry, whatever its implementation.
const models::KernelTable* any_attention_table(const models::HardwareProfile& p, const std::string& base) {
  for (const models::KernelTables& file : p.tables)
    for (const models::KernelTable& t : file.tables)
      if (t.kernel == models::TableKernel::kAttention && t.key.rfind(base, 0) == 0) return &t;
  return nullptr;
}

ImplementationUse use_of(const models::HardwareProfile& p, const MeasuredSection& s,
                         const std::string& family) {
  ImplementationUse u;
  u.family = family;
  u.imported = !s.implementations.empty();
  const auto imported = s.implementations.find(family);
  if (family == "attention") {
    u.ran = s.scenario.attention_impl.empty()
                ? (imported != s.implementations.end() ? imported->second : "unknown")
                : s.scenario.attention_impl;
    const std::string base = models::attention_table_key(models::attention_shape(s.scenario));
    if (const models::KernelTable* t = find_table(p, models::TableKernel::kAttention, base + " " + u.ran)) {
      u.own = true;
      u.priced = t->model ? "its table and model" : "its table";
    } else if (const models::KernelTable* other = any_attention_table(p, base)) {
      const std::string impl =
          other->key.size() > base.size() ? other->key.substr(base.size() + 1) : "unnamed";
      u.priced = impl + "'s table";
    } else {
      u.priced = "the analytic model";
    }
    return u;
  }
  // Merge kernels: the runner's are dcpsim's own; an imported trace names its own.
  const std::string impl = s.scenario.merge_impl;
  u.ran = !impl.empty() ? impl : imported != s.implementations.end() ? imported->second : "dcpsim";
  models::MergeShape m = models::merge_shape(s.scenario);
  m.row_stamps = s.row_stamps;
  m.impl = u.ran == "dcpsim" ? "" : u.ran;
  if (const models::KernelTable* t = find_table(p, table_kernel_of(family), models::merge_table_key(m))) {
    u.own = true;
    u.priced = t->model ? "its table and model" : "its table";
    return u;
  }
  m.impl.clear();
  if (u.ran == "dcpsim") {
    // Not the exact key (a2a-2call's split layout, AG+RS's layout, cold or PDL variants a profile lacks): the
    // table merge_kernel_price falls back to, if any.
    const std::string key = models::merge_price_key(p, memory_kernel_of(family), m);
    u.own = !key.empty();
    u.priced = !u.own                              ? "the analytic model"
               : key == models::merge_table_key(m) ? "its table"
                                                   : "its table \"" + key + "\" (the profile has no \"" +
                                                         models::merge_table_key(m) + "\" one)";
    return u;
  }
  u.priced = find_table(p, table_kernel_of(family), models::merge_table_key(m)) ? "dcpsim's table"
                                                                                : "the analytic model";
  return u;
}

bool has_family(const MeasuredSection& s, const std::string& family) {
  for (const MeasuredPhase& ph : s.phases)
    if (ph.phase == family) return true;
  return false;
}

}  // namespace

std::vector<ImplementationUse> implementation_uses(const models::HardwareProfile& profile,
                                                   const std::vector<MeasuredSection>& sections) {
  std::map<std::pair<int, std::string>, ImplementationUse> uses;
  for (const MeasuredSection& s : sections) {
    for (int f = 0; f < 4; ++f) {
      if (!has_family(s, kFamilies[f])) continue;
      ImplementationUse u = use_of(profile, s, kFamilies[f]);
      auto [it, fresh] = uses.try_emplace({f, u.ran + " <- " + u.priced}, u);
      ++it->second.sections;
    }
  }
  std::vector<ImplementationUse> out;
  for (auto& [key, u] : uses) out.push_back(u);
  return out;
}

std::string describe(const ImplementationUse& u) {
  return u.family + ": ran " + u.ran + " (" + std::to_string(u.sections) + " section" +
         (u.sections == 1 ? "" : "s") + "), priced from " + u.priced;
}

std::string missing_table_warning(const ImplementationUse& u) {
  return u.family + ": the trace ran " + u.ran + ", which the profile has no " + u.family +
         " table for; priced from " + u.priced +
         " instead (its figures compare one kernel with another): build one with `dcpsim tables "
         "--measured TRACES --out t.json` and list t.json under the profile's tables";
}

}  // namespace dcpsim::analysis
