// Split-KV decode attention: work units in SM waves, each row's completion time in closed form per wave.
#include <algorithm>
#include <cmath>
#include <string>

#include "dcpsim/error.h"
#include "dcpsim/models/cost_kernels.h"

namespace dcpsim::models {
namespace {

void check_shape(const AttentionShape& a) {
  if (a.heads < 1 || a.kv_heads < 1 || a.heads % a.kv_heads != 0 || a.head_dim < 1 || a.qk_dim < 1) {
    throw InputError("attention shape: heads " + std::to_string(a.heads) + ", kv_heads " +
                     std::to_string(a.kv_heads) + ", head_dim " + std::to_string(a.head_dim) + ", qk_dim " +
                     std::to_string(a.qk_dim) + ": expected positive sizes with kv_heads dividing heads");
  }
}

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// HBM bytes of one work unit per KV token: its share of the KV read. Head groups that share a KV head share
// its read (the first group's read brings the tokens into L2). The unit's Q load and its partial-output write
// are L2 traffic priced by attention.cta_overhead.
double unit_kv_bytes_per_token(const HardwareProfile& p, const AttentionShape& a) {
  const double groups_per_kv_head = double(head_groups(p, a)) / a.kv_heads;
  return kv_bytes_per_token(a) / a.kv_heads / groups_per_kv_head;
}

// Bytes a non-empty row adds to the kernel besides its KV: its queries read once, its output and LSE written.
double row_io_bytes(const AttentionShape& a) {
  return a.heads *
         (a.qk_dim * double(dtype_bytes(a.kv_dtype)) + a.head_dim * double(dtype_bytes(a.out_dtype)) + 4.0);
}

int64_t units_for(std::span<const int64_t> tokens, int64_t split, int groups) {
  int64_t units = 0;
  for (int64_t n : tokens) units += ceil_div(n, split) * groups;
  return units;
}

// FlashDecoding-style split size, in whole work units: the smallest split whose units fit in one wave of the
// slots, so that no nearly empty tail wave costs a whole unit's time. When even one split per row overflows
// the slots (rows × head groups > slots), rows are not split at all and run in several full waves.
int64_t choose_split_tokens(std::span<const int64_t> tokens, int groups, int slots, int64_t unit_tokens) {
  int64_t longest = 0, nonempty = 0;
  for (int64_t n : tokens) {
    longest = std::max(longest, n);
    nonempty += n > 0;
  }
  const int64_t whole_row = ceil_div(longest, unit_tokens);  // in work units
  if (nonempty * groups >= slots) return whole_row * unit_tokens;
  int64_t lo = 1, hi = whole_row;  // units_for is non-increasing in the split; fits at hi
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (units_for(tokens, mid * unit_tokens, groups) <= slots) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo * unit_tokens;
}

}  // namespace

AttentionShape attention_shape(const Scenario& s) {
  return {s.heads,    s.kv_heads,  s.head_dim,      s.qk_dim, s.kv_heads == 1 && s.qk_dim > s.head_dim,
          s.kv_dtype, s.out_dtype, s.attention_impl};
}

std::optional<double> attention_table_time_s(const HardwareProfile& p, const AttentionShape& a,
                                             std::span<const double> at) {
  const std::string base = attention_table_key(a);
  if (!a.impl.empty()) {
    if (auto t = lookup_kernel_time_s(p.tables, TableKernel::kAttention, base + " " + a.impl, at)) return t;
    return lookup_kernel_time_s(p.tables, TableKernel::kAttention, base, at);
  }
  if (auto t = lookup_kernel_time_s(p.tables, TableKernel::kAttention, base, at)) return t;
  for (const KernelTables& file : p.tables) {
    for (const KernelTable& t : file.tables) {
      if (t.kernel != TableKernel::kAttention || t.key.size() <= base.size() + 1 ||
          t.key.compare(0, base.size() + 1, base + " ") != 0)
        continue;
      // The first implementation measured for this geometry decides, covered or not (never a mix).
      return table_time_s(t, at);
    }
  }
  return std::nullopt;
}

std::string attention_table_key(const AttentionShape& a) {
  check_shape(a);
  const std::string dims = "qk" + std::to_string(a.qk_dim) + " d" + std::to_string(a.head_dim);
  const std::string dtype(to_string(a.kv_dtype));
  if (a.shared_kv) return "mla " + dims + " " + dtype;
  return "gqa " + dims + " g" + std::to_string(a.heads / a.kv_heads) + " " + dtype;
}

double attention_table_heads(const HardwareProfile& p, const AttentionShape& a) {
  const int per_kv = head_groups(p, a) / a.kv_heads;  // work units per KV head
  if (!a.shared_kv || per_kv < 2) return double(a.heads);
  return double(a.kv_heads) * per_kv * heads_per_work_unit(p, a);
}

double attention_flops_per_head_token(const AttentionShape& a) {
  return 2.0 * (double(a.qk_dim) + double(a.head_dim));
}

double kv_bytes_per_token(const AttentionShape& a) {
  check_shape(a);
  const double per_head = a.shared_kv ? a.qk_dim : a.qk_dim + a.head_dim;
  return a.kv_heads * per_head * double(dtype_bytes(a.kv_dtype));
}

int heads_per_work_unit(const HardwareProfile& p, const AttentionShape& a) {
  check_shape(a);
  const int q_per_kv = a.heads / a.kv_heads;
  return a.shared_kv ? std::min(q_per_kv, static_cast<int>(p.attention.heads_per_cta.si())) : q_per_kv;
}

int head_groups(const HardwareProfile& p, const AttentionShape& a) {
  check_shape(a);
  const int q_per_kv = a.heads / a.kv_heads;
  return a.kv_heads * static_cast<int>(ceil_div(q_per_kv, heads_per_work_unit(p, a)));
}

std::vector<double> AttentionTiming::row_ready_s(double combine_start_s) const {
  std::vector<double> out(row_done_s.size());
  for (std::size_t b = 0; b < out.size(); ++b) {
    out[b] = row_splits[b] > 1 ? combine_start_s + combine_s : row_done_s[b];
  }
  return out;
}

namespace {

// The kernel's time (attention and split-KV combine) from the profile's tables at (heads computed, rows, mean
// tokens of the non-empty rows): every analytic time is scaled by measured / analytic, so per-row order and
// the waves' shares stay the model's while the total is the measurement.
void apply_table(const HardwareProfile& p, const AttentionShape& a, std::span<const int64_t> local_tokens,
                 AttentionTiming& t) {
  int64_t tokens = 0, nonempty = 0;
  for (int64_t n : local_tokens) {
    tokens += n;
    nonempty += n > 0;
  }
  if (nonempty == 0) return;
  const double at[] = {attention_table_heads(p, a), double(local_tokens.size()),
                       double(tokens) / double(nonempty)};
  const auto measured = attention_table_time_s(p, a, at);
  const double analytic = t.kernel_end_s + t.combine_s;
  if (!measured || !(analytic > 0)) return;
  const double scale = *measured / analytic;
  for (double& x : t.row_done_s) x *= scale;
  for (double& x : t.wave_end_s) x *= scale;
  t.kernel_end_s *= scale;
  t.combine_s *= scale;
  t.source = FigureSource::kTable;
}

}  // namespace

AttentionTiming decode_attention_time(const HardwareProfile& p, const AttentionShape& a,
                                      std::span<const int64_t> local_tokens, bool use_tables) {
  check_shape(a);
  AttentionTiming t;
  const int rows = static_cast<int>(local_tokens.size());
  const int groups = head_groups(p, a);
  const double floor = p.attention.floor.si();
  t.slots = static_cast<int>(p.gpu.sm_count.si() * p.attention.ctas_per_sm.si());
  t.row_done_s.assign(rows, floor);  // an empty row writes its −inf LSE in the prologue
  t.row_splits.assign(rows, 0);
  t.row_last_wave.assign(rows, -1);
  t.kernel_end_s = floor;

  int64_t total_tokens = 0;
  for (int64_t n : local_tokens) {
    if (n < 0) throw InputError("attention: local token count must be >= 0, got " + std::to_string(n));
    total_tokens += n;
  }
  if (total_tokens == 0) return t;

  const double kv_per_token = unit_kv_bytes_per_token(p, a);
  t.split_tokens = choose_split_tokens(local_tokens, groups, t.slots,
                                       static_cast<int64_t>(p.attention.work_unit_tokens.si()));
  // Units in launch order: row by row, split by split, head group by head group; unit i runs in wave i /
  // slots.
  std::vector<double> wave_max_bytes;  // of the wave's largest unit (its FLOPs scale with the same tokens)
  std::vector<int> wave_units;
  int64_t unit = 0;
  // `count` consecutive units of `bytes` each, a wave at a time.
  auto add_units = [&](int64_t count, double bytes) {
    while (count > 0) {
      const auto wave = static_cast<std::size_t>(unit / t.slots);
      const int64_t here = std::min(count, t.slots - unit % t.slots);
      if (wave >= wave_max_bytes.size()) {
        wave_max_bytes.push_back(0.0);
        wave_units.push_back(0);
      }
      wave_max_bytes[wave] = std::max(wave_max_bytes[wave], bytes);
      wave_units[wave] += static_cast<int>(here);
      for (int64_t i = 0; i < here; ++i) t.total_bytes += bytes;  // unit by unit: the same sum as before
      unit += here;
      count -= here;
    }
  };
  for (int b = 0; b < rows; ++b) {
    const int splits = static_cast<int>(ceil_div(local_tokens[b], t.split_tokens));
    t.row_splits[b] = splits;
    if (splits == 0) continue;
    // Every split but the last is split_tokens long.
    add_units(int64_t(splits - 1) * groups, kv_per_token * double(t.split_tokens));
    add_units(groups, kv_per_token * double(local_tokens[b] - int64_t(splits - 1) * t.split_tokens));
    t.row_last_wave[b] = static_cast<int>((unit - 1) / t.slots);
    t.total_bytes += row_io_bytes(a);
  }
  t.work_units = static_cast<int>(unit);
  t.waves = static_cast<int>(wave_max_bytes.size());
  const double flops_per_token = attention_flops_per_head_token(a) * heads_per_work_unit(p, a);
  t.total_flops = attention_flops_per_head_token(a) * a.heads * double(total_tokens);

  // The units of a wave share the kernel's bandwidth, none faster than one CTA can stream, and each gets its
  // SM's share of the tensor-core rate (split among the units resident on that SM); a wave lasts as long as
  // its largest unit's slower side.
  const double kernel_bw = p.gpu.hbm_bandwidth_measured.si() * hbm_efficiency(p, t.total_bytes);
  const double sms = p.gpu.sm_count.si();
  const double sm_rate = p.attention.tensor_rate.si() / sms;
  double end = floor;
  for (std::size_t w = 0; w < wave_max_bytes.size(); ++w) {
    const double unit_bw = std::min(kernel_bw / wave_units[w], p.attention.max_cta_bandwidth.si());
    const double per_sm = std::ceil(double(wave_units[w]) / sms);
    const double tokens = wave_max_bytes[w] / kv_per_token;
    const double memory_s = wave_max_bytes[w] / unit_bw;
    const double compute_s = tokens * flops_per_token * per_sm / sm_rate;
    end += p.attention.cta_overhead.si() + std::max(memory_s, compute_s);
    t.wave_end_s.push_back(end);
  }
  t.kernel_end_s = end;
  for (int b = 0; b < rows; ++b) {
    if (t.row_last_wave[b] >= 0) t.row_done_s[b] = t.wave_end_s[t.row_last_wave[b]];
  }

  // Combine reads every split's fp32 partial and LSE of the split rows and writes their final output once.
  for (int b = 0; b < rows; ++b) {
    if (t.row_splits[b] < 2) continue;
    t.needs_combine = true;
    t.combine_bytes += a.heads * (t.row_splits[b] * (a.head_dim * 4.0 + 4.0) +
                                  a.head_dim * double(dtype_bytes(a.out_dtype)) + 4.0);
  }
  if (t.needs_combine) t.combine_s = memory_kernel_time(p, t.combine_bytes);
  if (use_tables && !p.tables.empty()) apply_table(p, a, local_tokens, t);
  return t;
}

}  // namespace dcpsim::models
