#include "hw/model_flops.h"

namespace overlapsim::hw {

std::optional<ModelFlops> transformer_flops(const ModelSpec& spec,
                                            const std::map<std::string, double>& dims, int seq_len,
                                            const RecomputedFlops& recomputed) {
  const auto get = [&](const char* key) {
    const auto it = dims.find(key);
    return it == dims.end() ? 0.0 : it->second;
  };
  const double d = get("d_model"), layers = get("n_layers"), vocab = get("vocab");
  if (get("n_heads") <= 0 || d <= 0 || layers <= 0 || seq_len <= 0 || spec.layers.empty() ||
      spec.layers.front().name != "embedding")
    return std::nullopt;
  ModelFlops f;
  // Everything but the embedding layer (token embedding and learned positions), plus the LM
  // head's projection when the head reuses the embedding's matrix.
  f.params = spec.total_params() - spec.layers.front().params;
  if (get("tied_embeddings") > 0)
    f.params += vocab * d;
  const double t = seq_len;
  f.per_token = 6 * f.params + 12 * layers * d * t;
  f.hardware_per_token = f.per_token;
  for (std::size_t i = 0; i < spec.layers.size(); ++i) {
    const auto& layer = spec.layers[i];
    const bool block = layer.name.starts_with("block");
    if (i < recomputed.layers.size() && recomputed.layers[i])
      f.hardware_per_token += layer.fwd_flops_per_sample / t; // the layer's forward once more
    else if (recomputed.selective && block)
      f.hardware_per_token += 4 * t * d; // QK^T and scores x V: 2 T d each per token
  }
  return f;
}

} // namespace overlapsim::hw
