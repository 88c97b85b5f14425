#include "dcpsim/analysis/baseline.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "dcpsim/error.h"

namespace dcpsim::analysis {
namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  const auto e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

double number(const std::string& text, const std::string& what) {
  double v = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || !std::isfinite(v))
    throw InputError("--baseline: " + what + " '" + text + "' is not a number");
  return v;
}

int integer(const std::string& text, const std::string& what, int lo, int hi) {
  const double v = number(text, what);
  if (v != std::floor(v) || v < lo || v > hi)
    throw InputError("--baseline: " + what + " '" + text + "' is not an integer in [" + std::to_string(lo) +
                     ", " + std::to_string(hi) + "]");
  return static_cast<int>(v);
}

// "12ms", "12", "12000us", "0.012s" -> seconds.
double duration(const std::string& text) {
  for (const auto& [unit, scale] : {std::pair{"ms", 1e-3}, std::pair{"us", 1e-6}, std::pair{"s", 1.0}}) {
    const std::string u(unit);
    if (text.size() > u.size() && text.ends_with(u)) {
      return number(text.substr(0, text.size() - u.size()), "tpot") * scale;
    }
  }
  return number(text, "tpot") * 1e-3;
}

// Least squares of y = a + b·x; a constant when every x is the same.
std::pair<double, double> line_fit(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = double(x.size());
  double sx = 0, sy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) sx += x[i], sy += y[i];
  const double mx = sx / n, my = sy / n;
  double sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < x.size(); ++i)
    sxx += (x[i] - mx) * (x[i] - mx), sxy += (x[i] - mx) * (y[i] - my);
  if (sxx <= 0) return {my, 0.0};
  const double b = sxy / sxx;
  return {my - b * mx, b};
}

}  // namespace

BaselinePoint parse_baseline(const std::string& text) {
  BaselinePoint p;
  p.text = text;
  bool tpot = false, tp = false, batch = false, context = false;
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos)
      throw InputError("--baseline '" + text + "': '" + item + "' is not key=value");
    const std::string key = trim(item.substr(0, eq)), value = trim(item.substr(eq + 1));
    if (key == "tpot") {
      p.tpot_s = duration(value), tpot = true;
    } else if (key == "tp") {
      p.tp = integer(value, "tp", 1, 4096), tp = true;
    } else if (key == "dcp") {
      p.dcp = integer(value, "dcp", 1, 4096);
    } else if (key == "batch") {
      p.batch = integer(value, "batch", 1, 1 << 20), batch = true;
    } else if (key == "context") {
      p.context = models::parse_token_count(value), context = true;
    } else if (key == "strategy") {
      p.strategy = models::parse_strategy(value);
    } else if (key == "spec") {
      p.spec_tokens = integer(value, "spec", 0, 16);
    } else if (key == "accept") {
      p.accept_length = number(value, "accept");
    } else if (key == "pp") {
      p.pp = integer(value, "pp", 1, 64);
    } else if (key == "trace") {
      if (value.empty()) throw InputError("--baseline '" + text + "': trace= needs a file");
      p.trace = value;
    } else {
      throw InputError("--baseline '" + text + "': unknown key '" + key +
                       "' (tpot or trace, tp, batch, context, dcp, strategy, spec, accept, pp)");
    }
  }
  if (tpot && !p.trace.empty())
    throw InputError("--baseline '" + text + "': give tpot or trace, not both (the trace measures the step)");
  if ((!tpot && p.trace.empty()) || !tp || !batch || !context)
    throw InputError("--baseline '" + text +
                     "' needs tpot (or trace), tp, batch and context (e.g. tpot=12ms,tp=8,batch=1,"
                     "context=64k)");
  if (tpot && !(p.tpot_s > 0 && p.tpot_s <= 600))
    throw InputError("--baseline '" + text + "': tpot must be > 0 and at most 10 minutes");
  if (p.dcp > p.tp) throw InputError("--baseline '" + text + "': dcp must not exceed tp");
  return p;
}

models::Scenario layout_scenario(const models::ModelPreset& model, int dcp, int tp, int batch,
                                 std::int64_t context, models::Strategy strategy, models::DType kv_dtype) {
  const models::RankGeometry g = models::rank_geometry(model, dcp, tp);
  models::Scenario s;
  s.dcp = dcp;
  s.heads = g.heads;
  s.kv_heads = g.kv_heads;
  s.head_dim = g.head_dim;
  s.qk_dim = g.qk_dim;
  s.kv_dtype = kv_dtype;
  s.strategy = dcp > 1 ? strategy : models::Strategy::kAgAr;  // N = 1: no merge, no head rule
  s.contexts = models::uniform_contexts(batch, context);
  return s;
}

