// Time to target (issue 13): local SGD trades steps for time, so a faster step says little until
// the loss it buys is counted. With training.target_loss and a loss curve (supplied,
// training.loss_curve, or measured by `overlapsim validate`), a summary row gains the samples at
// which the curve first reaches the target and the wall-clock time the algorithm needs for them
// at its steady-state throughput (samples / throughput_samples_s), as the DreamDDP paper's
// Table 2 compares wall-clock time to a target accuracy.
#pragma once

#include "scenario/scenario.h"
#include "trace/summary.h"

#include <string>
#include <vector>

namespace overlapsim::cli {

// Sets row.extra["time_to_target"] when the scenario has a target loss: `curve` null means the
// algorithm has no curve (the entry says so); `source` is "supplied" or "measured".
void add_time_to_target(SummaryRow& row, const scenario::Scenario& scenario,
                        const std::vector<scenario::LossPoint>* curve, const char* source);

// The same with the scenario's supplied curve of row.algorithm, if any.
void add_supplied_time_to_target(SummaryRow& row, const scenario::Scenario& scenario);

} // namespace overlapsim::cli
