// dcpsim: the command-line entry point. Parses once, runs one subcommand, maps errors to exit codes:
// 0 success, 2 usage or input error (one line on stderr), 1 runtime failure.
#include <cstdio>
#include <exception>
#include <iostream>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "dcpsim/error.h"
#include "dcpsim/version.h"

namespace dcpsim::cli {

CLI::App* add_unavailable_command(CLI::App& app, const std::string& name, const std::string& description,
                                  const std::string& why) {
  CLI::App* sub = app.add_subcommand(name, description + " [" + why + "]");
  sub->allow_extras();
  sub->callback([name, why] { throw InputError("dcpsim " + name + ": " + why); });
  return sub;
}

}  // namespace dcpsim::cli

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
  cli::add_hw_command(app);
  cli::add_calibrate_command(app);
  cli::add_validate_command(app);
  cli::add_export_command(app);
  cli::add_merge_command(app);
  cli::add_import_command(app);
  cli::add_tables_command(app, argc, argv);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "dcpsim: " << e.what() << " (see --help)\n";
    return 2;
  } catch (const InputError& e) {
    std::cerr << "dcpsim: " << e.what() << "\n";
    return 2;
  } catch (const RuntimeError& e) {
    std::cerr << "dcpsim: error: " << e.what() << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    std::cerr << "dcpsim: error: out of memory\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "dcpsim: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
