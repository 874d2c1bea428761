// The scenario loader's YAML reading: a node with its dotted key path, whose accessors check the
// shape and range of a value and fail with the file, line and key (docs/SCENARIO.md's errors).
// Internal to scenario/ (it exposes yaml-cpp, which only this module may include): the loader
// and the cluster, model and training readers share it.
#pragma once

#include "hw/units.h"
#include "scenario/calibration.h"
#include "scenario/loader.h"
#include "scenario/scenario.h"
#include "scenario/value_rules.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace overlapsim::scenario::yaml {

// Where each value came from, so that errors can say "file:line" or "--set key".
struct Context {
  std::string file;
  std::set<std::string> overridden; // dotted paths replaced by --set
};

// The documented range of each kind of quantity: past it a value is a typo, or makes the
// simulation overflow (a bandwidth of 1e-300 B/s never delivers; 1e308 h is no latency).
struct QuantityRange {
  double min;
  double max;
  std::string (*format)(double);
};

inline QuantityRange quantity_range(double (*parse)(std::string_view)) {
  if (parse == hw::parse_bandwidth_Bps)
    return {1e3, 1e15, hw::format_bandwidth}; // 1 kB/s to 1 PB/s
  if (parse == hw::parse_time_s)
    return {0, 3600, hw::format_time}; // up to an hour
  if (parse == hw::parse_size_bytes)
    return {0, 1e15, hw::format_bytes}; // up to 1 PB
  return {0, 1e18, hw::format_count};
}

// A node together with its dotted key path; every accessor checks the YAML shape and reports
// the file, the line and the key on failure.
class Entry {
public:
  Entry(const Context& ctx, YAML::Node node, std::string path)
      : ctx_(&ctx), node_(std::move(node)), path_(std::move(path)) {}

  const std::string& path() const { return path_; }
  const YAML::Node& node() const { return node_; }

  std::string where() const {
    for (const auto& p : ctx_->overridden)
      if (path_ == p || path_.starts_with(p + ".") ||
          (node_.Mark().line < 0 && p.starts_with(path_ + "."))) // a map made by --set a.b=...
        return fmt::format("--set {}", p);
    if (node_.Mark().line >= 0)
      return fmt::format("{}:{}", ctx_->file, node_.Mark().line + 1);
    return ctx_->file;
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw ScenarioError(fmt::format("{}: key '{}': {}", where(), path_, what));
  }

  bool is_map() const { return node_.IsMap(); }
  bool is_scalar() const { return node_.IsScalar(); }
  bool is_sequence() const { return node_.IsSequence(); }

  // Rejects keys outside `allowed` (SCENARIO.md: unknown keys are errors, not ignored).
  void expect_map(std::initializer_list<std::string_view> allowed) const {
    expect_map(std::vector<std::string_view>(allowed));
  }
  void expect_map(const std::vector<std::string_view>& allowed) const {
    if (!node_.IsMap())
      fail("expected a map");
    for (const auto& kv : node_) {
      if (!kv.first.IsScalar())
        Entry(*ctx_, kv.first, path_).fail("a key must be a plain name, not a map or a list");
      const auto key = kv.first.Scalar();
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        std::string list;
        for (auto a : allowed)
          list += fmt::format("{}{}", list.empty() ? "" : ", ", a);
        Entry(*ctx_, kv.first, join(key))
            .fail(fmt::format("unknown key; expected one of: {}", list));
      }
    }
  }

  bool has(const std::string& key) const { return node_.IsMap() && node_[key].IsDefined(); }

  Entry child(const std::string& key) const {
    if (!has(key))
      fail(fmt::format("missing required key '{}'", key));
    return Entry(*ctx_, node_[key], join(key));
  }

  std::vector<Entry> items() const {
    if (!node_.IsSequence())
      fail("expected a list");
    std::vector<Entry> out;
    for (std::size_t i = 0; i < node_.size(); ++i)
      out.emplace_back(*ctx_, node_[i], join(std::to_string(i)));
    return out;
  }

  std::string text() const {
    if (!node_.IsScalar())
      fail("expected a single value, not a map or a list");
    return node_.Scalar();
  }

  // A quantity parsed by one of hw/units.h's parsers; errors carry the parser's explanation. The
  // value must lie in the kind's documented range (docs/SCENARIO.md, "Ranges"), or below `max`.
  double quantity(double (*parse)(std::string_view), bool allow_zero = false,
                  double max = std::numeric_limits<double>::infinity()) const {
    double v = 0;
    try {
      v = parse(text());
    } catch (const hw::UnitError& e) {
      fail(e.what());
    }
    if (!allow_zero && v <= 0)
      fail(fmt::format("expected a value greater than 0, got '{}'", text()));
    const QuantityRange range = quantity_range(parse);
    max = std::min(max, range.max);
    if ((v > 0 && v < range.min) || v > max)
      fail(fmt::format("'{}' is outside the range [{}, {}]", text(), range.format(range.min),
                       range.format(max)));
    return v;
  }

  // A count that must be whole (parameters, vocab, widths): "1.5" and "2.5k" are errors
  // (issue 26.12: d_ff: 1.5 was accepted).
  double whole_count(bool allow_zero = false,
                     double max = std::numeric_limits<double>::infinity()) const {
    const double v = quantity(hw::parse_count, allow_zero, max);
    if (v != std::floor(v))
      fail(fmt::format("expected a whole number, got '{}' ({})", text(), v));
    return v;
  }

  double number(double min, double max) const { return checked(number_value(text(), min, max)); }

  long long integer(long long min, long long max) const {
    return checked(integer_value(text(), min, max));
  }

  // A file path: relative paths resolve against the scenario file's directory, or against the
  // working directory when the value came from --set.
  std::string path_value() const {
    const std::filesystem::path p(text());
    if (p.is_absolute() || where().starts_with("--set"))
      return p.string();
    return (std::filesystem::path(ctx_->file).parent_path() / p).lexically_normal().string();
  }

  // Reads a calibration profile, reporting its problems at this key.
  Calibration calibration() const {
    try {
      return read_calibration(path_value());
    } catch (const std::runtime_error& e) {
      fail(e.what());
    }
  }

  bool boolean() const { return checked(boolean_value(text())); }

  template <typename E>
  E choice(std::initializer_list<std::pair<std::string_view, E>> options) const {
    const std::string s = text();
    std::string list;
    for (const auto& [name, value] : options) {
      if (s == name)
        return value;
      list += fmt::format("{}{}", list.empty() ? "" : ", ", name);
    }
    fail(fmt::format("expected one of {}, got '{}'", list, s));
  }

private:
  template <typename T> T checked(Checked<T> value) const {
    if (auto* why = std::get_if<std::string>(&value))
      fail(*why);
    return std::get<T>(value);
  }

  std::string join(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

  const Context* ctx_;
  YAML::Node node_;
  std::string path_;
};

} // namespace overlapsim::scenario::yaml
