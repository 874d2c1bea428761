#include "algorithms/partial_sync_schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace overlapsim {

double LayerCosts::total_bp() const {
  return std::accumulate(bp_s.begin(), bp_s.end(), 0.0);
}
double LayerCosts::total_comm() const {
  return std::accumulate(comm_s.begin(), comm_s.end(), 0.0);
}

namespace {

void check(const LayerCosts& costs, int H) {
  if (costs.bp_s.size() != costs.comm_s.size() || costs.bp_s.empty())
    throw std::invalid_argument("layer costs: expected one backward and one comm time per layer");
  if (H < 1)
    throw std::invalid_argument(fmt::format("partial synchronisation: H must be >= 1, got {}", H));
}

// Wait of one iteration whose all-reduces are those of the layers for which `synced` holds.
template <typename Synced> double iteration_wait(const LayerCosts& costs, Synced synced) {
  double t = 0;         // backward clock
  double comm_free = 0; // when the communication stream is free
  for (int l = costs.layers() - 1; l >= 0; --l) {
    t += costs.bp_s[l];
    if (synced(l))
      comm_free = std::max(comm_free, t) + costs.comm_s[l];
  }
  return std::max(0.0, comm_free - t);
}

// Algorithm 2's search state: layers in backward order b = 0 (output) .. L-1 (input).
class Search {
public:
  Search(const LayerCosts& costs, int H) : costs_(costs), H_(H), groups_(H) {
    const int L = costs.layers();
    // bp_below_[b]: backward time of layers b .. L-1 (those still to run when b starts).
    bp_below_.assign(L + 1, 0.0);
    for (int b = L - 1; b >= 0; --b)
      bp_below_[b] = bp_below_[b + 1] + bp(b);
  }

  Assignment run() {
    solve(0, 0);
    return best_;
  }

private:
  int layer(int b) const { return costs_.layers() - 1 - b; }
  double bp(int b) const { return costs_.bp_s[layer(b)]; }
  double comm(int b) const { return costs_.comm_s[layer(b)]; }

  void solve(int b, int h) {
    const int L = costs_.layers();
    if (b == L)
      return record();
    auto& g = groups_[h];
    if (h == H_ - 1) { // lines 12-16: the last iteration takes every layer left
      const auto size = g.size();
      for (int i = b; i < L; ++i)
        g.push_back(i);
      record();
      g.resize(size);
      return;
    }
    if (g.empty()) { // line 17: at-least-one assignment
      assign_and_continue(b, h);
      return;
    }
    // t_BP^{L_{h:H}} - t_BP^{h0}: backward left after the group's first layer (Eq. 11).
    const double hide = bp_below_[g.front()] - bp(g.front());
    double group_comm = 0;
    for (int i : g)
      group_comm += comm(i);
    if (hide >= group_comm + comm(b)) { // line 20: optimal hiding
      assign_and_continue(b, h);
    } else if (hide < group_comm) { // line 23: delayed CO assignment
      solve(b, h + 1);
    } else { // lines 25-30: search both
      assign_and_continue(b, h);
      solve(b, h + 1);
    }
  }

  void assign_and_continue(int b, int h) {
    groups_[h].push_back(b);
    solve(b + 1, h);
    groups_[h].pop_back();
  }

  void record() {
    Assignment a(costs_.layers(), 0);
    for (int h = 0; h < H_; ++h)
      for (int b : groups_[h])
        a[layer(b)] = h;
    // Ties go to the later solution, i.e. the delayed branch (lines 29-30), as the authors' code
    // does on the data README's toy case ({L2: 1} rather than {L2: 0}, both W = 6).
    const double w = total_wait(costs_, a, H_);
    if (w <= best_wait_) {
      best_wait_ = w;
      best_ = std::move(a);
    }
  }

