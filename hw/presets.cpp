#include "hw/presets.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace overlapsim::hw {

namespace {

// Peak numbers are dense (no structured sparsity); efficiency is the default achievable fraction
// of peak for transformer training (model FLOPs utilisation), overridable in a scenario.
const std::array kGpus = {
    // NVIDIA A100 datasheet (SXM4 80GB): 312 TFLOPS bf16, 156 TF32, 2,039 GB/s HBM2e.
    GpuSpec{"a100-80gb", 312e12, 156e12, 80e9, 2.039e12, 0.45, 0, 108},
    // NVIDIA A100 datasheet (SXM4 40GB): 312 TFLOPS bf16, 1,555 GB/s HBM2.
    GpuSpec{"a100-40gb", 312e12, 156e12, 40e9, 1.555e12, 0.45, 0, 108},
    // NVIDIA H100 datasheet (SXM5): 989 TFLOPS bf16 dense, 494.5 TF32, 3.35 TB/s HBM3.
    GpuSpec{"h100-sxm", 989e12, 494.5e12, 80e9, 3.35e12, 0.40, 0, 132},
    // NVIDIA H100 datasheet (PCIe): 756 TFLOPS bf16 dense, 378 TF32, 2.0 TB/s HBM2e.
    GpuSpec{"h100-pcie", 756e12, 378e12, 80e9, 2.0e12, 0.40, 0, 114},
    // NVIDIA RTX A6000 datasheet: 154.8 TFLOPS fp16 tensor (fp32 accumulate), 77.4 TF32, 768 GB/s.
    GpuSpec{"a6000", 154.8e12, 77.4e12, 48e9, 768e9, 0.40, 0, 84},
    // NVIDIA Turing whitepaper (RTX 2080 Ti): 53.8 TFLOPS fp16 tensor with the fp32 accumulate
    // mixed-precision training uses (107.6 with fp16 accumulate); no bf16; 616 GB/s GDDR6.
    GpuSpec{"rtx-2080ti", 53.8e12, 13.4e12, 11e9, 616e9, 0.40, 0, 68},
    // AMD Instinct MI250X datasheet: 383 TFLOPS bf16/fp16, 95.7 fp32 matrix, 3.2 TB/s HBM2e.
    GpuSpec{"mi250x", 383e12, 95.7e12, 128e9, 3.2768e12, 0.35, 0, 220},
    // NVIDIA V100 datasheet (SXM2 32GB): 125 TFLOPS fp16 tensor, 15.7 fp32, 900 GB/s.
    GpuSpec{"v100", 125e12, 15.7e12, 32e9, 900e9, 0.40, 0, 80},
    // NVIDIA L40S datasheet: 362 TFLOPS bf16 dense, 183 TF32, 864 GB/s GDDR6.
    GpuSpec{"l40s", 362e12, 183e12, 48e9, 864e9, 0.40, 0, 142},
};

// Bandwidth: intra-node links per GPU and direction, networks per NIC and direction. Latency: the
// one-way GPU-to-GPU alpha of a small message across that network (NCCL-level, not wire latency).
const std::array kLinks = {
    // NVIDIA A100: 12 NVLink3 links x 25 GB/s per direction through NVSwitch (600 GB/s total).
    LinkSpec{"nvlink3", 300e9, 1e-6},
    // NVIDIA H100: 18 NVLink4 links x 25 GB/s per direction (900 GB/s total).
    LinkSpec{"nvlink4", 450e9, 1e-6},
    // PCIe 4.0 x16: 32 GB/s raw per direction, ~25 GB/s achieved GPU to GPU.
    LinkSpec{"pcie4", 25e9, 2e-6},
    // PCIe 5.0 x16: 64 GB/s raw per direction, ~50 GB/s achieved.
    LinkSpec{"pcie5", 50e9, 2e-6},
    // Intel Omni-Path 100 series: 100 Gb/s per port (ACCO paper's cluster).
    LinkSpec{"omnipath-100", 100e9 / 8, 2e-6},
    // Mellanox/NVIDIA InfiniBand HDR: 200 Gb/s per port.
    LinkSpec{"ib-hdr", 200e9 / 8, 2e-6},
    // NVIDIA InfiniBand NDR: 400 Gb/s per port.
    LinkSpec{"ib-ndr", 400e9 / 8, 2e-6},
    // Ethernet over TCP sockets: tens of microseconds through the kernel stack.
    LinkSpec{"ethernet-1g", 1e9 / 8, 50e-6},
    LinkSpec{"ethernet-10g", 10e9 / 8, 20e-6},
    // 25/100 GbE, typically RoCE v2 in GPU clusters.
    LinkSpec{"ethernet-25g", 25e9 / 8, 10e-6},
    LinkSpec{"ethernet-100g", 100e9 / 8, 5e-6},
    // Inter-datacenter WAN links (one-way latency of continental to regional distances), as in the
    // DiLoCo / DeMo geo-distributed settings.
    LinkSpec{"wan-10mbit", 10e6 / 8, 50e-3},
    LinkSpec{"wan-100mbit", 100e6 / 8, 30e-3},
    LinkSpec{"wan-1gbit", 1e9 / 8, 20e-3},
    LinkSpec{"wan-10gbit", 10e9 / 8, 10e-3},
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
