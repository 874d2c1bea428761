// What an algorithm is, in one place (issue 28.1): its name, a line saying what it does, the paper
// it follows, what its step is next to DDP's, whether the real runtime runs it, its plot colour,
// and its options with their types, defaults, ranges and meaning. The registry
// (algorithms/registry.h) lists the descriptors; the loader's errors, `overlapsim algorithms`,
// validate's list of real algorithms and the docs' tests all read them, so a new algorithm touches
// its own file, one registry line, its tests and the docs.
#pragma once

#include "algorithms/algorithm.h"

#include <memory>
#include <string_view>
#include <vector>

namespace overlapsim {

enum class OptionType { size, integer, number, flag, choice, dtype };
std::string_view to_string(OptionType type);

struct OptionSchema {
  std::string_view key;
  OptionType type = OptionType::integer;
  // The default as a scenario would write it ("25MiB", "10", "true", "cyclic"); empty where it
  // follows from other keys or the scenario (then `doc` says how).
  std::string_view fallback;
  double min = 0, max = 0;               // integer and number: the accepted range
  std::vector<std::string_view> choices; // choice: the accepted values
  std::string_view doc;
};

struct AlgorithmDescriptor {
  std::string_view name;
  std::string_view summary; // one line
  std::string_view paper;   // what it follows ("DDP: Li et al., VLDB 2020")
  UpdateKind update = UpdateKind::synchronous;
  bool real_run = true;    // validate runs it with LibTorch + c10d
  std::string_view colour; // its colour in every plot, "#rrggbb"
  std::vector<OptionSchema> options;
  std::unique_ptr<Algorithm> (*make)(const scenario::AlgorithmSpec&) = nullptr;

  const OptionSchema* option(std::string_view key) const;
};

} // namespace overlapsim
