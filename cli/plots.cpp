#include "cli/plots.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>

#ifndef OVERLAPSIM_SOURCE_DIR
#define OVERLAPSIM_SOURCE_DIR "."
#endif

namespace overlapsim::cli {

namespace {

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s)
    q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

} // namespace

bool draw_plots(const std::string& dir) {
  namespace fs = std::filesystem;
  const std::string script = env_or("OVERLAPSIM_PLOTS_SCRIPT", std::string(OVERLAPSIM_SOURCE_DIR) +
                                                                   "/plots/overlapsim_plots.py");
  // Debian's matplotlib lives with the system interpreter, which may not be first on PATH.
  const std::string python =
      env_or("OVERLAPSIM_PYTHON", fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3");
  if (!fs::exists(script)) {
    std::fprintf(stderr, "warning: plots skipped: %s not found\n", script.c_str());
    return false;
  }
  std::fflush(nullptr);
  const int rc = std::system(
      fmt::format("{} {} {}", shell_quote(python), shell_quote(script), shell_quote(dir)).c_str());
  if (rc != 0) {
    std::fprintf(stderr,
                 "warning: plotting exited with status %d; the numeric outputs are complete\n", rc);
    return false;
  }
  return true;
}

} // namespace overlapsim::cli
