// The algorithms the scenario can name: one line per algorithm, its descriptor
// (algorithms/descriptor.h) declared in its own file.
#pragma once

#include "algorithms/descriptor.h"

#include <string_view>
#include <vector>

namespace overlapsim {

// In the order the docs and plots list them: DDP and its sharded forms, the delayed updates, CDP,
// the local-update family, the compressed exchanges.
const std::vector<const AlgorithmDescriptor*>& algorithm_registry();

// nullptr for a name the registry does not know.
const AlgorithmDescriptor* find_algorithm(std::string_view name);

} // namespace overlapsim
