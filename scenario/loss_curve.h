// Loss curves for time to target (issue 13, "Time to target"): per algorithm label, the training
// loss against the samples the whole job had consumed. A supplied curve is a comma-separated file
// with a header naming the columns `algorithm`, `samples` and `loss` (other columns are ignored),
// one row per point, each algorithm's rows in increasing samples: the `loss.csv` that
// `overlapsim validate` writes is one, so a curve measured on a small job can be fed to the
// simulator of a large one (training.loss_curve, docs/SCENARIO.md).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace overlapsim::scenario {

struct LossPoint {
  double samples = 0;
  double loss = 0;
};
using LossCurves = std::map<std::string, std::vector<LossPoint>>; // by algorithm label

// Throws std::runtime_error naming the file, line and column of what is wrong.
LossCurves read_loss_curves(const std::string& path);
LossCurves parse_loss_curves(const std::string& text, const std::string& name_for_errors);

// The samples at which `curve` first reaches `target` (loss <= target), linearly interpolated
// between the last point above and the first at or below it; nullopt when it never does.
std::optional<double> samples_to_reach(const std::vector<LossPoint>& curve, double target);

} // namespace overlapsim::scenario
