// The slowest of N GPUs' compute, drawn path by path (issue 64.2: statistical rank classes,
// sim/rank_classes.h). Jitter, per-GPU sequence lengths and slowdowns break the symmetry rank
// classes need, but not what a synchronisation waits for: the slowest member to get there. One
// simulated GPU (the "extreme") stands for the N GPUs the fold leaves out (and itself): each of its
// compute ops takes as long as moves the latest of those N GPUs' clocks, each GPU drawing its own
// jitter and sequence lengths from its own seeded generator (sim/gpu_draws.h, the full
// simulation's draws) at its own slowdown.
//
// Why clocks and not the slowest of N draws per op: a collective waits for the GPU latest to reach
// it, the maximum over GPUs of a *sum* of op times since they last started together, and the sum
// of the per-op maxima overshoots it. With 32 ops of lognormal sigma 0.05 between two all-reduces
// at N = 1,024 the per-op maxima add up to ~17% over the mean, the slowest sum to ~3%
// (E max of N ~ mean + sigma_sum * Phi^-1(0.5^(1/N)) with sigma_sum = 0.05 / sqrt(32)). The clocks
// give the latter exactly for the draws made. The GPUs start together again where the extreme's
// stream waited (for a collective, the other stream): every GPU it stands for then waited for the
// same moment. Where sharing stretched the extreme's op (a transfer's interference, the other
// stream's compute), every GPU's clock moves on by the same stretch, not to the same moment. What
// is left out (the approximation): a GPU the extreme stands for never waits where the extreme did
// not, and the left-out GPUs' communication is the folded one's.
#pragma once

#include "runtime/runtime.h"
#include "scenario/scenario.h"

#include <array>
#include <functional>
#include <random>
#include <vector>

namespace overlapsim::sim {

class SlowestOf {
public:
  // `ranks`: the GPUs stood for (their seeds and slowdowns); `nominal_speed`: FLOP/s of a GPU
  // without slowdown.
  SlowestOf(const scenario::Scenario& s, const std::vector<int>& ranks, double nominal_speed);

  // An op of `amount` FLOPs at this GPU's sequence length, starting `now` on `stream` (0 compute,
  // 1 communication): how long it takes the slowest of the GPUs, in seconds from `now`.
  // `at_ratio`, where the op's cost depends on the micro-batch's sequence length: its amount at
  // another sequence ratio (each GPU draws its own).
  double op_seconds(int stream, double now, double amount, MicroBatch mb,
                    const std::function<double(double)>& at_ratio);

  // The op ran until `end`: later than op_seconds said where the GPU's sharing (the other stream,
  // a transfer's interference) slowed it, as it slows every GPU; the clocks move on by as much.
  void op_ended(int stream, double end);

  int size() const { return static_cast<int>(gpus_.size()); }

  // For a fold per pipeline replica (sim/statistical_fold.h), which moves the GPUs' clocks where
  // each waited for its own replica (a TP group, a stage's message) rather than for all:
  // each GPU's clock on `stream`, in the order of `ranks`; when the extreme's last op ended.
  std::vector<double>& clocks(int stream) { return clock_[static_cast<std::size_t>(stream)]; }
  double ended(int stream) const { return ended_[static_cast<std::size_t>(stream)]; }
  // The stream waited from its last op's end until `now`: for all the GPUs (a collective of all,
  // the other stream), so every clock restarts there (what op_seconds does first).
  void waited(int stream, double now);
  // The stream waited until `now` for what each GPU's clock now says (the caller moved them).
  void explained(int stream, double now) { ended_[static_cast<std::size_t>(stream)] = now; }

private:
  struct Gpu {
    int rank;
    double slowdown;
    std::mt19937_64 rng;
  };
  const scenario::Scenario& scenario_;
  double nominal_speed_;
  std::vector<Gpu> gpus_;
  // Per stream: each GPU's clock (when its latest op ends), the latest of them, and when the
  // extreme's own last op ended.
  std::array<std::vector<double>, 2> clock_;
  std::array<double, 2> latest_{0, 0};
  std::array<double, 2> ended_{0, 0};
};

// The q-quantile of the largest of n independent lognormal(mu, sigma) draws: its CDF is F^n, so
// the quantile is F^-1(q^(1/n)) = exp(mu + sigma * Phi^-1(q^(1/n))). What the tests hold the
// path-by-path maxima to (q = 0.5: their median).
double max_of_lognormals_quantile(double mu, double sigma, int n, double q);

} // namespace overlapsim::sim