  const LayerCosts& costs_;
  int H_;
  std::vector<std::vector<int>> groups_;
  std::vector<double> bp_below_;
  Assignment best_;
  double best_wait_ = std::numeric_limits<double>::infinity();
};

// Enumerates the cut points of a sequential split: group h holds backward positions
// [cut[h], cut[h+1]).
void enumerate_splits(const LayerCosts& costs, int H, std::vector<int>& cuts, Assignment& best,
                      double& best_wait) {
  const int L = costs.layers();
  if (static_cast<int>(cuts.size()) == H) {
    Assignment a(L, 0);
    for (int h = 0; h < H; ++h) {
      const int end = h + 1 < H ? cuts[h + 1] : L;
      for (int b = cuts[h]; b < end; ++b)
        a[L - 1 - b] = h;
    }
    const double w = total_wait(costs, a, H);
    if (w < best_wait) {
      best_wait = w;
      best = std::move(a);
    }
    return;
  }
  for (int c = cuts.back(); c <= L; ++c) {
    cuts.push_back(c);
    enumerate_splits(costs, H, cuts, best, best_wait);
    cuts.pop_back();
  }
}

} // namespace

std::vector<double> period_waits(const LayerCosts& costs, const Assignment& assignment, int H) {
  check(costs, H);
  if (static_cast<int>(assignment.size()) != costs.layers())
    throw std::invalid_argument("partial synchronisation: one iteration per layer expected");
  std::vector<double> waits(H);
  for (int h = 0; h < H; ++h)
    waits[h] = iteration_wait(costs, [&](int l) { return assignment[l] == h; });
  return waits;
}

double total_wait(const LayerCosts& costs, const Assignment& assignment, int H) {
  const auto w = period_waits(costs, assignment, H);
  return std::accumulate(w.begin(), w.end(), 0.0);
}

Assignment equal_number_partition(int layers, int H) {
  if (H < 1 || layers < 1)
    throw std::invalid_argument("equal-number partition: expected layers >= 1 and H >= 1");
  const int per_group = (layers + H - 1) / H;
  Assignment a(layers);
  for (int b = 0; b < layers; ++b)
    a[layers - 1 - b] = std::min(b / per_group, H - 1);
  return a;
}

Assignment dreamddp_schedule(const LayerCosts& costs, int H) {
  check(costs, H);
  return Search(costs, H).run();
}

Assignment brute_force_schedule(const LayerCosts& costs, int H) {
  check(costs, H);
  if (costs.layers() > 14)
    throw std::invalid_argument(
        fmt::format("brute-force schedule: at most 14 layers, got {}", costs.layers()));
  Assignment best;
  double best_wait = std::numeric_limits<double>::infinity();
  std::vector<int> cuts{0};
  enumerate_splits(costs, H, cuts, best, best_wait);
  return best;
}

std::vector<std::vector<int>> bubble_filling(const LayerCosts& costs, const Assignment& assignment,
                                             int H) {
  const auto base = period_waits(costs, assignment, H);
  std::vector<std::vector<int>> extra(H);
  const int L = costs.layers();
  for (int h = 1; h < H; ++h) {
    std::vector<bool> synced(L);
    for (int l = 0; l < L; ++l)
      synced[l] = assignment[l] == h;
    for (int l = L - 1; l >= 0 && assignment[l] < h; --l) {
      synced[l] = true;
      if (iteration_wait(costs, [&](int i) { return synced[i]; }) > base[h] + 1e-15) {
        synced[l] = false;
        break;
      }
      extra[h].push_back(l);
    }
  }
  return extra;
}

CostModelTimes cost_model_iteration_times(const LayerCosts& costs, int H, int iterations) {
  check(costs, H);
  const double n = iterations;
  const double periods = static_cast<double>(iterations / H);
  const double bp = costs.total_bp();
  const double comm = costs.total_comm();
  CostModelTimes t;
  t.s_sgd = bp + comm;
  t.flsgd = bp + (periods - 1) * comm / n;
  t.plsgd_enp = bp + periods * total_wait(costs, equal_number_partition(costs.layers(), H), H) / n;
  t.dreamddp = bp + (periods - 1) * total_wait(costs, dreamddp_schedule(costs, H), H) / n;
  return t;
}

} // namespace overlapsim
