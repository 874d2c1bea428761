// `overlapsim algorithms`: every algorithm a scenario can name, from its descriptor (what it does,
// what it follows, its options with defaults and ranges, whether validate runs it for real).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace overlapsim::cli {

std::string algorithms_text();
nlohmann::ordered_json algorithms_json();

int algorithms_command(bool json);

} // namespace overlapsim::cli
