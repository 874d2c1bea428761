#include "trace/peer_arrivals.h"

#include "trace/events_by_worker.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>

namespace overlapsim {

namespace {

constexpr double kEps = 1e-9;

// Which interned names are "p2p": one string comparison per name instead of one per event.
std::vector<char> p2p_names(const Trace& t) {
  std::vector<char> out(t.names.size(), 0);
  for (std::size_t i = 0; i < t.names.size(); ++i)
    out[i] = t.names[i] == "p2p";
  return out;
}

// A collective instance: the k-th op with this name and step on each participating GPU of its group
// (an algorithm may run the same-named collective twice in a step, like ZeRO's all-gathers before
// the forward and the backward; under 3D parallelism each stage's data-parallel group runs its own
// "all-reduce bucket 3").
struct InstanceKey {
  std::int32_t name;
  std::int32_t step;
  std::int32_t group;
  std::int32_t occurrence;
  bool operator==(const InstanceKey&) const = default;
};

// Issue 64.1: hashed, not ordered. The numbers are handed out in order of first appearance, which
// no container order enters, so they are the same as with std::map; at 1,024 GPUs the maps'
// O(log n) lookups of 5.7 million events (each a chain of cache misses) were a third of the
// parent's analysis.
std::uint64_t mix(std::uint64_t x) { // splitmix64's finaliser
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ULL;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}
std::uint64_t pack(std::int32_t a, std::int32_t b) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) |
         static_cast<std::uint32_t>(b);
}
struct KeyHash {
  std::size_t operator()(const InstanceKey& k) const {
    return mix(pack(k.name, k.step) ^ mix(pack(k.group, k.occurrence)));
  }
};

// Each GPU's collectives numbered per (name, step, group) in the order they started, ties in trace
// order: the numbers one pass over the whole trace in start order gives, counted one worker at a
// time. Each distinct key gets an instance number.
std::vector<std::int32_t> number_instances(const Trace& t, const std::vector<char>& p2p,
                                           std::size_t& instances) {
  std::vector<std::int32_t> out(t.events.size(), -1);
  std::int32_t workers = 0;
  for (const auto& e : t.events)
    workers = std::max(workers, e.worker + 1);
  auto grouped = events_by_worker(t, static_cast<std::size_t>(workers), [&p2p](const auto& e) {
    return e.category == OpCategory::comm &&
           !(e.detail >= 0 && p2p[static_cast<std::size_t>(e.detail)]);
  });
  auto& order = grouped.index; // each worker's part sorted by start in place
  // (name, step, group) -> occurrences so far on this worker; the key with its occurrence -> the
  // instance's number.
  std::unordered_map<InstanceKey, std::int32_t, KeyHash> seen, number;
  for (std::size_t w = 0; w < static_cast<std::size_t>(workers); ++w) {
    const auto begin = order.begin() + static_cast<std::ptrdiff_t>(grouped.first[w]);
    const auto end = order.begin() + static_cast<std::ptrdiff_t>(grouped.first[w + 1]);
    std::stable_sort(begin, end,
                     [&](auto a, auto b) { return t.events[a].start < t.events[b].start; });
    seen.clear();
    for (auto it = begin; it != end; ++it) {
      const auto& e = t.events[*it];
      const InstanceKey key{e.name, e.step, e.group, seen[{e.name, e.step, e.group, 0}]++};
      out[*it] = number.try_emplace(key, static_cast<std::int32_t>(number.size())).first->second;
    }
  }
  instances = number.size();
  return out;
}

// Per receive, the send it completes with (same exchange name, step and end): the receive waited
// for it. Receives without one are left out; in trace order.
std::vector<std::pair<std::size_t, std::size_t>> match_sends(const Trace& t,
                                                             const std::vector<char>& p2p) {
  const auto is_p2p = [&p2p](const TraceEvent& e) {
    return e.detail >= 0 && p2p[static_cast<std::size_t>(e.detail)];
  };
  std::map<std::tuple<std::string, int, double>, std::size_t> sends;
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    const auto& e = t.events[i];
    if (is_p2p(e) && t.name_of(e.name).starts_with("send "))
      sends[{t.name_of(e.name).substr(5), e.step, e.end}] = i;
  }
  std::vector<std::pair<std::size_t, std::size_t>> out;
  if (sends.empty())
    return out;
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    const auto& e = t.events[i];
    if (!is_p2p(e) || !t.name_of(e.name).starts_with("recv "))
      continue;
    const std::string exchange = t.name_of(e.name).substr(5);
    auto it = sends.lower_bound({exchange, e.step, e.end - kEps});
    if (it != sends.end() && std::get<0>(it->first) == exchange &&
        std::get<1>(it->first) == e.step && std::get<2>(it->first) <= e.end + kEps)
      out.emplace_back(i, it->second);
  }
  return out;
}

} // namespace

PeerArrivals::PeerArrivals(const Trace& t) {
  std::size_t instances = 0;
  const auto p2p = p2p_names(t);
  instance_ = number_instances(t, p2p, instances);
  // -infinity: the first start wins, as the latest of all starts.
  latest_.assign(instances, -std::numeric_limits<double>::infinity());
  for (std::size_t i = 0; i < t.events.size(); ++i)
    if (const auto k = instance_[i]; k >= 0) {
      auto& l = latest_[static_cast<std::size_t>(k)];
      l = std::max(l, t.events[i].start);
    }
  sends_ = match_sends(t, p2p);
  // A message moves once both ends are posted: the receive waits for its send, and the send for
  // its receive (a rendezvous, as NCCL's send/recv and SimGrid's mailboxes); a send several
  // receives match takes the last one's post.
  std::vector<std::pair<std::size_t, double>> times;
  for (const auto& [receive, send] : sends_) {
    times.emplace_back(receive, t.events[send].start);
    times.emplace_back(send, t.events[receive].start);
  }
  std::stable_sort(times.begin(), times.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& entry : times)
    if (!p2p_.empty() && p2p_.back().first == entry.first)
      p2p_.back().second = entry.second; // the later assignment
    else
      p2p_.push_back(entry);
}

double PeerArrivals::operator[](std::size_t event) const {
  if (const auto k = instance_[event]; k >= 0)
    return latest_[static_cast<std::size_t>(k)];
  const auto it =
      std::lower_bound(p2p_.begin(), p2p_.end(), event,
                       [](const auto& entry, std::size_t e) { return entry.first < e; });
  return it != p2p_.end() && it->first == event ? it->second : -1;
}

std::ptrdiff_t PeerArrivals::matched_send(std::size_t event) const {
  const auto it =
      std::lower_bound(sends_.begin(), sends_.end(), event,
                       [](const auto& entry, std::size_t e) { return entry.first < e; });
  return it != sends_.end() && it->first == event ? static_cast<std::ptrdiff_t>(it->second) : -1;
}

std::vector<double> PeerArrivals::per_event() const {
  std::vector<double> out(instance_.size());
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = (*this)[i];
  return out;
}

} // namespace overlapsim
