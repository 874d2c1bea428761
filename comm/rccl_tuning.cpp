#include "comm/rccl_tuning.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace overlapsim::comm {

const RcclTuning& rccl_mi300_tuning() {
  // ROCm/rccl src/graph/tuning.cc, tuning_model_5: bwRatio's Tree rows and the two correction
  // tables (rows LL, LL128, Simple). LL128 is disabled on gfx942 (only gfx90a enables it), so
  // its rows are 0.
  static const RcclTuning kModel5{
      "rccl-mi300",
      {{{0.06, 0.0, 0.11}, {0.06, 0.0, 0.59}}},
      {{
          {0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 1.0, 1.0, 1.0, 1.0, 1.0, 0.6, 1.0, 0.9,
           1.0, 1.0, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1},
          {},
          {0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1,
           0.1, 0.7, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.8},
      }},
      {{
          {0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 1.0, 0.2, 1.0,
           0.4, 0.4, 0.1, 0.2, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1},
          {},
          {0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1,
           0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.8, 1.0, 1.0, 1.0},
      }},
  };
  return kModel5;
}

double rccl_correction(const std::array<std::array<double, 27>, 3>& table, NcclProtocol protocol,
                       double bytes) {
  // tuning.cc: logSize = log2i(nBytes >> 6), capped at the last column.
  const double units = std::floor(bytes / 64);
  const int column = units < 2 ? 0 : static_cast<int>(std::floor(std::log2(units)));
  return table[static_cast<std::size_t>(protocol)][static_cast<std::size_t>(std::min(column, 26))];
}

} // namespace overlapsim::comm
