// nccl-tests' printed output, line by line. Fields are split on whitespace, never on columns (wide values
// push the next ones right); the column header says which field is which.
#include <algorithm>
#include <cctype>

#include "dcpsim/error.h"
#include "nccl_tests_detail.h"

namespace dcpsim::models::detail {
namespace {

constexpr std::size_t kMaxLine = 1 << 16;

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

// Drops what launchers put before each line: mpirun --tag-output "[1,0]<stdout>:", srun --label "0: ",
// and indentation (docs pages).
std::string_view strip_prefixes(std::string_view line) {
  for (int guard = 0; guard < 4; ++guard) {
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    if (line.starts_with("[")) {
      const std::size_t close = line.find("]<std");
      const std::size_t colon = line.find(">:");
      if (close != std::string_view::npos && colon != std::string_view::npos && colon > close && close < 16) {
        line.remove_prefix(colon + 2);
        continue;
      }
    }
    std::size_t d = 0;
    while (d < line.size() && d < 8 && std::isdigit(static_cast<unsigned char>(line[d]))) ++d;
    if (d > 0 && d + 1 < line.size() && line[d] == ':' && line[d + 1] == ' ') {
      line.remove_prefix(d + 2);
      continue;
    }
    break;
  }
  return line;
}

// The value after `key` in a header line ("nGpus 8" -> 8, "graph: 1" -> 1).
int header_value(const std::vector<std::string>& words, std::string_view key) {
  for (std::size_t i = 0; i + 1 < words.size(); ++i) {
    if (words[i] == key && all_digits(words[i + 1]) && words[i + 1].size() < 9)
      return std::stoi(words[i + 1]);
  }
  return 0;
}

// The first "X.Y.Z" in a line ("NCCL version 2.26.6+cuda12.8", "RCCL version : 2.22.3-HEAD:7d8d67c").
std::string dotted_version(std::string_view line) {
  for (const std::string& w : split_words(line)) {
    std::size_t n = 0, dots = 0;
    while (n < w.size() && (std::isdigit(static_cast<unsigned char>(w[n])) || w[n] == '.'))
      dots += w[n++] == '.';
    if (dots == 2 && n >= 5 && std::isdigit(static_cast<unsigned char>(w[0]))) return w.substr(0, n);
  }
  return "";
}

// The column header: which field holds what.
struct Columns {
  std::vector<std::string> names;
  int size = -1, type = -1, redop = -1;
  std::vector<int> time;  // out-of-place then in-place (one entry: out-of-place only)
  std::vector<int> wrong;
  bool timestamp = false;
  bool known() const { return size >= 0 && !time.empty(); }
};

Columns read_columns(const std::vector<std::string>& words) {
  Columns c;
  c.names = words;
  for (int i = 0; i < static_cast<int>(words.size()); ++i) {
    const std::string& w = words[i];
    if ((w == "size" || w == "bytes") && c.size < 0) c.size = i;
    if (w == "type") c.type = i;
    if (w == "redop" || w == "op") c.redop = i;
    if (w == "time" || w == "cputime") c.time.push_back(i);
    if (w == "#wrong" || w == "wrong" || w == "error" || w == "res") c.wrong.push_back(i);
    if (w == "timestamp") c.timestamp = true;
  }
  if (c.time.size() > 2) c.time.resize(2);
  return c;
}

bool is_column_header(const std::vector<std::string>& words) {
  const bool first = !words.empty() && (words[0] == "size" || words[0] == "bytes");
  return first && std::find(words.begin(), words.end(), "algbw") != words.end() &&
         (std::find(words.begin(), words.end(), "time") != words.end() ||
          std::find(words.begin(), words.end(), "cputime") != words.end());
}

bool is_failure(std::string_view body) {
  for (std::string_view marker : {"Test CUDA failure", "Test NCCL failure", "NCCL failure ", "Test failure ",
                                  "CUDA failure ", "terminate called"}) {
    if (body.find(marker) != std::string_view::npos) return true;
  }
  return false;
}

// One result row under `c`; InputError naming the line when it is cut or malformed.
NcclRow read_row(const std::vector<std::string>& w, const Columns& c, const std::string& where, int line) {
  // (-S adds a "timestamp" name but prints the time as two fields.) A trace-replay row, which prints blanks
  // for its out-of-place half, cannot be told from a row cut after that half: both are refused.
  const std::size_t want = c.names.size() + (c.timestamp ? 1 : 0);
  if (w.size() < want) {
    throw InputError(where + ":" + std::to_string(line) + ": truncated result row (" +
                     std::to_string(w.size()) + " fields where the column header has " +
                     std::to_string(want) + ")");
  }
  const auto num = [&](int i) {
    const std::optional<double> v = number_of(w[i]);
    if (!v) {
      throw InputError(where + ":" + std::to_string(line) + ": malformed result row: '" + w[i] + "' under '" +
                       c.names[i] + "' is not a number");
    }
    return *v;
  };
  NcclRow row;
  row.line = line;
  row.size = num(c.size);
  if (c.type >= 0) row.dtype = w[c.type];
  if (c.redop >= 0) row.redop = w[c.redop];
  row.out_of_place_us = num(c.time[0]);
  if (c.time.size() == 2) row.in_place_us = num(c.time[1]);
  for (int i : c.wrong) {
    const std::optional<double> v = number_of(w[i]);
    row.wrong = row.wrong || (v && *v > 0 && c.names[i] != "error" && c.names[i] != "res");
  }
  return row;
}

}  // namespace

void parse_nccl_tests_text(std::string_view text, const std::string& name, const NcclTestsOptions& options,
                           NcclTestsImport& into) {
  NcclRun run;
  run.file = name;
  Columns columns;
  bool trailer = false;
  int last_row_line = 0;
  std::string pending_nccl;  // a version line seen before the run's header
  const auto finish = [&] {
    if (!run.rows.empty()) add_run(run, options, into);
    if (!run.rows.empty() && !trailer) {
      into.notes.push_back(name + ":" + std::to_string(last_row_line) +
                           ": no trailer after the last row (the log may have been cut there)");
    }
    run = NcclRun{};
    run.file = name;
    columns = Columns{};
    trailer = false;
  };
  int line_no = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (line.size() > kMaxLine) throw InputError(name + ":" + std::to_string(line_no) + ": line too long");
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    line = strip_prefixes(line);
    std::string_view body = line;
    while (!body.empty() && (body.front() == '#' || body.front() == ' ' || body.front() == '\t'))
      body.remove_prefix(1);
    const std::vector<std::string> words = split_words(body);
    if (words.empty()) continue;
    if (is_failure(body)) {
      throw InputError(name + ":" + std::to_string(line_no) + ": the run failed: " + std::string(body));
    }
    if (words[0] == "nThread") {
      if (!run.rows.empty()) finish();  // a new run; before any row it keeps what came first (its op)
      run.line = line_no;
      run.nthreads = header_value(words, "nThread");
      run.ngpus = header_value(words, "nGpus");
      run.graph = header_value(words, "graph:") > 0;
      if (run.nccl.empty()) run.nccl = pending_nccl;
      continue;
    }
    if (body.starts_with("Collective test starting:")) {
      if (!run.rows.empty()) finish();
      if (run.line == 0) run.line = line_no;
      run.op = parse_collective(words.back());
      continue;
    }
    if (body.starts_with("nccl-tests version")) {
      for (const std::string& w : words) {
        if (w.starts_with("nccl-library=") && all_digits(w.substr(13)) && w.size() < 22)
          run.nccl = pending_nccl = nccl_version_text(std::stol(w.substr(13)));
      }
      continue;
    }
    if (body.find("NCCL version") != std::string_view::npos || body.starts_with("RCCL version")) {
      const std::string v = dotted_version(body);
      if (!v.empty()) run.nccl = pending_nccl = v;
      continue;
    }
    if (words[0] == "Rank" && words.size() >= 2 && all_digits(words[1]) && words[1].size() < 8) {
      const auto on = std::find(words.begin(), words.end(), "on");
      const std::size_t bracket = body.find(']');
      if (on != words.end() && on + 1 != words.end() && bracket != std::string_view::npos) {
        std::string device(body.substr(bracket + 1));
        device.erase(0, device.find_first_not_of(" \t"));
        device.erase(device.find_last_not_of(" \t") + 1);
        run.ranks[std::stoi(words[1])] = {*(on + 1), device};
      }
      continue;
    }
    if (is_column_header(words)) {
      if (!run.rows.empty()) finish();
      columns = read_columns(words);
      run.cputime = std::find(words.begin(), words.end(), "cputime") != words.end();
      if (run.line == 0) run.line = line_no;
      continue;
    }
    if (body.starts_with("Out of bounds values") || body.starts_with("Avg bus bandwidth") ||
        body.starts_with("Collective test concluded")) {
      trailer = trailer || !run.rows.empty();
      continue;
    }
    if (columns.known() && all_digits(words[0]) && line.front() != '#') {
      run.rows.push_back(read_row(words, columns, name, line_no));
      last_row_line = line_no;
    }
  }
  if (columns.known() && run.rows.empty() && into.runs.empty()) {
    throw InputError(name + ":" + std::to_string(line_no) +
                     ": the log ends after the column header with no result row (the run hung or failed)");
  }
  finish();
}

}  // namespace dcpsim::models::detail
