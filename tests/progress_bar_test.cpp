// Issue 27.10: long work shows a bar with an ETA on a terminal, and nothing when stderr is not one.
#include "test_util.h"
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli/progress_bar.h"
#include <cstdlib>
#include <fmt/format.h>

namespace {

using overlapsim::cli::ProgressBar;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(ProgressBar, ShowsDoneTotalElapsedAndTheRemainingTimeAtTheSameRate) {
  EXPECT_EQ(ProgressBar::render("ddp", 5, 20, "steps", 2.0),
            "[ddp] [#####...............] 5/20 steps, 2.0 s elapsed, ~6 s left");
  EXPECT_EQ(ProgressBar::render("sweep", 0, 3, "points", 1.5),
            "[sweep] [....................] 0/3 points, 1.5 s elapsed");
  EXPECT_EQ(ProgressBar::render("x", 4, 4, "steps", 3.0),
            "[x] [####################] 4/4 steps, 3.0 s elapsed");
}

// A bar on a terminal (script(1) gives it one), none in a pipe. The bar waits for a second of work:
// the terminal's run is 40 steps of 512 GPUs in full, ~4 s on the 2-core machine (10 steps fell
// under a second once the full simulation got faster); under the sanitizers (scripts/sanitize.sh
// sets OVERLAPSIM_SANITIZED_SUBSET), 4-5x slower, 10 steps are enough.
TEST(ProgressBar, DrawnOnATerminalOnly) {
  const overlapsim::testing::ScratchDir dir;
  const std::string args = std::string(OVERLAPSIM_BINARY) + " run " + OVERLAPSIM_SOURCE_DIR +
                           "/scenarios/ddp-4x8-a100-gpt-neo-125m.yaml --no-plots --algorithms ddp "
                           "--set output.traces=false --set cluster.nodes=64 "
                           "--set cluster.rank_classes=off --out ";
  const auto piped = overlapsim::testing::run_shell(args + (dir / "piped").string());
  EXPECT_EQ(piped.first, 0) << piped.second;
  EXPECT_THAT(piped.second, Not(HasSubstr("[ddp] [")));
  const int steps = std::getenv("OVERLAPSIM_SANITIZED_SUBSET") != nullptr ? 10 : 40;
  const auto tty = overlapsim::testing::run_shell(
      fmt::format("script -qec \"{}{} --set training.steps={}\" /dev/null", args,
                  (dir / "tty").string(), steps));
  EXPECT_EQ(tty.first, 0) << tty.second;
  EXPECT_THAT(tty.second, ::testing::ContainsRegex(
                              fmt::format("\\[ddp\\] \\[#*\\.*\\] [0-9]+/{} steps", steps + 1)));
  // Issue 62.8: the bar's line is cleared before the table's title is printed on it.
  EXPECT_THAT(tty.second, HasSubstr("\r\x1b[Kddp-4x8-a100-gpt-neo-125m\r\n"));
}

} // namespace
