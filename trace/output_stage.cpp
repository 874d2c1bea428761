#include "trace/output_stage.h"

#include "trace/remove_tree.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fmt/format.h>
#include <stdexcept>
#include <unistd.h>

namespace overlapsim {

namespace fs = std::filesystem;

namespace {

// ".<name>.staging.<pid>" beside the output directory: on the same file system, so that the
// publishing rename is atomic, and hidden from listings.
std::string staging_prefix(const fs::path& dir) {
  return fmt::format(".{}.staging.", dir.filename().string());
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A directory's name without trailing separators ("out/run/" is "out/run").
fs::path normalized(const std::string& dir) {
  fs::path p = fs::path(dir).lexically_normal();
  if (!p.has_filename() && p.has_parent_path())
    p = p.parent_path();
  return p;
}

} // namespace

bool is_output_file_name(const std::string& name) {
  if (name.find(".tmp.") != std::string::npos)
    return true; // an interrupted write_file_atomically
  for (const char* exact : {"summary.json", "summary.csv", "report.md", "comparison.json",
                            "comparison.csv", "loss.csv", "profile.json"})
    if (name == exact)
      return true;
  if (name.starts_with("trace-") && (ends_with(name, ".json") || ends_with(name, ".json.gz")))
    return true;
  return ends_with(name, ".png");
}

OutputStage::OutputStage(std::string dir) {
  if (dir.empty())
    throw std::runtime_error("the output directory is empty; name one");
  const fs::path target = normalized(dir);
  const std::string name = target.filename().string();
  if (name.empty() || name == "." || name == "..")
    throw std::runtime_error(
        fmt::format("{}: choose a named output directory (a run replaces it as a whole)", dir));
  dir_ = target.string();
  std::error_code ec;
  if (fs::exists(target, ec)) {
    if (!fs::is_directory(target, ec))
      throw std::runtime_error(fmt::format("{}: exists and is not a directory", dir_));
    for (const auto& entry : fs::directory_iterator(target, ec)) {
      const std::string file = entry.path().filename().string();
      if (!entry.is_regular_file() || !is_output_file_name(file))
        throw std::runtime_error(fmt::format(
            "{}: holds '{}', which overlapsim did not write; a run replaces its output directory "
            "as a whole, so choose a new or empty one",
            dir_, file));
    }
    if (ec)
      throw std::runtime_error(fmt::format("{}: cannot list: {}", dir_, ec.message()));
  }
  const fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
  fs::create_directories(parent, ec);
  if (ec)
    throw std::runtime_error(fmt::format("{}: cannot create: {}", parent.string(), ec.message()));
  // Staging directories of runs that were killed (their process is gone) are removed.
  const std::string prefix = staging_prefix(target);
  for (const auto& entry : fs::directory_iterator(parent, ec)) {
    const std::string file = entry.path().filename().string();
    if (!file.starts_with(prefix))
      continue;
    const std::string pid_text = file.substr(prefix.size());
    char* end = nullptr;
    const long pid = std::strtol(pid_text.c_str(), &end, 10);
    if (end != pid_text.c_str() && *end == '\0' && pid > 0 &&
        ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
      remove_tree(entry.path().string());
  }
  staging_ = (parent / (prefix + std::to_string(::getpid()))).string();
  remove_tree(staging_);
  fs::create_directory(staging_, ec);
  if (ec)
    throw std::runtime_error(fmt::format("{}: cannot create: {}", staging_, ec.message()));
}

OutputStage::~OutputStage() {
  if (!published_) {
    remove_tree(staging_);
  }
}

void OutputStage::publish() {
  std::error_code ec;
  // An empty directory (or none) is replaced by a plain rename; a previous run's outputs are
  // exchanged atomically with the new ones, then removed from where the staging directory was.
  if (fs::is_directory(dir_, ec) && fs::is_empty(dir_, ec))
    fs::remove(dir_, ec);
  if (!fs::exists(dir_, ec)) {
    if (::rename(staging_.c_str(), dir_.c_str()) != 0)
      throw std::runtime_error(
          fmt::format("{}: cannot publish the outputs: {}", dir_, std::strerror(errno)));
  } else {
    if (::renameat2(AT_FDCWD, staging_.c_str(), AT_FDCWD, dir_.c_str(), RENAME_EXCHANGE) != 0)
      throw std::runtime_error(
          fmt::format("{}: cannot publish the outputs: {}", dir_, std::strerror(errno)));
    remove_tree(staging_); // now the previous outputs
  }
  published_ = true;
}

} // namespace overlapsim
