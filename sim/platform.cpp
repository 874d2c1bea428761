#include "sim/platform.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

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
  if (classes.crosses_sites(src, dst))
    return {gpus[static_cast<std::size_t>(from)],
            remote_wan[static_cast<std::size_t>(from / per_node * per_node + dst % per_node)]};
  // The same-position GPU of another node, as seen from the sender's (running) node.
  return {gpus[static_cast<std::size_t>(from)],
          remote[static_cast<std::size_t>(from / per_node * per_node + dst % per_node)]};
}

double Platform::link_bandwidth(const sg4::Link* link) const {
  const auto image = std::find(wan_images.begin(), wan_images.end(), link);
  return image != wan_images.end()
             ? link->get_bandwidth() /
                   wan_image_shares[static_cast<std::size_t>(image - wan_images.begin())]
             : link->get_bandwidth();
}

int Platform::lanes(int src, int dst) const {
  if (nics.empty() || src / gpus_per_node == dst / gpus_per_node)
    return 1;
  return nic_of(src) == nic_of(dst) ? 1 : nics_per_node;
}

Platform::Lane Platform::lane(int src, int dst, int k, bool direct) const {
  if (direct && classes.direct(src, dst) && nics.empty())
    return {gpus[static_cast<std::size_t>(src)], gpus[static_cast<std::size_t>(dst)], 1.0};
  if (nics.empty() || src / gpus_per_node == dst / gpus_per_node) {
    const auto [from, to] = route_ends(src, dst);
    return {from, to, 1.0};
  }
  const int n = lanes(src, dst);
  Lane l = on_rail(src, dst, n == 1 ? nic_of(src) : k, direct && classes.direct(src, dst));
  l.share = 1.0 / n;
  return l;
}

Platform::Lane Platform::on_rail(int src, int dst, int rail, bool direct) const {
  if (nics.empty() || src / gpus_per_node == dst / gpus_per_node)
    return {};
  const auto at = [&](int rank) {
    return static_cast<std::size_t>(rank / gpus_per_node * nics_per_node + rail);
  };
  if (!classes.folded || direct)
    return {nics[at(src)], nics[at(dst)], 1.0};
  // Folded: from the representative's NIC to the image of dst's at the level the two meet, or
  // across the WAN (the climb to the gateway, the node's WAN image).
  const std::size_t from = at(classes.representative(src));
  if (classes.crosses_sites(src, dst))
    return {nics[from], remote_nics_wan[from], 1.0};
  const int level = fat_tree->common_level(src / gpus_per_node, dst / gpus_per_node, rail);
  return {nics[from],
          remote_nics[from * static_cast<std::size_t>(fat_tree->levels()) +
                      static_cast<std::size_t>(level - 1)],
          1.0};
}

