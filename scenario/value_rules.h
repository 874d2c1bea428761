// The rules a scenario's scalar values follow, whichever code reads them: the loader's typed keys
// (yaml_entry.h) and an algorithm's option schema (algorithms/options.h) share them, so
// `output.plots: yes` and `bubble_filling: yes` mean the same (issue 28.4: the options once
// re-implemented the loader's rules, and rejected `yes`). Each returns the value, or the message
// that follows a value's location in an error ("expected ..., got '...'").
#pragma once

#include <string>
#include <string_view>
#include <variant>

namespace overlapsim::scenario {

// A value or the reason it is not one.
template <typename T> using Checked = std::variant<T, std::string>;

// true, yes, on / false, no, off.
Checked<bool> boolean_value(std::string_view text);
// A finite decimal number in [min, max].
Checked<double> number_value(std::string_view text, double min, double max);
// A whole number in [min, max].
Checked<long long> integer_value(std::string_view text, long long min, long long max);

} // namespace overlapsim::scenario
