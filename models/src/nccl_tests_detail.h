#pragma once
// What the nccl-tests readers (text, JSON, CSV) share: a run as parsed, and turning it into table points.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dcpsim/models/nccl_tests.h"

namespace dcpsim::models::detail {

// One result row: nccl-tests' size, type and reduction, and the out-of-place / in-place times (µs).
struct NcclRow {
  double size = 0;
  std::string dtype;
  std::string redop;
  std::optional<double> out_of_place_us;
  std::optional<double> in_place_us;
  int line = 0;
  bool wrong = false;  // nccl-tests counted wrong elements (#wrong > 0)
};

struct NcclRank {
  std::string host;
  std::string device;
};

struct NcclRun {
  std::string file;
  int line = 0;
  std::optional<Collective> op;
  int nthreads = 0;  // the header's nThread and nGpus (per process)
  int ngpus = 0;
  bool graph = false;
  bool cputime = false;
  std::map<int, NcclRank> ranks;  // the device list
  std::string nccl;
  std::string algorithm, protocol;  // NCCL_ALGO / NCCL_PROTO when the input records the environment
  std::vector<NcclRow> rows;
};

// Adds a finished run's rows to `into` (tables by op, dtype, placement and launch). Decides the op (the
// run's, else options.op, else the file name) and the group (device list, else options.gpus, else the
// header's nThread × nGpus); InputError naming the file and line when it cannot.
void add_run(const NcclRun& run, const NcclTestsOptions& options, NcclTestsImport& into);

// The collective a name holds ("all_gather_perf", "logs/alltoall-8gpu.txt"), if any.
std::optional<Collective> collective_in_name(std::string_view name);

// Whitespace-separated tokens.
std::vector<std::string> split_words(std::string_view line);
// A finite number, the whole token ("12.5", "2e-07"); nullopt otherwise.
std::optional<double> number_of(std::string_view token);

void parse_nccl_tests_text(std::string_view text, const std::string& name, const NcclTestsOptions& options,
                           NcclTestsImport& into);
void parse_nccl_tests_json(std::string_view text, const std::string& name, const NcclTestsOptions& options,
                           NcclTestsImport& into);
void parse_nccl_tests_csv(std::string_view text, const std::string& name, const NcclTestsOptions& options,
                          NcclTestsImport& into);

}  // namespace dcpsim::models::detail
