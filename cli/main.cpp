// overlapsim: simulate data-parallel training algorithms on GPU clusters (and check them for real).
#include "algorithms/algorithm.h"
#include "cli/commands.h"

#include <CLI/CLI.hpp>
#include <cstdio>

int main(int argc, char** argv) {
  CLI::App app{
      "overlapsim: per-GPU timelines, idle time, exposed communication, memory and speedups "
      "of DDP, ZeRO-1, ACCO, CDP and friends on simulated GPU clusters"};
  app.require_subcommand(1);
  app.set_version_flag("--version", overlapsim::cli::version_string());
  overlapsim::cli::add_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return overlapsim::cli::exit_code();
}
