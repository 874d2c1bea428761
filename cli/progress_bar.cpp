#include "cli/progress_bar.h"

#include <cstdio>
#include <fmt/format.h>
#include <unistd.h>
#include <utility>

namespace overlapsim::cli {

ProgressBar::ProgressBar(std::string what, std::size_t total, std::string unit)
    : what_(std::move(what)), total_(total), unit_(std::move(unit)),
      enabled_(::isatty(STDERR_FILENO) != 0) {}

ProgressBar::~ProgressBar() {
  if (drawn_) {
    std::fputs("\r\x1b[K", stderr);
    std::fflush(stderr);
  }
}

std::string ProgressBar::render(const std::string& what, std::size_t done, std::size_t total,
                                const std::string& unit, double elapsed_s) {
  constexpr std::size_t kWidth = 20;
  const std::size_t filled = total > 0 ? kWidth * std::min(done, total) / total : kWidth;
  const std::string eta =
      done > 0 && done < total
          ? fmt::format(", ~{:.0f} s left",
                        elapsed_s * static_cast<double>(total - done) / static_cast<double>(done))
          : "";
  return fmt::format("[{}] [{}{}] {}/{} {}, {:.1f} s elapsed{}", what, std::string(filled, '#'),
                     std::string(kWidth - filled, '.'), done, total, unit, elapsed_s, eta);
}

void ProgressBar::update(std::size_t done) {
  if (!enabled_)
    return;
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (elapsed < 1.0 || (elapsed - last_ < 0.1 && done < total_))
    return;
  last_ = elapsed;
  drawn_ = true;
  std::fprintf(stderr, "\r%s\x1b[K", render(what_, done, total_, unit_, elapsed).c_str());
  std::fflush(stderr);
}

} // namespace overlapsim::cli
