// overlapsim: simulate data-parallel training algorithms on GPU clusters (and check them for real).
#include "algorithms/algorithm.h"
#include "cli/commands.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <unistd.h>

namespace {

// `validate` and `profile` (except importing nccl-tests logs and profiler traces) need LibTorch,
// which lives in the sibling executable: run it in this process's place.
void hand_real_runs_to_sibling([[maybe_unused]] int argc, [[maybe_unused]] char** argv) {
#ifdef OVERLAPSIM_REAL_SIBLING
  if (argc < 2 || (std::strcmp(argv[1], "validate") != 0 && std::strcmp(argv[1], "profile") != 0))
    return;
  for (int i = 2; i < argc; ++i)
    if (std::strcmp(argv[i], "--import-nccl-tests") == 0 ||
        std::strcmp(argv[i], "--import-torch-profiler") == 0 ||
        std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0)
      return;
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec)
    return;
  const auto sibling = (self.parent_path() / OVERLAPSIM_REAL_SIBLING).string();
  ::execv(sibling.c_str(), argv); // returns only on failure: then this binary says what is missing
#endif
}

} // namespace

int main(int argc, char** argv) {
  hand_real_runs_to_sibling(argc, argv);
  CLI::App app{
      "overlapsim: per-GPU timelines, idle time, exposed communication, memory and speedups "
      "of DDP, ZeRO-1, ACCO, CDP and friends on simulated GPU clusters"};
  app.require_subcommand(1);
  app.set_version_flag("--version", overlapsim::cli::version_string());
  overlapsim::cli::add_commands(app);
  // CLI11 answers an unknown command with "A subcommand is required": name it and the commands.
  if (argc >= 2 && argv[1][0] != '-') {
    std::string names;
    bool known = false;
    for (const auto* command : app.get_subcommands([](CLI::App*) { return true; })) {
      known = known || command->get_name() == argv[1];
      names += (names.empty() ? "" : ", ") + command->get_name();
    }
    if (!known) {
      std::fprintf(stderr, "overlapsim: unknown command '%s'; expected one of: %s\n", argv[1],
                   names.c_str());
      return 106;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return overlapsim::cli::exit_code();
}