BaselineFit fit_baseline(const models::ModelPreset& model, const models::HardwareProfile& profile,
                         const WholeModelFlags& flags, models::DType kv_dtype,
                         const std::vector<BaselinePoint>& points, const LayerTime& layer) {
  BaselineFit fit;
  fit.points = points;
  std::vector<double> rows;
  for (const BaselinePoint& p : points) {
    WholeModelFlags f = flags;
    f.baseline.clear();
    if (p.spec_tokens >= 0) f.spec_tokens = p.spec_tokens;
    if (p.accept_length > 0) f.accept_length = p.accept_length;
    if (f.spec_tokens == 0 && p.accept_length == 0) f.accept_length.reset();
    if (f.spec_tokens == 0) f.spec_attention = "heads";  // a point without speculative decoding
    if (p.pp > 0) f.pp = p.pp;
    const WholeModel at(model, profile, p.tp, f);
    const models::Scenario s = at.attention_scenario(
        layout_scenario(*at.model(), p.dcp, p.tp, p.batch, p.context, p.strategy, kv_dtype));
    // The simulated attention layers (and the draft's), and the pipeline's stage sends.
    const double attention = at.decode_step_s(layer(s), p.batch) - at.non_attention_s(p.batch);
    const double rest = at.modelled_non_attention_s(p.batch);
    double step = p.tpot_s * at.accept_length();
    double measured_layers = attention;  // what the remainder is measured beyond
    std::optional<TraceSteps> steps;
    if (!p.trace.empty()) {
      // Attention occurrences per step: every layer, and the MTP draft's layer once per draft token.
      const bool mtp = at.spec_tokens() > 0 && at.model()->config.num_nextn_predict_layers > 0;
      steps = baseline_trace_steps(p.trace, s, at.layers() + (mtp ? at.spec_tokens() : 0));
      step = steps->period_s;
      measured_layers = steps->attention_s + steps->merge_s + at.stage_sends_s(p.batch);
    }
    fit.measured_step_s.push_back(step);
    fit.attention_s.push_back(attention);
    fit.modelled_rest_s.push_back(rest);
    fit.remainder_s.push_back(step - measured_layers - rest);
    fit.traces.push_back(steps);
    rows.push_back(p.batch);
    if (p.trace.empty() && step - attention <= 0) {
      char b[256];
      std::snprintf(b, sizeof b,
                    "--baseline '%s': the step (%.3f ms) is shorter than dcpsim's attention layers "
                    "alone (%.3f ms); check the point (tpot per request, batch, context, tp)",
                    p.text.c_str(), step * 1e3, attention * 1e3);
      throw InputError(b);
    }
  }
  std::tie(fit.fixed_s, fit.per_row_s) = line_fit(rows, fit.remainder_s);
  char b[320];
  const bool slope = std::any_of(rows.begin(), rows.end(), [&](double r) { return r != rows.front(); });
  std::snprintf(
      b, sizeof b, "%zu baseline point%s (%s): remainder beyond the modelled ops %+.1f us%s", points.size(),
      points.size() == 1 ? "" : "s",
      std::any_of(points.begin(), points.end(), [](const BaselinePoint& p) { return !p.trace.empty(); })
          ? "measured: TPOT or an engine trace"
          : "measured TPOT",
      fit.fixed_s * 1e6, slope ? "" : " per step");
  fit.basis = b;
  if (slope) {
    std::snprintf(b, sizeof b, " %+.2f us per row per step (fitted)", fit.per_row_s * 1e6);
    fit.basis += b;
  }
  for (std::size_t i = 0; i < fit.traces.size(); ++i) {
    if (!fit.traces[i]) continue;
    const TraceSteps& t = *fit.traces[i];
    char tb[1024];
    std::snprintf(tb, sizeof tb,
                  "; trace (measured): %s; dcpsim's attention layers there: %.3f ms simulated against %.3f "
                  "measured (each layout's attention is simulated, this difference is not carried)",
                  t.text().c_str(), fit.attention_s[i] * 1e3, (t.attention_s + t.merge_s) * 1e3);
    fit.basis += tb;
  }
  return fit;
}

void guard_baseline_traces(IoGuard& io, const WholeModelFlags& flags) {
  for (const std::string& text : flags.baseline) {
    std::istringstream in(text);
    std::string item;
    while (std::getline(in, item, ',')) {
      const auto eq = item.find('=');
      if (eq != std::string::npos && trim(item.substr(0, eq)) == "trace")
        io.input("--baseline trace", trim(item.substr(eq + 1)));
    }
  }
}

BaselineFit anchor(WholeModel& whole, const WholeModelFlags& flags, models::DType kv_dtype,
                   const LayerTime& layer) {
  if (flags.baseline.empty()) return {};
  if (!whole.model()) throw InputError("--baseline needs --model (the model the baseline ran)");
  if (flags.non_attention_us || flags.non_attention_us_per_token)
    throw InputError("--baseline and --non-attention-us both set the non-attention time: give one");
  std::vector<BaselinePoint> points;
  for (const std::string& t : flags.baseline) points.push_back(parse_baseline(t));
  WholeModelFlags f = flags;
  if (!flags.weight_dtype.empty()) f.weight_dtype = flags.weight_dtype;
  const BaselineFit fit = fit_baseline(*whole.model(), whole.profile(), f, kv_dtype, points, layer);
  whole.set_baseline(fit);
  return fit;
}

}  // namespace dcpsim::analysis
