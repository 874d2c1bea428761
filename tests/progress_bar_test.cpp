// Issue 27.10: long work shows a bar with an ETA on a terminal, and nothing when stderr is not one.
#include "test_util.h"
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli/progress_bar.h"

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

// A run of about two seconds: a bar on a terminal (script(1) gives it one), none in a pipe.
TEST(ProgressBar, DrawnOnATerminalOnly) {
  const overlapsim::testing::ScratchDir dir;
  const std::string args = std::string(OVERLAPSIM_BINARY) + " run " + OVERLAPSIM_SOURCE_DIR +
                           "/scenarios/ddp-4x8-a100-gpt-neo-125m.yaml --no-plots --algorithms ddp "
                           "--set output.traces=false --set cluster.nodes=64 "
                           "--set cluster.rank_classes=off --out ";
  const auto piped = overlapsim::testing::run_shell(args + (dir / "piped").string());
  EXPECT_EQ(piped.first, 0) << piped.second;
  EXPECT_THAT(piped.second, Not(HasSubstr("[ddp] [")));
  const auto tty = overlapsim::testing::run_shell("script -qec \"" + args + (dir / "tty").string() +
                                                  "\" /dev/null");
  EXPECT_EQ(tty.first, 0) << tty.second;
  EXPECT_THAT(tty.second, ::testing::ContainsRegex("\\[ddp\\] \\[#*\\.*\\] [0-9]+/11 steps"));
  // Issue 62.8: the bar's line is cleared before the table's title is printed on it.
  EXPECT_THAT(tty.second, HasSubstr("\r\x1b[Kddp-4x8-a100-gpt-neo-125m\r\n"));
}

} // namespace
