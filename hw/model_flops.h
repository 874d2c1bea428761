// Model FLOPs per token of a decoder transformer, the numerator of model FLOPs utilisation (MFU),
// and the hardware FLOPs that recomputation adds (docs/MODEL.md, "Model FLOPs utilisation").
//
//   model FLOPs per token = 6 N + 12 L H Q T                       (PaLM, Chowdhery et al. 2022,
//                                                                    appendix B)
// N: every parameter that takes part in a matrix multiply for each token: the blocks' parameters
// (their norms and biases included, a rounding) and the LM head's d_model x vocab projection,
// tied or not (it runs either way); not the token embedding or learned positions (a lookup, no
// FLOPs). L layers, H heads, Q head size (H x Q = d_model), T the sequence length: the attention
// scores and their product with V, forward and backward, with no discount for the causal mask.
// For GPT-3's shapes this is Narayanan et al. 2021's eq. (3) without recomputation,
// 72 B s l h^2 (1 + s/6h + V/16lh) per iteration, divided by the B s tokens.
#pragma once

#include "hw/model.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace overlapsim::hw {

struct ModelFlops {
  double params = 0;             // N above
  double per_token = 0;          // 6 N + 12 L d_model T
  double hardware_per_token = 0; // per_token plus the forward FLOPs recomputation runs again
};

// How much of the forward runs a second time in the backward.
struct RecomputedFlops {
  std::vector<bool> layers; // by ModelSpec layer index: the whole forward re-runs (checkpointing)
  bool selective = false;   // every block's attention scores re-run (Korthikanti et al. 2022)
};

// The FLOPs of `spec` (a transformer_model) with `dims` (scenario ModelConfig::dims: vocab,
// d_model, n_layers, n_heads, tied_embeddings) at `seq_len` tokens per sample; nullopt for any
// other model (no n_heads in dims, or no "embedding" layer).
std::optional<ModelFlops> transformer_flops(const ModelSpec& spec,
                                            const std::map<std::string, double>& dims, int seq_len,
                                            const RecomputedFlops& recomputed = {});

} // namespace overlapsim::hw
