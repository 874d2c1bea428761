#include "cli/algorithms_command.h"

#include "algorithms/registry.h"

#include <cstdio>
#include <fmt/format.h>
#include <fmt/ranges.h> // fmt::join (in <fmt/format.h> before fmt 11)

namespace overlapsim::cli {

namespace {

// "1 to 1000000", "full | hybrid", or "" where the doc says what bounds it.
std::string range_of(const OptionSchema& o) {
  switch (o.type) {
  case OptionType::integer:
    return o.max > o.min ? fmt::format("{} to {}", static_cast<long long>(o.min),
                                       static_cast<long long>(o.max))
                         : std::string();
  case OptionType::number:
    return o.max > o.min ? fmt::format("{:g} to {:g}", o.min, o.max) : std::string();
  case OptionType::choice:
    return fmt::format("{}", fmt::join(o.choices, " | "));
  case OptionType::flag:
    return "true | false";
  case OptionType::dtype:
    return "fp32 | bf16 | fp16";
  case OptionType::size:
    return "more than 0, at most 1 PB";
  }
  return {};
}

} // namespace

nlohmann::ordered_json algorithms_json() {
  auto out = nlohmann::ordered_json::array();
  for (const auto* d : algorithm_registry()) {
    auto options = nlohmann::ordered_json::array();
    for (const auto& o : d->options)
      options.push_back({{"key", o.key},
                         {"type", to_string(o.type)},
                         {"default", o.fallback.empty() ? nlohmann::ordered_json(nullptr)
                                                        : nlohmann::ordered_json(o.fallback)},
                         {"range", range_of(o)},
                         {"doc", o.doc}});
    out.push_back({{"name", d->name},
                   {"summary", d->summary},
                   {"paper", d->paper},
                   {"update", to_string(d->update)},
                   {"real_run", d->real_run},
                   {"colour", d->colour},
                   {"options", options}});
  }
  return out;
}

std::string algorithms_text() {
  std::string out;
  for (const auto* d : algorithm_registry()) {
    out += fmt::format("{}  ({} update{})\n  {}\n  follows: {}\n", d->name, to_string(d->update),
                       d->real_run ? "; runs for real" : "; simulated only", d->summary, d->paper);
    for (const auto& o : d->options) {
      const auto range = range_of(o);
      out += fmt::format("    {:<24} {}{}{}: {}\n", o.key, to_string(o.type),
                         o.fallback.empty() ? "" : fmt::format(", default {}", o.fallback),
                         range.empty() ? "" : fmt::format(", {}", range), o.doc);
    }
    out += "\n";
  }
  return out;
}

int algorithms_command(bool json) {
  if (json)
    std::printf("%s\n", algorithms_json().dump(2).c_str());
  else
    std::printf("%s", algorithms_text().c_str());
  return 0;
}

} // namespace overlapsim::cli
