// dcpsim: the command-line entry point. Parses once, runs one subcommand, maps errors to exit codes:
// 0 success, 2 usage or input error (one line on stderr), 1 runtime failure.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "dcpsim/error.h"
#include "dcpsim/interrupt.h"
#include "dcpsim/memory_budget.h"
#include "dcpsim/suggest.h"
#include "dcpsim/traces/trace_reader.h"
#include "dcpsim/version.h"

namespace dcpsim::cli {

CLI::App* add_unavailable_command(CLI::App& app, const std::string& name, const std::string& description,
                                  const std::string& why) {
  CLI::App* sub = app.add_subcommand(name, description + " [" + why + "]");
  sub->allow_extras();
  sub->callback([name, why] { throw InputError("dcpsim " + name + ": " + why); });
  return sub;
}

int default_jobs() {
  const unsigned cores = std::thread::hardware_concurrency();
  return static_cast<int>(std::clamp(cores == 0 ? 1u : cores, 1u, 16u));
}

namespace {

// NaN is never a valid value of a numeric flag, and CLI11 parses "nan" as a number: refuse any option
// value spelled as a NaN ("--x nan", "--x=NaN", "--x -nan").
void reject_nan_values(int argc, char** argv) {
  const auto is_nan_text = [](std::string v) {
    if (!v.empty() && (v[0] == '+' || v[0] == '-')) v.erase(0, 1);
    for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return v == "nan" || (v.rfind("nan(", 0) == 0 && v.back() == ')');
  };
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0) continue;
    const auto eq = arg.find('=');
    const std::string flag = arg.substr(0, eq);
    const std::string value =
        eq != std::string::npos ? arg.substr(eq + 1) : (i + 1 < argc ? argv[i + 1] : "");
    if (is_nan_text(value)) throw InputError(flag + " '" + value + "' is NaN; a number is needed");
  }
}

// Options every subcommand takes (the root app's, reached through fallthrough): the cap on what one input may
// decompress to, and the memory report.
struct GlobalOptions {
  double max_input_gb = 0;  // 0: the default (memory::max_input_bytes)
  bool memory_report = false;
};

void add_global_options(CLI::App& app, GlobalOptions& g) {
  app.add_option(
         "--max-input-gb", g.max_input_gb,
         "largest size any compressed input may expand to, in GB (default: an eighth of this machine's "
         "memory, at most 2 GiB)")
      ->check(CLI::Range(1e-6, 1e6));
  app.add_flag("--memory-report", g.memory_report,
               "print the memory estimates and the measured peak (VmHWM) on stderr at the end");
}

void apply_global_options(const GlobalOptions& g) {
  if (g.max_input_gb > 0) memory::set_max_input_bytes(static_cast<std::int64_t>(g.max_input_gb * 1e9));
}

// "did you mean" for a flag the command does not have: the subcommand named on the line (nested: hw run),
// then each "--name" it does not know, against its options. Empty when every flag is known.
std::string unknown_flag_hint(CLI::App& app, int argc, char** argv) {
  CLI::App* cmd = &app;
  int i = 1;
  for (; i < argc; ++i) {
    CLI::App* sub = nullptr;
    try {
      sub = cmd->get_subcommand(argv[i]);
    } catch (const CLI::OptionNotFound&) {
      break;
    }
    cmd = sub;
  }
  if (cmd == &app && i < argc && argv[i][0] != '-') {
    std::vector<std::string> commands;
    for (const CLI::App* sub : app.get_subcommands({})) commands.push_back(sub->get_name());
    const std::string guess = closest_name(argv[i], commands);
    return "unknown command '" + std::string(argv[i]) + "'" +
           (guess.empty() ? "" : " (did you mean " + guess + "?)");
  }
  // The command's own flags and those of every command above it (the root's global flags fall through).
  std::vector<std::string> known;
  for (const CLI::App* c = cmd; c != nullptr; c = c->get_parent()) {
    for (const CLI::Option* o : c->get_options()) {
      for (const std::string& n : o->get_lnames()) known.push_back("--" + n);
    }
  }
  for (int k = i; k < argc; ++k) {
    std::string arg = argv[k];
    if (arg.rfind("--", 0) != 0 || arg == "--") continue;
    arg = arg.substr(0, arg.find('='));
    if (std::find(known.begin(), known.end(), arg) != known.end()) continue;
    const std::string guess = closest_name(arg, known);
    return "unknown flag " + arg + " for '" + cmd->get_name() + "'" +
           (guess.empty() ? "" : " (did you mean " + guess + "?)");
  }
  return {};
}

// Leaves without running static destructors and atexit handlers: after a failed simulation SimGrid's engine
// still holds the dead scenario's actors, and its teardown would crash after dcpsim's one-line error. Every
// output has been discarded by then (the writers clean up as the exception unwinds).
[[noreturn]] void leave(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(code);
}

}  // namespace

}  // namespace dcpsim::cli

namespace {

// Every error is one line: a message with embedded newlines (a library's multi-line text) is joined.
std::string one_line(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace dcpsim;
  CLI::App app{"dcpsim — Decode Context Parallel attention: exact LSE merge, SimGrid model, GPU runner",
               "dcpsim"};
  app.set_version_flag("--version", std::string(kVersion) + " (" + kGitSha + ")");
  app.require_subcommand(1);
  app.fallthrough();

  cli::add_profiles_command(app);
  cli::add_simulate_command(app);
  cli::add_scan_command(app);
  cli::add_replay_command(app);
  cli::add_plan_command(app);
  cli::add_hw_command(app, argc, argv);
  cli::add_calibrate_command(app);
  cli::add_validate_command(app);
  cli::add_export_command(app);
  cli::add_merge_command(app);
  cli::add_import_command(app);
  cli::add_collectives_command(app);
  cli::add_tables_command(app, argc, argv);
  cli::GlobalOptions global;
  cli::add_global_options(app, global);
  // Applied before any subcommand's callback runs (the root's pre-callback precedes them).
  app.parse_complete_callback([&global] { cli::apply_global_options(global); });

  interrupt::install("dcpsim");
  traces::route_protobuf_logging();
  try {
    cli::reject_nan_values(argc, argv);
    app.parse(argc, argv);
    if (global.memory_report) std::cerr << memory::report_line() << "\n";
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    const std::string hint = cli::unknown_flag_hint(app, argc, argv);
    std::cerr << "dcpsim: " << (hint.empty() ? one_line(e.what()) : hint) << " (see --help)\n";
    cli::leave(2);
  } catch (const InputError& e) {
    std::cerr << "dcpsim: " << one_line(e.what()) << "\n";
    cli::leave(2);
  } catch (const RuntimeError& e) {
    std::cerr << "dcpsim: error: " << one_line(e.what()) << "\n";
    cli::leave(1);
  } catch (const std::bad_alloc&) {
    std::cerr << "dcpsim: error: out of memory\n";
    cli::leave(1);
  } catch (const nlohmann::json::exception& e) {
    // A JSON document of the wrong shape that a reader did not check field by field.
    std::cerr << "dcpsim: " << one_line(e.what()) << "\n";
    cli::leave(2);
  } catch (const std::exception& e) {
    std::cerr << "dcpsim: error: " << one_line(e.what()) << "\n";
    cli::leave(1);
  }
  return 0;
}
