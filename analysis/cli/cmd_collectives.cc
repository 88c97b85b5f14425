// dcpsim collectives: what the model predicts for NCCL collectives, in nccl-tests' words, and how that
// compares with a measured nccl-tests run (--against).
#include <charconv>
#include <cmath>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "dcpsim/analysis/collectives.h"
#include "dcpsim/analysis/io_inputs.h"
#include "dcpsim/analysis/scenario_flags.h"
#include "dcpsim/error.h"
#include "dcpsim/io_guard.h"
#include "dcpsim/models/nccl_tests.h"
#include "dcpsim/text_file.h"
#include "dcpsim/traces/output_file.h"

namespace dcpsim::cli {
namespace {

struct CollectivesArgs {
  std::string profile = "h200-sxm";
  std::string op;  // empty: all-gather, or with --against every op measured
  std::string gpus = "2,4,8";
  std::string sizes = "512..512m:x2";
  std::string dtype = "half";
  bool in_step = false;
  std::string launch = "graph";
  std::string algo, proto;
  std::string csv;
  std::vector<std::string> against;
  bool per_point = false;
  std::string extrapolate = "anchored";
};

// "512", "4k", "1m", "2g" (k = 1024, as nccl-tests' -b/-e) -> bytes.
double parse_size(const std::string& text) {
  if (text.empty()) throw InputError("--sizes: an empty size");
  double mult = 1;
  std::string digits = text;
  switch (std::tolower(static_cast<unsigned char>(text.back()))) {
    case 'k':
      mult = 1024;
      break;
    case 'm':
      mult = 1024.0 * 1024;
      break;
    case 'g':
      mult = 1024.0 * 1024 * 1024;
      break;
    default:
      mult = 1;
  }
  if (mult != 1) digits.pop_back();
  if (digits.empty() || digits.size() > 12 || digits.find_first_not_of("0123456789") != std::string::npos)
    throw InputError("--sizes: '" + text + "' is not a size (bytes, or with k, m, g = 1024, 1024^2, 1024^3)");
  const double v = std::stod(digits) * mult;
  if (v < 1 || v > 64.0 * (1ull << 30)) throw InputError("--sizes: '" + text + "' is outside 1 B - 64 GiB");
  return v;
}

// "512,4k", "512..512m:x2" (doubling, as nccl-tests -f 2), "1m..8m:1m" (a step) -> sizes.
std::vector<double> parse_sizes(const std::string& value) {
  std::vector<double> out;
  for (const std::string& item : analysis::split_list(value, "--sizes")) {
    const std::size_t dots = item.find("..");
    if (dots == std::string::npos) {
      out.push_back(parse_size(item));
      continue;
    }
    const std::size_t colon = item.find(':', dots);
    const double lo = parse_size(item.substr(0, dots));
    const double hi =
        parse_size(item.substr(dots + 2, colon == std::string::npos ? std::string::npos : colon - dots - 2));
    if (hi < lo) throw InputError("--sizes '" + item + "': the range runs backwards");
    const std::string step = colon == std::string::npos ? "x2" : item.substr(colon + 1);
    const bool factor = !step.empty() && step[0] == 'x';
    double s = 0;
    if (factor) {
      const std::string f = step.substr(1);
      const auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), s);
      if (ec != std::errc() || end != f.data() + f.size() || !std::isfinite(s))
        throw InputError("--sizes '" + item + "': the factor '" + f + "' is not a number");
    } else {
      s = parse_size(step);
    }
    if (factor ? !(s > 1) : !(s > 0)) throw InputError("--sizes '" + item + "': the step must grow the size");
    for (double v = lo; v <= hi * (1 + 1e-12); v = factor ? v * s : v + s) {
      out.push_back(std::round(v));
      if (out.size() > 10000) throw InputError("--sizes: more than 10000 sizes");
    }
  }
  return out;
}

std::vector<int> parse_gpus(const std::string& value) {
  std::vector<int> out;
  for (const std::string& g : analysis::expand_list(value, "gpus"))
    out.push_back(analysis::parse_list_int(g, "gpus", 1, 1 << 20));
  return out;
}

