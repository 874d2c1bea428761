// Where 3D parallelism (issue 65) puts ranks and layers: each rank's coordinates along the tensor,
// data and pipeline axes, the groups it belongs to, and which pipeline stage (and model chunk)
// holds each layer. Built from the scenario's `parallelism` section (scenario::ParallelismSpec);
// the simulator's integration and the memory model (parallel/memory.h) read it.
#pragma once

#include "hw/model.h"
#include "runtime/runtime.h"
#include "scenario/scenario.h"

#include <vector>

namespace overlapsim::parallel {

// A rank's position along each axis: its TP rank, DP rank and pipeline stage.
struct Coordinates {
  int tensor = 0;
  int data = 0;
  int pipeline = 0;
  bool operator==(const Coordinates&) const = default;
};

// One model chunk: the consecutive layers one stage runs as its `virtual_chunk`-th chunk
// (interleaved 1F1B gives each stage `virtual_stages` of them; other schedules one). Chunks in
// model order are c = virtual_chunk x pipeline + stage (Megatron's interleaved assignment).
struct Chunk {
  int stage = 0;
  int virtual_chunk = 0;
  LayerRange layers; // [first, last) of ModelSpec::layers
  double params = 0; // its layers' parameters, whole (before tensor parallelism)
};

class ParallelLayout {
public:
  // `spec` as the loader checked it against `world_size` GPUs and `model` (sizes that divide the
  // GPUs, a layer for every chunk); throws std::invalid_argument otherwise. The model's blocks
  // are its layers between a first layer named "embedding" and a last named "head" (a
  // transformer's), else all of them. `tied_embedding_params`: the LM head's weights when it is
  // the token embedding (vocab x d_model; 0 when untied): with more than one stage the last stage
  // keeps a copy for the output layer (Megatron: its word embeddings on the last stage, their
  // gradients all-reduced with the first's), counted in its params.
  ParallelLayout(const scenario::ParallelismSpec& spec, int world_size, int gpus_per_node,
                 const hw::ModelSpec& model, double tied_embedding_params = 0);
  // From a loaded scenario: its cluster, model and the tied embedding of a transformer preset.
  static ParallelLayout of(const scenario::Scenario& scenario);

  const scenario::ParallelismSpec& spec() const { return spec_; }
  int world_size() const { return world_; }
  int gpus_per_node() const { return gpus_per_node_; }
  int tensor() const { return spec_.tensor; }
  int data() const { return data_; }
  int pipeline() const { return spec_.pipeline; }
  int virtual_stages() const { return spec_.virtual_stages; }

  Coordinates coordinates(int rank) const;
  int rank_of(const Coordinates& c) const;
  // The global ranks (ascending) that share `rank`'s other two coordinates: its TP group (same
  // data and pipeline coordinates), its DP group (the replicas of its stage and TP shard), its
  // PP group (the stages one micro-batch passes through).
  std::vector<int> tensor_group(int rank) const;
  std::vector<int> data_group(int rank) const;
  std::vector<int> pipeline_group(int rank) const;
  // Whether `rank`'s TP group sits on one node; whether every TP group does.
  bool tensor_group_within_node(int rank) const;
  bool tensor_groups_within_nodes() const;

  // Chunks in model order (pipeline x virtual_stages of them).
  const std::vector<Chunk>& chunks() const { return chunks_; }
  // The chunk (index into chunks()), stage and virtual chunk that hold model layer `layer`.
  int chunk_of_layer(int layer) const;
  int stage_of_layer(int layer) const { return chunks_[chunk_of_layer(layer)].stage; }
  int virtual_chunk_of_layer(int layer) const {
    return chunks_[chunk_of_layer(layer)].virtual_chunk;
  }
  // A stage's layer ranges (one per virtual chunk, in the order it runs them) and its whole
  // parameter count (with the tied embedding's copy on the last stage).
  std::vector<LayerRange> stage_layers(int stage) const;
  double stage_params(int stage) const;
  // The copy of the tied embedding a stage keeps (only the last, when pipeline > 1).
  double tied_copy_params(int stage) const;
  // The blocks (transformer layers) of the model: [first, last).
  LayerRange blocks() const { return blocks_; }

private:
  int stride(scenario::ParallelAxis axis) const;
  int size(scenario::ParallelAxis axis) const;
  std::vector<int> group(int rank, scenario::ParallelAxis axis) const;

  scenario::ParallelismSpec spec_;
  int world_ = 1;
  int gpus_per_node_ = 1;
  int data_ = 1;
  double tied_embedding_params_ = 0;
  LayerRange blocks_;
  std::vector<Chunk> chunks_;
  std::vector<int> chunk_of_layer_;
};

// `balanced` (issue 65): `blocks` transformer blocks over `chunks` chunks, as many to each as
// divides evenly and the remainder one each to the last chunks. Megatron has no remainder rule: it
// requires the layers to divide evenly (num_layers % pipeline == 0, and % (pipeline x
// virtual_stages) interleaved) or explicit first/last stage sizes; the last chunks get the
// remainder here because the first stage already holds the embedding and, under 1F1B, the most
// micro-batches in flight. The block counts per chunk, in model order.
std::vector<int> balanced_blocks(int blocks, int chunks);

} // namespace overlapsim::parallel
