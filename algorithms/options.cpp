#include "algorithms/options.h"

#include "hw/units.h"
#include "scenario/loader.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fmt/format.h>

namespace overlapsim {

AlgorithmOptions::AlgorithmOptions(const scenario::AlgorithmSpec& spec,
                                   const AlgorithmDescriptor& descriptor)
    : spec_(spec), descriptor_(descriptor) {
  for (const auto& [key, opt] : spec.options) {
    if (!descriptor.option(key)) {
      std::string list;
      for (const auto& o : descriptor.options)
        list += fmt::format("{}{}", list.empty() ? "" : ", ", o.key);
      fail(key, fmt::format("unknown option of algorithm '{}'; expected {}", spec.name,
                            list.empty() ? "no options" : "one of: " + list));
    }
  }
}

const OptionSchema& AlgorithmOptions::schema(const std::string& key, OptionType type) const {
  const OptionSchema* s = descriptor_.option(key);
  if (!s || s->type != type) // a programming error: the factory reads what it did not declare
    throw std::logic_error(fmt::format("algorithm '{}' reads option '{}' as a {}, which its "
                                       "descriptor does not declare",
                                       descriptor_.name, key, to_string(type)));
  return *s;
}

double AlgorithmOptions::size_bytes(const std::string& key) const {
  return size_bytes(key, hw::parse_size_bytes(std::string(schema(key, OptionType::size).fallback)));
}

long long AlgorithmOptions::integer(const std::string& key) const {
  const auto& s = schema(key, OptionType::integer);
  return integer(key, std::stoll(std::string(s.fallback)), static_cast<long long>(s.min),
                 static_cast<long long>(s.max));
}

double AlgorithmOptions::number(const std::string& key) const {
  const auto& s = schema(key, OptionType::number);
  return number(key, std::stod(std::string(s.fallback)), s.min, s.max);
}

std::string AlgorithmOptions::choice(const std::string& key) const {
  const auto& s = schema(key, OptionType::choice);
  if (!has(key))
    return std::string(s.fallback);
  const std::string& v = spec_.options.at(key).value;
  if (std::find(s.choices.begin(), s.choices.end(), v) == s.choices.end()) {
    std::string list;
    for (auto c : s.choices)
      list += fmt::format("{}{}", list.empty() ? "" : ", ", c);
    fail(key, fmt::format("expected one of {}, got '{}'", list, v));
  }
  return v;
}

long long AlgorithmOptions::integer_at_most(const std::string& key, long long max) const {
  const auto& s = schema(key, OptionType::integer);
  return integer(key, std::stoll(std::string(s.fallback)), static_cast<long long>(s.min), max);
}

bool AlgorithmOptions::flag(const std::string& key) const {
  return flag(key, schema(key, OptionType::flag).fallback == "true");
}

void AlgorithmOptions::fail(const std::string& key, const std::string& what) const {
  const auto it = spec_.options.find(key);
  const std::string& where = it == spec_.options.end() ? spec_.where : it->second.where;
  throw scenario::ScenarioError(
      fmt::format("{}: key 'algorithms.{}.{}': {}", where, spec_.name, key, what));
}

namespace {
constexpr double kMaxOptionBytes = 1e15;
} // namespace

double AlgorithmOptions::size_bytes(const std::string& key, double fallback) const {
  if (!has(key))
    return fallback;
  try {
    const double v = hw::parse_size_bytes(spec_.options.at(key).value);
    if (v <= 0)
      fail(key, "expected a size greater than 0");
    // The scenario's size range (docs/SCENARIO.md): a bucket_cap of 1e7PB ran the simulation
    // into 23 GB of memory (issue 26.3).
    if (v > kMaxOptionBytes)
      fail(key, fmt::format("'{}' is larger than 1 PB", spec_.options.at(key).value));
    return v;
  } catch (const hw::UnitError& e) {
    fail(key, e.what());
  }
}

long long AlgorithmOptions::integer(const std::string& key, long long fallback, long long min,
                                    long long max) const {
  if (!has(key))
    return fallback;
  return checked(key, scenario::integer_value(spec_.options.at(key).value, min, max));
}

double AlgorithmOptions::number(const std::string& key, double fallback, double min,
                                double max) const {
  if (!has(key))
    return fallback;
  return checked(key, scenario::number_value(spec_.options.at(key).value, min, max));
}

std::string AlgorithmOptions::text(const std::string& key, const std::string& fallback,
                                   std::initializer_list<std::string_view> choices) const {
  if (!has(key))
    return fallback;
  const std::string& s = spec_.options.at(key).value;
  if (std::find(choices.begin(), choices.end(), s) == choices.end()) {
    std::string list;
    for (auto c : choices)
      list += fmt::format("{}{}", list.empty() ? "" : ", ", c);
    fail(key, fmt::format("expected one of {}, got '{}'", list, s));
  }
  return s;
}

bool AlgorithmOptions::flag(const std::string& key, bool fallback) const {
  if (!has(key))
    return fallback;
  return checked(key, scenario::boolean_value(spec_.options.at(key).value));
}

std::optional<scenario::Dtype> AlgorithmOptions::dtype(const std::string& key) const {
  if (!has(key))
    return std::nullopt;
  const std::string d = text(key, "", {"fp32", "bf16", "fp16"});
  return d == "fp32"   ? scenario::Dtype::fp32
         : d == "fp16" ? scenario::Dtype::fp16
                       : scenario::Dtype::bf16;
}

} // namespace overlapsim