namespace {

// Rank `rank`'s progress host (see platform.h), in the zone of its GPU.
void add_progress_host(Platform& p, const scenario::ClusterSpec& c, sg4::NetZone* zone, int rank) {
  if (!c.gpu.any_compute_interference())
    return;
  p.progress.resize(p.gpus.size(), nullptr);
  p.progress[static_cast<std::size_t>(rank)] = zone->create_host(
      fmt::format("progress{}", rank), std::vector<double>{1.0, 1.0 - c.gpu.compute_interference});
}

using WanImages = std::map<int, sg4::SplitDuplexLink*>; // by RankClasses::wan_image
sg4::SplitDuplexLink* wan_image_of(Platform& p, const scenario::ClusterSpec& c, sg4::NetZone* zone,
                                   int node, WanImages& images);

// The running nodes' NICs on a folded fat tree (see platform.h).
void build_folded_fat_tree(Platform& p, const scenario::ClusterSpec& c, sg4::NetZone* zone,
                           WanImages& wan_images) {
  using Dir = sg4::LinkInRoute::Direction;
  const hw::SiteFatTrees& tree = *p.fat_tree;
  const int rails = c.nics_per_node, levels = tree.levels();
  const double rate = c.inter_node.bandwidth_Bps;
  p.nics.assign(static_cast<std::size_t>(c.nodes * rails), nullptr);
  p.remote_nics.assign(p.nics.size() * static_cast<std::size_t>(levels), nullptr);
  // Climbing to level l and back: 2 (l - 1) switch hops, latency only.
  std::vector<sg4::Link*> climb(static_cast<std::size_t>(levels) + 1, nullptr);
  for (int l = 2; l <= levels; ++l)
    climb[static_cast<std::size_t>(l)] = zone->create_link(fmt::format("climb{}", l), 1e15)
                                             ->set_sharing_policy(sg4::Link::SharingPolicy::FATPIPE)
                                             ->set_latency(2 * (l - 1) * c.fabric.hop_latency_s)
                                             ->seal();
  std::vector<sg4::Link*> cables(p.nics.size(), nullptr);
  const bool sites = !p.classes.site.empty();
  if (sites)
    p.remote_nics_wan.assign(p.nics.size(), nullptr);
  // To a site's gateway at level l and on to the WAN: 2 l - 1 hops (the full tree's 2 l cables
  // less the one the NIC's own cable stands for), latency only.
  std::map<int, sg4::Link*> to_gateway;
  for (const int node : p.classes.simulated_nodes())
    for (int r = 0; r < rails; ++r) {
      const auto at = static_cast<std::size_t>(node * rails + r);
      const std::string name = fmt::format("nic{}.{}", node, r);
      p.nics[at] = zone->create_host(name, 1.0);
      auto* cable = zone->create_split_duplex_link(name + "-cable", rate)
                        ->set_latency(c.inter_node.latency_s / 2);
      cables[at] = cable;
      for (int l = 1; l <= levels; ++l) {
        auto* remote = zone->create_host(fmt::format("{}-remote-level{}", name, l), 1.0);
        p.remote_nics[at * static_cast<std::size_t>(levels) + static_cast<std::size_t>(l - 1)] =
            remote;
        std::vector<sg4::LinkInRoute> route{{cable, Dir::UP}};
        if (l > 1)
          route.emplace_back(climb[static_cast<std::size_t>(l)]);
        route.emplace_back(cable, Dir::DOWN);
        zone->add_route(p.nics[at]->get_netpoint(), remote->get_netpoint(), nullptr, nullptr, route,
                        false);
        zone->add_route(remote->get_netpoint(), p.nics[at]->get_netpoint(), nullptr, nullptr, route,
                        false);
      }
      if (!sites)
        continue;
      const int l = tree.gateway_level(node, r);
      auto& gateway = to_gateway[l];
      if (!gateway)
        gateway = zone->create_link(fmt::format("to-gateway{}", l), 1e15)
                      ->set_sharing_policy(sg4::Link::SharingPolicy::FATPIPE)
                      ->set_latency((2 * l - 1) * c.fabric.hop_latency_s)
                      ->seal();
      auto* wan = wan_image_of(p, c, zone, node, wan_images);
      auto* remote = zone->create_host(name + "-remote-wan", 1.0);
      p.remote_nics_wan[at] = remote;
      const std::vector<sg4::LinkInRoute> route{
          {cable, Dir::UP}, sg4::LinkInRoute(gateway), {wan, Dir::UP},
          {wan, Dir::DOWN}, sg4::LinkInRoute(gateway), {cable, Dir::DOWN}};
      zone->add_route(p.nics[at]->get_netpoint(), remote->get_netpoint(), nullptr, nullptr, route,
                      false);
      zone->add_route(remote->get_netpoint(), p.nics[at]->get_netpoint(), nullptr, nullptr, route,
                      false);
    }
  // A pipeline's messages between running nodes of one group: up one NIC's cable, the climb to
  // the level the two meet, down the other's (the cables above the leaves are left out, as for
  // the images).
  const auto running = p.classes.simulated_nodes();
  for (const int x : running)
    for (const int y : running) {
      if (!p.classes.direct(x * c.gpus_per_node, y * c.gpus_per_node))
        continue;
      for (int r = 0; r < rails; ++r) {
        const auto from = static_cast<std::size_t>(x * rails + r);
        const auto to = static_cast<std::size_t>(y * rails + r);
        const int level = tree.common_level(x, y, r);
        if (level < 0)
          continue; // another site: not a pipeline's (sim/site_classes.h)
        std::vector<sg4::LinkInRoute> route{{cables[from], Dir::UP}};
        if (level > 1)
          route.emplace_back(climb[static_cast<std::size_t>(level)]);
        route.emplace_back(cables[to], Dir::DOWN);
        zone->add_route(p.nics[from]->get_netpoint(), p.nics[to]->get_netpoint(), nullptr, nullptr,
                        route, false);
      }
    }
}

// Over WAN sites, the image of the WAN link running node `node`'s cross-site flows take
// (RankClasses::wan_image), made on first use.
sg4::SplitDuplexLink* wan_image_of(Platform& p, const scenario::ClusterSpec& c, sg4::NetZone* zone,
                                   int node, WanImages& images) {
  const int image = p.classes.wan_image[static_cast<std::size_t>(node)];
  auto& wan = images[image];
  if (!wan) {
    const double share = p.classes.wan_share_of(node);
    wan = zone->create_split_duplex_link(fmt::format("wan-image{}", image),
                                         c.wan.bandwidth_Bps * share);
    wan->set_latency(c.wan.latency_s / 2);
    p.wan_images.push_back(wan->get_link_up());
    p.wan_images.push_back(wan->get_link_down());
    p.wan_image_shares.insert(p.wan_image_shares.end(), 2, share);
  }
  return wan;
}

// Over WAN sites, running node `node`'s hosts for the GPUs of other sites and their routes: GPU
// a's link, the NIC, the node's WAN image up and down, the NIC, GPU b's link (the full cluster's
// links from site to site, folded; sim/site_classes.h). The way back too, for the tcp model.
void add_wan_routes(Platform& p, const scenario::ClusterSpec& c, sg4::NetZone* zone, int node,
                    sg4::Link* nic, const std::vector<sg4::Link*>& links, WanImages& images) {
  using Dir = sg4::LinkInRoute::Direction;
  auto* wan = wan_image_of(p, c, zone, node, images);
  const int per_node = c.gpus_per_node;
  const auto at = [&](int g) { return static_cast<std::size_t>(node * per_node + g); };
  for (int g = 0; g < per_node; ++g)
    p.remote_wan[at(g)] = zone->create_host(fmt::format("node{}-remote-wan{}", node, g), 1.0);
  for (int a = 0; a < per_node; ++a)
    for (int b = 0; b < per_node; ++b) {
      const std::vector<sg4::LinkInRoute> folded{{links[static_cast<std::size_t>(a)], Dir::UP},
                                                 {nic, Dir::UP},
                                                 {wan, Dir::UP},
                                                 {wan, Dir::DOWN},
                                                 {nic, Dir::DOWN},
                                                 {links[static_cast<std::size_t>(b)], Dir::DOWN}};
      zone->add_route(p.gpus[at(a)]->get_netpoint(), p.remote_wan[at(b)]->get_netpoint(), nullptr,
                      nullptr, folded, false);
      zone->add_route(p.remote_wan[at(a)]->get_netpoint(), p.gpus[at(b)]->get_netpoint(), nullptr,
                      nullptr, folded, false);
    }
}

// The running nodes alone (see platform.h): per node, hosts for its GPUs and for the same GPUs of
// every other node, routes written out in one full zone (none between running nodes).
void build_folded(Platform& p, const scenario::ClusterSpec& c, double gpu_link_latency,
                  double gpu_link_bandwidth, double nic_latency) {
  const int per_node = c.gpus_per_node;
  auto* zone = sg4::create_full_zone("folded");
  p.remote.resize(static_cast<std::size_t>(c.world_size()));
  WanImages wan_images;
  if (!p.classes.site.empty())
    p.remote_wan.resize(p.remote.size());
  using Dir = sg4::LinkInRoute::Direction;
  if (p.fat_tree)
    build_folded_fat_tree(p, c, zone, wan_images);
  // Per running node, its NIC and GPU links: a pipeline's messages join running nodes.
  std::vector<std::pair<sg4::Link*, std::vector<sg4::Link*>>> links_of(
      static_cast<std::size_t>(c.nodes));
  for (const int node : p.classes.simulated_nodes()) {
    // The node's pooled NICs (a fat tree's NICs are build_folded_fat_tree's).
    sg4::Link* nic = nullptr;
    if (!p.fat_tree)
      nic = zone->create_split_duplex_link(fmt::format("nic{}", node),
                                           c.inter_node.bandwidth_Bps * c.nics_per_node)
                ->set_latency(nic_latency);
    std::vector<sg4::Link*> links;
    const auto at = [&](int g) { return static_cast<std::size_t>(node * per_node + g); };
    for (int g = 0; g < per_node; ++g) {
      const int rank = node * per_node + g;
      p.gpus[at(g)] =
          zone->create_host(fmt::format("gpu{}", rank), p.nominal_speed / c.slowdown_of(rank));
      p.remote[at(g)] = zone->create_host(fmt::format("node{}-remote{}", node, g), 1.0);
      add_progress_host(p, c, zone, rank);
      links.push_back(
          zone->create_split_duplex_link(fmt::format("gpulink{}", rank), gpu_link_bandwidth)
              ->set_latency(gpu_link_latency));
    }
    for (int a = 0; a < per_node; ++a)
      for (int b = 0; b < per_node; ++b) {
        auto* up = links[static_cast<std::size_t>(a)];
        auto* down = links[static_cast<std::size_t>(b)];
        if (a != b)
          zone->add_route(p.gpus[at(a)]->get_netpoint(), p.gpus[at(b)]->get_netpoint(), nullptr,
                          nullptr, {{up, Dir::UP}, {down, Dir::DOWN}}, false);
        if (p.fat_tree)
          continue; // other nodes are reached NIC to NIC (Platform::lane)
        const std::vector<sg4::LinkInRoute> folded{
            {up, Dir::UP}, {nic, Dir::UP}, {nic, Dir::DOWN}, {down, Dir::DOWN}};
        zone->add_route(p.gpus[at(a)]->get_netpoint(), p.remote[at(b)]->get_netpoint(), nullptr,
                        nullptr, folded, false);
        // The way back, which the tcp model's reverse-path traffic takes: GPU a of another node
        // to GPU b here, folded the same way.
        zone->add_route(p.remote[at(a)]->get_netpoint(), p.gpus[at(b)]->get_netpoint(), nullptr,
                        nullptr, folded, false);
      }
    if (!p.classes.site.empty() && !p.fat_tree) // a fat tree's are its NICs'
      add_wan_routes(p, c, zone, node, nic, links, wan_images);
    links_of[static_cast<std::size_t>(node)] = {nic, std::move(links)};
  }
  const auto running = p.classes.simulated_nodes();
  for (const int x : running)
    for (const int y : running) {
      if (p.fat_tree || !p.classes.direct(x * per_node, y * per_node))
        continue; // a fat tree's messages run NIC to NIC (build_folded_fat_tree)
      const auto& [nic_x, gpus_x] = links_of[static_cast<std::size_t>(x)];
      const auto& [nic_y, gpus_y] = links_of[static_cast<std::size_t>(y)];
      for (int a = 0; a < per_node; ++a)
        for (int b = 0; b < per_node; ++b)
          zone->add_route(p.gpus[static_cast<std::size_t>(x * per_node + a)]->get_netpoint(),
                          p.gpus[static_cast<std::size_t>(y * per_node + b)]->get_netpoint(),
                          nullptr, nullptr,
                          {{gpus_x[static_cast<std::size_t>(a)], Dir::UP},
                           {nic_x, Dir::UP},
                           {nic_y, Dir::DOWN},
                           {gpus_y[static_cast<std::size_t>(b)], Dir::DOWN}},
                          false);
    }
  zone->seal();
}

// The fat tree of `c.fabric` (see platform.h): a host per NIC at its leaf port. With WAN sites,
// site `site`'s tree in `parent` (its site's zone), whose gateway port holds a zone of one router:
// returned, for the site's route out (null without sites).
simgrid::kernel::routing::NetPoint* build_fat_tree(Platform& p, const scenario::ClusterSpec& c,
                                                   sg4::NetZone* parent, int site = 0) {
  const hw::SiteFatTrees& trees = *p.fat_tree;
  const hw::FatTree& tree = trees.trees[static_cast<std::size_t>(site)];
  // Names of zones are global: a site's carry its number.
  const std::string prefix = trees.has_sites() ? fmt::format("site{}-", site) : "";
  std::vector<int> nic_at(static_cast<std::size_t>(tree.slots), -1); // port -> node x R + nic
  for (int n = 0; n < c.nodes; ++n)
    if (trees.site_of(n) == site)
      for (int r = 0; r < c.nics_per_node; ++r)
        nic_at[static_cast<std::size_t>(trees.slot(n, r))] = n * c.nics_per_node + r;
  const long long gateway_port =
      trees.has_sites() ? trees.gateway[static_cast<std::size_t>(site)] : -1;
  simgrid::kernel::routing::NetPoint* border = nullptr; // the gateway's router
  p.nics.resize(static_cast<std::size_t>(c.nodes * c.nics_per_node), nullptr);
  const double hop = c.fabric.hop_latency_s;
  const double endpoint_latency = std::max(0.0, (c.inter_node.latency_s - 2 * hop) / 2);
  // Each leaf port holds a zone of one NIC host behind a latency-only link: SimGrid 3.32's
  // FatTreeZone puts a limiter link on the route but not its latency, so the NIC's share of
  // inter.latency sits in a zone of its own (as SimGrid's clusters-multicpu example builds leaves).
  // The link is split-duplex, each direction its own: with one link for both, two messages that
  // start at the same instant in opposite directions between the same two NICs both cross the two
  // NICs' links, and SimGrid 3.32's lazy max-min update then lets the second move in its latency
  // alone, unbound by the cables (2.3 us for a 77 us message; the same with a plain full zone and
  // any two links the two routes share, fat-pipe or shared, and not with network/optim:Full).
  const sg4::ClusterCallbacks callbacks(
      [&](sg4::NetZone* fabric, const std::vector<unsigned long>&, unsigned long port)
          -> std::pair<simgrid::kernel::routing::NetPoint*, simgrid::kernel::routing::NetPoint*> {
        const int nic = nic_at[port];
        if (static_cast<long long>(port) == gateway_port) {
          auto* zone = sg4::create_star_zone(prefix + "gateway");
          zone->set_parent(fabric);
          border = zone->create_router(prefix + "gateway-router");
          zone->seal();
          return {zone->get_netpoint(), border};
        }
        const std::string name =
            nic < 0 ? fmt::format("{}fabric-port{}", prefix, port)
                    : fmt::format("nic{}.{}", nic / c.nics_per_node, nic % c.nics_per_node);
        auto* zone = sg4::create_star_zone(name);
        zone->set_parent(fabric);
        sg4::Host* host = zone->create_host(name, 1.0);
        auto* gateway = zone->create_router(name + "-gw");
        auto* endpoint =
            zone->create_split_duplex_link(name + "-endpoint", 1e15)->set_latency(endpoint_latency);
        zone->add_route(host->get_netpoint(), nullptr, nullptr, nullptr,
                        {{endpoint, sg4::LinkInRoute::Direction::UP}}, true);
        zone->seal();
        if (nic >= 0)
          p.nics[static_cast<std::size_t>(nic)] = host;
        return {zone->get_netpoint(), gateway};
      });
  auto* zone = sg4::create_fatTree_zone(
      prefix + "fabric", parent,
      sg4::FatTreeParams(static_cast<unsigned>(tree.levels), tree.down, tree.up,
                         std::vector<unsigned>(static_cast<std::size_t>(tree.levels), 1)),
      callbacks, c.inter_node.bandwidth_Bps, hop, sg4::Link::SharingPolicy::SPLITDUPLEX);
  zone->seal();
  return border;
}

} // namespace

