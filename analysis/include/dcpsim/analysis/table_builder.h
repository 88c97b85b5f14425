#pragma once
// Builds kernel tables (models/kernel_table.h) from measured traces: every per-rank phase median of a kernel
// phase becomes a point of its kernel type's table at the shape the section's scenario gives that rank
// (attention: heads, rows, mean local tokens of its non-empty rows; merge kernels: dcp, rows, heads;
// collectives of real multi-GPU traces: dcp, bytes per rank). Measurements of one point (ranks with the same
// shard, strategies sharing a kernel, graph and eager runs) are pooled: the median of their medians, their
// repetitions summed, the smallest minimum and the largest maximum. Emulated collectives and the emulated
// direct write are device-local stand-ins and are left out; a real direct_combine also waits for the flags,
// so only emulated ones (the combine alone) are tabulated.
#include <string>
#include <vector>

#include "dcpsim/analysis/measured.h"
#include "dcpsim/models/kernel_table.h"

namespace dcpsim::analysis {

struct TableBuildOptions {
  std::string date;     // YYYY-MM-DD; default today (UTC)
  std::string command;  // the builder's command line, recorded in the provenance
  std::string clocks;   // clock policy during the measurement, when the traces do not say
  // MLA query heads per work unit (the profile's attention.heads_per_cta): attention points are recorded at
  // the heads coordinate the simulator reads them at (models::attention_table_heads: FlashInfer's MLA kernel
  // at its heads up to 128, dcpsim's at whole 64-head tiles above one tile).
  int heads_per_cta = 64;
};

struct TableBuildResult {
  models::KernelTables tables;
  int sections = 0;                // sections read
  int figures = 0;                 // phase medians that became (part of) a point
  std::vector<std::string> notes;  // what was left out and why, one line per kind
};

// InputError when the traces come from different device models or contain no kernel phase.
TableBuildResult build_kernel_tables(const std::vector<MeasuredTrace>& traces,
                                     const TableBuildOptions& options);

}  // namespace dcpsim::analysis
