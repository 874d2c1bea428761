#include "hw/presets.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

namespace overlapsim::hw {

namespace {
double share_of(const std::map<std::string, double, std::less<>>& by_op, std::string_view op,
                double otherwise) {
  const auto it = by_op.find(op);
  return it == by_op.end() ? otherwise : it->second;
}
bool any_above_zero(const std::map<std::string, double, std::less<>>& by_op, double share) {
  return share > 0 ||
         std::any_of(by_op.begin(), by_op.end(), [](const auto& kv) { return kv.second > 0; });
}
} // namespace

double GpuSpec::comm_interference_of(std::string_view op) const {
  return share_of(comm_interference_by_op, op, comm_interference);
}
double GpuSpec::compute_interference_of(std::string_view op) const {
  return share_of(compute_interference_by_op, op, compute_interference);
}
bool GpuSpec::any_comm_interference() const {
  return any_above_zero(comm_interference_by_op, comm_interference);
}
bool GpuSpec::any_compute_interference() const {
  return any_above_zero(compute_interference_by_op, compute_interference);
}
double GpuSpec::collective_start_seconds(std::string_view op, double bytes) const {
  const auto it = collective_start_cost_by_op.find(op);
  return it == collective_start_cost_by_op.end()
             ? 0.0
             : it->second.fixed_s + it->second.per_byte_s * bytes;
}
double GpuSpec::collective_start_share(std::string_view op) const {
  const auto it = collective_start_cost_by_op.find(op);
  return it == collective_start_cost_by_op.end() ? StartCost::kMostShare : it->second.share;
}

double GpuSpec::memory_reserve() const {
  return memory_reserve_bytes >= 0 ? memory_reserve_bytes
                                   : default_memory_reserve_bytes(memory_bytes);
}

double default_memory_reserve_bytes(double memory_bytes) {
  return std::min(1e9 + 0.05 * memory_bytes, 0.5 * memory_bytes);
}

LinkSpec link_at(std::string name, double line_rate_Bps, double latency_s, double efficiency) {
  return LinkSpec{std::move(name), line_rate_Bps * efficiency, latency_s, efficiency};
}

const char* to_string(LinkKind kind) {
  switch (kind) {
  case LinkKind::nvlink:
    return "nvlink";
  case LinkKind::pcie:
    return "pcie";
  case LinkKind::infiniband:
    return "infiniband";
  case LinkKind::omnipath:
    return "omnipath";
  case LinkKind::ethernet:
    return "ethernet";
  case LinkKind::wan:
    return "wan";
  case LinkKind::xgmi:
    return "xgmi";
  case LinkKind::unknown:
    break;
  }
  return "unknown";
}

namespace {

// Peak numbers are dense (no structured sparsity); efficiency is the default achievable fraction
// of peak for transformer training (model FLOPs utilisation), overridable in a scenario.
//
// comm_interference: Lee et al., "Characterizing Compute-Communication Overlap in GPU-Accelerated
// Distributed Deep Learning" (arXiv 2507.03114, 2025) measured GPT and Llama training on 4 x A100,
// H100, MI250 and MI210: computation overlapped with communication runs 18.9% slower on average
// (40% at most). A slowdown of 1.189 leaves 1 / 1.189 = 0.84 of the speed: 0.16 for the GPU
// families they measured; 0 (free overlap) for the others, which no published measurement covers.
constexpr double kMeasuredCommInterference = 1 - 1 / 1.189;

GpuSpec with_capability(GpuSpec gpu, int compute_capability) {
  gpu.compute_capability = compute_capability;
  return gpu;
}
LinkSpec of_kind(LinkSpec link, LinkKind kind, bool nvlink_sharp = false) {
  link.kind = kind;
  link.nvlink_sharp = nvlink_sharp;
  return link;
}
// A network whose NCCL plugin reports `latency_s` to NCCL (LinkSpec::plugin_latency_s).
LinkSpec reporting(LinkSpec link, double latency_s) {
  link.plugin_latency_s = latency_s;
  return link;
}

// A network whose NCCL profile sets NCCL_BUFFSIZE (LinkSpec::nccl_buffsize_bytes).
LinkSpec with_buffsize(LinkSpec link, double bytes) {
  link.nccl_buffsize_bytes = bytes;
  return link;
}

// Compute capabilities: NVIDIA's CUDA GPUs table (developer.nvidia.com/cuda-gpus).
const std::array kGpus = {
    // NVIDIA A100 datasheet (SXM4 80GB): 312 TFLOPS bf16, 156 TF32, 2,039 GB/s HBM2e.
    with_capability(
        GpuSpec{"a100-80gb", 312e12, 156e12, 80e9, 2.039e12, 0.45, kMeasuredCommInterference, 108},
        80),
    // NVIDIA A100 datasheet (SXM4 40GB): 312 TFLOPS bf16, 1,555 GB/s HBM2.
    with_capability(
        GpuSpec{"a100-40gb", 312e12, 156e12, 40e9, 1.555e12, 0.45, kMeasuredCommInterference, 108},
        80),
    // NVIDIA H100 datasheet (SXM5): 989 TFLOPS bf16 dense, 494.5 TF32, 3.35 TB/s HBM3.
    with_capability(
        GpuSpec{"h100-sxm", 989e12, 494.5e12, 80e9, 3.35e12, 0.40, kMeasuredCommInterference, 132},
        90),
    // NVIDIA H200 datasheet (SXM): the H100's compute (989 TFLOPS bf16 dense, 494.5 TF32) with
    // 141 GB of HBM3e at 4.8 TB/s.
    with_capability(
        GpuSpec{"h200", 989e12, 494.5e12, 141e9, 4.8e12, 0.40, kMeasuredCommInterference, 132}, 90),
    // NVIDIA H100 datasheet (PCIe): 756 TFLOPS bf16 dense, 378 TF32, 2.0 TB/s HBM2e.
    with_capability(
        GpuSpec{"h100-pcie", 756e12, 378e12, 80e9, 2.0e12, 0.40, kMeasuredCommInterference, 114},
        90),
    // NVIDIA RTX A6000 datasheet: 154.8 TFLOPS fp16 tensor (fp32 accumulate), 77.4 TF32, 768 GB/s.
    with_capability(GpuSpec{"a6000", 154.8e12, 77.4e12, 48e9, 768e9, 0.40, 0, 84}, 86),
    // NVIDIA Turing whitepaper (RTX 2080 Ti): 53.8 TFLOPS fp16 tensor with the fp32 accumulate
    // mixed-precision training uses (107.6 with fp16 accumulate); no bf16; 616 GB/s GDDR6.
    with_capability(GpuSpec{"rtx-2080ti", 53.8e12, 13.4e12, 11e9, 616e9, 0.40, 0, 68}, 75),
    // AMD Instinct MI250X datasheet: 383 TFLOPS bf16/fp16, 95.7 fp32 matrix, 3.2 TB/s HBM2e.
    GpuSpec{"mi250x", 383e12, 95.7e12, 128e9, 3.2768e12, 0.35, kMeasuredCommInterference, 220},
    // NVIDIA V100 datasheet (SXM2 32GB): 125 TFLOPS fp16 tensor, 15.7 fp32, 900 GB/s.
    with_capability(GpuSpec{"v100", 125e12, 15.7e12, 32e9, 900e9, 0.40, 0, 80}, 70),
    // NVIDIA L40S datasheet: 362 TFLOPS bf16 dense, 183 TF32, 864 GB/s GDDR6.
    with_capability(GpuSpec{"l40s", 362e12, 183e12, 48e9, 864e9, 0.40, 0, 142}, 89),
    // NVIDIA HGX B200 / DGX B200 datasheets: 2.25 PFLOPS bf16 dense (4.5 sparse) and 1.1 TF32
    // dense per GPU; 180 GB HBM3e at 8 TB/s (DGX B200: 1,440 GB, 64 TB/s over 8); 148 SMs; sm_100.
    with_capability(GpuSpec{"b200", 2.25e15, 1.1e15, 180e9, 8e12, 0.40, 0, 148}, 100),
    // NVIDIA GB200 NVL72 datasheet, per GPU (the rack's figures over 72): 2.5 PFLOPS bf16 dense
    // (360 PF sparse / 72 / 2), 1.25 TF32 dense; up to 186 GB HBM3e at 8 TB/s; sm_100.
    with_capability(GpuSpec{"gb200", 2.5e15, 1.25e15, 186e9, 8e12, 0.40, 0, 148}, 100),
    // AMD Instinct MI300X datasheet: 1,307.4 TFLOPS bf16/fp16 dense, 163.4 fp32 matrix, 192 GB
    // HBM3 at 5.3 TB/s, 304 compute units. Not NVIDIA's: no compute capability (RCCL).
    GpuSpec{"mi300x", 1307.4e12, 163.4e12, 192e9, 5.3e12, 0.35, 0, 304},
};

// Line rates: intra-node links per GPU and direction, networks per NIC and direction. Efficiency:
// the share of it that NCCL's ring all-reduce reaches (nccl-tests busbw, large messages), so a
// preset's bandwidth is what collectives get, not the wire. Latency: the one-way GPU-to-GPU alpha
// of a small message across that network (NCCL-level, not wire latency).
const std::array kLinks = {
    // NVIDIA A100: 12 NVLink3 links x 25 GB/s per direction through NVSwitch (600 GB/s total).
    // nccl-tests all_reduce busbw on 8 x A100 SXM (DGX A100): ~230-235 GB/s (NVIDIA DGX A100
    // user guide, NCCL performance section): 0.78.
    of_kind(link_at("nvlink3", 300e9, 1e-6, 0.78), LinkKind::nvlink),
    // NVIDIA H100: 18 NVLink4 links x 25 GB/s per direction (900 GB/s total). nccl-tests busbw on
    // 8 x H100 SXM without NVLink SHARP: ~360-370 GB/s (NVIDIA NCCL 2.18 release blog): 0.80.
    of_kind(link_at("nvlink4", 450e9, 1e-6, 0.80), LinkKind::nvlink, true),
    // PCIe 4.0 x16: 32 GB/s raw per direction (31.5 after 128b/130b); GPU-to-GPU through a PCIe
    // switch, nccl-tests busbw ~21-23 GB/s: 0.70.
    of_kind(link_at("pcie4", 32e9, 2e-6, 0.70), LinkKind::pcie),
    // PCIe 5.0 x16: 64 GB/s raw per direction; busbw ~40-48 GB/s (H100 PCIe servers): 0.70.
    of_kind(link_at("pcie5", 64e9, 2e-6, 0.70), LinkKind::pcie),
    // Intel Omni-Path 100 series: 100 Gb/s per port (ACCO paper's cluster); NCCL through the OFI
    // (PSM2) plugin reaches ~10-10.5 GB/s busbw (Cornelis/Intel OPA performance notes): 0.84.
    of_kind(link_at("omnipath-100", 100e9 / 8, 2e-6, 0.84), LinkKind::omnipath),
    // Mellanox/NVIDIA InfiniBand HDR: 200 Gb/s per port; nccl-tests inter-node busbw ~23 GB/s per
    // HDR NIC (NVIDIA DGX A100 SuperPOD reference architecture): 0.92.
    of_kind(link_at("ib-hdr", 200e9 / 8, 2e-6, 0.92), LinkKind::infiniband),
    // NVIDIA InfiniBand NDR: 400 Gb/s per port; ~46 GB/s busbw per NIC (DGX H100 SuperPOD): 0.92.
    of_kind(link_at("ib-ndr", 400e9 / 8, 2e-6, 0.92), LinkKind::infiniband),
    // Ethernet over TCP sockets (NCCL's socket transport): tens of microseconds through the kernel
    // stack; TCP goodput ~94% of the line at 1-10 GbE, minus NCCL's socket overheads: 0.90.
    of_kind(link_at("ethernet-1g", 1e9 / 8, 50e-6, 0.90), LinkKind::ethernet),
    of_kind(link_at("ethernet-10g", 10e9 / 8, 20e-6, 0.90), LinkKind::ethernet),
    // 25/100 GbE, typically RoCE v2 in GPU clusters: ~90% of the line at 25 GbE; at 100 GbE
    // busbw ~9-10 GB/s of 12.5 with one NIC (RoCE congestion control, PFC): 0.85 and 0.80.
    of_kind(link_at("ethernet-25g", 25e9 / 8, 10e-6, 0.85), LinkKind::ethernet),
    of_kind(link_at("ethernet-100g", 100e9 / 8, 5e-6, 0.80), LinkKind::ethernet),
    // NVIDIA B200 / GB200: 18 NVLink 5 links x 50 GB/s per direction (1.8 TB/s total) through
    // NVSwitch (HGX B200) or the NVL72 rack's NVLink switch trays, which reduce in the switch
    // (NVLink SHARP). No ring-only busbw table was found: NVLink 4's 0.80 (assumed, not measured).
    of_kind(link_at("nvlink5", 900e9, 1e-6, 0.80), LinkKind::nvlink, true),
    // AMD MI300X: 7 Infinity Fabric (xGMI) links a GPU, 128 GB/s bidirectional each (64 a
    // direction; AMD MI300X datasheet: 896 GB/s aggregate), a full mesh with no switch: each
    // pair of a node's 8 GPUs has its own link. RCCL runs a channel per ring order, so a GPU's
    // rings together use all 7 links: 448 GB/s a direction. CRC and protocol overhead leave
    // ~48 GB/s of a link's 64: 0.75 (AMD ROCm blog, "Understanding RCCL Bandwidth and xGMI
    // Performance on AMD Instinct MI300X", 2025-03-02). One pair alone has 64 GB/s (the
    // simulator's star gives it the GPU's 448: point-to-point between two GPUs is not modelled).
    of_kind(link_at("xgmi-mi300x", 7 * 64e9, 1e-6, 0.75), LinkKind::xgmi),
    // AWS EFA, one 100 Gb/s port (p5.48xlarge: 32 ports for 8 H100, 3,200 Gb/s; p4d/p4de: 4;
    // AWS EC2 accelerated-computing instance specifications). NCCL runs over libfabric's SRD
    // through aws-ofi-nccl (its RDMA protocol stripes a GPU's messages over up to 4 rails,
    // MAX_NUM_RAILS). 0.92 of the line: as InfiniBand (assumed). Latency 30 us: a fit, read off
    // the 8 B row of tests/data/nccl-tests/aws-p5-h100-2x8-efa.log (a whole network hop; no
    // published SRD latency was found). aws-ofi-nccl reports 75 us to NCCL on p4d, p4de and p5
    // (src/platform-aws.cpp, platform_data_map's latency; since v1.7.0, commit d87d61e0: chosen
    // so that NCCL's tuner picks the right algorithm on 2 nodes), which NCCL's tuner adds to
    // every network hop (LinkSpec::plugin_latency_s).
    reporting(of_kind(link_at("efa-100g", 100e9 / 8, 30e-6, 0.92), LinkKind::ethernet), 75e-6),
    // GCP GPUDirect-TCPX (A3 High, a3-highgpu-8g: 4 x 200 Gb/s GPU NICs) and -TCPXO (A3 Mega,
    // a3-megagpu-8g: 8 x 200 Gb/s; GCP's GPU machine types page). Data lands in GPU memory
    // over TCP flows, headers through the host: TCP's goodput share, 0.90 as the Ethernet
    // presets (assumed); 20 us latency as a kernel TCP path (ethernet-10g's; assumed). TCPXO's
    // plugin reports no latency to NCCL (nccl-plugin-gpudirect-tcpxo nccl_shim.cc,
    // GetProperties: props.latency = 0), nor does TCPX's (google/nccl-plugin-gpudirecttcpx
    // net_tcpx.cc: props->latency = 0) or NCCL's own IB transport ("Not set").
    of_kind(link_at("tcpx-200g", 200e9 / 8, 20e-6, 0.90), LinkKind::ethernet),
    // GCP's TCPXO NCCL profile (nccl-env-profile.sh, installed by the plugin's image
    // nccl-plugin-gpudirecttcpx-dev v1.0.x with NCCL 2.21.5) sets NCCL_BUFFSIZE=8388608.
    with_buffsize(of_kind(link_at("tcpxo-200g", 200e9 / 8, 20e-6, 0.90), LinkKind::ethernet),
                  8388608),
    // RoCE v2 at 400 GbE (ConnectX-7, Broadcom Thor2: MI300X and H100 Ethernet clusters). 0.92 of
    // the line: what OCI's 2 x 8 H100 RoCE table reaches a NIC (tests/data/nccl-tests/
    // oci-h100-2x8-roce.log: 23 of 25 GB/s); 3 us as the InfiniBand presets' fabric latency.
    of_kind(link_at("roce-400g", 400e9 / 8, 3e-6, 0.92), LinkKind::ethernet),
    // HPE Slingshot 11: 200 Gb/s per Cassini NIC (HPE Slingshot datasheet; 4 a node on
    // Frontier and Perlmutter), NCCL through aws-ofi-nccl on libfabric's cxi provider. 0.92 as
    // InfiniBand and 2 us as ib-hdr (assumed: no published NCCL table was found).
    of_kind(link_at("slingshot-200", 200e9 / 8, 2e-6, 0.92), LinkKind::ethernet),
    // Inter-datacenter WAN links (one-way latency of continental to regional distances), as in the
    // DiLoCo / DeMo geo-distributed settings: rates as provisioned; TCP's window limits over the
    // long round trip are network_model: tcp's to model.
    of_kind(link_at("wan-10mbit", 10e6 / 8, 50e-3, 1.0), LinkKind::wan),
    of_kind(link_at("wan-100mbit", 100e6 / 8, 30e-3, 1.0), LinkKind::wan),
    of_kind(link_at("wan-1gbit", 1e9 / 8, 20e-3, 1.0), LinkKind::wan),
    of_kind(link_at("wan-10gbit", 10e9 / 8, 10e-3, 1.0), LinkKind::wan),
};

// Lower case, '_' read as '-': "A100_80GB" finds "a100-80gb".
std::string normalize(std::string_view name) {
  std::string out(name);
  for (char& c : out)
    c = c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

template <typename T, std::size_t N>
std::optional<T> find(const std::array<T, N>& table, std::string_view name) {
  const std::string key = normalize(name);
  for (const auto& item : table)
    if (item.name == key)
      return item;
  return std::nullopt;
}

template <typename T, std::size_t N> std::vector<std::string> names(const std::array<T, N>& table) {
  std::vector<std::string> out;
  for (const auto& item : table)
    out.push_back(item.name);
  std::sort(out.begin(), out.end());
  return out;
}

} // namespace

std::optional<GpuSpec> find_gpu_preset(std::string_view name) {
  return find(kGpus, name);
}
std::optional<LinkSpec> find_link_preset(std::string_view name) {
  return find(kLinks, name);
}
std::vector<std::string> gpu_preset_names() {
  return names(kGpus);
}
std::vector<std::string> link_preset_names() {
  return names(kLinks);
}

} // namespace overlapsim::hw
