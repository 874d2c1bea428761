// A command's outputs form one consistent set: they are written into a hidden sibling staging
// directory and published into the output directory at once, so a failed or killed run leaves
// the previous outputs (or nothing) and never a mix of old and new files (issue 15.9, 15.12).
#pragma once

#include <string>

namespace overlapsim {

class OutputStage {
public:
  // Checks that `dir` is new, empty, or holds only files overlapsim writes (a run owns its
  // directory's outputs; foreign files are an error, never deleted), removes staging directories
  // that killed runs left beside it, and creates this run's staging directory.
  explicit OutputStage(std::string dir);
  OutputStage(const OutputStage&) = delete;
  OutputStage& operator=(const OutputStage&) = delete;
  ~OutputStage(); // removes the staging directory unless it was published

  // Where the outputs are written before publish().
  const std::string& path() const { return staging_; }

  // Replaces `dir` with the staging directory in one rename (an atomic exchange when `dir` holds a
  // previous run's outputs, which are then removed). Throws std::runtime_error naming the path.
  void publish();

private:
  std::string dir_;
  std::string staging_;
  bool published_ = false;
};

// Whether a file name is one overlapsim writes into an output directory (summaries, reports,
// traces, plots, comparisons, profiles, and temporary files of an interrupted write).
bool is_output_file_name(const std::string& name);

} // namespace overlapsim
