#include "hw/units.h"

#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <iterator>
#include <optional>

namespace overlapsim::hw {

namespace {

// Splits "12.5 GB/s" into 12.5 and "GB/s"; nullopt when the text does not start with a finite,
// non-negative number.
std::optional<std::pair<double, std::string_view>> split(std::string_view text) {
  while (!text.empty() && text.front() == ' ')
    text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ')
    text.remove_suffix(1);
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || !std::isfinite(value) || value < 0)
    return std::nullopt;
  std::string_view unit(end, static_cast<std::size_t>(text.data() + text.size() - end));
  while (!unit.empty() && unit.front() == ' ')
    unit.remove_prefix(1);
  return std::pair{value, unit};
}

// Decimal SI prefix of a unit, consumed from its front; 1 when there is none.
double take_prefix(std::string_view& unit) {
  if (unit.size() < 2)
    return 1;
  double f = 1;
  switch (unit.front()) {
  case 'k':
  case 'K':
    f = 1e3;
    break;
  case 'M':
    f = 1e6;
    break;
  case 'G':
    f = 1e9;
    break;
  case 'T':
    f = 1e12;
    break;
  case 'P':
    f = 1e15;
    break;
  default:
    return 1;
  }
  unit.remove_prefix(1);
  return f;
}

[[noreturn]] void fail(const char* kind, const char* example, std::string_view text) {
  throw UnitError(fmt::format("expected {} like {}, got '{}'", kind, example, text));
}

} // namespace

namespace {

// Parses "<number> <unit>": `scale` maps the unit (possibly empty) to the factor into base units,
// or nullopt for a unit of the wrong kind. A physical quantity (`needs_unit`) written as a bare
// number is refused ("bandwidth: 100" would silently be 100 B/s), except 0, which is 0 in every
// unit; the value after scaling must be finite.
template <typename Scale>
double parse_quantity(std::string_view text, const char* kind, const char* example, Scale scale,
                      bool needs_unit = true) {
  const auto parsed = split(text);
  if (!parsed)
    fail(kind, example, text);
  auto [value, unit] = *parsed;
  if (needs_unit && unit.empty() && value != 0)
    throw UnitError(
        fmt::format("expected {} like {}, got '{}': a number needs a unit", kind, example, text));
  if (const std::optional<double> factor = scale(unit)) {
    const double scaled = value * *factor;
    if (!std::isfinite(scaled))
      throw UnitError(fmt::format("expected {} like {}, got '{}': too large", kind, example, text));
    return scaled;
  }
  fail(kind, example, text);
}

std::optional<double> binary_prefix(std::string_view unit) {
  if (unit.size() != 3 || unit.substr(1) != "iB")
    return std::nullopt;
  switch (unit.front()) {
  case 'K':
    return 1024.0;
  case 'M':
    return 1024.0 * 1024;
  case 'G':
    return 1024.0 * 1024 * 1024;
  case 'T':
    return 1024.0 * 1024 * 1024 * 1024;
  default:
    return std::nullopt;
  }
}

} // namespace

double parse_size_bytes(std::string_view text) {
  return parse_quantity(text, "a size", "80GB, 512MiB, 128M or 1500B",
                        [](std::string_view unit) -> std::optional<double> {
                          if (unit.empty() || unit == "B")
                            return 1.0;
                          if (auto f = binary_prefix(unit))
                            return f;
                          // A bare K, M, G or T: powers of 1024, as nccl-tests' -b/-e and
                          // GNU coreutils read them.
                          if (unit.size() == 1 && unit != "k")
                            if (auto f = binary_prefix(fmt::format("{}iB", unit)))
                              return f;
                          const double f = take_prefix(unit);
                          if (f > 1 && unit == "B")
                            return f;
                          return std::nullopt;
                        });
}

double parse_bandwidth_Bps(std::string_view text) {
  return parse_quantity(text, "a bandwidth", "100Gb/s (bits) or 300GB/s (bytes)",
                        [](std::string_view unit) -> std::optional<double> {
                          if (unit.empty())
                            return 1.0;
                          const double f = take_prefix(unit);
                          if (unit == "B/s" || unit == "Bps")
                            return f;
                          if (unit == "b/s" || unit == "bit/s" || unit == "bps")
                            return f / 8;
                          return std::nullopt;
                        });
}

