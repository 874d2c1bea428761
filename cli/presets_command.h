// `overlapsim presets`: the GPU, link and model presets a scenario can name, with their numbers.
#pragma once

#include <string>

namespace overlapsim::cli {

// The tables `overlapsim presets` prints (also what docs/SCENARIO.md's preset tables are checked
// against).
std::string presets_text();

int presets_command(bool json);

} // namespace overlapsim::cli
