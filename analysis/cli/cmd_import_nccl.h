#pragma once
// `dcpsim import --nccl-tests`: the arguments cmd_import.cc collects, and the run.
#include <string>
#include <vector>

namespace dcpsim::cli {

struct NcclImportArgs {
  std::vector<std::string> files;
  std::string out;
  std::string op;                  // when the logs do not name their collective
  int gpus = 0;                    // when they list no devices
  std::vector<std::string> where;  // CSV filters COLUMN=VALUE[|VALUE...]
  std::string system;
  std::string date;
  std::string command;
};

void run_nccl_tests_import(const NcclImportArgs& args);

}  // namespace dcpsim::cli
