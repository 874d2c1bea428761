// The model presets as real LibTorch computations with the simulator's layer structure: the same
// layers in the same order with exactly the parameter counts of hw/model.h, so that the flat
// parameter, gradient and optimizer buffers the algorithms declare line up with the real tensors.
// Layers run one at a time (each layer's input is a fresh leaf), which lets a runtime run the
// backward pass of any range of layers, as DDP's bucketed backward does.
#pragma once

#include "scenario/scenario.h"

#include <cstdint>
#include <functional>
#include <torch/torch.h>
#include <vector>

namespace overlapsim::real {

// Inputs and targets of one micro-batch: mlp takes [B, width] floats and regresses [B, width];
// gpt-tiny takes [B, seq_len] tokens and predicts the next token at every position.
struct Batch {
  torch::Tensor input;
  torch::Tensor target;
};

// A synthetic data set generated from the seed, no downloads: mlp regresses a fixed random
// teacher y = tanh(x A); gpt-tiny reads sequences of a random Markov chain over the vocabulary in
// which each token has four possible successors, so the loss can fall from ln(vocab) to ln(4).
class Dataset {
public:
  Dataset(const scenario::Scenario& scenario, std::int64_t samples = 2048);
  // Moves the whole data set to the worker's device once, so that a micro-batch is a gather on
  // the device: no host-to-device copy inside a timed forward (the GPU profile timed one into
  // the first layer: 12.1 ms against 0.40 ms for the identical later layers).
  void to(const torch::Device& device);
  // Samples first .. first + count - 1 (taken modulo the data set's size), on the data's device.
  Batch batch(std::int64_t first, int count) const;

private:
  bool tokens_ = false;
  torch::Tensor inputs_;
  torch::Tensor targets_;
};

// What a pipeline stage's model does with gpt-tiny's tied word embedding (the LM head's weights):
// with more than one stage the first stage owns it (the embedding) and the last keeps a copy for
// the head, outside the flat buffers the algorithm declares (the simulator's stage model has no
// room for it either); RealWorker sums the copy's gradient into the owner's and sends the updated
// embedding back every step (Megatron-LM's embedding group).
enum class TiedRole : std::uint8_t { none, owner, copy };

class RealModel {
public:
  // Throws std::runtime_error for a model that has no real implementation (only mlp and gpt-tiny
  // run for real) or whose parameter counts would not match the simulator's.
  explicit RealModel(const scenario::Scenario& scenario);
  // One pipeline stage of `full`'s model: its layers `stage` [first, last) of the whole model's,
  // as parallel/stage_view.h cuts them, checked against `stage_scenario`'s model (the stage's
  // layers). Its parameters start from the whole model's values (the same seed), so that a
  // pipeline trains exactly what one worker would.
  // With `tensor_size` > 1, tensor rank `tensor_rank`'s shard of it (gpt-tiny only; Megatron-LM,
  // Shoeybi et al. 2019): the attention's heads and the MLP's hidden units split by column-parallel
  // c_attn and c_fc and row-parallel projections, the word embedding split by vocabulary (the
  // embedding and the tied LM head vocabulary-parallel, the loss a vocabulary-parallel cross
  // entropy); norms, positions and the row-parallel biases replicated.
  RealModel(const scenario::Scenario& full, const scenario::Scenario& stage_scenario,
            int first_layer, int last_layer, int tensor_rank = 0, int tensor_size = 1);

  // The tensor-parallel group's all-reduce of a contiguous tensor, in place, blocking (the sum,
  // or with `max` the maximum), run by the worker. Unset (the profile), a rank computes its shard
  // alone: its layers' times without the collectives, which the simulator prices itself.
  using TensorReduce = std::function<void(torch::Tensor&, bool max)>;
  void set_tensor_reduce(TensorReduce reduce) { reduce_ = std::move(reduce); }