double parse_time_s(std::string_view text) {
  return parse_quantity(text, "a time", "2us, 50ms or 1.5s",
                        [](std::string_view unit) -> std::optional<double> {
                          if (unit.empty() || unit == "s")
                            return 1.0;
                          if (unit == "ms")
                            return 1e-3;
                          if (unit == "us" || unit == "\u00b5s")
                            return 1e-6;
                          if (unit == "ns")
                            return 1e-9;
                          if (unit == "min")
                            return 60.0;
                          if (unit == "h")
                            return 3600.0;
                          return std::nullopt;
                        });
}

namespace {
std::optional<double> decimal_suffix(char c) {
  switch (c) {
  case 'k':
  case 'K':
    return 1e3;
  case 'M':
    return 1e6;
  case 'G':
    return 1e9;
  case 'T':
    return 1e12;
  case 'P':
    return 1e15;
  default:
    return std::nullopt;
  }
}
} // namespace

double parse_count(std::string_view text) {
  return parse_quantity(
      text, "a count", "7.1M, 14.6G or 1000",
      [](std::string_view unit) -> std::optional<double> {
        if (unit.empty())
          return 1.0;
        return unit.size() == 1 ? decimal_suffix(unit.front()) : std::nullopt;
      },
      /*needs_unit=*/false);
}

double parse_flops_per_s(std::string_view text) {
  return parse_quantity(text, "a compute rate", "312TFLOPS or 312T",
                        [](std::string_view unit) -> std::optional<double> {
                          double f = 1;
                          if (!unit.empty() && decimal_suffix(unit.front()) &&
                              (unit.size() == 1 || unit.substr(1).starts_with("FLOP"))) {
                            f = *decimal_suffix(unit.front());
                            unit.remove_prefix(1);
                          }
                          if (unit.empty() || unit == "FLOPS" || unit == "FLOP/s")
                            return f;
                          return std::nullopt;
                        });
}

namespace {
std::string scaled(double v, const char* const* units, int n, double base) {
  int i = 0;
  while (i + 1 < n && std::abs(v) >= base) {
    v /= base;
    ++i;
  }
  return fmt::format("{:.3g} {}", v, units[i]);
}
} // namespace

std::string format_bytes(double bytes) {
  static const char* const u[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  return scaled(bytes, u, 6, 1000);
}

std::string format_bandwidth(double bytes_per_s) {
  static const char* const u[] = {"B/s", "KB/s", "MB/s", "GB/s", "TB/s"};
  return scaled(bytes_per_s, u, 5, 1000);
}

std::string format_time(double s) {
  const double a = std::abs(s);
  if (a == 0)
    return "0 s";
  if (!std::isfinite(s))
    return fmt::format("{} s", s);
  // Each unit up to where the next takes over once rounded to three digits (999.96 ms reads 1 s,
  // not "1e+03 ms"); past a minute, minutes, hours and days (21,200 s reads 5.89 h).
  struct Unit {
    double seconds;
    const char* name;
    double next; // the value in this unit at which the next unit takes over
  };
  static constexpr Unit kUnits[] = {{1e-9, "ns", 1000}, {1e-6, "us", 1000}, {1e-3, "ms", 1000},
                                    {1, "s", 60},       {60, "min", 60},    {3600, "h", 24},
                                    {86400, "days", 0}};
  constexpr std::size_t kLast = std::size(kUnits) - 1;
  std::size_t i = 0;
  while (i < kLast && a >= kUnits[i + 1].seconds)
    ++i;
  for (;; ++i) {
    const double v = s / kUnits[i].seconds;
    const std::string text =
        i == kLast && std::abs(v) >= 1000 ? fmt::format("{:.0f}", v) : fmt::format("{:.3g}", v);
    if (i == kLast || std::abs(std::stod(text)) < kUnits[i].next)
      return text + " " + kUnits[i].name;
  }
}

std::string format_count(double count) {
  static const char* const u[] = {"", "k", "M", "G", "T"};
  int i = 0;
  while (i < 4 && std::abs(count) >= 1000) {
    count /= 1000;
    ++i;
  }
  return fmt::format("{:.4g}{}", count, u[i]);
}

} // namespace overlapsim::hw
