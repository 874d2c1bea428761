// Named systems (a node's GPUs, their NVLink, the node's NICs) a scenario's cluster can start from:
// `cluster: {preset: dgx-h100, nodes: 4}`. The scenario's own keys override a preset's. Each
// preset's numbers carry a source comment in system_presets.cpp.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace overlapsim::hw {

struct SystemSpec {
  std::string name;
  std::string gpu;        // a GPU preset (cluster.gpu)
  int gpus_per_node = 1;  //
  std::string intra_node; // a link preset (cluster.intra_node)
  std::string inter_node; // a link preset, per NIC (cluster.inter_node)
  // DGX-like nodes carry one compute NIC per GPU (GPUDirect RDMA through the GPU's PCIe switch):
  // NCCL spreads a node's channels over all of them.
  int nics_per_node = 1;
  // What the system's network plugin configures NCCL with: NCCL_PROTO=Simple
  // (cluster.nccl_protocol), and NCCL_NVLS_ENABLE=0 (the intra-node link's nvlink_sharp off).
  bool simple_only = false;
  bool nvls = true;
};

std::optional<SystemSpec> find_system_preset(std::string_view name);
std::vector<std::string> system_preset_names();

} // namespace overlapsim::hw
