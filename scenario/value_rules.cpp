#include "scenario/value_rules.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

namespace overlapsim::scenario {

Checked<bool> boolean_value(std::string_view s) {
  if (s == "true" || s == "yes" || s == "on")
    return true;
  if (s == "false" || s == "no" || s == "off")
    return false;
  return fmt::format("expected true or false, got '{}'", s);
}

Checked<double> number_value(std::string_view s, double min, double max) {
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v))
    return fmt::format("expected a number, got '{}'", s);
  if (v < min || v > max)
    return fmt::format("expected a number in [{}, {}], got '{}'", min, max, s);
  return v;
}

Checked<long long> integer_value(std::string_view s, long long min, long long max) {
  long long v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size())
    return fmt::format("expected a whole number, got '{}'", s);
  if (v < min || v > max)
    return fmt::format("expected a whole number in [{}, {}], got '{}'", min, max, s);
  return v;
}

} // namespace overlapsim::scenario
