// What one GPU's activations are under model.activation_checkpointing (scenario/scenario.h): which
// bytes a forward keeps, and which layers a backward must first re-run forward. Algorithms call
// forward and backward on any layer ranges (a bucket's layers, a pipeline stage), so the plan
// follows each micro-batch's layers one by one rather than assuming whole segments.
#pragma once

#include "hw/model.h"
#include "runtime/runtime.h"
#include "scenario/scenario.h"

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace overlapsim::sim {

class ActivationCheckpoints {
public:
  ActivationCheckpoints(const hw::ModelSpec& model, scenario::ActivationCheckpointing config);

  // Bytes per sample the forward of `layers` keeps: every activation of a layer outside the
  // checkpointed ones, only the input of a segment (or of the range, when it starts inside one).
  double forward(LayerRange layers, MicroBatch mb);

  // A backward of `layers` runs as pieces, from the output layer down: each first re-runs the
  // forward of `recompute` (empty when nothing is to recompute), which brings `recomputed_bytes`
  // per sample back, then runs the backward of `backward`, after which `freed_bytes` per sample
  // are released (the layers' activations and the checkpoints they started from).
  struct Piece {
    LayerRange recompute;
    LayerRange backward;
    double recomputed_bytes = 0;
    double freed_bytes = 0;
  };
  std::vector<Piece> backward(LayerRange layers, MicroBatch mb);

private:
  enum class State : std::uint8_t { none, kept, dropped };
  struct Layers {
    std::vector<State> state;
    std::vector<double> checkpoint;   // bytes per sample of the input kept for the layer's segment
    std::vector<std::uint8_t> starts; // the layer's input is a checkpoint: recomputing stops there
  };

  Layers& of(MicroBatch mb);

  const hw::ModelSpec& model_;
  scenario::ActivationCheckpointing config_;
  std::map<std::pair<int, int>, Layers> live_; // by (step, index)
};

} // namespace overlapsim::sim
