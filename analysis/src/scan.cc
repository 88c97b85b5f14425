// The scan driver: grid, shard, chunks run in forked worker processes, CSV assembled in order.
#include "dcpsim/analysis/scan.h"

#include "dcpsim/analysis/baseline.h"

#include <charconv>

#include "dcpsim/analysis/layouts.h"
#include "dcpsim/error.h"
#include "dcpsim/interrupt.h"
#include "dcpsim/traces/output_file.h"

#ifdef DCPSIM_WITH_SIMGRID
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "dcpsim/sim/report.h"
#include "dcpsim/sim/simulator.h"
#endif

namespace dcpsim::analysis {

std::pair<int, int> parse_shard(std::string_view text) {
  const auto slash = text.find('/');
  int index = -1;
  int count = 0;
  bool ok = slash != std::string_view::npos;
  if (ok) {
    const auto a = std::from_chars(text.data(), text.data() + slash, index);
    const auto b = std::from_chars(text.data() + slash + 1, text.data() + text.size(), count);
    ok = a.ec == std::errc() && a.ptr == text.data() + slash && b.ec == std::errc() &&
         b.ptr == text.data() + text.size() && count >= 1 && index >= 0 && index < count;
  }
  if (!ok) {
    throw InputError("--shard '" + std::string(text) + "' is not i/n with 0 <= i < n (e.g. 0/4, 3/4)");
  }
  return {index, count};
}

std::pair<std::size_t, std::size_t> shard_range(std::size_t total, int index, int count) {
  const auto edge = [&](int i) {
    return total * static_cast<std::size_t>(i) / static_cast<std::size_t>(count);
  };
  return {edge(index), edge(index + 1)};
}

#ifdef DCPSIM_WITH_SIMGRID
namespace {

struct Chunk {
  std::size_t begin = 0;
  std::size_t end = 0;
  std::filesystem::path part;
};

struct Work {
  const ScanOptions& options;
  LayoutQuery layouts;  // whether each row's TP x DCP layout fits its weights
  models::HardwareProfile profile;
  sim::SimOptions sim;
  std::vector<models::Scenario> scenarios;
  std::vector<int> tp;  // per scenario
  std::optional<models::ModelPreset> model;
  std::string model_name;
};

std::filesystem::path error_file(const Chunk& chunk) {
  return chunk.part.string() + ".err";
}

// Runs in the worker process: simulates the chunk and writes its rows to the part file. Its stderr goes to
// the part's .err file, whose last line is the worker's reason when it fails (an exception's message, or
// whatever a library printed before it aborted), so the scan's own last line can say it.
[[noreturn]] void run_worker(const Work& work, const Chunk& chunk) {
  interrupt::enter_worker();
  const int err = ::open(error_file(chunk).c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (err >= 0) {
    ::dup2(err, STDERR_FILENO);
    ::close(err);
  }
  int code = 0;
  std::string error;
  try {
    const sim::Simulator simulator(work.profile, work.sim);
    std::map<int, WholeModel> models;  // per TP
    std::ofstream out(chunk.part, std::ios::binary | std::ios::trunc);
    for (std::size_t i = chunk.begin; i < chunk.end; ++i) {
      auto it = models.find(work.tp[i]);
      if (it == models.end()) {
        it = models.try_emplace(work.tp[i], work.model, work.profile, work.tp[i], work.options.whole).first;
        anchor(it->second, work.options.whole, work.scenarios[i].kv_dtype,
               [&](const models::Scenario& s) { return simulator.run(s).step_latency_s; });
      }
      const WholeModel& whole = it->second;
      const bool fits = evaluate_layout(work.layouts, work.tp[i], work.scenarios[i].dcp).weights_fit;
      out << scan_csv_row(whole, work.model_name, work.profile,
                          simulator.run(whole.attention_scenario(work.scenarios[i])), fits)
          << '\n';
    }
    out.close();
    if (!out) throw RuntimeError("cannot write '" + chunk.part.string() + "'");
  } catch (const InputError& e) {
    code = 2;
    error = e.what();
  } catch (const std::exception& e) {
    code = 1;
    error = e.what();
  }
  if (code != 0) std::fprintf(stderr, "\n%s\n", error.c_str());
  std::fflush(stderr);
  std::_Exit(code);
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The last non-blank line of a worker's .err file (at most 400 characters).
std::string worker_reason(const Chunk& chunk) {
  std::ifstream in(error_file(chunk));
  std::string line, last;
  while (std::getline(in, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  return last.substr(0, 400);
}

// "exit status 3", "killed by signal 9 (SIGKILL: out of memory?)".
std::string worker_status(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (!WIFSIGNALED(status)) return "status " + std::to_string(status);
  const int sig = WTERMSIG(status);
  const char* name = ::sigabbrev_np(sig);
  return "killed by signal " + std::to_string(sig) + (name ? " (SIG" + std::string(name) + ")" : "") +
         (sig == SIGKILL ? ", perhaps for lack of memory" : "");
}

// The chunks' part files live in one directory beside the output, tracked for interruption.
class PartDir {
 public:
  PartDir(const std::filesystem::path& out, const std::vector<Chunk>& chunks) : chunks_(chunks) {
    if (chunks.empty()) return;
    dir_ = chunks.front().part.parent_path();
    slot_ = interrupt::track_part_dir(dir_, ".csv", chunks.size());
    std::error_code ec;
    if (!std::filesystem::create_directory(dir_, ec) || ec) {
      interrupt::untrack_part_dir(slot_);
      throw InputError("--out '" + out.string() + "': cannot create the scan's part directory '" +
                       dir_.string() + "'" + (ec ? ": " + ec.message() : ""));
    }
  }
  ~PartDir() { remove(); }
  PartDir(const PartDir&) = delete;
  PartDir& operator=(const PartDir&) = delete;
  void remove() {
    if (dir_.empty()) return;
    std::error_code ec;
    for (const Chunk& c : chunks_) {
      std::filesystem::remove(c.part, ec);
      std::filesystem::remove(error_file(c), ec);
    }
    std::filesystem::remove(dir_, ec);
    interrupt::untrack_part_dir(slot_);
    dir_.clear();
  }

 private:
  const std::vector<Chunk>& chunks_;
  std::filesystem::path dir_;
  int slot_ = -1;
};

// Keeps up to `jobs` workers running until every chunk is done; on a failure stops the others and throws.
void run_chunks(const Work& work, const std::vector<Chunk>& chunks, int jobs, std::ostream& log) {
  const auto start = std::chrono::steady_clock::now();
  std::map<pid_t, std::size_t> running;
  std::map<pid_t, int> tracked;  // interrupt's child slots
  std::size_t next = 0;
  std::size_t done = 0;
  const std::size_t total = work.scenarios.size();
  while (next < chunks.size() || !running.empty()) {
    while (static_cast<int>(running.size()) < jobs && next < chunks.size()) {
      std::fflush(nullptr);
      int slot = -1;
      const pid_t pid = interrupt::fork_worker(&slot);
      if (pid < 0) throw RuntimeError("scan: cannot start a worker process");
      if (pid == 0) run_worker(work, chunks[next]);
      tracked[pid] = slot;
      running[pid] = next++;
    }
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    auto it = running.find(pid);
    if (pid < 0 || it == running.end()) continue;
    const Chunk& chunk = chunks[it->second];
    running.erase(it);
    interrupt::untrack_child(tracked[pid]);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
      done += chunk.end - chunk.begin;
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      log << "scan: " << done << "/" << total << " scenarios, " << elapsed << " s\n" << std::flush;
      continue;
    }
    for (const auto& [other, index] : running) ::kill(other, SIGTERM);
    for (const auto& [other, index] : running) {
      ::waitpid(other, nullptr, 0);
      interrupt::untrack_child(tracked[other]);
    }
    const std::string why = worker_reason(chunk);
    const std::string what =
        "scan: " + (why.empty() ? "a worker process failed (" + worker_status(status) + ")" : why);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 2) throw InputError(what);
    throw RuntimeError(what);
  }
}

std::vector<Chunk> make_chunks(const ScanOptions& o, std::size_t count, const std::filesystem::path& out) {
  const std::filesystem::path dir = out.has_parent_path() ? out.parent_path() : std::filesystem::path(".");
  const std::filesystem::path parts =
      dir / ("." + out.filename().string() + ".parts-" + std::to_string(::getpid()));
  std::size_t size = o.chunk_size > 0 ? static_cast<std::size_t>(o.chunk_size)
                                      : (count + 4 * o.jobs - 1) / (4 * static_cast<std::size_t>(o.jobs));
  if (o.chunk_size <= 0) size = std::clamp<std::size_t>(size, 8, 500);
  std::vector<Chunk> chunks;
  for (std::size_t b = 0; b < count; b += size) {
    chunks.push_back({b, std::min(count, b + size), parts / (std::to_string(chunks.size()) + ".csv")});
  }
  return chunks;
}

// The value of slice column `column` in scenario i, as the CSV writes it.
std::string slice_value(const std::string& column, const models::Scenario& s, int tp, const Work& w) {
  if (column == "profile") return w.profile.name;
  if (column == "model") return w.model_name.empty() ? "none" : w.model_name;
  if (column == "tp") return std::to_string(tp);
  if (column == "heads") return std::to_string(s.heads);
  if (column == "head_dim") return std::to_string(s.head_dim);
  if (column == "qk_dim") return std::to_string(s.qk_dim);
  if (column == "kv_heads") return std::to_string(s.kv_heads);
  if (column == "batch") return std::to_string(s.rows());
  if (column == "context") return std::to_string(s.contexts.front());
  if (column == "launch") return std::string(models::to_string(s.launch));
  if (column == "kv_dtype") return std::string(models::to_string(s.kv_dtype));
  if (column == "out_dtype") return std::string(models::to_string(s.out_dtype));
  return std::to_string(s.interleave);
}

// --at (plot.h check_scan_slice has checked its form): every value must be one the scan has, so that a bad
// slice is a usage error before any work or output.
void check_slice_values(const std::string& at, const std::vector<models::Scenario>& scenarios,
                        const std::vector<int>& tp, const Work& w) {
  std::istringstream items(at);
  std::string item;
  while (std::getline(items, item, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) continue;
    std::string column = item.substr(0, eq), value = item.substr(eq + 1);
    column.erase(std::remove(column.begin(), column.end(), ' '), column.end());
    std::replace(column.begin(), column.end(), '-', '_');
    value.erase(std::remove(value.begin(), value.end(), ' '), value.end());
    if (column == "context") {
      try {
        value = std::to_string(models::parse_token_count(value));
      } catch (const InputError&) {
      }
    }
    std::vector<std::string> present;
    bool found = false;
    for (std::size_t i = 0; i < scenarios.size() && !found; ++i) {
      const std::string v = slice_value(column, scenarios[i], tp[i], w);
      found = v == value;
      if (std::find(present.begin(), present.end(), v) == present.end()) present.push_back(v);
    }
    if (found) continue;
    std::string list;
    for (std::size_t i = 0; i < present.size() && i < 12; ++i) list += (i ? ", " : "") + present[i];
    throw InputError("--at " + column + "=" + item.substr(eq + 1) + ": no scenario of this scan has it (" +
                     column + " here: " + list + (present.size() > 12 ? ", ..." : "") + ")");
  }
}

void check_options(const ScanOptions& o) {
  if (o.jobs < 1) throw InputError("--jobs " + std::to_string(o.jobs) + " is not an integer >= 1");
  if (o.peers_in_flight < 1) {
    throw InputError("--peers-in-flight " + std::to_string(o.peers_in_flight) + " is not an integer >= 1");
  }
  sim::parse_flow_grain(o.flows);
  if (o.shard_count < 1 || o.shard_index < 0 || o.shard_index >= o.shard_count) {
    throw InputError("--shard " + std::to_string(o.shard_index) + "/" + std::to_string(o.shard_count) +
                     " is not i/n with 0 <= i < n");
  }
}

}  // namespace

ScanReport run_scan(const ScanOptions& o, const std::filesystem::path& out, std::ostream& log,
                    bool list_skipped) {
  check_options(o);
  const std::filesystem::path dir = out.has_parent_path() ? out.parent_path() : std::filesystem::path(".");
  std::error_code ec;
  if (out.empty() || !std::filesystem::is_directory(dir, ec)) {
    throw InputError("--out '" + out.string() + "': directory '" + dir.string() + "' does not exist");
  }
  const auto start = std::chrono::steady_clock::now();
  Work work{o, {}, models::load_profile(o.profile), {}, {}, {}, model_of(o.flags), ""};
  if (work.model) work.model_name = work.model->name;
  work.layouts = LayoutQuery::of(work.model, work.profile, o.whole.gpu_memory_utilization, o.whole.pp);
  ScenarioFlags flags = o.flags;
  const LayoutChoice tp = resolve_tp(flags, work.layouts);
  (void)WholeModel(work.model, work.profile, 1, o.whole);  // flag values checked before any work
  if (o.nccl_algo) work.sim.collective.algorithm = o.nccl_algo;
  if (o.nccl_proto) work.sim.collective.protocol = o.nccl_proto;
  work.sim.peers_in_flight = o.peers_in_flight;
  work.sim.flows = sim::parse_flow_grain(o.flows);

  ScanGrid grid = expand_scan(flags);
  const int domain = static_cast<int>(work.profile.topology.gpus_per_nvlink_domain.si());
  std::vector<models::Scenario> valid;
  std::vector<int> valid_tp;
  for (std::size_t i = 0; i < grid.scenarios.size(); ++i) {
    models::Scenario& s = grid.scenarios[i];
    if (s.dcp > domain && !(work.profile.internode.bandwidth.si() > 0)) {
      grid.skipped.push_back(s.label() + ": dcp exceeds one NVLink domain of " + work.profile.name +
                             " and the profile has no inter-node fabric");
      continue;
    }
    work.sim.max_gpus = std::max(work.sim.max_gpus, s.dcp);
    valid.push_back(std::move(s));
    valid_tp.push_back(grid.tp[i]);
  }
  if (valid.empty()) {
    throw InputError("scan: nothing to simulate: " + skipped_line(grid.skipped, grid.skipped.size()));
  }
  if (!o.plot_at.empty()) check_slice_values(o.plot_at, valid, valid_tp, work);
  const auto [begin, end] = shard_range(valid.size(), o.shard_index, o.shard_count);
  work.scenarios.assign(valid.begin() + begin, valid.begin() + end);
  work.tp.assign(valid_tp.begin() + begin, valid_tp.begin() + end);

  log << "scan: " << work.scenarios.size() << " scenarios";
  if (o.shard_count > 1)
    log << " (shard " << o.shard_index << "/" << o.shard_count << " of " << valid.size() << ")";
  const WholeModel first(work.model, work.profile, work.tp.empty() ? 1 : work.tp.front(), o.whole);
  log << " on " << work.profile.name << ", " << o.jobs << " job(s); model " << model_label(o.flags) << ", "
      << first.layers() << " layers; KV budget per GPU: " << first.kv_budget_basis();
  log << "\nscan: " << tp.rule << "\n";
  const std::size_t combinations = valid.size() + grid.skipped.size();
  if (!grid.skipped.empty()) {
    log << "scan: " << skipped_line(grid.skipped, combinations)
        << (list_skipped ? "" : " (--list-skipped lists them)") << "\n";
  }
  if (list_skipped)
    for (const std::string& why : grid.skipped) log << "scan: skipped " << why << "\n";

  const std::vector<Chunk> chunks = make_chunks(o, work.scenarios.size(), out);
  // Workers are forked from here: building the platforms once now spares every worker doing it.
  sim::Simulator(work.profile, work.sim).prepare();
  PartDir parts(out, chunks);
  run_chunks(work, chunks, o.jobs, log);
  std::string csv = o.header && o.shard_index == 0 ? scan_csv_header() + "\n" : std::string();
  for (const Chunk& c : chunks) csv += read_file(c.part);
  parts.remove();
  traces::write_file_atomically(out, csv);
  ScanReport report;
  report.scenarios = work.scenarios.size();
  report.skipped = grid.skipped;
  report.combinations = combinations;
  report.tp = tp;
  report.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}
#endif  // DCPSIM_WITH_SIMGRID

}  // namespace dcpsim::analysis
