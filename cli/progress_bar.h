// A progress bar with an ETA on stderr for long work (steps simulated, sweep points, real-run
// algorithms), drawn only when stderr is a terminal: a log file or a pipe gets nothing (issue
// 27.10), so batch jobs' logs and tests read only results and errors.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace overlapsim::cli {

class ProgressBar {
public:
  // `what` names the work ("ddp", "sweep"), `unit` what is counted ("steps", "points").
  ProgressBar(std::string what, std::size_t total, std::string unit);
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;
  ~ProgressBar(); // clears the bar's line

  // Redraws the bar (at most ten times a second, and only once the work has run a second).
  void update(std::size_t done);

  // The bar's text, for tests: "[ddp] [#####.....] 5/10 steps, 2.0 s elapsed, ~2 s left".
  static std::string render(const std::string& what, std::size_t done, std::size_t total,
                            const std::string& unit, double elapsed_s);

private:
  std::string what_;
  std::size_t total_;
  std::string unit_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  double last_ = -1;
};

} // namespace overlapsim::cli
