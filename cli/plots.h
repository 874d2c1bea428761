// Drawing the PNGs of an output directory with plots/overlapsim_plots.py (matplotlib). Plotting is
// best effort: a missing Python or matplotlib, or a failed plot, prints a warning and never touches
// the numeric outputs.
#pragma once

#include <string>

namespace overlapsim::cli {

// Returns true when the plotting script ran and exited 0.
bool draw_plots(const std::string& dir);

} // namespace overlapsim::cli
