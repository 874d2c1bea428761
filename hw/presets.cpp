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
