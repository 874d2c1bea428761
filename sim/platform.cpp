#include "sim/platform.h"

#include <fmt/format.h>

namespace overlapsim::sim {

namespace sg4 = simgrid::s4u;

void configure_engine(sg4::Engine& engine, const scenario::ClusterSpec& cluster) {
  if (cluster.network_model == scenario::NetworkModel::exact) {
    // Fluid max-min sharing with no TCP corrections: a flow takes latency + size / bandwidth.
    // CM02 alone still caps each flow's rate at TCP-gamma / (2 x latency); gamma 0 removes that.
    engine.set_config("network/model:CM02");
    engine.set_config("network/crosstraffic:0");
    engine.set_config("network/TCP-gamma:0");
  } else {
    // SimGrid's default LV08 TCP model: latency x 13.01, bandwidth x 0.97, 5% reverse-path ACK
    // cross-traffic, and the TCP window cap TCP-gamma / (2 x route latency) per flow (gamma 4 MiB).
    engine.set_config("network/model:LV08");
  }
#if defined(__SANITIZE_ADDRESS__)
  // The sanitizer build (scripts/sanitize.sh): ASan cannot follow SimGrid's own stack switching
  // (the raw contexts of a SimGrid built without it), and its redzones make frames larger. Actors
  // run as threads with default stacks: slower, and only ever a test build.
  engine.set_config("contexts/factory:thread");
#else
  // Many actors (two per GPU plus one per async collective): small stacks, no guard pages at scale.
  engine.set_config("contexts/stack-size:128");
  if (cluster.world_size() > 8192)
    engine.set_config("contexts/guard-size:0");
#endif
}

std::pair<sg4::Host*, sg4::Host*> Platform::route_ends(int src, int dst) const {
  const int from = classes.representative(src);
  if (!classes.folded)
    return {gpus[static_cast<std::size_t>(from)], gpus[static_cast<std::size_t>(dst)]};
  const int per_node = classes.gpus_per_node;
  if (src / per_node == dst / per_node)
    return {gpus[static_cast<std::size_t>(from)],
            gpus[static_cast<std::size_t>(classes.representative(dst))]};
  // The same-position GPU of another node, as seen from the sender's (running) node.
  return {gpus[static_cast<std::size_t>(from)],
          remote[static_cast<std::size_t>(from / per_node * per_node + dst % per_node)]};
}

namespace {

// A GPU host's power states: its speed, and (interference) the speed left while its data moves.
std::vector<double> gpu_speeds(const scenario::ClusterSpec& c, const Platform& p, double speed) {
  if (!p.interference_pstate)
    return {speed};
  return {speed, speed * (1 - c.gpu.comm_interference)};
}

// The running nodes alone (see platform.h): per node, hosts for its GPUs and for the same GPUs of
// every other node, routes written out in one full zone (none between running nodes).
void build_folded(Platform& p, const scenario::ClusterSpec& c, double gpu_link_latency,
                  double gpu_link_bandwidth, double nic_latency) {
  const int per_node = c.gpus_per_node;
  auto* zone = sg4::create_full_zone("folded");
  p.remote.resize(static_cast<std::size_t>(c.world_size()));
  using Dir = sg4::LinkInRoute::Direction;
  for (const int node : p.classes.simulated_nodes()) {
    auto* nic = zone->create_split_duplex_link(fmt::format("nic{}", node),
                                               c.inter_node.bandwidth_Bps * c.nics_per_node)
                    ->set_latency(nic_latency);
    std::vector<sg4::Link*> links;
    const auto at = [&](int g) { return static_cast<std::size_t>(node * per_node + g); };
    for (int g = 0; g < per_node; ++g) {
      const int rank = node * per_node + g;
      p.gpus[at(g)] = zone->create_host(fmt::format("gpu{}", rank),
                                        gpu_speeds(c, p, p.nominal_speed / c.slowdown_of(rank)));
      p.remote[at(g)] = zone->create_host(fmt::format("node{}-remote{}", node, g), 1.0);
      links.push_back(
          zone->create_split_duplex_link(fmt::format("gpulink{}", rank), gpu_link_bandwidth)
              ->set_latency(gpu_link_latency));
    }
    for (int a = 0; a < per_node; ++a)
      for (int b = 0; b < per_node; ++b) {
        auto* up = links[static_cast<std::size_t>(a)];
        auto* down = links[static_cast<std::size_t>(b)];
        const std::vector<sg4::LinkInRoute> folded{
            {up, Dir::UP}, {nic, Dir::UP}, {nic, Dir::DOWN}, {down, Dir::DOWN}};
        if (a != b)
          zone->add_route(p.gpus[at(a)]->get_netpoint(), p.gpus[at(b)]->get_netpoint(), nullptr,
                          nullptr, {{up, Dir::UP}, {down, Dir::DOWN}}, false);
        zone->add_route(p.gpus[at(a)]->get_netpoint(), p.remote[at(b)]->get_netpoint(), nullptr,
                        nullptr, folded, false);
        // The way back, which the tcp model's reverse-path traffic takes: GPU a of another node
        // to GPU b here, folded the same way.
        zone->add_route(p.remote[at(a)]->get_netpoint(), p.gpus[at(b)]->get_netpoint(), nullptr,
                        nullptr, folded, false);
      }
  }
  zone->seal();
}

} // namespace

Platform build_platform(const scenario::ClusterSpec& c, const RankClasses& classes) {
  Platform p;
  const double speed = c.gpu.peak_flops_bf16 * c.gpu.efficiency;
  p.nominal_speed = speed;
  p.classes = classes;
  p.interference_pstate = c.gpu.comm_interference > 0;

  const bool multi_gpu = c.gpus_per_node > 1;
  const double gpu_link_latency = multi_gpu ? c.intra_node.latency_s / 2 : 0.0;
  // A single-GPU node has no NVLink: its GPU reaches the NIC over a link that never limits.
  const double gpu_link_bandwidth = multi_gpu ? c.intra_node.bandwidth_Bps : 1e15;
  double nic_latency = (c.inter_node.latency_s - 2 * gpu_link_latency) / 2;
  if (c.nodes > 1 && nic_latency < 0) {
    p.warnings.push_back(fmt::format(
        "inter-node latency {} s is below the intra-node latency {} s; inter-node messages take "
        "the intra-node latency",
        c.inter_node.latency_s, c.intra_node.latency_s));
    nic_latency = 0;
  }

  if (classes.folded) {
    p.gpus.resize(static_cast<std::size_t>(c.world_size()));
    build_folded(p, c, gpu_link_latency, gpu_link_bandwidth, nic_latency);
    return p;
  }
  auto* root = sg4::create_star_zone("cluster");
  std::vector<sg4::NetZone*> site_zone(static_cast<std::size_t>(c.nodes), root);
  std::vector<sg4::NetZone*> sites;
  for (std::size_t s = 0; s < c.sites.size() && c.sites.size() > 1; ++s) {
    auto* zone = sg4::create_star_zone(fmt::format("site{}", s));
    zone->set_parent(root);
    // The site's gateway sits in a zone of its own: SimGrid 3.32 resolves a route from a router of
    // a zone to a host of a nested zone with the host's id looked up in the outer zone (wrong
    // links, or an abort in StarZone::get_local_route once a node holds more hosts than the site
    // holds components).
    auto* switch_zone = sg4::create_star_zone(fmt::format("site{}-switch", s));
    switch_zone->set_parent(zone);
    auto* gw = switch_zone->create_router(fmt::format("site{}-gw", s));
    zone->add_route(switch_zone->get_netpoint(), nullptr, gw, nullptr, {}, true);
    auto* wan = root->create_split_duplex_link(fmt::format("wan{}", s), c.wan.bandwidth_Bps)
                    ->set_latency(c.wan.latency_s / 2);
    root->add_route(zone->get_netpoint(), nullptr, gw, nullptr,
                    {{wan, sg4::LinkInRoute::Direction::UP}}, true);
    switch_zone->seal();
    for (int n : c.sites[s].nodes)
      site_zone[static_cast<std::size_t>(n)] = zone;
    sites.push_back(zone);
  }

  p.gpus.resize(static_cast<std::size_t>(c.world_size()));
  for (int n = 0; n < c.nodes; ++n) {
    auto* parent = site_zone[static_cast<std::size_t>(n)];
    auto* node = sg4::create_star_zone(fmt::format("node{}", n));
    node->set_parent(parent);
    for (int g = 0; g < c.gpus_per_node; ++g) {
      const int rank = n * c.gpus_per_node + g;
      auto* host = node->create_host(fmt::format("gpu{}", rank),
                                     gpu_speeds(c, p, speed / c.slowdown_of(rank)));
      auto* link =
          node->create_split_duplex_link(fmt::format("gpulink{}", rank), gpu_link_bandwidth)
              ->set_latency(gpu_link_latency);
      node->add_route(host->get_netpoint(), nullptr, nullptr, nullptr,
                      {{link, sg4::LinkInRoute::Direction::UP}}, true);
      p.gpus[static_cast<std::size_t>(rank)] = host;
    }
    auto* gw = node->create_router(fmt::format("node{}-gw", n));
    // A single node never uses its NIC; give it a bandwidth SimGrid accepts.
    const double nic_bandwidth =
        c.nodes > 1 ? c.inter_node.bandwidth_Bps * c.nics_per_node : gpu_link_bandwidth;
    auto* nic = parent->create_split_duplex_link(fmt::format("nic{}", n), nic_bandwidth)
                    ->set_latency(nic_latency);
    parent->add_route(node->get_netpoint(), nullptr, gw, nullptr,
                      {{nic, sg4::LinkInRoute::Direction::UP}}, true);
    node->seal();
  }
  for (auto* zone : sites)
    zone->seal();
  root->seal();
  return p;
}

} // namespace overlapsim::sim
