// dcpsim merge: the exact reference merge (models/merge.h) of user-supplied per-rank partials, JSON in/out.
#include <iostream>
#include <memory>
#include <string>

#include "commands.h"
#include "dcpsim/analysis/memory_estimate.h"
#include "dcpsim/analysis/merge_io.h"
#include "dcpsim/analysis/scenario_flags.h"
#include "dcpsim/io_guard.h"
#include "dcpsim/models/merge.h"
#include "dcpsim/models/types.h"
#include "dcpsim/traces/output_file.h"

namespace dcpsim::cli {
namespace {

struct MergeFlags {
  std::string input;
  std::string out;
  std::string base = "e";
  std::string strategy = "ag-rs";
  std::string dtype = "fp32";
  std::string accumulate = "fp32";
};

void run_merge(const MergeFlags& f) {
  IoGuard().input("--input", f.input).output("--out", f.out).check();
  namespace est = analysis::memory_estimate;
  est::require_for_input("merge", est::kPartialsJson, est::expanded_bytes(f.input));
  models::MergeOptions options;
  options.base = models::parse_lse_base(f.base);
  options.strategy = models::parse_strategy(f.strategy);
  options.out_dtype = models::parse_dtype(f.dtype);
  options.accumulate = models::parse_dtype(f.accumulate);
  const std::vector<models::Partial> partials = analysis::read_partials(f.input);
  const models::MergeResult result = models::merge(partials, options);
  analysis::write_json_file(f.out, analysis::merge_result_to_json(result, options));
  std::cout << "merged " << partials.size() << " ranks x " << result.rows << " rows x " << result.heads
            << " heads x " << result.dim << " (" << f.strategy << ", base " << f.base << ", " << f.dtype
            << ") -> " << f.out << "\n";
}

}  // namespace

void add_merge_command(CLI::App& app) {
  auto flags = std::make_shared<MergeFlags>();
  CLI::App* sub = app.add_subcommand("merge", "Exact reference merge of user-supplied partials");
  sub->add_option("--input", flags->input, "partials JSON: {\"lse\": [N][B][H], \"out\": [N][B][H][D]}")
      ->required();
  sub->add_option("--out", flags->out, "merged JSON to write (temp file + rename)")->required();
  sub->add_option("--base", flags->base, "LSE base of the partials: e | 2")->capture_default_str();
  sub->add_option("--strategy", flags->strategy, analysis::strategy_help(false))->capture_default_str();
  sub->add_option("--out-dtype", flags->dtype, "output dtype: fp32 | bf16 | fp16 | fp64")
      ->capture_default_str();
  sub->add_option("--dtype", flags->dtype)->group("");  // the old spelling
  sub->add_option("--accumulate", flags->accumulate, "accumulation type: fp32 | fp64")->capture_default_str();
  sub->callback([flags] { run_merge(*flags); });
}

}  // namespace dcpsim::cli
