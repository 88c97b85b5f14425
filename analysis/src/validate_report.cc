// The Markdown and CSV forms of a validation report.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include "dcpsim/analysis/phase_map.h"
#include "dcpsim/analysis/validate.h"

namespace dcpsim::analysis {
namespace {

std::string pct(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", 100.0 * x);
  return buf;
}

std::string us(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", s * 1e6);
  return buf;
}

std::string ns(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", s * 1e9);
  return buf;
}

// Markdown table cells must not contain a bare '|'.
std::string cell(std::string s) {
  for (std::size_t i = s.find('|'); i != std::string::npos; i = s.find('|', i + 2)) s.replace(i, 1, "\\|");
  return s;
}

void summary_table(std::ostringstream& md, const std::vector<ErrorSummary>& rows, const std::string& first,
                   bool intervals) {
  md << "| " << first
     << " | n | median \\|err\\| | p90 \\|err\\| | max \\|err\\| | p90, 0.5 µs floor | within max(3%, 0.5 "
        "µs) |"
     << (intervals ? " inside 95% interval |" : "") << "\n|---|---:|---:|---:|---:|---:|---:|"
     << (intervals ? "---:|" : "") << "\n";
  for (const ErrorSummary& s : rows) {
    md << "| " << cell(s.key) << " | " << s.count << " | " << pct(s.median) << " | " << pct(s.p90) << " | "
       << pct(s.max) << " | " << pct(s.p90_floored) << " | " << pct(s.within_tolerance) << " |";
    if (intervals) md << " " << (s.with_interval > 0 ? pct(s.inside_interval) : "n/a") << " |";
    md << "\n";
  }
}

void notes(std::ostringstream& md, const ValidationReport& r) {
  if (r.emulated) {
    md << "- Emulated traces (N logical ranks on one GPU, collectives replaced by device-local copies): only "
          "the "
          "kernel phases (attention, correction, pack, combine) are compared; communication phases, the step "
          "and "
          "per-row ready times are not measured faithfully by emulation.\n";
  }
  for (const std::string& e : r.excluded) md << "- Left out: " << e << ".\n";
  for (const std::string& w : r.warnings) md << "- Warning: " << w << ".\n";
  if (!r.has_intervals) {
    md << "- No prediction intervals: the profile has no calibration sidecar with residual statistics.\n";
  }
}

}  // namespace

std::string validation_markdown(const ValidationReport& r, const ValidateOptions& opt,
                                const std::string& command) {
  std::ostringstream md;
  std::set<std::string> files;
  for (const MeasuredSection& s : r.sections) files.insert(s.trace.string());
  md << "# dcpsim validate: profile " << r.profile << "\n\n";
  md << "Command: `" << command << "`\n\n";
  md << "Traces: ";
  for (auto it = files.begin(); it != files.end(); ++it)
    md << (it == files.begin() ? "" : ", ") << "`" << *it << "`";
  md << " (" << r.sections.size() << " scenarios, " << r.comparisons.size() << " figures compared)\n\n";
  md << "**" << (r.passed ? "PASS" : "FAIL") << "**: median |relative error| " << pct(r.median_error)
     << " (limit " << pct(opt.max_median_error) << "), p90 " << pct(r.per_figure.back().p90) << ", max "
     << pct(r.per_figure.back().max) << "; p90 with the " << opt.tolerance_absolute_s * 1e6
     << " µs floor (an error within it counts as 0) " << pct(r.per_figure.back().p90_floored) << ".\n\n";
  notes(md, r);
  md << "\n## Per figure\n\n";
  summary_table(md, r.per_figure, "figure", r.has_intervals);
  if (!r.per_source.empty()) {
    md << "\n## Kernel phases by price source\n\n"
          "`table`: every kernel of the figure was priced from a measured kernel table of the profile "
          "(interpolated between measured shapes); `analytic`: some kernel lay outside every table and was "
          "priced by the analytic model (extrapolated).\n\n";
    summary_table(md, r.per_source, "figure [source]", r.has_intervals);
  }
  if (!r.implementations.empty()) {
    md << "\n## Kernels by implementation\n\n| kernel | ran | sections | priced from |\n|---|---|---|---|\n";
    for (const ImplementationUse& u : r.implementations)
      md << "| " << u.family << " | " << u.ran << " | " << u.sections << " | " << u.priced
         << (u.warn() ? " (not its own: see the warnings)" : "") << " |\n";
  }
  md << "\n## Per scenario\n\n";
  summary_table(md, r.per_section, "scenario", r.has_intervals);

  std::vector<const Comparison*> worst;
  for (const Comparison& c : r.comparisons) worst.push_back(&c);
  std::sort(worst.begin(), worst.end(), [](const Comparison* a, const Comparison* b) {
    return std::abs(a->relative_error) > std::abs(b->relative_error);
  });
  worst.resize(std::min<std::size_t>(worst.size(), 10));
  md << "\n## Largest errors\n\n| scenario | figure | rank | row | measured µs | predicted µs | error |\n"
        "|---|---|---:|---:|---:|---:|---:|\n";
  for (const Comparison* c : worst) {
    const Observation& o = c->observation;
    md << "| " << cell(r.sections[o.section].where()) << " | " << figure_of(o) << " | "
       << (o.rank < 0 ? "all" : std::to_string(o.rank)) << " | " << (o.row < 0 ? "" : std::to_string(o.row))
       << " | " << us(o.measured_s) << " | " << us(c->predicted_s) << " | " << pct(c->relative_error)
       << " |\n";
  }
  return md.str();
}

std::string validation_csv(const ValidationReport& r) {
  std::ostringstream csv;
  csv << "trace,section,scenario,source,kind,figure,rank,row,measured_ns,predicted_ns,relative_error,"
         "within_tolerance,interval_low_ns,interval_high_ns,inside_interval,price_source\n";
  for (const Comparison& c : r.comparisons) {
    const Observation& o = c.observation;
    const MeasuredSection& s = r.sections[o.section];
    csv << '"' << s.trace.string() << "\"," << s.index << ",\"" << s.label << "\","
        << traces::to_string(s.source) << ',' << to_string(o.kind) << ',' << figure_of(o) << ',' << o.rank
        << ',' << o.row << ',' << ns(o.measured_s) << ',' << ns(c.predicted_s) << ',' << c.relative_error
        << ',' << (c.within_tolerance ? 1 : 0) << ',' << (c.interval_low_s ? ns(*c.interval_low_s) : "")
        << ',' << (c.interval_high_s ? ns(*c.interval_high_s) : "") << ','
        << (c.interval_low_s ? (c.inside_interval ? "1" : "0") : "") << ',' << c.price_source << "\n";
  }
  return csv.str();
}

}  // namespace dcpsim::analysis