void run(const CollectivesArgs& a) {
  IoGuard io;
  analysis::guard_profile(io, "--profile", a.profile);
  for (const std::string& f : a.against) io.input("--against", existing_or_gz(f).string());  // X or X.gz
  io.output("--csv", a.csv).check();
  // The user's measurement first: a bad one is refused before the profile's tables are read.
  const models::CommTables measured =
      a.against.empty() ? models::CommTables{} : analysis::load_measured_comm(a.against);
  const models::HardwareProfile profile = models::load_profile(a.profile);
  analysis::CollectivesRequest req;
  if (a.op.empty()) {
    req.ops = {models::Collective::kAllGather};
  } else if (a.op != "all") {
    for (const std::string& o : analysis::split_list(a.op, "--op"))
      req.ops.push_back(models::parse_collective(o));
  } else {
    req.ops.assign(std::begin(models::kAllCollectives), std::end(models::kAllCollectives));
  }
  req.gpus = parse_gpus(a.gpus);
  req.sizes = parse_sizes(a.sizes);
  analysis::dtype_bytes(a.dtype);  // checks the name
  req.call.dtype = a.dtype;
  req.call.in_step = a.in_step;
  req.call.launch = models::parse_launch_mode(a.launch);
  if (a.extrapolate != "anchored" && a.extrapolate != "model")
    throw InputError("--extrapolate '" + a.extrapolate + "': anchored or model");
  req.call.anchor_to_tables = a.extrapolate == "anchored";
  if (!a.algo.empty()) req.forced.algorithm = models::parse_algorithm(a.algo);
  if (!a.proto.empty()) req.forced.protocol = models::parse_protocol(a.proto);

  if (!a.against.empty()) {
    if (a.op == "all" || a.op.empty()) req.ops.clear();
    const std::string gpus_given = a.gpus;
    req.gpus.clear();
    if (gpus_given != "2,4,8") req.gpus = parse_gpus(gpus_given);
    const auto cmp = analysis::compare_collectives(profile, measured, req);
    std::cout << "# dcpsim collectives --profile " << profile.name << " against "
              << measured.provenance.device
              << (measured.provenance.nccl.empty() ? "" : " (NCCL " + measured.provenance.nccl + ")") << ", "
              << (a.in_step ? "in a step" : "nccl-tests steady state") << ", out-of-place\n"
              << analysis::comparison_text(cmp, a.per_point);
    return;
  }
  const std::vector<analysis::CollectiveRow> rows = analysis::predict_collectives(profile, req);
  std::string heading =
      "# dcpsim collectives: " + profile.name + ", " + a.dtype + ", " +
      (a.in_step ? "one call inside a decode step (" + a.launch + "), after a kernel"
                 : "nccl-tests steady state (back-to-back out-of-place calls)") +
      "\n# size: nccl-tests' (all-gather: the whole receive buffer; reduce-scatter: the whole send "
      "buffer; all-to-all, send-recv: a rank's send buffer); busbw with nccl-tests' factors\n";
  if (!a.csv.empty()) {
    traces::write_file_atomically(a.csv, analysis::collectives_csv(rows));
    heading += "# wrote " + a.csv + "\n";
  }
  std::cout << analysis::collectives_text(rows, heading);
}

}  // namespace

void add_collectives_command(CLI::App& app) {
  auto a = std::make_shared<CollectivesArgs>();
  CLI::App* cmd =
      app.add_subcommand("collectives",
                         "The model's NCCL collectives in nccl-tests' words (size, time, algbw, busbw), or "
                         "compared with a measured nccl-tests run");
  cmd->add_option("--profile", a->profile, "built-in profile or profile JSON (default h200-sxm)");
  CLI::Option* op =
      cmd->add_option("--op", a->op,
                      "all-gather, reduce-scatter, all-reduce, all-to-all, send-recv; a comma list, or all "
                      "(default all-gather; with --against every op it measured)");
  cmd->add_option("--gpus", a->gpus,
                  "group sizes: a list or range, e.g. 2,4,8 or 2..72 or 2..64:x2 (default 2,4,8)");
  cmd->add_option("--sizes", a->sizes,
                  "nccl-tests sizes: a list or range with k/m/g (1024-based) suffixes, e.g. 512,1k,1m or "
                  "512..512m:x2 (default)");
  cmd->add_option("--dtype", a->dtype, "element type, as nccl-tests -d names it (default half)");
  cmd->add_flag("--in-step", a->in_step,
                "price one call as a decode step issues it (after a kernel, no back-to-back pipelining) "
                "instead of nccl-tests' steady state");
  CLI::Option* launch = cmd->add_option("--launch", a->launch, "with --in-step: graph (default) or eager");
  cmd->add_option("--algo", a->algo, "force NCCL's algorithm (ring, tree, nvls, p2p), like NCCL_ALGO");
  cmd->add_option("--proto", a->proto, "force NCCL's protocol (ll, ll128, simple), like NCCL_PROTO");
  cmd->add_option("--csv", a->csv,
                  "also write CSV: op,gpus,size_bytes,time_us,algbw_gbs,busbw_gbs,algorithm,protocol,source,"
                  "extrapolated,in_step_us");
  cmd->add_option("--against", a->against,
                  "nccl-tests output (text, -J JSON, CSV) or a communication table: compare the model with "
                  "every measured out-of-place point (of --dtype when the run has it)")
      ->expected(1, -1);
  cmd->add_flag("--per-point", a->per_point, "with --against: print every point, not only the summary");
  cmd->add_option(
      "--extrapolate", a->extrapolate,
      "outside the measured tables: anchored (default: NCCL's model scaled to the nearest measured "
      "point of the same layout) or model (NCCL's model alone); both are marked extrapolated");
  cmd->footer(
      "Sizes follow nccl-tests: all-gather's is the whole receive buffer (N x each rank's shard), "
      "reduce-scatter's the whole send buffer, all-to-all's a rank's send buffer. Times come from the "
      "profile's measured communication tables where they cover the op, group and size (exact at measured "
      "points), else from NCCL's tuning model (marked 'model (extrapolated)').\n"
      "Compare the model with your own run:  dcpsim collectives --profile h100-sxm --against all_gather.log\n"
      "Make it a table the profile prices from:  dcpsim import --nccl-tests *.log --out my-nccl.json  and "
      "list "
      "it under \"comm_tables\" (models/profiles/README.md); dcpsim calibrate --comm-tables my-nccl.json "
      "fits "
      "the NCCL numbers outside it.");
  cmd->callback([a, op, launch] {
    if (op->count() > 0 && a->op.empty()) throw InputError("--op: an empty list (all-gather, ..., or all)");
    if (launch->count() > 0 && !a->in_step)
      throw InputError("--launch prices a call inside a step: add --in-step");
    if (a->per_point && a->against.empty())
      throw InputError("--per-point lists the points of --against: add it");
    run(*a);
  });
}

}  // namespace dcpsim::cli
