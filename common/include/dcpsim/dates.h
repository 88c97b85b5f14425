#pragma once
// Dates users give for a provenance (--date): YYYY-MM-DD naming a day the calendar has.
#include <cctype>
#include <ctime>
#include <string>
#include <string_view>

namespace dcpsim {

inline bool is_calendar_date(std::string_view d) {
  if (d.size() != 10 || d[4] != '-' || d[7] != '-') return false;
  for (int i : {0, 1, 2, 3, 5, 6, 8, 9})
    if (!std::isdigit(static_cast<unsigned char>(d[i]))) return false;
  const auto at = [&](int i, int n) {
    int v = 0;
    for (int k = i; k < i + n; ++k) v = v * 10 + (d[k] - '0');
    return v;
  };
  const int y = at(0, 4), m = at(5, 2), day = at(8, 2);
  static constexpr int kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return m >= 1 && m <= 12 && day >= 1 && day <= (m == 2 && !leap ? 28 : kDays[m - 1]);
}

// Today's date in UTC as YYYY-MM-DD: the default --date of everything that records a provenance.
inline std::string today_utc() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

}  // namespace dcpsim
