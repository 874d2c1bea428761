// The switched network between a cluster's nodes (`cluster.fabric`), and the fat tree built from
// it.
//
// `star` is one non-blocking switch that every node's pooled NICs reach (the simulator's model
// before fabrics existed). A `fat_tree` is a folded Clos of switches of `radix` ports: leaf
// switches give `oversubscription` times as many ports to NICs as to the level above, the switches
// above them half their ports down and half up, the top level all of them down. Every cable runs at
// the NIC's rate (as in an InfiniBand or RoCE fabric of one generation).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace overlapsim::hw {

struct FabricSpec {
  enum class Topology { star, fat_tree };
  // Where a node's NICs plug in: `rail`, NIC i of every node on rail i's leaf switches (rail-
  // optimised, as DGX SuperPODs are cabled: same-position GPUs of a leaf group are one switch
  // apart); `node`, a node's NICs side by side on one leaf switch.
  enum class Placement { rail, node };

  Topology topology = Topology::star;
  int radix = 64;              // ports per switch (NVIDIA Quantum-2 QM9700: 64 x 400 Gb/s)
  int levels = 0;              // switch levels; 0: the fewest that hold every NIC
  double oversubscription = 1; // a leaf switch's ports to NICs per port to the level above
  Placement placement = Placement::rail;
  // One switch traversal. Quantum-2's port-to-port latency is under 150 ns (NVIDIA's figure).
  double hop_latency_s = 150e-9;
  // The switches reduce (InfiniBand SHARP: Quantum and Quantum-2 switches' Scalable Hierarchical
  // Aggregation and Reduction Protocol), so NCCL's CollNet runs (comm/nccl_collnet.h); a star or
  // a fat tree alike.
  bool sharp = false;
};

// Named fabrics (cluster.fabric: NAME, or {preset: NAME, ...overrides}): `star`; `fat_tree` and
// `dgx-superpod` (NVIDIA's DGX SuperPOD reference architecture: a rail-optimised, non-blocking fat
// tree of 64-port Quantum-2 switches); `leaf-spine-2to1` (two levels of 64-port switches, 2:1 at
// the leaves, each node's NICs on one leaf: the cost-reduced Clos of many clusters).
std::optional<FabricSpec> find_fabric_preset(std::string_view name);
std::vector<std::string> fabric_preset_names();

// The fat tree of a FabricSpec over `nodes` x `nics_per_node` NICs, as an XGFT(h; m; w) (Ohring et
// al., "On generalized fat trees", IPPS 1995): level l's switches have m[l] children and each
// element of level l-1 has w[l] parents. These are SimGrid's FatTreeZone parameters (down = m,
// up = w, one cable per pair).
struct FatTree {
  int levels = 0;
  std::vector<unsigned> down, up;  // per switch level, from the leaves up
  int leaf_down = 0, leaf_up = 0;  // a leaf switch's ports to NICs and to the level above
  long long slots = 0;             // NIC ports in all: the product of `down` (>= the NICs)
  std::vector<long long> switches; // per switch level
  int nodes = 0, nics_per_node = 1;
  FabricSpec::Placement placement = FabricSpec::Placement::rail;

  double oversubscription() const { return leaf_up > 0 ? double(leaf_down) / leaf_up : 1.0; }
  // The leaf port that NIC `nic` of node `node` is cabled to.
  long long slot_of(int node, int nic) const;
  // The level of the lowest switch above two ports: 1 when one leaf switch holds both; 0 for one
  // port. A route between them crosses 2 x that many cables.
  int common_level(long long a, long long b) const;
};

// Throws std::invalid_argument saying what does not fit (more NICs than the levels can hold, a
// radix that leaves a leaf switch no up port).
FatTree build_fat_tree(const FabricSpec& spec, int nodes, int nics_per_node);

// "fat tree, 2 levels of 64-port switches (8 leaf, 32 spine), 1:1 at the leaves, rail-optimised".
std::string describe(const FatTree& tree);

} // namespace overlapsim::hw
