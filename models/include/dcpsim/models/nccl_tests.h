#pragma once
// nccl-tests output as communication tables (comm_table.h): what `dcpsim import --nccl-tests` reads.
//
// Three inputs, told apart by their content:
//   - the text its binaries print (all_reduce_perf, all_gather_perf, ...), as a terminal, mpirun
//     --tag-output ("[1,0]<stdout>:"), srun --label ("0: ") or a docs page left it: every layout from
//     NCCL 1.x's (bytes N type op ...) through pre-2.13 (error column), 2.13+ (redop, root, #wrong) to 2.19's
//     -I per-iteration columns, -C cputime and -S timestamps; several runs per file; the header's device list
//     (ranks, hosts, GPU name) and version lines (nccl-tests version ... nccl-library=N, "NCCL version X");
//   - its JSON (-J file.json);
//   - a CSV with nccl-tests' columns (op, gpus, size_bytes, time_us; optional dtype, inplace, graph, nodes,
//     nccl, device_string, algo, proto), as ../shared/data/comm/ holds them.
// Every malformed or truncated input is one InputError naming the file and line (or JSON path).
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dcpsim/models/comm_table.h"

namespace dcpsim::models {

struct NcclTestsOptions {
  // The collective, for logs that do not name it (nccl-tests before 2.17 print no "Collective test
  // starting" line; the op is then taken from the file name when it holds one, e.g. all_gather_perf.log).
  std::optional<Collective> op;
  // The group size, for logs whose device list is missing (cut by a docs page).
  std::optional<int> gpus;
  // CSV rows kept: every (column, allowed values) must match ("aic_folder" = {"nccl/2.29.2"}).
  std::vector<std::pair<std::string, std::vector<std::string>>> where;
  std::string system;   // provenance: what the GPUs sat in
  std::string date;     // provenance: YYYY-MM-DD
  std::string command;  // provenance: the import's command line
};

// One run found in an input (a header with its rows), for the import's report.
struct NcclTestsRun {
  std::string file;
  int line = 0;  // where its header (or first row) is
  Collective op = Collective::kAllReduce;
  int gpus = 0;
  int nodes = 1;
  std::string dtype;
  bool graph = false;
  int rows = 0;
  std::string device;
  std::string nccl;
};

struct NcclTestsImport {
  CommTables tables;
  std::vector<NcclTestsRun> runs;
  std::vector<std::string> notes;  // what was skipped or assumed, one line each
  std::string source_comment;      // a CSV's "# source: ..." first line (kept in the provenance)
};

// Reads every file into one set of tables (points of the same op, kind, group and size merged). InputError
// for an unreadable, malformed or truncated file, runs on different GPUs, or no usable row at all.
NcclTestsImport import_nccl_tests(const std::vector<std::filesystem::path>& files,
                                  const NcclTestsOptions& options);

// The same for one input already in memory (`name` prefixes errors), adding to `into`; what the fuzzer and
// the tests drive.
void parse_nccl_tests(std::string_view text, const std::string& name, const NcclTestsOptions& options,
                      NcclTestsImport& into);

// NCCL's version code as text: 22703 -> "2.27.3" (2.9 and later: major·10000 + minor·100 + patch; earlier
// major·1000 + minor·100 + patch).
std::string nccl_version_text(long code);

}  // namespace dcpsim::models
