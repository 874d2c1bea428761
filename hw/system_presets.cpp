#include "hw/system_presets.h"

#include <algorithm>
#include <array>

namespace overlapsim::hw {

namespace {

const std::array<SystemSpec, 10> kSystems = {
    // NVIDIA DGX A100 datasheet and user guide: 8 x A100 SXM4 80GB on NVLink3 through 6 NVSwitches;
    // 8 single-port ConnectX-6 HDR InfiniBand (200 Gb/s) compute NICs, one per GPU.
    SystemSpec{"dgx-a100", "a100-80gb", 8, "nvlink3", "ib-hdr", 8},
    // NVIDIA DGX H100 datasheet and user guide: 8 x H100 SXM5 on NVLink4 through 4 NVSwitch-3
    // chips; 8 ConnectX-7 NDR InfiniBand (400 Gb/s) compute ports, one per GPU.
    SystemSpec{"dgx-h100", "h100-sxm", 8, "nvlink4", "ib-ndr", 8},
    // NVIDIA DGX B200 datasheet: 8 x B200 on NVLink 5 through 2 NVSwitch chips; 8 single-port
    // ConnectX-7 400 Gb/s compute ports (4 OSFP cages), one per GPU.
    SystemSpec{"dgx-b200", "b200", 8, "nvlink5", "ib-ndr", 8},
    // NVIDIA GB200 NVL72: 18 compute trays of 2 Grace + 4 B200, joined by 9 NVLink switch trays
    // into one 72-GPU NVLink domain. The simulator's node is the NVLink island: the rack is one
    // node of 72 GPUs (what crosses trays is NVLink, not a NIC). One ConnectX-7 400 Gb/s port per
    // GPU between racks (NVIDIA GB200 NVL72 reference architecture).
    SystemSpec{"gb200-nvl72", "gb200", 72, "nvlink5", "ib-ndr", 72},
    // AMD Instinct MI300X platform (8 OAM on a UBB): an xGMI full mesh, no switch; 8 x 400 GbE
    // RoCE NICs, one per GPU, as AMD's and the clouds' MI300X clusters (e.g. Azure ND MI300X v5,
    // OCI BM.GPU.MI300X.8). Collectives run RCCL.
    SystemSpec{"mi300x-8", "mi300x", 8, "xgmi-mi300x", "roce-400g", 8},
    // An 8 x L40S PCIe server (no NVLink: GPU to GPU over PCIe 4.0 switches) with 2 x 100 GbE
    // (a typical 2U/4U L40S server; not one vendor's datasheet: set cluster.inter_node and
    // nics_per_node for yours).
    SystemSpec{"l40s-8-pcie", "l40s", 8, "pcie4", "ethernet-100g", 2},
    // AWS p5.48xlarge: 8 x H100 SXM on NVLink 4 (NVSwitch), 32 x 100 Gb/s EFA (3,200 Gb/s).
    SystemSpec{"aws-p5", "h100-sxm", 8, "nvlink4", "efa-100g", 32},
    // AWS p4de.24xlarge: 8 x A100 80GB on NVLink 3, 4 x 100 Gb/s EFA (400 Gb/s). aws-ofi-nccl
    // forces NCCL_PROTO=simple here (cluster.nccl_protocol: Simple).
    SystemSpec{"aws-p4de", "a100-80gb", 8, "nvlink3", "efa-100g", 4, true},
    // GCP A3 Mega (a3-megagpu-8g): 8 x H100 SXM on NVLink 4, 8 x 200 Gb/s GPUDirect-TCPXO NICs.
    // GCP's TCPXO NCCL profile (nccl-env-profile.sh, as GCP's A3 Mega recipes export it):
    // NCCL_ALGO=Ring,Tree, NCCL_PROTO=Simple, NCCL_NVLS_ENABLE=0 (google/nccl-plugin-gpudirect-
    // tcpxo tcpxo_scripts/nccl-env-profile-simple.sh; GCP's default profile enables LL128 and
    // NVLSTree since the plugin release of 2025-08-21, container-engine-accelerators
    // gpudirect-tcpxo/best-practice.md). NCCL_MIN_NCHANNELS=4, NCCL_BUFFSIZE=8 MiB and
    // NCCL_FASTRAK_NUM_FLOWS=2 (each NCCL message rides whole on one of 2 TCP flows, round robin:
    // the plugin's nccl_shim.cc) are not modelled: no document gives what they cost. GCP's tuner
    // plugin config (a3plus_tuner_config.textproto) pins a 2-node all-reduce of 8 ranks a node to
    // the tree under Simple, the other collectives to the ring: what NCCL's model on this preset
    // picks there too (tests/gcp_tcpx_presets_test.cpp). NCCL's ring search (search.cc, 2.18.5)
    // gives one channel at 24 GB/s to each of the 8 NICs the plugin reports at 200 Gb/s, doubled
    // to 16 (connect.cc), above NCCL_MIN_NCHANNELS=4: the ring uses every NIC, as the preset's 8
    // pooled NICs do (docs/MODEL.md, "GPUDirect-TCPX and -TCPXO from their sources").
    SystemSpec{"gcp-a3-mega", "h100-sxm", 8, "nvlink4", "tcpxo-200g", 8, true, false},
    // GCP A3 High (a3-highgpu-8g): 8 x H100 SXM on NVLink 4, 4 x 200 Gb/s GPUDirect-TCPX NICs.
    // NCCL as GCP's TCPX nccl-tests workload runs it (GoogleCloudPlatform/ai-infra-cluster-
    // provisioning sample_workloads/nccltest/gke/values.yaml, 461d3cb, 2023-12-11): NCCL_ALGO=Ring,
    // NCCL_PROTO=Simple (no NVLS without NVLS in NCCL_ALGO), NCCL_MIN/MAX_NCHANNELS=12 over the 4
    // NICs (not modelled: the ring's bus bandwidth is the node's NICs whatever the channels).
    SystemSpec{"gcp-a3-high", "h100-sxm", 8, "nvlink4", "tcpx-200g", 4, true, false},
};

} // namespace

std::optional<SystemSpec> find_system_preset(std::string_view name) {
  for (const auto& s : kSystems)
    if (s.name == name)
      return s;
  return std::nullopt;
}

std::vector<std::string> system_preset_names() {
  std::vector<std::string> out;
  for (const auto& s : kSystems)
    out.push_back(s.name);
  std::sort(out.begin(), out.end());
  return out;
}

} // namespace overlapsim::hw
