#pragma once
// PNG plots of dcpsim's CSV outputs, drawn by scripts/plot.py with matplotlib:
//   plot_csv("scan", "scan.csv", "scan.png")       at one slice: step vs DCP size, a heatmap where strategies
//                                                  compare, Pareto front (options {"--at", "batch=64"})
//   plot_csv("replay", "steps.csv", "steps.png")   merge latency over time per strategy
//   plot_csv("validate", "report.csv", "v.png")    predicted vs measured with the tolerance band
// The script is found at $DCPSIM_PLOT_SCRIPT, else <executable dir>/../share/dcpsim/plot.py (installed), else
// in the source tree this dcpsim was built from. The interpreter is the first of $DCPSIM_PYTHON, python3 on
// PATH and /usr/bin/python3 that can import matplotlib.
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dcpsim::analysis {

// Draws `csv` into `png` (written to a temporary file and renamed). Throws InputError for an unknown kind or
// a missing CSV, RuntimeError when no python3 with matplotlib is found (saying how to install it) or the
// script fails.
// `options` go to the script after the paths (scan: "--at", "batch=64,context=128k").
void plot_csv(std::string_view kind, const std::filesystem::path& csv, const std::filesystem::path& png,
              const std::vector<std::string>& options = {});

// Writes `files` and draws `plot_csv_text` (a CSV of `kind`) into `png` so that they appear together or not
// at all: the plot is drawn into a temporary file first and renamed last. With `png` empty, only the files.
void write_with_plot(std::string_view kind,
                     const std::vector<std::pair<std::filesystem::path, std::string>>& files,
                     const std::string& plot_csv_text, const std::filesystem::path& png,
                     const std::vector<std::string>& options = {});

// Checks a scan plot's slice, "column=value,..." (`--at`), before any work: every column one of the slice
// columns (profile, model, tp, heads, head-dim, qk-dim, kv-heads, batch, context, launch, kv-dtype,
// out-dtype, interleave; '-' or '_'), every value non-empty, no column twice. InputError naming the item
// otherwise. Whether the CSV has a row with those values is known only once it is written (plot.py says
// then).
void check_scan_slice(const std::string& at);

// The script plot_csv runs; RuntimeError listing the places looked at when it is nowhere.
std::filesystem::path plot_script();

// A python3 that imports matplotlib; RuntimeError naming the interpreters tried and the package to install.
std::string python_with_matplotlib();

}  // namespace dcpsim::analysis