  int layers() const { return static_cast<int>(layers_.size()); }
  // The elements of the stage's flat parameter buffer: its layers', and on the last stage of a
  // pipeline the tied embedding copy's place (the simulator's stage model counts it; it stays 0).
  std::int64_t param_count() const {
    return offsets_.back() + (tied_role_ == TiedRole::copy ? tied_elements() : 0);
  }
  // Whether this model's first layer is the whole model's (it reads the micro-batch's inputs) and
  // its last the whole model's (it returns the loss).
  bool takes_input() const { return first_ == 0; }
  bool computes_loss() const { return first_ + layers() == total_layers_; }
  // The shape of the activation entering this stage for a micro-batch of `samples` (what the
  // previous stage sends).
  std::vector<std::int64_t> input_shape(std::int64_t samples) const;
  TiedRole tied_role() const { return tied_role_; }
  // The word embedding's elements: at offset 0 of the owner's flat buffers, and the copy's.
  std::int64_t tied_elements() const { return gpt_ ? vocab_ / tensor_size_ * d_ : 0; }
  torch::Tensor tied_copy() const { return copy_; }
  torch::Tensor tied_copy_grad() const { return copy_grad_; }

  // Deterministic initial parameters from the seed (GPT-2's N(0, 0.02) for matrices, ones and
  // zeros for norms and biases; mlp: N(0, 1/width)), written into a flat buffer.
  void init_params(torch::Tensor flat, std::uint64_t seed) const;

  // Makes the layers' parameters views of `params` (1-D fp32 of param_count()), as new leaves,
  // and their gradients views of `grads`: autograd then accumulates straight into the flat
  // gradient buffer. bind_grads() re-points the current leaves' gradients only.
  void bind_params(const torch::Tensor& params);
  void bind_grads(const torch::Tensor& grads);

  // Runs layer l; the last layer returns the mean loss of the micro-batch against its targets.
  torch::Tensor run_layer(int l, const torch::Tensor& x, const Batch& batch) const;

private:
  // How a tensor-parallel rank holds a parameter: whole, a block of rows (column-parallel
  // weights and biases, the vocabulary's rows), a block of each of q, k and v's rows (c_attn), a
  // block of columns (row-parallel weights).
  enum class Shard : std::uint8_t { whole, rows, qkv_rows, cols };
  struct Param {
    std::vector<std::int64_t> shape;
    Shard shard = Shard::whole;
    std::vector<std::int64_t> full_shape; // before tensor parallelism
    std::int64_t offset = 0;
    double init_std = 0; // 0: constant `init_value`
    double init_value = 0;
  };
  struct Layer {
    std::vector<Param> params;
  };
  void add(Layer& layer, std::vector<std::int64_t> shape, double std, double value = 0,
           Shard shard = Shard::whole);
  // Rank tensor_rank_'s part of a whole parameter's values.
  torch::Tensor shard_of(const torch::Tensor& whole, const Param& p) const;
  // Megatron's f (identity forward, all-reduce of the gradient backward: before a
  // column-parallel linear) and g (all-reduce forward, identity backward: after a row-parallel
  // one). Without a reducer both are the identity.
  torch::Tensor copy_to_tensor_parallel(const torch::Tensor& x) const;
  torch::Tensor reduce_from_tensor_parallel(const torch::Tensor& x) const;
  torch::Tensor tensor_parallel_block(const std::vector<torch::Tensor>& p,
                                      const torch::Tensor& x) const;
  torch::Tensor vocab_parallel_loss(const torch::Tensor& h, const torch::Tensor& wte,
                                    const Batch& batch) const;

  void build(const scenario::Scenario& s);

  bool gpt_ = false;
  std::int64_t d_ = 0, heads_ = 0, vocab_ = 0, seq_ = 0, width_ = 0;
  std::vector<Layer> layers_;
  std::vector<std::int64_t> offsets_; // per layer, plus one past the end
  std::vector<std::vector<torch::Tensor>> bound_;
  torch::Tensor grads_;
  // A stage: its first layer in the whole model, the whole model's layers, and where each of its
  // parameters starts in the whole model's flat buffer (init_params draws the whole model).
  int first_ = 0;
  int total_layers_ = 0;
  std::int64_t total_params_ = 0;
  std::vector<std::vector<std::int64_t>> source_;
  std::vector<Param> all_params_; // the whole model's, in its order
  TiedRole tied_role_ = TiedRole::none;
  int tensor_rank_ = 0, tensor_size_ = 1;
  TensorReduce reduce_;
  torch::Tensor copy_, copy_grad_, copy_bound_; // TiedRole::copy: the head's word embedding
};

} // namespace overlapsim::real
