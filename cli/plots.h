// Drawing the PNGs of an output directory with plots/overlapsim_plots.py (matplotlib), in a child
// process. Plots are outputs like the others: a failed plot fails the command (nothing is
// published; --no-plots skips them), and a signal while they are drawn stops the command.
#pragma once

#include "files/interruption.h"

#include <stdexcept>
#include <string>

namespace overlapsim::cli {

// Draws the plots of the summary in `dir` into `dir`. Throws std::runtime_error when the script
// is missing, fails or dies (its one-line message is on stderr), and Interrupted when this
// process receives SIGINT or SIGTERM meanwhile (the script is stopped with the same signal).
void draw_plots(const std::string& dir);

// `overlapsim plot DIR`: redraws the plots of a published output directory and publishes them
// with its other files in one step; a failure leaves DIR as it was. Returns the exit status.
int plot_command(const std::string& dir);

// The exit status and message of a command that failed with `e`: 128 + the signal when it was
// interrupted, 1 otherwise.
int report_failure(const char* command, const std::exception& e);

} // namespace overlapsim::cli
