#include "sim/collective/fabric.h"

#include "sim/simcall_batch.h"

#include <fmt/format.h>

#include <algorithm>
#include <span>

namespace overlapsim::sim::collective {

namespace sg4 = simgrid::s4u;

namespace {
// A well-mixed hash of a collective's instance key (splitmix64's finaliser): which member of a
// collective ends last, where that is chance, without a generator whose state depends on the
// order the actors run in.
std::uint64_t mixed(const InstanceKey& key) {
  auto x = static_cast<std::uint64_t>(std::get<0>(key)) * 0x9E3779B97F4A7C15ULL ^
           static_cast<std::uint64_t>(std::get<1>(key)) * 0xBF58476D1CE4E5B9ULL ^
           static_cast<std::uint64_t>(std::get<2>(key));
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ULL;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

} // namespace

sg4::Mailbox* Fabric::mailbox(const Scope& s, int src, int dst) {
  auto name = fmt::format("g{}.{}:{}>{}", s.group.id, s.tag, src, dst);
  auto& slot = mailboxes_[name];
  if (!slot)
    slot = sg4::Mailbox::by_name(name);
  return slot;
}

void Fabric::interfered(const Scope& s, const std::vector<int>& ends,
                        const std::function<void()>& move) {
  // Data moves on every end's GPU from now on: the comm stream takes its share of the GPU, and
  // compute on it meanwhile slows the transfer (made up once the flows end).
  std::vector<double> comm_shares, compute_shares;
  for (const int r : ends) {
    comm_shares.push_back(comm_share(s, r));
    compute_shares.push_back(compute_share(s, r));
  }
  in_one_simcall([&] {
    for (std::size_t i = 0; i < ends.size(); ++i)
      interference_.begin(ends[i], comm_shares[i]);
  });
  const auto computed = compute_interference_.snapshot(ends);
  move();
  compute_interference_.make_up(ends, computed, compute_shares);
  in_one_simcall([&] {
    for (std::size_t i = 0; i < ends.size(); ++i)
      interference_.end(ends[i], comm_shares[i]);
  });
}

void Fabric::fused(const Scope& s, double wait,
                   const std::function<std::vector<Flow>()>& make_flows) {
  fused_plan(s, [&] {
    Plan p{wait, make_flows()};
    if (const auto held = hold(p.flows))
      p.wait += *held;
    return p;
  });
}

std::optional<double> Fabric::hold(const std::vector<Flow>& flows) {
  const double uplinks = uplink_time(flows);
  if (uplinks <= 0)
    return std::nullopt;
  // Alpha-beta flows run at link speed: held to the uplinks' time where that is longer.
  double alone = 0;
  for (const auto& f : flows)
    alone = std::max(alone, f.bytes / bandwidth(f.src, f.dst));
  return std::max(0.0, uplinks - alone);
}

void Fabric::fused_ring(const Scope& s, double wait, double bytes) {
  fused_plan(s, [&] {
    const Group& g = s.group;
    const int n = g.size();
    const auto ring = [&] {
      std::vector<Flow> flows;
      flows.reserve(static_cast<std::size_t>(n));
      for (int k = 0; k < n; ++k)
        flows.push_back({g.ranks[static_cast<std::size_t>(k)],
                         g.ranks[static_cast<std::size_t>((k + 1) % n)], bytes});
      return flows;
    };
    RingShape& shape = ring_shapes_[g.id];
    if (!shape.made) {
      // fused_plan runs only the flows of simulated senders: the same ones, in the same order.
      for (const auto& f : ring())
        if (platform_.classes.simulated(f.src))
          shape.running.emplace_back(f.src, f.dst);
      shape.made = true;
    }
    // The hold is a function of the flows alone, and every flow of the ring carries `bytes`:
    // kept per bytes, it is the number the whole ring gives, not one scaled from another size.
    auto [held, fresh] = shape.holds.try_emplace(bytes);
    if (fresh)
      held->second = hold(ring());
    Plan p{wait, {}};
    p.flows.reserve(shape.running.size());
    for (const auto& [src, dst] : shape.running)
      p.flows.push_back({src, dst, bytes});
    if (held->second)
      p.wait += *held->second;
    return p;
  });
}

void Fabric::fused_plan(const Scope& s, const std::function<Plan()>& plan) {
  const InstanceKey key{s.group.id, s.seq, s.tag};
  auto& slot = instances_[key];
  if (!slot)
    slot = std::make_shared<Instance>();
  const auto instance = slot; // keep it alive while waiting
  const std::vector<int>& members = simulated_members(s.group);
  const int n = static_cast<int>(members.size());
  if (const int arrival = instance->arrived++; arrival + 1 < n) {
    instance->done->acquire();
    if (arrival == instance->late_arrival)
      sg4::this_actor::sleep_for(instance->late_by);
    return;
  }
  instances_.erase(key);
  const RankClasses& classes = platform_.classes;
  // Every rank is in: data moves from now on, on every member's GPU.
  interfered(s, members, [&] {
    // The latencies of every step but the last (which each flow pays itself), then one flow per
    // sender with all its steps' bytes, between the ranks' own hosts. Folded, the flows the
    // representative node sends stand for every node's (sim/rank_classes.h).
    const auto [wait, flows] = plan();
    if (wait > 0)
      sg4::this_actor::sleep_for(wait);
    std::vector<Flow> running;
    running.reserve(flows.size());
    for (const auto& f : flows)
      if (classes.simulated(f.src))
        running.push_back(f);
    run_flows(running);
  });
  // The member that called last ends last where the profile measured a lag: its peers' pieces
  // waited for it, its own reach them one after the other (Gloo's pieced reduce-scatter over an
  // emulated 100 Mbit/s link: the late caller ended 5-10 ms after the other in 501 of 502 steps,
  // whatever the gap between the calls). Where it measured only a spread of the ends, which
  // member ends last is chance: one picked from the instance's key, the same in every rerun.
  // Read before the release: the released members drop it.
  if (const auto late = late_ends_.find(key); late != late_ends_.end()) {
    instance->late_by = late->second.seconds;
    instance->late_arrival =
        late->second.last_caller ? n - 1 : static_cast<int>(mixed(key) % static_cast<unsigned>(n));
  }
  in_one_simcall([&] {
    for (int i = 1; i < n; ++i)
      instance->done->release();
  });
  if (instance->late_arrival == n - 1)
    sg4::this_actor::sleep_for(instance->late_by);
}

void Fabric::run_flows(const std::vector<Flow>& flows) {
  // SimGrid 3.32 keeps an actor's activities in a std::list and scans all of it each time one of
  // them ends (CommImpl::finish): k flows started by one actor cost k^2 / 2 steps (34.5% of a
  // 1,024-GPU run with 5,100 flows per all-reduce, issue 64.1). Past kFlowsPerActor, helper actors
  // on this host start and wait for a slice each, all at this instant and in the same order: the
  // same flows, the same times, k x kFlowsPerActor steps.
  constexpr std::size_t kFlowsPerActor = 64;
  const auto run = [this](std::span<const Flow> slice) {
    std::vector<sg4::CommPtr> comms;
    comms.reserve(slice.size());
    in_one_simcall([&] {
      for (const auto& [src, dst, bytes] : slice)
        start_flow(src, dst, bytes, comms);
    });
    sg4::Comm::wait_all(comms);
  };
  if (flows.size() <= kFlowsPerActor) {
    run(flows);
    return;
  }
  std::vector<sg4::ActorPtr> helpers;
  for (std::size_t at = 0; at < flows.size(); at += kFlowsPerActor) {
    const std::span<const Flow> slice(flows.data() + at,
                                      std::min(kFlowsPerActor, flows.size() - at));
    helpers.push_back(
        sg4::Actor::create("flows", sg4::this_actor::get_host(), [run, slice] { run(slice); }));
  }
  for (const auto& helper : helpers)
    helper->join();
}

void Fabric::start_flow(int src, int dst, double bytes, std::vector<sg4::CommPtr>& comms,
                        bool direct) {
  for (int k = 0; k < platform_.lanes(src, dst); ++k) {
    const Platform::Lane lane = platform_.lane(src, dst, k, direct);
    auto comm = sg4::Comm::sendto_init(lane.from, lane.to);
    comm->set_payload_size(static_cast<std::uint64_t>(bytes * lane.share));
    comm->start();
    comms.push_back(std::move(comm));
  }
}

void Fabric::exchange(const Scope& s, int self, int dst, double send_bytes, int src) {
  // A ring step of the `steps` fidelity: its GPU counts as moving data for the whole step (the
  // wait for the neighbour's message included; the fused default tells the two apart).
  interfered(s, {self}, [&] {
    sg4::CommPtr send, recv;
    if (dst >= 0)
      send =
          mailbox(s, self, dst)->put_async(&payload_token, static_cast<std::uint64_t>(send_bytes));
    if (src >= 0)
      recv = mailbox(s, src, self)->get_async<char>(&payload_sink);
    if (send)
      send->wait();
    if (recv)
      recv->wait();
  });
}

} // namespace overlapsim::sim::collective
