#include "algorithms/descriptor.h"

#include <algorithm>

namespace overlapsim {

std::string_view to_string(OptionType type) {
  switch (type) {
  case OptionType::size:
    return "size";
  case OptionType::integer:
    return "integer";
  case OptionType::number:
    return "number";
  case OptionType::flag:
    return "flag";
  case OptionType::choice:
    return "choice";
  case OptionType::dtype:
    return "dtype";
  }
  return "integer";
}

const OptionSchema* AlgorithmDescriptor::option(std::string_view key) const {
  const auto it = std::find_if(options.begin(), options.end(),
                               [&](const OptionSchema& o) { return o.key == key; });
  return it == options.end() ? nullptr : &*it;
}

} // namespace overlapsim
