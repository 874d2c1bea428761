#include "scenario/readers.h"

#include "hw/fat_tree.h"
#include "hw/site_fat_trees.h"
#include "hw/system_presets.h"
#include "hw/units.h"

#include <fmt/format.h>
#include <fmt/ranges.h> // fmt::join (in <fmt/format.h> before fmt 11)

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>

namespace overlapsim::scenario::yaml {

hw::GpuSpec read_gpu(const Entry& e) {
  if (e.is_scalar()) {
    if (auto gpu = hw::find_gpu_preset(e.text()))
      return *gpu;
    std::string names;
    for (const auto& n : hw::gpu_preset_names())
      names += fmt::format("{}{}", names.empty() ? "" : ", ", n);
    e.fail(fmt::format("unknown GPU preset '{}'; expected one of: {} (or a map with peak_tflops, "
                       "memory, efficiency, hbm_bandwidth)",
                       e.text(), names));
  }
  e.expect_map({"preset", "name", "peak_tflops", "memory", "memory_reserve", "efficiency",
                "hbm_bandwidth", "comm_interference", "compute_interference", "comm_stream_share",
                "collective_handoff_wait", "compute_handoff_wait", "compute_capability"});
  hw::GpuSpec gpu;
  if (e.has("preset"))
    gpu = read_gpu(e.child("preset"));
  else
    gpu.name = "custom";
  if (e.has("name"))
    gpu.name = e.child("name").text();
  auto need = [&](const char* key) {
    if (!e.has("preset") && !e.has(key))
      e.child(key); // reports the missing key
  };
  need("peak_tflops");
  need("memory");
  need("hbm_bandwidth");
  if (e.has("peak_tflops"))
    gpu.peak_flops_bf16 = e.child("peak_tflops").number(1e-6, 1e9) * 1e12;
  if (e.has("memory"))
    gpu.memory_bytes = e.child("memory").quantity(hw::parse_size_bytes);
  if (e.has("memory_reserve")) {
    const Entry reserve = e.child("memory_reserve");
    gpu.memory_reserve_bytes = reserve.quantity(hw::parse_size_bytes, /*allow_zero=*/true);
    if (gpu.memory_reserve_bytes >= gpu.memory_bytes)
      reserve.fail(fmt::format("expected less than the GPU's memory ({}), got {}",
                               hw::format_bytes(gpu.memory_bytes),
                               hw::format_bytes(gpu.memory_reserve_bytes)));
  }
  if (e.has("efficiency"))
    gpu.efficiency = e.child("efficiency").number(1e-6, 1.0);
  if (e.has("hbm_bandwidth"))
    gpu.hbm_bandwidth_Bps = e.child("hbm_bandwidth").quantity(hw::parse_bandwidth_Bps);
  if (e.has("comm_interference"))
    gpu.comm_interference = e.child("comm_interference").number(0.0, 0.9);
  if (e.has("compute_interference"))
    gpu.compute_interference = e.child("compute_interference").number(0.0, 0.9);
  if (e.has("comm_stream_share"))
    gpu.comm_stream_share = e.child("comm_stream_share").number(0.05, 0.95);
  if (e.has("collective_handoff_wait")) {
    const Entry wait = e.child("collective_handoff_wait");
    gpu.collective_handoff_wait_s = wait.quantity(hw::parse_time_s, /*allow_zero=*/true);
    if (gpu.collective_handoff_wait_s > 1)
      wait.fail("collective_handoff_wait is over 1 s; expected a launch's wait (e.g. 200us)");
  }
  if (e.has("compute_handoff_wait")) {
    const Entry wait = e.child("compute_handoff_wait");
    gpu.compute_handoff_wait_s = wait.quantity(hw::parse_time_s, /*allow_zero=*/true);
    if (gpu.compute_handoff_wait_s > 1)
      wait.fail("compute_handoff_wait is over 1 s; expected a thread's wake-up (e.g. 10us)");
  }
  if (e.has("compute_capability")) // "9.0": NCCL's defaults key on it (comm/nccl_model.h)
    gpu.compute_capability =
        static_cast<int>(std::lround(e.child("compute_capability").number(0.0, 20.0) * 10));
  if (gpu.peak_flops_fp32 <= 0)
    gpu.peak_flops_fp32 = gpu.peak_flops_bf16;
  return gpu;
}

hw::LinkSpec read_link(const Entry& e) {
  if (e.is_scalar()) {
    if (auto link = hw::find_link_preset(e.text()))
      return *link;
    std::string names;
    for (const auto& n : hw::link_preset_names())
      names += fmt::format("{}{}", names.empty() ? "" : ", ", n);
    e.fail(fmt::format("unknown link preset '{}'; expected one of: {} (or a map with bandwidth "
                       "and latency)",
                       e.text(), names));
  }
  e.expect_map({"preset", "name", "bandwidth", "latency", "efficiency", "reverse_busy_delay",
                "kind", "nvlink_sharp", "message_cost", "plugin_latency", "nccl_buffsize"});
  hw::LinkSpec link;
  if (e.has("preset"))
    link = read_link(e.child("preset"));
  else
    link.name = "custom";
  if (e.has("name"))
    link.name = e.child("name").text();
  if (!e.has("preset")) {
    e.child("bandwidth");
    e.child("latency");
  }
  // `bandwidth` is the line rate; collectives reach `efficiency` of it (the preset's, else 1).
  double line_rate = link.line_rate_Bps();
  if (e.has("bandwidth"))
    line_rate = e.child("bandwidth").quantity(hw::parse_bandwidth_Bps);
  if (e.has("efficiency"))
    link.efficiency = e.child("efficiency").number(0.01, 1.0);
  link.bandwidth_Bps = line_rate * link.efficiency;
  if (e.has("latency"))
    link.latency_s = e.child("latency").quantity(hw::parse_time_s, /*allow_zero=*/true);
  if (e.has("kind"))
    link.kind = e.child("kind").choice<hw::LinkKind>({{"unknown", hw::LinkKind::unknown},
                                                      {"nvlink", hw::LinkKind::nvlink},
                                                      {"pcie", hw::LinkKind::pcie},
                                                      {"infiniband", hw::LinkKind::infiniband},
                                                      {"omnipath", hw::LinkKind::omnipath},
                                                      {"ethernet", hw::LinkKind::ethernet},
                                                      {"wan", hw::LinkKind::wan},
                                                      {"xgmi", hw::LinkKind::xgmi}});
  if (e.has("nvlink_sharp"))
    link.nvlink_sharp = e.child("nvlink_sharp").boolean();
  if (e.has("message_cost")) {
    const Entry cost = e.child("message_cost");
    link.message_cost_s = cost.quantity(hw::parse_time_s, /*allow_zero=*/true);
    if (link.message_cost_s > 0.1)
      cost.fail("expected at most 100 ms (a transport's cost per message)");
  }
  if (e.has("plugin_latency")) {
    const Entry reported = e.child("plugin_latency");
    link.plugin_latency_s = reported.quantity(hw::parse_time_s, /*allow_zero=*/true);
    if (link.plugin_latency_s > 0.1)
      reported.fail("expected at most 100 ms (the latency a network plugin reports to NCCL)");
  }
  if (e.has("nccl_buffsize")) {
    const Entry buffsize = e.child("nccl_buffsize");
    link.nccl_buffsize_bytes = buffsize.quantity(hw::parse_size_bytes);
    if (link.nccl_buffsize_bytes < 65536 || link.nccl_buffsize_bytes > 1073741824.0)
      buffsize.fail("expected 64 KiB to 1 GiB (NCCL_BUFFSIZE)");
  }
  if (e.has("reverse_busy_delay")) {
    const Entry delay = e.child("reverse_busy_delay");
    link.reverse_busy_s = delay.quantity(hw::parse_time_s, /*allow_zero=*/true);
    if (link.reverse_busy_s > 10)
      delay.fail("expected at most 10 s (the delay of one message)");
  }
  return link;
}

// A system preset (cluster.preset): what it fills in unless the cluster sets the key itself.
hw::SystemSpec read_system(const Entry& e) {
  if (auto system = hw::find_system_preset(e.text()))
    return *system;
  e.fail(fmt::format("unknown system preset '{}'; expected one of: {}", e.text(),
                     fmt::join(hw::system_preset_names(), ", ")));
}

namespace {
// cluster.fabric: a preset's name (hw/fat_tree.h), or a map of a fat tree's shape, from a preset
// or the defaults.
hw::FabricSpec read_fabric(const Entry& e, const ClusterSpec& c) {
  const auto topology = [](const Entry& t) {
    return t.choice<hw::FabricSpec::Topology>({{"star", hw::FabricSpec::Topology::star},
                                               {"fat_tree", hw::FabricSpec::Topology::fat_tree}});
  };
  const auto preset = [](const Entry& p) {
    if (auto found = hw::find_fabric_preset(p.text()))
      return *found;
    p.fail(fmt::format("unknown fabric '{}'; expected one of: {} (or a map with topology, radix, "
                       "levels, oversubscription, placement, hop_latency)",
                       p.text(), fmt::join(hw::fabric_preset_names(), ", ")));
  };
  hw::FabricSpec f;
  if (e.is_scalar()) {
    f = preset(e);
  } else {
    e.expect_map({"preset", "topology", "radix", "levels", "oversubscription", "placement",
                  "hop_latency", "sharp"});
    if (e.has("preset"))
      f = preset(e.child("preset"));
    // {sharp: true} alone: the default star, whose switch reduces.
    if (e.has("topology") || (!e.has("preset") && !e.has("sharp")))
      f.topology = topology(e.child("topology"));
    if (e.has("sharp"))
      f.sharp = e.child("sharp").boolean();
    if (f.topology == hw::FabricSpec::Topology::star)
      for (const char* key : {"radix", "levels", "oversubscription", "placement", "hop_latency"})
        if (e.has(key))
          e.child(key).fail("a star fabric has no switches to shape; set topology: fat_tree");
    if (e.has("radix"))
      f.radix = static_cast<int>(e.child("radix").integer(2, 1024));
    if (e.has("levels"))
      f.levels = static_cast<int>(e.child("levels").integer(1, 4));
    if (e.has("oversubscription"))
      f.oversubscription = e.child("oversubscription").number(1.0, 1024.0);
    if (e.has("placement"))
      f.placement =
          e.child("placement")
              .choice<hw::FabricSpec::Placement>({{"rail", hw::FabricSpec::Placement::rail},
                                                  {"node", hw::FabricSpec::Placement::node}});
    if (e.has("hop_latency"))
      f.hop_latency_s = e.child("hop_latency").quantity(hw::parse_time_s, /*allow_zero=*/true);
  }
  if (f.topology == hw::FabricSpec::Topology::fat_tree) {
    if (c.collectives == CollectiveFidelity::steps)
      e.fail("collectives: steps runs on the star fabric only; use nccl or fused on a fat tree");
    // With WAN sites, each site is a fat tree of this shape with a port for its WAN gateway
    // (hw/site_fat_trees.h).
    std::vector<std::vector<int>> sites;
    for (const auto& site : c.sites)
      sites.push_back(site.nodes);
    try {
      hw::build_site_fat_trees(f, c.nodes, c.nics_per_node, sites);
    } catch (const std::invalid_argument& err) {
      e.fail(err.what());
    }
  }
  return f;
}
// cluster.node_types: [{nodes: [..], gpu: PRESET or map}, ...]; a node in none keeps cluster.gpu.
std::vector<NodeType> read_node_types(const Entry& e, int nodes) {
  std::vector<NodeType> types;
  std::vector<int> type_of(static_cast<std::size_t>(nodes), -1);
  for (const auto& entry : e.items()) {
    entry.expect_map({"nodes", "gpu"});
    NodeType type;
    type.gpu = read_gpu(entry.child("gpu"));
    for (const auto& n : entry.child("nodes").items()) {
      const int node = static_cast<int>(n.integer(0, nodes - 1));
      if (const int other = type_of[static_cast<std::size_t>(node)]; other >= 0)
        n.fail(fmt::format("node {} is already in node_types entry {}", node, other));
      type_of[static_cast<std::size_t>(node)] = static_cast<int>(types.size());
      type.nodes.push_back(node);
    }
    if (type.nodes.empty())
      entry.child("nodes").fail("expected at least one node");
    std::sort(type.nodes.begin(), type.nodes.end());
    types.push_back(std::move(type));
  }
  return types;
}
} // namespace

ClusterSpec read_cluster(const Entry& e) {
  e.expect_map({"preset", "nodes", "gpus_per_node", "gpu", "intra_node", "inter_node",
                "nics_per_node", "stragglers", "jitter", "network_model", "collectives",
                "collective_algorithm", "nccl_protocol", "rank_classes", "sites", "wan", "fabric",
                "calibration", "node_types"});
  ClusterSpec c;
  c.nodes = static_cast<int>(e.child("nodes").integer(1, 1 << 20));
  std::optional<hw::SystemSpec> system;
  if (e.has("preset"))
    system = read_system(e.child("preset"));
  c.gpus_per_node = system && !e.has("gpus_per_node")
                        ? system->gpus_per_node
                        : static_cast<int>(e.child("gpus_per_node").integer(1, 1024));
  // A million GPUs is past any machine built; ranks and per-GPU tables stay well inside int.
  constexpr long long kMaxGpus = 1 << 20;
  if (static_cast<long long>(c.nodes) * c.gpus_per_node > kMaxGpus)
    e.child("gpus_per_node")
        .fail(fmt::format("expected at most {} GPUs in all (cluster.nodes x gpus_per_node), got "
                          "{} x {} = {}",
                          kMaxGpus, c.nodes, c.gpus_per_node,
                          static_cast<long long>(c.nodes) * c.gpus_per_node));
  c.gpu = system && !e.has("gpu") ? *hw::find_gpu_preset(system->gpu) : read_gpu(e.child("gpu"));
  // A calibration profile's fitted links replace the latency and bandwidth of the ones it holds;
  // those links may then be left out.
  std::optional<Calibration> calibration;
  if (e.has("calibration")) {
    calibration = e.child("calibration").calibration();
    c.calibration = e.child("calibration").path_value();
  }
  auto link = [&](const char* key, bool needed, const std::optional<LinkFit>& fit,
                  const std::string& from_system) {
    hw::LinkSpec l;
    if (e.has(key) || (needed && !fit && from_system.empty()))
      l = read_link(e.child(key));
    else if (!from_system.empty())
      l = *hw::find_link_preset(from_system);
    if (fit) {
      l.name = l.name.empty() ? "calibrated" : l.name + " (calibrated)";
      l.latency_s = fit->latency_s;
      l.bandwidth_Bps = fit->bandwidth_Bps; // measured: what collectives reach
      l.efficiency = 1;
    }
    return l;
  };
  if (c.gpus_per_node > 1 || e.has("intra_node"))
    c.intra_node = link("intra_node", true, calibration ? calibration->intra_node : std::nullopt,
                        system ? system->intra_node : "");
  if (system && !system->nvls && !e.has("intra_node"))
    c.intra_node.nvlink_sharp = false; // the system's NCCL runs with NCCL_NVLS_ENABLE=0
  if (c.nodes > 1 || e.has("inter_node") || (calibration && calibration->inter_node))
    c.inter_node =
        link("inter_node", c.nodes > 1, calibration ? calibration->inter_node : std::nullopt,
             system ? system->inter_node : "");
  // Per-op fits map onto the link that carries the job's collectives: across nodes when there
  // are several, else inside the node.
  if (calibration) {
    const bool across = c.nodes > 1;
    const auto& base = across ? calibration->inter_node : calibration->intra_node;
    if (base) {
      // The link's own collective too: its measured points, where the fit's line misses them.
      auto ops = across ? calibration->inter_node_ops : calibration->intra_node_ops;
      ops.push_back(*base);
      LinkFit carrier = *base;
      carrier.latency_s = latency_floor(*base, ops);
      (across ? c.inter_node : c.intra_node).latency_s = carrier.latency_s;
      for (const auto& f : ops) {
        c.collective_bytes[f.op] = collective_bytes_map(carrier, f);
        if (f.op == "send_recv") // measured on that link with its messages
          (across ? c.inter_node : c.intra_node).reverse_busy_s = f.reverse_busy_s;
      }
    }
    for (const auto& f : calibration->local_ops)
      c.local_collectives[{f.op, f.in_place}] = f;
  }
  if (e.has("nics_per_node"))
    c.nics_per_node = static_cast<int>(e.child("nics_per_node").integer(1, 128));
  else if (system)
    c.nics_per_node = system->nics_per_node; // one NIC per GPU on DGX-like nodes
  else if (c.intra_node.kind == hw::LinkKind::nvlink &&
           c.inter_node.kind == hw::LinkKind::infiniband && c.gpus_per_node <= 64)
    // A DGX/HGX-like node (NVSwitch inside, InfiniBand between) has a NIC per GPU (issue 25.3):
    // 8 x 200 Gb/s HDR on a DGX A100, 8 x 400 Gb/s NDR on a DGX H100. One NIC would make every
    // cross-node collective 8x too slow.
    c.nics_per_node = c.gpus_per_node;
  if (e.has("stragglers")) {
    // GPU -> its index in the list: a list of every GPU of a large cluster is checked in
    // O(n log n), not by scanning the list for each entry.
    std::map<int, std::size_t> listed;
    for (const auto& s : e.child("stragglers").items()) {
      s.expect_map({"gpu", "slowdown"});
      Straggler st;
      st.gpu = static_cast<int>(s.child("gpu").integer(0, c.world_size() - 1));
      if (const auto [it, fresh] = listed.try_emplace(st.gpu, c.stragglers.size()); !fresh)
        s.child("gpu").fail(fmt::format("GPU {} is already a straggler (cluster.stragglers.{}); "
                                        "give each GPU one slowdown",
                                        st.gpu, it->second));
      st.slowdown = s.child("slowdown").number(1e-3, 1e6);
      c.stragglers.push_back(st);
    }
  }
  if (e.has("jitter")) {
    const Entry j = e.child("jitter");
    c.jitter.given = true;
    j.expect_map({"distribution", "sigma", "sigma_1s"});
    c.jitter.distribution =
        j.child("distribution")
            .choice<JitterDistribution>({{"none", JitterDistribution::none},
                                         {"lognormal", JitterDistribution::lognormal},
                                         {"normal", JitterDistribution::normal}});
    if (j.has("sigma") && j.has("sigma_1s"))
      j.child("sigma_1s")
          .fail("give either sigma (every op's) or sigma_1s (a one-second op's; "
                "an op of t seconds draws sigma_1s / sqrt(t)), not both");
    c.jitter.sigma = j.has("sigma") ? j.child("sigma").number(0, 10) : 0.0;
    c.jitter.sigma_1s = j.has("sigma_1s") ? j.child("sigma_1s").number(0, 10) : 0.0;
  }
  if (e.has("network_model"))
    c.network_model =
        e.child("network_model")
            .choice<NetworkModel>({{"exact", NetworkModel::exact}, {"tcp", NetworkModel::tcp}});
  if (e.has("collectives"))
    c.collectives = e.child("collectives")
                        .choice<CollectiveFidelity>({{"nccl", CollectiveFidelity::nccl},
                                                     {"fused", CollectiveFidelity::fused},
                                                     {"steps", CollectiveFidelity::steps}});
  else if (e.has("calibration"))
    // A calibrated link is what the collectives measured reach: NCCL's costs are in it already.
    c.collectives = CollectiveFidelity::fused;
  if (e.has("collective_algorithm"))
    c.collective_algorithm =
        e.child("collective_algorithm")
            .choice<CollectiveAlgorithm>({{"ring", CollectiveAlgorithm::ring},
                                          {"tree", CollectiveAlgorithm::tree},
                                          {"hierarchical", CollectiveAlgorithm::hierarchical},
                                          {"collnet", CollectiveAlgorithm::collnet},
                                          {"auto", CollectiveAlgorithm::automatic}});
  if (e.has("nccl_protocol"))
    c.nccl_protocol = e.child("nccl_protocol")
                          .choice<NcclProtocolChoice>({{"auto", NcclProtocolChoice::automatic},
                                                       {"LL", NcclProtocolChoice::ll},
                                                       {"LL128", NcclProtocolChoice::ll128},
                                                       {"Simple", NcclProtocolChoice::simple},
                                                       {"ll", NcclProtocolChoice::ll},
                                                       {"ll128", NcclProtocolChoice::ll128},
                                                       {"simple", NcclProtocolChoice::simple}});
  else if (system && system->simple_only)
    c.nccl_protocol = NcclProtocolChoice::simple; // the system's network plugin forces it
  if (e.has("rank_classes"))
    c.rank_classes =
        e.child("rank_classes")
            .choice<RankClassesChoice>({{"auto", RankClassesChoice::automatic},
                                        {"off", RankClassesChoice::off},
                                        {"statistical", RankClassesChoice::statistical}});
  if (e.has("sites")) {
    std::vector<int> site_of(static_cast<std::size_t>(c.nodes), -1);
    for (const auto& s : e.child("sites").items()) {
      s.expect_map({"name", "nodes"});
      Site site;
      site.name = s.has("name") ? s.child("name").text() : fmt::format("site{}", c.sites.size());
      for (const auto& n : s.child("nodes").items()) {
        const int node = static_cast<int>(n.integer(0, c.nodes - 1));
        if (site_of[static_cast<std::size_t>(node)] >= 0)
          n.fail(fmt::format("node {} is already in site {}", node,
                             site_of[static_cast<std::size_t>(node)]));
        site_of[static_cast<std::size_t>(node)] = static_cast<int>(c.sites.size());
        site.nodes.push_back(node);
      }
      c.sites.push_back(site);
    }
    for (int n = 0; n < c.nodes; ++n)
      if (site_of[static_cast<std::size_t>(n)] < 0)
        e.child("sites").fail(
            fmt::format("node {} is in no site; every node must be in exactly one", n));
    if (c.sites.size() > 1)
      c.wan = read_link(e.child("wan"));
  } else if (e.has("wan")) {
    e.child("wan").fail("a WAN link needs 'sites' saying which nodes sit on each side");
  }
  if (e.has("node_types"))
    c.node_types = read_node_types(e.child("node_types"), c.nodes);
  if (e.has("fabric"))
    c.fabric = read_fabric(e.child("fabric"), c);
  // CollNet is NCCL's, and needs switches that reduce (comm/nccl_collnet.h).
  if (c.collective_algorithm == CollectiveAlgorithm::collnet) {
    const Entry& key = e.child("collective_algorithm");
    if (c.collectives != CollectiveFidelity::nccl)
      key.fail("collnet is NCCL's CollNet: it needs collectives: nccl");
    if (!c.fabric.sharp)
      key.fail("collnet needs switches that reduce: set cluster.fabric: {sharp: true}");
  }
  return c;
}

} // namespace overlapsim::scenario::yaml
