#pragma once
// "Did you mean": the closest of a few known names to what was typed, for one-line errors.
#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace dcpsim {

// Edit distance (insertions, deletions, substitutions and swaps of neighbours count 1), case-insensitive.
inline std::size_t edit_distance(std::string_view a, std::string_view b) {
  const auto lower = [](char c) { return static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c); };
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) && lower(a[i - 2]) == lower(b[j - 1]))
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

// The name closest to `typed` when it is close enough to be a typo (at most a third of its length, at least
// 1, at most 3 edits); empty otherwise.
template <typename Names>
std::string closest_name(std::string_view typed, const Names& names) {
  std::string best;
  std::size_t best_distance = std::min<std::size_t>(3, std::max<std::size_t>(1, typed.size() / 3)) + 1;
  for (const auto& n : names) {
    const std::string_view name(n);
    const std::size_t dist = edit_distance(typed, name);
    if (dist < best_distance) {
      best_distance = dist;
      best = std::string(name);
    }
  }
  return best;
}

}  // namespace dcpsim
