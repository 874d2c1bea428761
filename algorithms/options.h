// Reading an algorithm entry's options ("- {name: ddp, bucket_cap: 25MiB}") with the same error
// rules as the rest of the scenario: a bad or unknown option names the file, the line and the key.
#pragma once

#include "scenario/scenario.h"

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace overlapsim {

class AlgorithmOptions {
public:
  // Throws scenario::ScenarioError on an option outside `allowed`.
  AlgorithmOptions(const scenario::AlgorithmSpec& spec,
                   std::initializer_list<std::string_view> allowed);

  bool has(const std::string& key) const { return spec_.options.contains(key); }
  double size_bytes(const std::string& key, double fallback) const;
  long long integer(const std::string& key, long long fallback, long long min, long long max) const;
  double number(const std::string& key, double fallback, double min, double max) const;
  std::string text(const std::string& key, const std::string& fallback,
                   std::initializer_list<std::string_view> choices) const;
  bool flag(const std::string& key, bool fallback) const; // true | false
  // fp32 | bf16 | fp16; unset when the entry does not give the key.
  std::optional<scenario::Dtype> dtype(const std::string& key) const;

private:
  [[noreturn]] void fail(const std::string& key, const std::string& what) const;
  const scenario::AlgorithmSpec& spec_;
};

} // namespace overlapsim
