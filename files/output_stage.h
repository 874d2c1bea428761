// A command's outputs form one consistent set: they are written into a hidden sibling staging
// directory and published into the output directory at once, so a failed or killed run leaves
// the previous outputs (or nothing) and never a mix of old and new files (issue 15.9, 15.12).
//
// A published directory holds a manifest (`.overlapsim-outputs.json`): every file the command
// wrote, with its size and CRC-32. A later command replaces a directory only when it is new, empty,
// or holds exactly the files of its manifest, unchanged; anything else (a user's file, an edited
// report, a directory of photos named like outputs) is refused and never deleted (issue 26.1).
#pragma once

#include <string>
#include <vector>

namespace overlapsim {

// The manifest's file name inside a published output directory.
inline constexpr const char* kOutputManifest = ".overlapsim-outputs.json";

class OutputStage {
public:
  // Checks that `dir` may be replaced (see check_output_dir), removes staging directories that
  // killed runs left beside it, and creates this run's staging directory. A symbolic link to a
  // directory is followed: the outputs are published where it points, and the link stays.
  explicit OutputStage(std::string dir);
  OutputStage(const OutputStage&) = delete;
  OutputStage& operator=(const OutputStage&) = delete;
  ~OutputStage(); // removes the staging directory unless it was published

  // Where the outputs are written before publish().
  const std::string& path() const { return staging_; }

  // Writes the manifest of the staged files, then replaces the output directory with the staging
  // directory in one rename (an atomic exchange when it holds a previous run's outputs, which are
  // then removed). Checks the directory again first: a file that appeared there during the run is
  // not deleted. Throws std::runtime_error naming the path.
  void publish();

private:
  std::string dir_; // the output directory, symbolic links resolved
  std::string staging_;
  bool published_ = false;
};

// Throws std::runtime_error unless `dir` is new, empty, or a directory overlapsim published whose
// files are exactly its manifest's, unchanged; and unless its parent can be created and written.
// For commands that run long before they write (validate): the check comes before the work.
void check_output_dir(const std::string& dir);

// The files of a published output directory (relative paths, sorted); throws like
// check_output_dir when `dir` is not one.
std::vector<std::string> published_files(const std::string& dir);

} // namespace overlapsim
