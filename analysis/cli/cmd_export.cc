// dcpsim export: convert a .pb trace (simulated or measured) to Chrome Trace Event JSON for Perfetto UI or
// chrome://tracing. The input is streamed record by record, so traces larger than memory convert too.
#include <iostream>
#include <memory>
#include <string>

#include "commands.h"
#include "dcpsim/analysis/memory_estimate.h"
#include "dcpsim/io_guard.h"
#include "dcpsim/traces/chrome_writer.h"
#include "dcpsim/traces/output_file.h"

namespace dcpsim::cli {

void add_export_command(CLI::App& app) {
  struct Options {
    std::string chrome;
    std::string input;
  };
  auto options = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("export", "Convert a trace to Chrome/Perfetto JSON");
  sub->add_option("--chrome", options->chrome, "Chrome Trace Event JSON to write (open in ui.perfetto.dev)")
      ->required();
  sub->add_option("input", options->input, "dcpsim trace (.pb) to read")->required();
  sub->callback([options] {
    IoGuard().input("input", options->input).output("--chrome", options->chrome).check();
    namespace est = analysis::memory_estimate;
    est::require_for_input("export", est::kChromeExport, est::expanded_bytes(options->input));
    traces::export_chrome(options->input, options->chrome);
    std::cout << "wrote " << options->chrome << "\n";
  });
}

}  // namespace dcpsim::cli
