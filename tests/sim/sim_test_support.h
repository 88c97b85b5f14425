#pragma once
// Shared helpers for the simulator tests: scenarios and profiles built in code.
#include <cstdint>
#include <map>
#include <string>

#include "dcpsim/models/profile.h"
#include "dcpsim/models/scenario.h"
#include "dcpsim/sim/simulator.h"

namespace dcpsim::sim::testing {

// An MLA decode step (DeepSeek-style: H heads, 512 latent + 64 rope, one KV head).
inline models::Scenario mla(int dcp, int heads, int batch, std::int64_t context, models::Strategy strategy,
                            models::LaunchMode launch = models::LaunchMode::kGraph) {
  models::Scenario s;
  s.dcp = dcp;
  s.heads = heads;
  s.kv_heads = 1;
  s.head_dim = 512;
  s.qk_dim = 576;
  s.contexts = models::uniform_contexts(batch, context);
  s.strategy = strategy;
  s.launch = launch;
  return s;
}

// A GQA decode step (head dim 128, 8 KV heads).
inline models::Scenario gqa(int dcp, int heads, int batch, std::int64_t context, models::Strategy strategy) {
  models::Scenario s = mla(dcp, heads, batch, context, strategy);
  s.kv_heads = 8;
  s.head_dim = 128;
  s.qk_dim = 128;
  return s;
}

inline const models::HardwareProfile& builtin(const std::string& name) {
  static std::map<std::string, models::HardwareProfile> cache;
  auto it = cache.find(name);
  if (it == cache.end()) it = cache.emplace(name, models::load_profile(name)).first;
  return it->second;
}

// A built-in profile whose ranks reach every step together (no nccl.arrival_skew_*): what tests of the
// engine's equivalences (pipes against SimGrid, bundles against pairs) assume.
inline const models::HardwareProfile& together(const std::string& name) {
  static std::map<std::string, models::HardwareProfile> cache;
  auto it = cache.find(name);
  if (it == cache.end()) {
    models::HardwareProfile p = models::load_profile(name);
    p.nccl.arrival_skew_graph.reset();
    p.nccl.arrival_skew_eager.reset();
    it = cache.emplace(name, p).first;
  }
  return it->second;
}

}  // namespace dcpsim::sim::testing
