// Reading an algorithm entry's options ("- {name: ddp, bucket_cap: 25MiB}") with the same error
// rules as the rest of the scenario: a bad or unknown option names the file, the line and the key.
#pragma once

#include "algorithms/descriptor.h"
#include "scenario/scenario.h"
#include "scenario/value_rules.h"

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace overlapsim {

class AlgorithmOptions {
public:
  // Throws scenario::ScenarioError on an option the descriptor does not declare.
  AlgorithmOptions(const scenario::AlgorithmSpec& spec, const AlgorithmDescriptor& descriptor);

  // The option as its descriptor declares it: default, range and choices from the schema (one
  // place for each; `overlapsim algorithms` prints the same schema).
  double size_bytes(const std::string& key) const;
  long long integer(const std::string& key) const;
  double number(const std::string& key) const;
  std::string choice(const std::string& key) const;
  bool flag(const std::string& key) const;
  // An integer whose upper bound follows from another option (the schema's max is 0).
  long long integer_at_most(const std::string& key, long long max) const;

  bool has(const std::string& key) const { return spec_.options.contains(key); }
  double size_bytes(const std::string& key, double fallback) const;
  long long integer(const std::string& key, long long fallback, long long min, long long max) const;
  double number(const std::string& key, double fallback, double min, double max) const;
  std::string text(const std::string& key, const std::string& fallback,
                   std::initializer_list<std::string_view> choices) const;
  bool flag(const std::string& key, bool fallback) const; // true | false
  // fp32 | bf16 | fp16; unset when the entry does not give the key.
  std::optional<scenario::Dtype> dtype(const std::string& key) const;

  // Below: a default or range that follows from other options (ACCO's cap from its minimum, a
  // top_k from the compression); the schema's doc says so.

private:
  [[noreturn]] void fail(const std::string& key, const std::string& what) const;
  // The value, or the loader's own message for `key` (scenario/value_rules.h).
  template <typename T> T checked(const std::string& key, scenario::Checked<T> value) const {
    if (auto* why = std::get_if<std::string>(&value))
      fail(key, *why);
    return std::get<T>(value);
  }
  const OptionSchema& schema(const std::string& key, OptionType type) const;
  const scenario::AlgorithmSpec& spec_;
  const AlgorithmDescriptor& descriptor_;
};

} // namespace overlapsim
