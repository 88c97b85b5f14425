#pragma once
// Each dcpsim subcommand lives in its own file (cmd_<name>.cc) and registers itself on the root app here.
// A command's callback does the work and throws dcpsim::InputError (exit 2) or dcpsim::RuntimeError (exit 1);
// main() alone maps exceptions to exit codes.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace dcpsim::cli {

void add_profiles_command(CLI::App& app);                            // cmd_profiles.cc
void add_simulate_command(CLI::App& app);                            // cmd_simulate.cc
void add_scan_command(CLI::App& app);                                // cmd_scan.cc
void add_replay_command(CLI::App& app);                              // cmd_replay.cc
void add_plan_command(CLI::App& app);                                // cmd_plan.cc
void add_hw_command(CLI::App& app, int argc, char** argv);           // cmd_hw.cc
void add_hw_bench(CLI::App& hw_cmd);                                 // cmd_hw_bench.cc: `hw bench`
void add_hw_sweep_command(CLI::App& hw_cmd, int argc, char** argv);  // cmd_hw_sweep.cc
// cmd_hw_calibrate.cc: `hw calibrate`
void add_hw_calibrate_command(CLI::App& hw_cmd, int argc, char** argv);
void add_calibrate_command(CLI::App& app);  // cmd_calibrate.cc
void add_validate_command(CLI::App& app);   // cmd_validate.cc
void add_export_command(CLI::App& app);     // cmd_export.cc
void add_merge_command(CLI::App& app);      // cmd_merge.cc
void add_import_command(CLI::App& app);
void add_collectives_command(CLI::App& app);                    // cmd_collectives.cc
void add_tables_command(CLI::App& app, int argc, char** argv);  // cmd_tables.cc

// One message for every hw command on a machine without a usable GPU (RuntimeError); call it after the
// arguments are checked and before any device is touched.
void require_gpu();  // cmd_hw.cc

// "65536", "64k", "256m", "1g" (k = 1024) -> bytes in [1, 2^40]; InputError naming the flag otherwise
// (cmd_hw_bench.cc).
std::int64_t parse_byte_count(const std::string& text, const std::string& flag);

// Worker processes by default for scan and replay: the machine's cores (at most 16).
int default_jobs();

// Registers a subcommand that exists in the CLI contract but is not built yet (or not in this build, e.g.
// simulate without SimGrid): running it prints one line naming why and exits 2.
CLI::App* add_unavailable_command(CLI::App& app, const std::string& name, const std::string& description,
                                  const std::string& why);

}  // namespace dcpsim::cli
