// Activation checkpointing of a model's checkpointable layers (model.activation_checkpointing):
// the reader's, and `run`'s memory advice when activations are what does not fit.
#pragma once

#include "scenario/scenario.h"

namespace overlapsim::scenario {

// Checkpointing of `model`'s checkpointable layers (a transformer's blocks, not the embedding or
// the LM head; any other model's every layer) in segments of `every` layers (0: none).
ActivationCheckpointing checkpointing_of(const ModelConfig& model, int every);

} // namespace overlapsim::scenario
