#include "hw/fat_tree.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace overlapsim::hw {

namespace {
constexpr int kMaxLevels = 4;

long long ceil_div(long long a, long long b) {
  return (a + b - 1) / b;
}

// NIC ports an L-level tree of radix r with leaf switches of d ports down holds: a top switch
// spends all r ports on the level below, the middle levels half of theirs.
long long capacity(int levels, int r, int d) {
  if (levels == 1)
    return r;
  long long c = static_cast<long long>(d) * r;
  for (int l = 2; l < levels; ++l)
    c *= r / 2;
  return c;
}
} // namespace

namespace {
std::vector<std::pair<std::string, FabricSpec>> fabric_presets() {
  FabricSpec superpod;
  superpod.topology = FabricSpec::Topology::fat_tree;
  FabricSpec leaf_spine = superpod;
  leaf_spine.levels = 2;
  leaf_spine.oversubscription = 2;
  leaf_spine.placement = FabricSpec::Placement::node;
  return {{"star", FabricSpec{}},
          {"fat_tree", superpod},
          {"dgx-superpod", superpod},
          {"leaf-spine-2to1", leaf_spine}};
}
} // namespace

std::optional<FabricSpec> find_fabric_preset(std::string_view name) {
  for (const auto& [n, spec] : fabric_presets())
    if (n == name)
      return spec;
  return std::nullopt;
}

std::vector<std::string> fabric_preset_names() {
  std::vector<std::string> names;
  for (const auto& [n, spec] : fabric_presets())
    names.push_back(n);
  return names;
}

long long FatTree::slot_of(int node, int nic) const {
  if (placement == FabricSpec::Placement::node || levels == 1)
    return static_cast<long long>(node) * nics_per_node + nic;
  // Rail groups of leaf_down nodes: group g's rail r is one leaf switch's ports.
  const long long group = node / leaf_down, within = node % leaf_down;
  return (group * nics_per_node + nic) * leaf_down + within;
}

int FatTree::common_level(long long a, long long b) const {
  if (a == b)
    return 0;
  long long block = 1;
  for (int l = 1; l <= levels; ++l) {
    block *= down[static_cast<std::size_t>(l - 1)];
    if (a / block == b / block)
      return l;
  }
  return levels;
}

FatTree build_fat_tree(const FabricSpec& spec, int nodes, int nics_per_node) {
  const int r = spec.radix;
  if (r < 2 || r % 2 != 0)
    throw std::invalid_argument(fmt::format("radix {}: expected an even number of ports >= 2", r));
  FatTree t;
  t.nodes = nodes;
  t.nics_per_node = nics_per_node;
  t.placement = spec.placement;
  // A leaf switch's ports split down:up as oversubscription:1 (rounded to whole ports).
  t.leaf_up = static_cast<int>(std::lround(r / (1 + spec.oversubscription)));
  if (t.leaf_up < 1 || t.leaf_up >= r)
    throw std::invalid_argument(fmt::format(
        "oversubscription {} leaves a {}-port leaf switch {} port(s) up; expected at least one "
        "port up and one down",
        spec.oversubscription, r, t.leaf_up));
  t.leaf_down = r - t.leaf_up;
  const long long nics = static_cast<long long>(nodes) * nics_per_node;
  // The ports rail placement fills: every rail group spans leaf_down nodes (the last padded).
  auto ports_needed = [&](int levels) {
    if (levels == 1 || spec.placement == FabricSpec::Placement::node)
      return nics;
    return ceil_div(nodes, t.leaf_down) * nics_per_node * t.leaf_down;
  };
  t.levels = spec.levels;
  if (t.levels == 0)
    for (int l = 1; l <= kMaxLevels && t.levels == 0; ++l)
      if (ports_needed(l) <= capacity(l, r, l == 1 ? r : t.leaf_down))
        t.levels = l;
  if (t.levels == 0 || t.levels > kMaxLevels ||
      ports_needed(t.levels) > capacity(t.levels, r, t.levels == 1 ? r : t.leaf_down)) {
    const int shown = t.levels == 0 || t.levels > kMaxLevels ? kMaxLevels : t.levels;
    throw std::invalid_argument(fmt::format(
        "{} NICs ({} nodes x {}) need {} leaf ports; {} level(s) of {}-port switches hold at most "
        "{}: raise radix or levels (1 to {})",
        nics, nodes, nics_per_node, ports_needed(shown), shown, r,
        capacity(shown, r, shown == 1 ? r : t.leaf_down), kMaxLevels));
  }
  const long long needed = ports_needed(t.levels);
  if (t.levels == 1) {
    // One switch: every port faces a NIC, nothing is oversubscribed.
    t.down = {static_cast<unsigned>(needed)};
    t.up = {1};
    t.leaf_down = static_cast<int>(needed);
    t.leaf_up = 0;
  } else {
    // Each level holds as few children as the NICs need (a tree given more levels than it needs
    // stays the size of the cluster); a switch above the leaves has as many parents as children
    // (non-blocking), a leaf switch leaf_up, a NIC its one leaf switch.
    t.down.assign(static_cast<std::size_t>(t.levels), 1);
    t.up.assign(static_cast<std::size_t>(t.levels), 1);
    t.down.front() = static_cast<unsigned>(t.leaf_down);
    t.up[1] = static_cast<unsigned>(t.leaf_up);
    long long below = t.leaf_down;
    for (int l = 1; l < t.levels; ++l) {
      const long long wanted = ceil_div(needed, below);
      const auto i = static_cast<std::size_t>(l);
      t.down[i] =
          static_cast<unsigned>(l + 1 == t.levels ? wanted : std::min<long long>(r / 2, wanted));
      if (l >= 2)
        t.up[i] = t.down[i - 1];
      below *= t.down[i];
    }
  }
  t.slots = 1;
  for (unsigned d : t.down)
    t.slots *= d;
  for (int l = 1; l <= t.levels; ++l) {
    long long n = 1;
    for (int j = 0; j < l; ++j)
      n *= t.up[static_cast<std::size_t>(j)];
    for (int j = l; j < t.levels; ++j)
      n *= t.down[static_cast<std::size_t>(j)];
    t.switches.push_back(n);
  }
  return t;
}

std::string describe(const FatTree& t) {
  static const char* const names[] = {"leaf", "spine", "core", "super-core"};
  std::string counts;
  for (std::size_t l = 0; l < t.switches.size(); ++l)
    counts += fmt::format("{}{} {}", l ? ", " : "", t.switches[l], names[l]);
  return fmt::format(
      "fat tree, {} level{} of switches ({}), {}{}", t.levels, t.levels == 1 ? "" : "s", counts,
      t.levels == 1 ? "non-blocking"
                    : fmt::format("{:.3g}:1 at the leaves ({} down, {} up)", t.oversubscription(),
                                  t.leaf_down, t.leaf_up),
      t.levels > 1 && t.nics_per_node > 1 && t.placement == FabricSpec::Placement::rail
          ? ", rail-optimised"
          : "");
}

} // namespace overlapsim::hw
