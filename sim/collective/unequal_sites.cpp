#include "sim/collective/unequal_sites.h"

#include "sim/collective/ring.h"

#include <algorithm>
#include <cstdint>
#include <unordered_map>

namespace overlapsim::sim::collective {

namespace sg4 = simgrid::s4u;

double slice_overlap(int i, int n, int j, int m) {
  // In units of 1 / (n m): slice i of n is [i m, (i + 1) m), slice j of m is [j n, (j + 1) n).
  const std::int64_t lo = std::max(std::int64_t{i} * m, std::int64_t{j} * n);
  const std::int64_t hi = std::min(std::int64_t{i + 1} * m, std::int64_t{j + 1} * n);
  return hi > lo ? static_cast<double>(hi - lo) / (static_cast<double>(n) * m) : 0.0;
}

namespace {
// The slices of site `to` (m members) that overlap slice i of n: [first, last].
std::pair<int, int> overlapping(int i, int n, int m) {
  const auto first = static_cast<int>(std::int64_t{i} * m / n);
  const auto last = static_cast<int>((std::int64_t{i + 1} * m - 1) / n);
  return {first, last};
}
} // namespace

const SiteSlices* UnequalSites::slices(const Group& g) {
  if (!unequal_ || !fabric_.has_sites())
    return nullptr;
  auto [it, fresh] = slices_.try_emplace(g.id);
  if (!fresh)
    return it->second.get();
  std::vector<std::vector<int>> members; // per site, in order of first member
  std::unordered_map<int, int> index_of_site;
  std::vector<int> site, position;
  for (const int r : g.ranks) {
    const auto [at, first] =
        index_of_site.try_emplace(fabric_.site_of(r), static_cast<int>(members.size()));
    if (first)
      members.emplace_back();
    auto& m = members[static_cast<std::size_t>(at->second)];
    site.push_back(at->second);
    position.push_back(static_cast<int>(m.size()));
    m.push_back(r);
  }
  const bool even = std::all_of(members.begin(), members.end(),
                                [&](const auto& m) { return m.size() == members.front().size(); });
  if (members.size() < 2 || even)
    return nullptr; // one site, or sites.h's equal ones
  auto sl = std::make_unique<SiteSlices>();
  const int K = static_cast<int>(members.size());
  for (const auto& m : members)
    sl->intra.push_back(&fabric_.topology().group(m));
  sl->site = site;
  const auto size = [&](int s) {
    return static_cast<int>(members[static_cast<std::size_t>(s)].size());
  };
  for (std::size_t k = 0; k < g.ranks.size(); ++k) {
    const int s = site[k], i = position[k], n = size(s);
    const int to = (s + 1) % K, from = (s + K - 1) % K;
    auto& next = sl->next.emplace_back();
    const auto [first, last] = overlapping(i, n, size(to));
    for (int j = first; j <= last; ++j)
      if (const double f = slice_overlap(i, n, j, size(to)); f > 0) {
        const int peer = members[static_cast<std::size_t>(to)][static_cast<std::size_t>(j)];
        next.emplace_back(peer, f);
        sl->max_latency = std::max(sl->max_latency, fabric_.latency(g.ranks[k], peer));
      }
    auto& prev = sl->prev.emplace_back();
    const auto [lo, hi] = overlapping(i, n, size(from));
    for (int j = lo; j <= hi; ++j)
      if (slice_overlap(i, n, j, size(from)) > 0)
        prev.push_back(members[static_cast<std::size_t>(from)][static_cast<std::size_t>(j)]);
  }
  it->second = std::move(sl);
  return it->second.get();
}

double UnequalSites::across(int rank, const Scope& s, const SiteSlices& sl, int steps,
                            double array) {
  const int K = static_cast<int>(sl.intra.size());
  // A ring step of a piece of length l carries l / K; a member sends `steps` of them per piece
  // it holds, to the next site's holder.
  const double piece = array / K;
  const auto i = static_cast<std::size_t>(s.group.index_of(rank));
  double sent = 0;
  for (const auto& [peer, f] : sl.next[i])
    sent += steps * piece * f;
  if (fabric_.steps()) {
    // Each step a piece's bytes to every overlapping member of the next site, from every one of
    // the previous site.
    fabric_.interfered(s, {rank}, [&] {
      for (int k = 0; k < steps; ++k) {
        std::vector<sg4::CommPtr> comms;
        for (const auto& [peer, f] : sl.next[i])
          comms.push_back(fabric_.mailbox(s, rank, peer)
                              ->put_async(&payload_token, static_cast<std::uint64_t>(piece * f)));
        for (const int peer : sl.prev[i])
          comms.push_back(fabric_.mailbox(s, peer, rank)->get_async<char>(&payload_sink));
        sg4::Comm::wait_all(comms);
      }
    });
    return sent;
  }
  // Fused: the latencies of every step but the last, then one flow per (member, peer); folded,
  // the running members' flows only. On a folded fat tree, held to its cables as every node's
  // flows load them (Fabric::fused): linear in the bytes, so worked out once per group and
  // step count for an array of one byte (every node's flows each call was O(N) route look-ups).
  const RankClasses& classes = fabric_.platform().classes;
  const auto flows_of = [&](double bytes_per_piece, bool every) {
    std::vector<Flow> flows;
    for (std::size_t k = 0; k < s.group.ranks.size(); ++k) {
      const int r = s.group.ranks[k];
      if (every || classes.simulated(r))
        for (const auto& [peer, f] : sl.next[k])
          flows.push_back({r, peer, steps * bytes_per_piece * f});
    }
    return flows;
  };
  double hold = 0;
  if (classes.folded && fabric_.platform().fat_tree) {
    const auto [it, fresh] = hold_per_byte_.try_emplace({s.group.id, steps}, 0.0);
    if (fresh) {
      const auto every = flows_of(1.0 / K, true);
      double alone = 0;
      for (const auto& f : every)
        alone = std::max(alone, f.bytes / fabric_.bandwidth(f.src, f.dst));
      it->second = std::max(0.0, fabric_.uplink_time(every) - alone);
    }
    hold = it->second * array;
  }
  fabric_.fused_plan(s, [&] {
    return Fabric::Plan{(steps - 1) * sl.max_latency + hold, flows_of(piece, false)};
  });
  return sent;
}

CollectiveOutcome UnequalSites::run(int rank, const Scope& s, double bytes, int /*root*/) {
  const SiteSlices& sl = *slices(s.group);
  const auto i = static_cast<std::size_t>(s.group.index_of(rank));
  const Group& intra = *sl.intra[static_cast<std::size_t>(sl.site[i])];
  const int n = intra.size(), K = static_cast<int>(sl.intra.size());
  const int tag = s.group.id + 1; // as sites.h: one collective per s.seq
  // A ring over the site's members, n - 1 steps of 1 / n of `array`.
  const auto in_site = [&](int phase, double array) {
    return n > 1 ? ring_steps(fabric_, rank, Scope{intra, s.seq * 3 + phase, tag, s.op}, n - 1,
                              array / n)
                       .bytes_sent
                 : 0.0;
  };
  const Scope cross{s.group, s.seq * 3 + 1, tag, s.op};
  double inside = 0, wan = 0;
  if (s.op == CollectiveOp::all_reduce) {
    inside += in_site(0, bytes);
    wan = across(rank, cross, sl, 2 * (K - 1), bytes);
    inside += in_site(2, bytes);
  } else if (s.op == CollectiveOp::reduce_scatter) {
    inside = in_site(0, bytes);
    wan = across(rank, cross, sl, K - 1, bytes);
  } else { // all-gather: `bytes` is the shard
    const double array = bytes * s.group.size();
    wan = across(rank, cross, sl, K - 1, array);
    inside = in_site(2, array);
  }
  CollectiveOutcome out{inside + wan,
                        fabric_.steps() ? "sites/unequal/steps" : "sites/unequal/fused"};
  fabric_.add_class(out, rank, next_rank(intra, rank), inside);
  fabric_.add_class(out, rank, sl.next[i].front().first, wan);
  out.classified = true;
  return out;
}

} // namespace overlapsim::sim::collective
