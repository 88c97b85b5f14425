// nccl-tests import: telling the inputs apart, runs into table points, and merging files.
#include "dcpsim/models/nccl_tests.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "dcpsim/error.h"
#include "nccl_tests_detail.h"

namespace dcpsim::models {
namespace detail {
namespace {

std::string lower_text(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

// Rows of a run that measured several reductions (-o all): the sum, which every caller means.
bool keep_redop(const NcclRun& run, const NcclRow& row) {
  std::set<std::string> ops;
  for (const NcclRow& r : run.rows) ops.insert(r.redop);
  return ops.size() <= 1 || row.redop == "sum";
}

std::string where_of(const NcclRun& run) {
  return run.file + (run.line > 0 ? ":" + std::to_string(run.line) : "");
}

}  // namespace

std::vector<std::string> split_words(std::string_view line) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    const std::size_t start = i;
    while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    if (i > start) out.emplace_back(line.substr(start, i - start));
  }
  return out;
}

std::optional<double> number_of(std::string_view token) {
  if (token.empty() || token.size() > 40) return std::nullopt;
  const std::string t(token);
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<Collective> collective_in_name(std::string_view name) {
  std::string key;
  for (char c : std::filesystem::path(std::string(name)).filename().string()) {
    if (std::isalnum(static_cast<unsigned char>(c))) key += static_cast<char>(std::tolower(c));
  }
  // Longest names first: "allreduce" must not be taken for "reduce", "reducescatter" before "scatter".
  static const std::pair<std::string_view, Collective> names[] = {
      {"reducescatter", Collective::kReduceScatter},
      {"allreduce", Collective::kAllReduce},
      {"allgather", Collective::kAllGather},
      {"alltoall", Collective::kAllToAll},
      {"sendrecv", Collective::kSendRecv}};
  for (const auto& [text, c] : names) {
    if (key.find(text) != std::string::npos) return c;
  }
  return std::nullopt;
}

void add_run(const NcclRun& run, const NcclTestsOptions& options, NcclTestsImport& into) {
  if (run.rows.empty()) return;
  const std::string where = where_of(run);
  std::optional<Collective> op = run.op ? run.op : options.op;
  if (!op) op = collective_in_name(run.file);
  if (!op) {
    throw InputError(where +
                     ": the log does not name its collective (nccl-tests before 2.17 print no "
                     "\"Collective test starting\" line); pass --op all-reduce|all-gather|...");
  }
  int gpus = run.ranks.empty() ? 0 : run.ranks.rbegin()->first + 1;
  std::set<std::string> hosts, devices;
  for (const auto& [rank, info] : run.ranks) {
    hosts.insert(info.host);
    devices.insert(info.device);
  }
  if (options.gpus) {
    gpus = *options.gpus;
  } else if (gpus == 0 && run.nthreads * run.ngpus > 1) {
    gpus = run.nthreads * run.ngpus;
    into.notes.push_back(where + ": no device list; the group is the header's nThread x nGpus = " +
                         std::to_string(gpus) + " (one process)");
  }
  if (gpus < 2) {
    if (gpus == 1) {
      into.notes.push_back(where + ": a one-GPU run (nothing crosses a link): skipped");
      return;
    }
    throw InputError(where + ": the log lists no devices and its header gives no group (nThread " +
                     std::to_string(run.nthreads) + " x nGpus " + std::to_string(run.ngpus) +
                     " is one process's share under MPI); pass --gpus N");
  }
  const int nodes = hosts.empty() ? 1 : static_cast<int>(hosts.size());
  const std::string device = devices.empty() ? "" : *devices.begin();
  if (devices.size() > 1)
    into.notes.push_back(where + ": ranks on different GPU models; the table keeps " + device);
  if (!device.empty()) {
    std::string& known = into.tables.provenance.device;
    if (known.empty()) {
      known = device;
    } else if (known != device) {
      throw InputError(where + ": measured on \"" + device + "\", but an earlier input on \"" + known +
                       "\"; import each GPU's logs into its own table");
    }
  }
  if (!run.nccl.empty()) {
    std::string& known = into.tables.provenance.nccl;
    if (known.empty()) {
      known = run.nccl;
    } else if (known != run.nccl && known.find(run.nccl) == std::string::npos) {
      known += ", " + run.nccl;
      into.notes.push_back(where + ": NCCL " + run.nccl +
                           " beside an earlier input's; the tables mix versions");
    }
  }
  NcclTestsRun report{run.file, run.line, *op, gpus, nodes, "", run.graph, 0, device, run.nccl};
  int wrong = 0;
  for (const NcclRow& row : run.rows) {
    if (row.size < 0)
      throw InputError(run.file + ":" + std::to_string(row.line) + ": a size of " + std::to_string(row.size) +
                       " bytes (nccl-tests prints sizes >= 0)");
    if (!(row.size > 0) || !keep_redop(run, row)) continue;
    wrong += row.wrong;
    for (bool in_place : {false, true}) {
      const std::optional<double>& t = in_place ? row.in_place_us : row.out_of_place_us;
      if (!t) continue;
      if (!(*t > 0)) {
        throw InputError(run.file + ":" + std::to_string(row.line) + ": a time of " + std::to_string(*t) +
                         " us (nccl-tests prints a positive time per call)");
      }
      CommTable key;
      key.op = *op;
      key.dtype = normalise_dtype(row.dtype);
      key.in_place = in_place;
      key.graph = run.graph;
      key.algorithm = lower_text(run.algorithm);
      key.protocol = lower_text(run.protocol);
      auto it = std::find_if(into.tables.tables.begin(), into.tables.tables.end(), [&](const CommTable& t2) {
        return t2.op == key.op && t2.dtype == key.dtype && t2.in_place == key.in_place &&
               t2.graph == key.graph && t2.algorithm == key.algorithm && t2.protocol == key.protocol;
      });
      if (it == into.tables.tables.end()) it = into.tables.tables.insert(into.tables.tables.end(), key);
      it->points.push_back({gpus, nodes, row.size, *t, *t, *t, 1});
      check_comm_point(it->points.back(), run.file + ":" + std::to_string(row.line));
    }
    report.dtype = normalise_dtype(row.dtype);
    ++report.rows;
  }
  if (wrong > 0) {
    into.notes.push_back(where + ": " + std::to_string(wrong) +
                         " rows report wrong elements (#wrong > 0); their times are kept");
  }
  if (run.cputime) into.notes.push_back(where + ": times are CPU times (-C 1), kept as the time per call");
  into.runs.push_back(report);
}

}  // namespace detail

std::string nccl_version_text(long code) {
  if (code <= 0) return "";
  const bool modern = code >= 20900;  // NCCL_VERSION(2,9,0) changed the encoding
  const long major = modern ? code / 10000 : code / 1000;
  const long minor = modern ? (code % 10000) / 100 : (code % 1000) / 100;
  const long patch = code % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

void parse_nccl_tests(std::string_view text, const std::string& name, const NcclTestsOptions& options,
                      NcclTestsImport& into) {
  std::size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  if (i < text.size() && text[i] == '{') {
    detail::parse_nccl_tests_json(text, name, options, into);
    return;
  }
  const std::string_view first = text.substr(0, std::min(text.find('\n'), text.size()));
  const bool csv =
      (first.starts_with("#") && text.find("\nop,") != std::string_view::npos) || first.starts_with("op,");
  if (csv) {
    detail::parse_nccl_tests_csv(text, name, options, into);
  } else {
    detail::parse_nccl_tests_text(text, name, options, into);
  }
}

NcclTestsImport import_nccl_tests(const std::vector<std::filesystem::path>& files,
                                  const NcclTestsOptions& options) {
  if (files.empty()) throw InputError("import --nccl-tests: no input files");
  NcclTestsImport out;
  std::string sources;
  for (const std::filesystem::path& f : files) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(f, ec))
      throw InputError(f.string() + ": cannot open (not found or not a regular file)");
    if (std::filesystem::file_size(f, ec) > (std::uintmax_t{256} << 20))
      throw InputError(f.string() + ": larger than 256 MiB; not an nccl-tests log");
    std::ifstream in(f, std::ios::binary);
    if (!in) throw InputError(f.string() + ": cannot open");
    std::ostringstream text;
    text << in.rdbuf();
    const std::size_t before = out.runs.size();
    parse_nccl_tests(text.str(), f.string(), options, out);
    if (out.runs.size() == before) throw InputError(f.string() + ": no nccl-tests result rows found");
    sources += (sources.empty() ? "" : "; ") + f.filename().string();
    if (!out.source_comment.empty()) sources += " (" + out.source_comment + ")";
    out.source_comment.clear();
  }
  if (out.tables.tables.empty()) throw InputError("import --nccl-tests: no usable result rows in any input");
  for (CommTable& t : out.tables.tables) {
    merge_comm_points(t);
    finalize_comm_table(t, std::string(to_string(t.op)));
  }
  std::sort(out.tables.tables.begin(), out.tables.tables.end(), [](const CommTable& a, const CommTable& b) {
    return std::tie(a.op, a.dtype, a.in_place, a.graph) < std::tie(b.op, b.dtype, b.in_place, b.graph);
  });
  CommProvenance& p = out.tables.provenance;
  if (p.device.empty()) p.device = "unknown (the logs list no devices)";
  p.system = options.system;
  p.source = sources;
  p.date = options.date;
  p.command = options.command;
  return out;
}

}  // namespace dcpsim::models