Platform build_platform(const scenario::ClusterSpec& c, const RankClasses& classes) {
  Platform p;
  const double speed = c.gpu.peak_flops_bf16 * c.gpu.efficiency;
  p.nominal_speed = speed;
  p.classes = classes;
  p.gpus_per_node = c.gpus_per_node;
  p.nics_per_node = c.nics_per_node;
  const bool fat_tree = c.fabric.topology == hw::FabricSpec::Topology::fat_tree && c.nodes > 1;
  if (fat_tree) {
    std::vector<std::vector<int>> sites;
    for (const auto& site : c.sites)
      sites.push_back(site.nodes);
    p.fat_tree = hw::build_site_fat_trees(c.fabric, c.nodes, c.nics_per_node, sites);
  }

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
  std::vector<sg4::Link*> wans;
  for (std::size_t s = 0; s < c.sites.size() && c.sites.size() > 1; ++s) {
    auto* zone = sg4::create_star_zone(fmt::format("site{}", s));
    zone->set_parent(root);
    for (int n : c.sites[s].nodes)
      site_zone[static_cast<std::size_t>(n)] = zone;
    sites.push_back(zone);
    const auto make_wan = [&] {
      wans.push_back(root->create_split_duplex_link(fmt::format("wan{}", s), c.wan.bandwidth_Bps)
                         ->set_latency(c.wan.latency_s / 2));
      return wans.back();
    };
    if (fat_tree) { // the site's tree holds its gateway (below)
      make_wan();
      continue;
    }
    // The site's gateway sits in a zone of its own: SimGrid 3.32 resolves a route from a router of
    // a zone to a host of a nested zone with the host's id looked up in the outer zone (wrong
    // links, or an abort in StarZone::get_local_route once a node holds more hosts than the site
    // holds components).
    auto* switch_zone = sg4::create_star_zone(fmt::format("site{}-switch", s));
    switch_zone->set_parent(zone);
    auto* gw = switch_zone->create_router(fmt::format("site{}-gw", s));
    zone->add_route(switch_zone->get_netpoint(), nullptr, gw, nullptr, {}, true);
    root->add_route(zone->get_netpoint(), nullptr, gw, nullptr,
                    {{make_wan(), sg4::LinkInRoute::Direction::UP}}, true);
    switch_zone->seal();
  }

  p.gpus.resize(static_cast<std::size_t>(c.world_size()));
  for (int n = 0; n < c.nodes; ++n) {
    auto* parent = site_zone[static_cast<std::size_t>(n)];
    auto* node = sg4::create_star_zone(fmt::format("node{}", n));
    node->set_parent(parent);
    for (int g = 0; g < c.gpus_per_node; ++g) {
      const int rank = n * c.gpus_per_node + g;
      auto* host = node->create_host(fmt::format("gpu{}", rank), speed / c.slowdown_of(rank));
      auto* link =
          node->create_split_duplex_link(fmt::format("gpulink{}", rank), gpu_link_bandwidth)
              ->set_latency(gpu_link_latency);
      node->add_route(host->get_netpoint(), nullptr, nullptr, nullptr,
                      {{link, sg4::LinkInRoute::Direction::UP}}, true);
      p.gpus[static_cast<std::size_t>(rank)] = host;
      add_progress_host(p, c, node, rank);
    }
    if (fat_tree) { // its NICs are the fabric's hosts
      node->seal();
      continue;
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
  for (std::size_t s = 0; s < sites.size(); ++s) {
    if (fat_tree) // the site's fat tree, and the way out through its gateway's port
      root->add_route(sites[s]->get_netpoint(), nullptr,
                      build_fat_tree(p, c, sites[s], static_cast<int>(s)), nullptr,
                      {{wans[s], sg4::LinkInRoute::Direction::UP}}, true);
    sites[s]->seal();
  }
  if (fat_tree && sites.empty())
    build_fat_tree(p, c, root);
  root->seal();
  return p;
}

} // namespace overlapsim::sim
