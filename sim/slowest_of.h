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
//
// Past `max_clocks` GPUs (kStatisticalClocks; issue 64.4: 131,072 GPUs within minutes) the cost per
// op stops growing with N: GPUs with a slowdown keep their own clock and draws, and the others
// form max_clocks groups of m ~ N / max_clocks GPUs (by rank), one clock each that draws the
// slowest of its GPUs' sums from their order statistic (sim/order_statistic.h): per group and
// interval between restarts one uniform u, z = Phi^-1(u^(1/c)), and the clock at
// restart + the z-quantile of the sum of op times since. The c GPUs are those of the group tied
// for the longest sum so far; with per-GPU sequence lengths each GPU's length is still drawn
// (once per micro-batch, seq_ratio_of), its sum's mean and variance kept exactly at micro-batch
// boundaries (an op's cost is quadratic in the length ratio, so per micro-batch a few sums carry
// every GPU's), and the group follows its GPU with the longest sum (the previous micro-batch's
// cost projects the current one). What this adds to the approximation: GPUs of a group near but
// not tied with its leader are not drawn for, and the sum is taken lognormal (Fenton-Wilkinson)
// or normal. Measured against the path-by-path clocks in docs/ARCHITECTURE.md.
#pragma once

#include "runtime/runtime.h"
#include "scenario/scenario.h"

#include <array>
#include <cstddef>
#include <functional>
#include <limits>
#include <random>
#include <utility>
#include <vector>

namespace overlapsim::sim {

// Clocks a statistical fold keeps at most before it draws order statistics (above): 1,024
// (docs/ARCHITECTURE.md, "Order statistics past 1,024 GPUs", measures the error and cost);
// the environment variable OVERLAPSIM_STATISTICAL_CLOCKS sets another (bench/scale.py and the
// error measurements force a small one to compare both on one size).
constexpr int kStatisticalClocks = 1024;
int statistical_clocks();

class SlowestOf {
public:
  // `ranks`: the GPUs stood for (their seeds and slowdowns); `nominal_speed`: FLOP/s of a GPU
  // without slowdown; past `max_clocks` GPUs, order statistics (above).
  SlowestOf(const scenario::Scenario& s, const std::vector<int>& ranks, double nominal_speed,
            int max_clocks = std::numeric_limits<int>::max());

  // An op of `amount` FLOPs at this GPU's sequence length, starting `now` on `stream` (0 compute,
  // 1 communication): how long it takes the slowest of the GPUs, in seconds from `now`.
  // `at_ratio`, where the op's cost depends on the micro-batch's sequence length: its amount at
  // another sequence ratio (each GPU draws its own).
  double op_seconds(int stream, double now, double amount, MicroBatch mb,
                    const std::function<double(double)>& at_ratio);

  // The stream's next op begins a micro-batch (a forward from its first layer), even where its
  // (step, index) equals the previous one's: the order statistics fold the previous one into each
  // GPU's sum there (ACCO's two rounds of a step both number their micro-batches from 0; taken
  // as one, the next micro-batch's projection doubled and could choose the wrong leader).
  void micro_batch_starts(int stream) { members_[static_cast<std::size_t>(stream)].starts = true; }

  // The op ran until `end`: later than op_seconds said where the GPU's sharing (the other stream,
  // a transfer's interference) slowed it, as it slows every GPU; the clocks move on by as much.
  void op_ended(int stream, double end);

  int size() const { return static_cast<int>(gpus_.size() + member_rank_.size()); }
  // Clocks kept: every GPU's, or past max_clocks the slowed GPUs' and one per group.
  int clock_count() const { return static_cast<int>(gpus_.size() + groups_.size()); }
  bool drawn() const { return !groups_.empty(); }

  // For a fold per pipeline replica (sim/statistical_fold.h), which moves the GPUs' clocks where
  // each waited for its own replica (a TP group, a stage's message) rather than for all:
  // each GPU's clock on `stream`, in the order of `ranks` (without order statistics: that fold
  // keeps every clock); when the extreme's last op ended.
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
  // A group's clock on one stream, since the interval began (`base`, moved on by stretches).
  struct GroupClock {
    double u = 0.5;  // this interval's uniform
    double z = 0;    // Phi^-1(u^(1/ties))
    double base = 0; // where the interval began
    double mean = 0; // the leader's sum since then: mean, variance (seconds)
    double variance = 0;
    double clock = 0;       // base + the sum's quantile, never moving back
    std::size_t leader = 0; // index into member_rank_
    double ties = 1;        // GPUs tied with it (before any micro-batch projects the sums)
    std::size_t top = 0;    // the longest sequence of the current micro-batch, and its ties
    double top_ties = 1;
  };
  struct Group {
    std::size_t first = 0, count = 0; // member_rank_[first, first + count)
    std::mt19937_64 rng;
    std::array<GroupClock, 2> stream;
  };
  // Per stream: the grouped GPUs' sums since the interval began, up to the current micro-batch,
  // their length ratios in it, and the micro-batch's cost as a r + b r^2 (its variance as
  // va r^2 + vb r^3 + vc r^4) so far, plus what every GPU ran alike.
  struct Members {
    std::vector<double> mean, variance, ratio;
    bool has_mb = false, folded = false, has_previous = false, starts = false;
    MicroBatch mb{-1, -1};
    double a = 0, b = 0, va = 0, vb = 0, vc = 0;
    // The whole micro-batch's (not reset where the interval restarts), and the previous one's:
    // what projects the current micro-batch's cost.
    std::array<double, 5> whole{}, previous{};
    double alike_mean = 0, alike_variance = 0;
  };
  void restart_groups(int stream, double now);
  void next_micro_batch(int stream, MicroBatch mb);
  void choose_leader(Group& g, int stream);
  double group_quantile(const GroupClock& c) const;

  const scenario::Scenario& scenario_;
  double nominal_speed_;
  std::vector<Gpu> gpus_;
  std::vector<int> member_rank_; // the grouped GPUs, group by group
  std::vector<Group> groups_;
  std::array<Members, 2> members_;
  std::vector<std::pair<double, double>> reach_; // choose_leader's scratch
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
