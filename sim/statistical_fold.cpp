#include "sim/statistical_fold.h"

#include <algorithm>

namespace overlapsim::sim {

StatisticalFold::StatisticalFold(const scenario::Scenario& s, const RankClasses& classes,
                                 double nominal_speed) {
  if (classes.replicas.empty()) {
    of_.try_emplace(classes.extreme, s, classes.slowest_of(), nominal_speed, statistical_clocks());
    for (const int e : classes.extremes) // GPU types: one per type (sim/type_classes.h)
      of_.try_emplace(e, s, classes.slowest_of(e), nominal_speed, statistical_clocks());
    return;
  }
  const parallel::ParallelLayout& layout = layout_.emplace(parallel::ParallelLayout::of(s));
  // One extreme replica per set (with GPU types, per type pattern: sim/type_classes.h), its own
  // data-parallel index last.
  for (const auto& replicas : classes.replicas)
    for (int t = 0; t < layout.tensor(); ++t)
      for (int p = 0; p < layout.pipeline(); ++p) {
        std::vector<int> ranks; // replica by replica, in the set's order
        for (const int d : replicas)
          ranks.push_back(layout.rank_of({t, d, p}));
        of_.try_emplace(layout.rank_of({t, replicas.back(), p}), s, ranks, nominal_speed);
      }
}

SlowestOf* StatisticalFold::of(int rank) {
  const auto it = of_.find(rank);
  return it == of_.end() ? nullptr : &it->second;
}

void StatisticalFold::tensor_synced(int rank, std::int64_t seq, int stream, double now) {
  if (!layout_ || !of(rank))
    return;
  const std::vector<int> members = layout_->tensor_group(rank);
  auto [last, fresh] = tensor_synced_.try_emplace(members.front(), seq);
  if (fresh || last->second < seq) {
    last->second = seq;
    // The first member back moves every member's clocks (all came back at `now`, none has run
    // another op since it arrived).
    double arrived = 0;
    for (const int m : members)
      arrived = std::max(arrived, of(m)->ended(stream));
    const double took = std::max(0.0, now - arrived);
    const std::size_t replicas = of(rank)->clocks(stream).size();
    for (std::size_t r = 0; r < replicas; ++r) {
      double latest = 0;
      for (const int m : members)
        latest = std::max(latest, of(m)->clocks(stream)[r]);
      for (const int m : members)
        of(m)->clocks(stream)[r] = latest + took;
    }
  }
  of(rank)->explained(stream, now);
}

void StatisticalFold::sent(int from, int to, int tag, int stream, double now) {
  if (!layout_ || !of(from) || !of(to))
    return;
  messages_[{from, to, tag}].push_back({of(from)->clocks(stream), now});
}

void StatisticalFold::received(int from, int to, int tag, int stream, double posted, double now) {
  if (!layout_ || !of(from) || !of(to))
    return;
  auto& queue = messages_[{from, to, tag}];
  if (queue.empty())
    return;
  const Message message = std::move(queue.front());
  queue.pop_front();
  SlowestOf& receiver = *of(to);
  receiver.waited(stream, posted); // what it waited for before posting is everyone's
  // The transfer, from when both sides were ready (a send waits for its receive), as long for
  // every replica.
  const double transfer = std::max(0.0, now - std::max(message.sent, posted));
  auto& clocks = receiver.clocks(stream);
  for (std::size_t r = 0; r < clocks.size() && r < message.clocks.size(); ++r)
    clocks[r] = std::max(clocks[r], message.clocks[r]) + transfer;
  receiver.explained(stream, now);
}

} // namespace overlapsim::sim
