#pragma once
// Which implementation of each kernel a measured trace ran, and what the profile prices it from: its own
// table (and, for an implementation imported from a profiler trace, its table's model), another
// implementation's table, or the analytic model. `validate` names them all and warns once per kernel family
// when the trace ran an implementation the profile has no table for (its figures then compare one kernel
// with another).
#include <string>
#include <vector>

#include "dcpsim/analysis/measured.h"
#include "dcpsim/models/profile.h"

namespace dcpsim::analysis {

struct ImplementationUse {
  std::string family;  // "attention", "correction", "pack", "combine"
  std::string ran;     // "torch-flash", "vllm-triton", "dcpsim", "flashinfer", or "unknown"
  std::string priced;  // "its table", "its table and model", "flashinfer's table", "the analytic model"
  bool own = false;    // priced from a table of the implementation that ran
  bool imported =
      false;  // the trace came from a profiler (dcpsim import), naming its kernels' implementations
  int sections = 0;
  // Whether validate warns: a kernel priced from another implementation's table, or an imported one not
  // priced from its own.
  bool warn() const { return !own && (imported || priced != "the analytic model"); }
};

// One entry per (family, implementation that ran), in family order.
std::vector<ImplementationUse> implementation_uses(const models::HardwareProfile& profile,
                                                   const std::vector<MeasuredSection>& sections);

// "attention: ran torch-flash (3 sections), priced from its table and model".
std::string describe(const ImplementationUse& use);

// The one-line warning for a use not priced from its own table, naming how to build one.
std::string missing_table_warning(const ImplementationUse& use);

}  // namespace dcpsim::analysis
