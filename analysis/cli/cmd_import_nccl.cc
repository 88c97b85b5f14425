// dcpsim import --nccl-tests: nccl-tests output (text, -J JSON, or a CSV with its columns) into a
// communication table (models/comm_table.h) a profile can list under `comm_tables`.
#include <ctime>
#include <iostream>
#include <string>
#include <vector>

#include "cmd_import_nccl.h"
#include "dcpsim/dates.h"
#include "dcpsim/error.h"
#include "dcpsim/models/nccl_tests.h"
#include "dcpsim/traces/output_file.h"

namespace dcpsim::cli {
namespace {

// "aic_folder=nccl/2.27.3|nccl/2.29.2" -> ("aic_folder", {"nccl/2.27.3", "nccl/2.29.2"}).
std::pair<std::string, std::vector<std::string>> parse_where(const std::string& text) {
  const std::size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw InputError("--where '" + text + "': expected COLUMN=VALUE[|VALUE...]");
  std::vector<std::string> values(1);
  for (char c : text.substr(eq + 1)) {
    if (c == '|') {
      values.emplace_back();
    } else {
      values.back() += c;
    }
  }
  return {text.substr(0, eq), values};
}

}  // namespace

void run_nccl_tests_import(const NcclImportArgs& a) {
  std::vector<traces::PathFlag> inputs;
  for (const std::string& f : a.files) inputs.push_back({"--nccl-tests", f});
  traces::check_output_paths(inputs, {{"--out", a.out}});
  if (!a.date.empty() && !is_calendar_date(a.date))
    throw InputError("--date '" + a.date + "': expected a date YYYY-MM-DD");
  models::NcclTestsOptions o;
  if (!a.op.empty()) o.op = models::parse_collective(a.op);
  if (a.gpus > 0) o.gpus = a.gpus;
  for (const std::string& w : a.where) o.where.push_back(parse_where(w));
  o.system = a.system;
  o.date = a.date.empty() ? today_utc() : a.date;
  o.command = a.command;
  std::vector<std::filesystem::path> files(a.files.begin(), a.files.end());
  const models::NcclTestsImport r = models::import_nccl_tests(files, o);
  traces::write_file_atomically(a.out, models::comm_tables_json(r.tables));
  std::size_t points = 0;
  for (const auto& t : r.tables.tables) points += t.points.size();
  std::cout << "wrote " << a.out << ": " << r.tables.tables.size() << " tables, " << points << " points from "
            << r.runs.size() << " runs (" << r.tables.provenance.device
            << (r.tables.provenance.nccl.empty() ? "" : ", NCCL " + r.tables.provenance.nccl) << ")\n";
  for (const models::NcclTestsRun& run : r.runs) {
    std::cout << "  " << run.file << ":" << run.line << ": " << models::to_string(run.op) << " on "
              << run.gpus << " GPUs" << (run.nodes > 1 ? " (" + std::to_string(run.nodes) + " nodes)" : "")
              << ", " << run.rows << " sizes" << (run.dtype.empty() ? "" : ", " + run.dtype)
              << (run.graph ? ", CUDA graph" : "") << "\n";
  }
  for (const std::string& n : r.notes) std::cout << "note: " << n << "\n";
  std::cout << "use it: add \"comm_tables\": [\"" << std::filesystem::path(a.out).filename().string()
            << "\"] to a profile (models/profiles/README.md), then dcpsim collectives --profile that.json\n";
}

}  // namespace dcpsim::cli
