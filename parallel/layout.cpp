#include "parallel/layout.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace overlapsim::parallel {

using scenario::ParallelAxis;

std::vector<int> balanced_blocks(int blocks, int chunks) {
  if (chunks <= 0 || blocks < chunks)
    throw std::invalid_argument(
        fmt::format("{} blocks cannot fill {} stages with a block each", blocks, chunks));
  std::vector<int> out(static_cast<std::size_t>(chunks), blocks / chunks);
  const int remainder = blocks % chunks;
  for (int c = chunks - remainder; c < chunks; ++c)
    ++out[static_cast<std::size_t>(c)];
  return out;
}

ParallelLayout::ParallelLayout(const scenario::ParallelismSpec& spec, int world_size,
                               int gpus_per_node, const hw::ModelSpec& model,
                               double tied_embedding_params)
    : spec_(spec), world_(world_size), gpus_per_node_(gpus_per_node),
      tied_embedding_params_(tied_embedding_params) {
  if (spec.tensor < 1 || spec.pipeline < 1 || spec.virtual_stages < 1 || gpus_per_node < 1 ||
      world_size % (spec.tensor * spec.pipeline) != 0)
    throw std::invalid_argument(fmt::format("tensor {} x pipeline {} does not divide {} GPUs",
                                            spec.tensor, spec.pipeline, world_size));
  data_ = spec.data_parallel(world_size);
  const int layers = static_cast<int>(model.layers.size());
  blocks_ = {0, layers};
  if (layers >= 2 && model.layers.front().name == "embedding" && model.layers.back().name == "head")
    blocks_ = {1, layers - 1};
  const int chunks = spec.chunks();
  std::vector<int> counts = spec.stages;
  if (counts.empty()) {
    counts = balanced_blocks(blocks_.last - blocks_.first, chunks);
    counts.front() += blocks_.first;        // the embedding with the first chunk
    counts.back() += layers - blocks_.last; // the head (final norm, LM head, loss) with the last
  }
  if (static_cast<int>(counts.size()) != chunks ||
      std::accumulate(counts.begin(), counts.end(), 0) != layers ||
      std::any_of(counts.begin(), counts.end(), [](int n) { return n < 1; }))
    throw std::invalid_argument(fmt::format(
        "stages: expected {} positive layer counts adding up to {} layers", chunks, layers));
  int first = 0;
  for (int c = 0; c < chunks; ++c) {
    Chunk chunk{.stage = c % spec.pipeline,
                .virtual_chunk = c / spec.pipeline,
                .layers = {first, first + counts[static_cast<std::size_t>(c)]}};
    for (int l = chunk.layers.first; l < chunk.layers.last; ++l) {
      chunk.params += model.layers[static_cast<std::size_t>(l)].params;
      chunk_of_layer_.push_back(c);
    }
    first = chunk.layers.last;
    chunks_.push_back(chunk);
  }
}

ParallelLayout ParallelLayout::of(const scenario::Scenario& s) {
  const auto& dims = s.model.dims;
  double tied = 0;
  if (dims.contains("tied_embeddings") && dims.at("tied_embeddings") > 0)
    tied = dims.at("vocab") * dims.at("d_model");
  return ParallelLayout(s.parallelism, s.cluster.world_size(), s.cluster.gpus_per_node,
                        s.model.spec, tied);
}

int ParallelLayout::size(ParallelAxis axis) const {
  switch (axis) {
  case ParallelAxis::tensor:
    return spec_.tensor;
  case ParallelAxis::data:
    return data_;
  case ParallelAxis::pipeline:
    return spec_.pipeline;
  }
  return 1;
}

// The product of the sizes of the axes that vary faster than `axis` (before it in the order).
int ParallelLayout::stride(ParallelAxis axis) const {
  int out = 1;
  for (const ParallelAxis a : spec_.order) {
    if (a == axis)
      break;
    out *= size(a);
  }
  return out;
}

Coordinates ParallelLayout::coordinates(int rank) const {
  if (rank < 0 || rank >= world_)
    throw std::out_of_range(fmt::format("rank {} of {}", rank, world_));
  const auto along = [&](ParallelAxis a) { return rank / stride(a) % size(a); };
  return {.tensor = along(ParallelAxis::tensor),
          .data = along(ParallelAxis::data),
          .pipeline = along(ParallelAxis::pipeline)};
}

int ParallelLayout::rank_of(const Coordinates& c) const {
  if (c.tensor < 0 || c.tensor >= spec_.tensor || c.data < 0 || c.data >= data_ || c.pipeline < 0 ||
      c.pipeline >= spec_.pipeline)
    throw std::out_of_range(fmt::format("coordinates (tp {}, dp {}, pp {}) outside {} x {} x {}",
                                        c.tensor, c.data, c.pipeline, spec_.tensor, data_,
                                        spec_.pipeline));
  return c.tensor * stride(ParallelAxis::tensor) + c.data * stride(ParallelAxis::data) +
         c.pipeline * stride(ParallelAxis::pipeline);
}

std::vector<int> ParallelLayout::group(int rank, ParallelAxis axis) const {
  const Coordinates c = coordinates(rank);
  const int coordinate = axis == ParallelAxis::tensor ? c.tensor
                         : axis == ParallelAxis::data ? c.data
                                                      : c.pipeline;
  const int base = rank - coordinate * stride(axis);
  std::vector<int> out;
  for (int k = 0; k < size(axis); ++k)
    out.push_back(base + k * stride(axis)); // ascending: the stride is positive
  return out;
}

std::vector<int> ParallelLayout::tensor_group(int rank) const {
  return group(rank, ParallelAxis::tensor);
}
std::vector<int> ParallelLayout::data_group(int rank) const {
  return group(rank, ParallelAxis::data);
}
std::vector<int> ParallelLayout::pipeline_group(int rank) const {
  return group(rank, ParallelAxis::pipeline);
}

bool ParallelLayout::tensor_group_within_node(int rank) const {
  const auto g = tensor_group(rank);
  return g.front() / gpus_per_node_ == g.back() / gpus_per_node_; // ascending ranks
}

bool ParallelLayout::tensor_groups_within_nodes() const {
  for (int r = 0; r < world_; ++r)
    if (coordinates(r).tensor == 0 && !tensor_group_within_node(r))
      return false;
  return true;
}

int ParallelLayout::chunk_of_layer(int layer) const {
  if (layer < 0 || layer >= static_cast<int>(chunk_of_layer_.size()))
    throw std::out_of_range(fmt::format("layer {} of {}", layer, chunk_of_layer_.size()));
  return chunk_of_layer_[static_cast<std::size_t>(layer)];
}

std::vector<LayerRange> ParallelLayout::stage_layers(int stage) const {
  std::vector<LayerRange> out;
  for (const auto& c : chunks_)
    if (c.stage == stage)
      out.push_back(c.layers);
  return out;
}

double ParallelLayout::tied_copy_params(int stage) const {
  return spec_.pipeline > 1 && stage == spec_.pipeline - 1 ? tied_embedding_params_ : 0.0;
}

double ParallelLayout::stage_params(int stage) const {
  double out = tied_copy_params(stage);
  for (const auto& c : chunks_)
    if (c.stage == stage)
      out += c.params;
  return out;
}

} // namespace overlapsim::parallel
