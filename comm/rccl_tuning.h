// RCCL's own tuning model, for AMD GPUs (ROCm/rccl, src/graph/tuning.cc, 2024-10, commit
// 0cbce2a7): RCCL is a collective library of its own, with its own latencies, bandwidth ratios and
// size correction tables per topology model (`tuning=N` in src/graph/rome_models.cc). The MI300X
// platform (8 GPUs on a full xGMI mesh, 7 links a GPU: rome_model_79, _81, _84) selects
// tuning_model_5. Its latencies go into the NcclGeneration (comm/nccl_model.cpp, kRcclMi300);
// what has no NCCL counterpart is here.
#pragma once

#include "comm/nccl_model.h"

#include <array>

namespace overlapsim::comm {

struct RcclTuning {
  const char* name = "";
  // bwRatio (tuning.cc): the share of a tree's bus bandwidth per protocol (LL, LL128, Simple),
  // on <= 2 nodes and on more. RCCL multiplies it in where NCCL applies 0.92 and 1/3.8.
  std::array<std::array<double, 3>, 2> tree_share{};
  // ringCorrectionFactor and treeCorrectionFactor (tuning.cc, ncclTopoGetAlgoTime): a factor on
  // the bandwidth per protocol and log2(bytes / 64) (sizes from 64 B, the last column for
  // 4 GiB and up); the ring's only across nodes. Values of 0.1 over whole size ranges steer
  // RCCL's choice rather than describe a throughput, so the model applies them to what the
  // tuner sees (NcclView::tuner) and not to the time a collective runs.
  std::array<std::array<double, 27>, 3> tree_correction{};
  std::array<std::array<double, 27>, 3> ring_correction{};
};

// tuning_model_5 (the MI300X's).
const RcclTuning& rccl_mi300_tuning();

// A correction table's factor for `protocol` and `bytes`: column log2(floor(bytes / 64)),
// the last column from there on; sizes below 128 B take column 0.
double rccl_correction(const std::array<std::array<double, 27>, 3>& table, NcclProtocol protocol,
                       double bytes);

} // namespace overlapsim::comm
