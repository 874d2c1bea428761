#include "sim/slowest_of.h"

#include "sim/gpu_draws.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace overlapsim::sim {

namespace {
// Phi^-1 by bisection on erfc: exact to double precision, called only by tests and reports.
double normal_quantile(double p) {
  if (p <= 0 || p >= 1)
    throw std::invalid_argument("normal_quantile: p must lie in (0, 1)");
  double lo = -40, hi = 40;
  for (int i = 0; i < 200; ++i) {
    const double mid = (lo + hi) / 2;
    (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}
} // namespace

double max_of_lognormals_quantile(double mu, double sigma, int n, double q) {
  return std::exp(mu + sigma * normal_quantile(std::pow(q, 1.0 / n)));
}

SlowestOf::SlowestOf(const scenario::Scenario& s, const std::vector<int>& ranks,
                     double nominal_speed)
    : scenario_(s), nominal_speed_(nominal_speed) {
  gpus_.reserve(ranks.size());
  for (const int r : ranks)
    gpus_.push_back({r, s.cluster.slowdown_of(r), jitter_generator(s.seed, r)});
  for (auto& c : clock_)
    c.assign(gpus_.size(), 0.0);
}

double SlowestOf::op_seconds(int stream, double now, double amount, MicroBatch mb,
                             const std::function<double(double)>& at_ratio) {
  auto& clock = clock_[static_cast<std::size_t>(stream)];
  double& latest = latest_[static_cast<std::size_t>(stream)];
  waited(stream, now);
  const bool by_length = at_ratio && scenario_.training.seq_len_distribution.kind !=
                                         scenario::SeqLenDistribution::Kind::fixed;
  double slowest = now;
  for (std::size_t i = 0; i < gpus_.size(); ++i) {
    auto& g = gpus_[i];
    const double mine = by_length ? at_ratio(seq_ratio_of(scenario_, g.rank, mb)) : amount;
    const double seconds = mine / nominal_speed_;
    clock[i] += seconds * draw_jitter(scenario_.cluster.jitter, seconds, g.rng) * g.slowdown;
    slowest = std::max(slowest, clock[i]);
  }
  latest = slowest;
  ended_[static_cast<std::size_t>(stream)] = slowest;
  return slowest - now;
}

void SlowestOf::waited(int stream, double now) {
  // The stream starts later than its last op ended: it waited (for a collective, for the other
  // stream), and so did every GPU it stands for, until the same moment.
  if (now > ended_[static_cast<std::size_t>(stream)] * (1 + 1e-12) + 1e-15)
    for (double& c : clock_[static_cast<std::size_t>(stream)])
      c = std::max(c, now);
}

void SlowestOf::op_ended(int stream, double end) {
  double& latest = latest_[static_cast<std::size_t>(stream)];
  ended_[static_cast<std::size_t>(stream)] = end;
  if (const double stretch = end - latest; stretch > 0) {
    for (double& c : clock_[static_cast<std::size_t>(stream)])
      c += stretch;
    latest = end;
  }
}

} // namespace overlapsim::sim
