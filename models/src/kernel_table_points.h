#pragma once
// The fast read of a kernel table file: its points straight from the parser's events into TablePoints, the
// rest of the document (a few hundred values) as a JSON value. A table file is nearly all points (tens of
// thousands of objects of five members), and building them as JSON values first was most of a command's
// start-up: each point's object, its members and its coordinates allocated and freed again (several times
// slower still under AddressSanitizer).
//
// Only a well-formed point is read here: an object with exactly the members "at" (an array of numbers),
// "median_ns", "min_ns", "max_ns" (numbers) and "samples" (an integer from 1 to INT_MAX), each once. Anything
// else anywhere in a points array, a second "tables" or "points" array, or a syntax error, and the reader
// gives up (read() false); a "points" member repeated with another value, and a point that fails read_point's
// checks, read_table sends back (kernel_table.cc). parse_kernel_tables then reads the file the ordinary way,
// whose messages name what is wrong.
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "dcpsim/json_limits.h"
#include "dcpsim/models/kernel_table.h"

namespace dcpsim::models::detail {

class TablePointsReader {
 public:
  using Json = nlohmann::ordered_json;
  using number_integer_t = Json::number_integer_t;
  using number_unsigned_t = Json::number_unsigned_t;
  using number_float_t = Json::number_float_t;
  using string_t = Json::string_t;
  using binary_t = Json::binary_t;

  explicit TablePointsReader(const std::string& origin) : dom_(origin) {}  // origin must outlive the reader
  TablePointsReader(std::string&&) = delete;

  // Parses `text`; false when the reader gave up (then read it the ordinary way).
  bool read(std::string_view text) { return Json::sax_parse(text, this) && ok_; }
  // The document with every table's "points" left empty, and the points of tables[i] in points()[i].
  Json take_document() { return dom_.take(); }
  std::vector<std::vector<TablePoint>>& points() { return points_; }

  bool null() { return in_points() ? give_up() : scalar_done(dom_.null()); }
  bool boolean(bool v) { return in_points() ? give_up() : scalar_done(dom_.boolean(v)); }
  bool binary(binary_t& v) { return in_points() ? give_up() : scalar_done(dom_.binary(v)); }
  bool string(string_t& v) { return in_points() ? give_up() : scalar_done(dom_.string(v)); }
  bool number_integer(number_integer_t v) {
    if (in_points()) return number(static_cast<double>(v), v);
    return scalar_done(dom_.number_integer(v));
  }
  bool number_unsigned(number_unsigned_t v) {
    if (in_points()) {
      if (v > static_cast<number_unsigned_t>(std::numeric_limits<std::int64_t>::max())) return give_up();
      return number(static_cast<double>(v), static_cast<std::int64_t>(v));
    }
    return scalar_done(dom_.number_unsigned(v));
  }
  bool number_float(number_float_t v, const string_t& s) {
    if (in_points()) return number(v, std::nullopt);
    return scalar_done(dom_.number_float(v, s));
  }

  bool start_object(std::size_t n) {
    if (state_ == State::kPoints) {  // a point
      state_ = State::kPoint;
      point_ = {};
      seen_ = 0;
      return true;
    }
    if (in_points()) return give_up();
    element_start();
    frames_.push_back({false, {}});
    return dom_.start_object(n);
  }
  bool key(string_t& k) {
    if (state_ == State::kPoint) {
      field_ = field_of(k);
      if (field_ == 0 || (seen_ & field_) != 0) return give_up();  // unknown or repeated
      seen_ |= field_;
      return true;
    }
    if (in_points()) return give_up();
    frames_.back().key = k;
    return dom_.key(k);
  }
  bool end_object() {
    if (state_ == State::kPoint) {
      if (seen_ != kAllFields) return give_up();
      points_.back().push_back(std::move(point_));
      state_ = State::kPoints;
      return true;
    }
    if (in_points()) return give_up();
    frames_.pop_back();
    return dom_.end_object();
  }
  bool start_array(std::size_t n) {
    if (state_ == State::kPoint) {
      if (field_ != kAt) return give_up();
      state_ = State::kAt;
      return true;
    }
    if (in_points()) return give_up();
    element_start();
    // tables[i].points: read here. The DOM keeps an empty array in its place.
    if (frames_.size() == 3 && !frames_[2].array && frames_[2].key == "points" && frames_[1].array &&
        frames_[0].key == "tables") {
      if (table_has_points_) return give_up();
      table_has_points_ = true;
      state_ = State::kPoints;
      if (!dom_.start_array(n)) return false;
      return dom_.end_array();
    }
    if (frames_.size() == 1 && frames_[0].key == "tables") {
      if (seen_tables_) return give_up();
      seen_tables_ = true;
    }
    frames_.push_back({true, {}});
    return dom_.start_array(n);
  }
  bool end_array() {
    if (state_ == State::kAt) {
      state_ = State::kPoint;
      return true;
    }
    if (state_ == State::kPoints) {
      state_ = State::kNone;
      return true;
    }
    frames_.pop_back();
    return dom_.end_array();
  }
  template <class Exception>
  bool parse_error(std::size_t, const std::string&, const Exception&) {
    return give_up();
  }

 private:
  enum class State { kNone, kPoints, kPoint, kAt };
  static constexpr unsigned kAt = 1, kMedian = 2, kSamples = 4, kMin = 8, kMax = 16, kAllFields = 31;
  struct Frame {
    bool array = false;
    std::string key;  // objects: the member being read
  };

  static unsigned field_of(const string_t& k) {
    if (k == "at") return kAt;
    if (k == "median_ns") return kMedian;
    if (k == "samples") return kSamples;
    if (k == "min_ns") return kMin;
    if (k == "max_ns") return kMax;
    return 0;
  }
  bool in_points() const { return state_ != State::kNone; }
  bool give_up() {
    ok_ = false;
    return false;
  }
  // A value (or container) starts directly in the open container: in the "tables" array, a new table.
  void element_start() {
    if (frames_.size() == 2 && frames_[1].array && frames_[0].key == "tables") {
      points_.emplace_back();
      table_has_points_ = false;
    }
  }
  // A scalar directly in the tables array is a table of its own (read_table refuses it).
  bool scalar_done(bool dom_ok) {
    element_start();
    return dom_ok;
  }
  // A number inside a point: a coordinate of "at", or the member just named.
  bool number(double v, std::optional<std::int64_t> integer) {
    if (state_ == State::kAt) {
      point_.at.push_back(v);
      return true;
    }
    if (state_ != State::kPoint) return give_up();
    switch (field_) {
      case kMedian:
        point_.median_ns = v;
        return true;
      case kMin:
        point_.min_ns = v;
        return true;
      case kMax:
        point_.max_ns = v;
        return true;
      case kSamples:
        if (!integer) return give_up();
        if (*integer < 1 || *integer > std::numeric_limits<int>::max()) return give_up();
        point_.samples = static_cast<int>(*integer);
        return true;
      default:
        return give_up();  // "at" given a number, not an array
    }
  }

  dcpsim::detail::CheckedDomBuilder<Json> dom_;
  std::vector<Frame> frames_;  // the open containers outside points
  std::vector<std::vector<TablePoint>> points_;
  State state_ = State::kNone;
  TablePoint point_;
  unsigned seen_ = 0;
  unsigned field_ = 0;
  bool ok_ = true;
  bool seen_tables_ = false;
  bool table_has_points_ = false;
};

}  // namespace dcpsim::models::detail
