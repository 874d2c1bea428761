#include "hw/system_presets.h"

#include <algorithm>
#include <array>

namespace overlapsim::hw {

namespace {

const std::array<SystemSpec, 2> kSystems = {
    // NVIDIA DGX A100 datasheet and user guide: 8 x A100 SXM4 80GB on NVLink3 through 6 NVSwitches;
    // 8 single-port ConnectX-6 HDR InfiniBand (200 Gb/s) compute NICs, one per GPU.
    SystemSpec{"dgx-a100", "a100-80gb", 8, "nvlink3", "ib-hdr", 8},
    // NVIDIA DGX H100 datasheet and user guide: 8 x H100 SXM5 on NVLink4 through 4 NVSwitch-3
    // chips; 8 ConnectX-7 NDR InfiniBand (400 Gb/s) compute ports, one per GPU.
    SystemSpec{"dgx-h100", "h100-sxm", 8, "nvlink4", "ib-ndr", 8},
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
