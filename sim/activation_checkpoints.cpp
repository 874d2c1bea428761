#include "sim/activation_checkpoints.h"

#include <algorithm>

namespace overlapsim::sim {

ActivationCheckpoints::ActivationCheckpoints(const hw::ModelSpec& model,
                                             scenario::ActivationCheckpointing config)
    : model_(model), config_(std::move(config)) {}

ActivationCheckpoints::Layers& ActivationCheckpoints::of(MicroBatch mb) {
  auto& l = live_[{mb.step, mb.index}];
  if (l.state.empty()) {
    l.state.assign(model_.layers.size(), State::none);
    l.checkpoint.assign(model_.layers.size(), 0.0);
    l.starts.assign(model_.layers.size(), 0);
  }
  return l;
}

double ActivationCheckpoints::forward(LayerRange layers, MicroBatch mb) {
  auto& live = of(mb);
  double kept = 0;
  for (int l = layers.first; l < layers.last; ++l) {
    const auto i = static_cast<std::size_t>(l);
    const int segment = config_.segment_of(l);
    if (segment < 0) {
      live.state[i] = State::kept;
      kept += model_.layers[i].activation_bytes_per_sample;
      continue;
    }
    live.state[i] = State::dropped;
    // The segment's input is its checkpoint; a range that starts inside a segment (a pipeline
    // stage) received its input and keeps it the same way. The model's own input (token ids) is
    // not counted, as without checkpointing.
    if (l == layers.first || config_.segment_of(l - 1) != segment) {
      live.starts[i] = 1;
      live.checkpoint[i] = l > 0 ? model_.layers[i - 1].output_bytes_per_sample : 0.0;
      kept += live.checkpoint[i];
    }
  }
  return kept;
}

std::vector<ActivationCheckpoints::Piece> ActivationCheckpoints::backward(LayerRange layers,
                                                                          MicroBatch mb) {
  auto& live = of(mb);
  std::vector<Piece> pieces;
  for (int l = layers.last - 1; l >= layers.first; --l) {
    const auto i = static_cast<std::size_t>(l);
    if (live.state[i] == State::dropped) {
      // Re-run the forward from the segment's checkpoint up to this layer.
      int lo = l;
      while (live.starts[static_cast<std::size_t>(lo)] == 0 && lo > 0 &&
             live.state[static_cast<std::size_t>(lo - 1)] == State::dropped &&
             config_.segment_of(lo - 1) == config_.segment_of(l))
        --lo;
      Piece p;
      p.recompute = {lo, l + 1};
      p.backward = {l + 1, l + 1};
      for (int r = lo; r <= l; ++r) {
        live.state[static_cast<std::size_t>(r)] = State::kept;
        p.recomputed_bytes +=
            model_.layers[static_cast<std::size_t>(r)].activation_bytes_per_sample;
      }
      pieces.push_back(p);
    }
    if (pieces.empty())
      pieces.push_back(Piece{{l + 1, l + 1}, {l + 1, l + 1}, 0, 0});
    auto& p = pieces.back();
    p.backward.first = l;
    if (live.state[i] == State::kept)
      p.freed_bytes += model_.layers[i].activation_bytes_per_sample;
    p.freed_bytes += live.checkpoint[i];
    live.state[i] = State::none;
    live.checkpoint[i] = 0;
    live.starts[i] = 0;
  }
  if (std::all_of(live.state.begin(), live.state.end(), [](State s) { return s == State::none; }))
    live_.erase({mb.step, mb.index});
  return pieces;
}

} // namespace overlapsim::sim
