// The subcommands of the overlapsim executable (SCENARIO.md "Commands").
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace overlapsim::cli {

void add_commands(CLI::App& app);
int exit_code(); // of the subcommand that ran
std::string version_string();

} // namespace overlapsim::cli
