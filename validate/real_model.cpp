#include "validate/real_model.h"

#include "algorithms/model_state.h"

#include <cmath>
#include <fmt/format.h>
#include <stdexcept>

namespace overlapsim::real {

namespace F = torch::nn::functional;

namespace {

std::int64_t dim(const scenario::Scenario& s, const char* key) {
  const auto it = s.model.dims.find(key);
  if (it == s.model.dims.end())
    throw std::runtime_error(
        fmt::format("model preset '{}' has no dimension '{}'", s.model.preset, key));
  return static_cast<std::int64_t>(std::llround(it->second));
}

// Causal self-attention of `heads` heads of `hd` dimensions from c_attn's output [B, S, 3 x
// heads x hd] (q, k, v side by side): [B, S, heads x hd].
torch::Tensor causal_attention(const torch::Tensor& qkv_out, std::int64_t heads, std::int64_t hd) {
  const auto B = qkv_out.size(0), S = qkv_out.size(1), width = heads * hd;
  auto qkv = qkv_out.split(width, -1);
  auto split = [&](const torch::Tensor& t) { return t.view({B, S, heads, hd}).transpose(1, 2); };
  auto q = split(qkv[0]), k = split(qkv[1]), v = split(qkv[2]);
  auto att = q.matmul(k.transpose(-2, -1)) / std::sqrt(static_cast<double>(hd));
  // On the activations' device: a CPU mask against CUDA scores is an error.
  auto mask =
      torch::ones({S, S}, torch::TensorOptions().dtype(torch::kBool).device(q.device())).triu(1);
  att = torch::softmax(att.masked_fill(mask, -std::numeric_limits<float>::infinity()), -1);
  return att.matmul(v).transpose(1, 2).contiguous().view({B, S, width});
}

void require_real_preset(const scenario::Scenario& s) {
  if (s.model.preset != "mlp" && s.model.preset != "gpt-tiny")
    throw std::runtime_error(fmt::format(
        "model '{}' has no real implementation: real runs support the presets mlp (width, depth) "
        "and gpt-tiny (vocab, d_model, n_layers, n_heads)",
        s.model.preset.empty() ? s.model.spec.name : s.model.preset));
}

} // namespace

Dataset::Dataset(const scenario::Scenario& s, std::int64_t samples) {
  require_real_preset(s);
  auto gen = at::detail::createCPUGenerator(s.seed * 7919 + 17);
  if (s.model.preset == "mlp") {
    const std::int64_t w = dim(s, "width");
    inputs_ = torch::randn({samples, w}, gen);
    const auto teacher = torch::randn({w, w}, gen) / std::sqrt(static_cast<double>(w));
    targets_ = torch::tanh(inputs_.matmul(teacher));
    return;
  }
  tokens_ = true;
  const std::int64_t vocab = dim(s, "vocab"), seq = s.training.seq_len;
  const auto successors = torch::randint(vocab, {vocab, 4}, gen, torch::kLong);
  const auto choice = torch::randint(4, {samples, seq}, gen, torch::kLong);
  auto text = torch::empty({samples, seq + 1}, torch::kLong);
  text.select(1, 0).copy_(torch::randint(vocab, {samples}, gen, torch::kLong));
  auto t = text.accessor<std::int64_t, 2>();
  auto c = choice.accessor<std::int64_t, 2>();
  auto next = successors.accessor<std::int64_t, 2>();
  for (std::int64_t i = 0; i < samples; ++i)
    for (std::int64_t j = 0; j < seq; ++j)
      t[i][j + 1] = next[t[i][j]][c[i][j]];
  inputs_ = text.narrow(1, 0, seq).contiguous();
  targets_ = text.narrow(1, 1, seq).contiguous();
}

void Dataset::to(const torch::Device& device) {
  inputs_ = inputs_.to(device);
  targets_ = targets_.to(device);
}

Batch Dataset::batch(std::int64_t first, int count) const {
  const std::int64_t n = inputs_.size(0);
  auto index =
      (torch::arange(count, torch::TensorOptions().dtype(torch::kLong).device(inputs_.device())) +
       first)
          .remainder(n);
  return Batch{inputs_.index_select(0, index), targets_.index_select(0, index)};
}

void RealModel::add(Layer& layer, std::vector<std::int64_t> shape, double std, double value,
                    Shard shard) {
  std::int64_t numel = 1;
  for (auto d : shape)
    numel *= d;
  layer.params.push_back(Param{shape, shard, shape, offsets_.back(), std, value});
  offsets_.back() += numel;
}

void RealModel::build(const scenario::Scenario& s) {
  require_real_preset(s);
  offsets_.push_back(0);
  auto open_layer = [&] {
    layers_.emplace_back();
    offsets_.push_back(offsets_.back());
    return &layers_.back();
  };
  if (s.model.preset == "mlp") {
    const std::int64_t w = dim(s, "width"), depth = dim(s, "depth");
    width_ = w;
    for (std::int64_t l = 0; l < depth; ++l) {
      Layer* layer = open_layer();
      add(*layer, {w, w}, 1.0 / std::sqrt(static_cast<double>(w)));
      add(*layer, {w}, 0.0);
    }
  } else {
    gpt_ = true;
    d_ = dim(s, "d_model"), heads_ = dim(s, "n_heads"), vocab_ = dim(s, "vocab");
    seq_ = s.training.seq_len;
    const std::int64_t d = d_;
    Layer* emb = open_layer();                    // token and learned position embeddings
    add(*emb, {vocab_, d}, 0.02, 0, Shard::rows); // vocabulary-parallel
    add(*emb, {seq_, d}, 0.01);
    for (std::int64_t b = 0; b < dim(s, "n_layers"); ++b) { // GPT-2 blocks, pre-norm
      Layer* block = open_layer();
      add(*block, {d}, 0, 1), add(*block, {d}, 0); // ln_1
      // c_attn and c_fc column-parallel, the projections row-parallel (tensor parallelism)
      add(*block, {3 * d, d}, 0.02, 0, Shard::qkv_rows),
          add(*block, {3 * d}, 0, 0, Shard::qkv_rows);
      add(*block, {d, d}, 0.02, 0, Shard::cols), add(*block, {d}, 0); // attention c_proj
      add(*block, {d}, 0, 1), add(*block, {d}, 0);                    // ln_2
      add(*block, {4 * d, d}, 0.02, 0, Shard::rows), add(*block, {4 * d}, 0, 0, Shard::rows);
      add(*block, {d, 4 * d}, 0.02, 0, Shard::cols), add(*block, {d}, 0); // mlp c_proj
    }
    Layer* head = open_layer(); // ln_f; the projection is tied to the token embedding
    add(*head, {d}, 0, 1), add(*head, {d}, 0);
  }
  total_layers_ = layers();
  total_params_ = offsets_.back();
  for (const auto& layer : layers_)
    all_params_.insert(all_params_.end(), layer.params.begin(), layer.params.end());
}

RealModel::RealModel(const scenario::Scenario& s) {
  build(s);
  // The simulator sizes the flat buffers from hw/model.h: the two must agree exactly.
  const auto layout = param_layout(s.model.spec);
  if (layout.offset != offsets_)
    throw std::runtime_error(
        fmt::format("internal: the real {} has {} parameters, the simulator's model {}",
                    s.model.preset, offsets_.back(), layout.total()));
  bound_.resize(layers_.size());
}

RealModel::RealModel(const scenario::Scenario& full, const scenario::Scenario& stage_scenario,
                     int first_layer, int last_layer, int tensor_rank, int tensor_size) {
  build(full);
  tensor_rank_ = tensor_rank, tensor_size_ = tensor_size;
  if (tensor_size > 1 && (!gpt_ || vocab_ % tensor_size != 0 || heads_ % tensor_size != 0))
    throw std::runtime_error(fmt::format(
        "parallelism.tensor: {}: the real runtime splits gpt-tiny, whose vocab and n_heads it "
        "must divide",
        tensor_size));
  if (first_layer < 0 || last_layer > total_layers_ || first_layer >= last_layer)
    throw std::runtime_error(fmt::format("internal: stage layers [{}, {}) of a {}-layer model",
                                         first_layer, last_layer, total_layers_));
  const std::int64_t wte = layers_.front().params.front().offset;
  std::vector<Layer> kept(layers_.begin() + first_layer, layers_.begin() + last_layer);
  layers_.clear();
  offsets_.assign(1, 0);
  std::int64_t at = 0;
  for (auto& layer : kept) {
    source_.emplace_back();
    for (auto& p : layer.params) {
      source_.back().push_back(p.offset);
      p.offset = at;
      if (p.shard == Shard::cols)
        p.shape[1] /= tensor_size;
      else if (p.shard != Shard::whole)
        p.shape[0] /= tensor_size;
      at += c10::multiply_integers(p.shape);
    }
    layers_.push_back(std::move(layer));
    offsets_.push_back(at);
  }
  first_ = first_layer;
  if (gpt_ && (first_layer > 0 || last_layer < total_layers_)) {
    if (first_layer == 0)
      tied_role_ = TiedRole::owner;
    else if (last_layer == total_layers_) {
      tied_role_ = TiedRole::copy;
      copy_ = torch::zeros({vocab_ / tensor_size, d_});
      copy_grad_ = torch::zeros({vocab_ / tensor_size, d_});
      source_.emplace_back(1, wte); // the copy's source, after the layers'
    }
  }
  const auto layout = param_layout(stage_scenario.model.spec);
  // The simulator's last stage counts the tied embedding's copy in its last layer (it is a
  // parameter its data-parallel gradient reduction carries, parallel/stage_view.h); here the copy
  // lives apart (copy_), and the flat buffers' tail that stands for it stays zero.
  auto expected = offsets_;
  expected.back() = param_count();
  if (layout.offset != expected)
    throw std::runtime_error(fmt::format(
        "internal: the real {}'s layers [{}, {}) have {} parameters, the simulator's stage {}",
        full.model.preset, first_layer, last_layer, offsets_.back(), layout.total()));
  bound_.resize(layers_.size());
}

torch::Tensor RealModel::shard_of(const torch::Tensor& whole, const Param& p) const {
  const auto t = tensor_size_, r = tensor_rank_;
  const auto full = whole.view(p.full_shape);
  switch (p.shard) {
  case Shard::whole:
    return full;
  case Shard::rows:
    return full.narrow(0, r * p.shape[0], p.shape[0]);
  case Shard::cols:
    return full.narrow(1, r * p.shape[1], p.shape[1]);
  case Shard::qkv_rows: { // rank r's heads of each of q, k and v
    const auto d = p.full_shape[0] / 3, part = d / t;
    return torch::cat({full.narrow(0, r * part, part), full.narrow(0, d + r * part, part),
                       full.narrow(0, 2 * d + r * part, part)});
  }
  }
  return full;
}

std::vector<std::int64_t> RealModel::input_shape(std::int64_t samples) const {
  if (gpt_)
    return {samples, seq_, d_};
  return {samples, width_};
}

void RealModel::init_params(torch::Tensor flat, std::uint64_t seed) const {
  torch::NoGradGuard no_grad;
  auto gen = at::detail::createCPUGenerator(seed * 104729 + 3);
  const bool stage = !source_.empty();
  // A stage draws the whole model's values in the whole model's order and keeps its own.
  auto whole = stage ? torch::empty({total_params_}) : flat;
  std::int64_t at = 0;
  const auto draw = [&](const Param& p) {
    const auto n = c10::multiply_integers(p.shape);
    auto view = whole.narrow(0, stage ? at : p.offset, n);
    at += n;
    if (p.init_std > 0)
      view.copy_(torch::randn({view.numel()}, gen) * p.init_std);
    else
      view.fill_(p.init_value);
  };
  if (!stage) {
    for (const auto& layer : layers_)
      for (const auto& p : layer.params)
        draw(p);
    return;
  }
  for (const auto& p : all_params_)
    draw(p);
  if (flat.numel() > offsets_.back()) // the tied copy's place in the last stage's buffers
    flat.narrow(0, offsets_.back(), flat.numel() - offsets_.back()).zero_();
  for (std::size_t l = 0; l < layers_.size(); ++l)
    for (std::size_t i = 0; i < layers_[l].params.size(); ++i) {
      const auto& p = layers_[l].params[i];
      const auto n = c10::multiply_integers(p.shape);
      const auto source = whole.narrow(0, source_[l][i], c10::multiply_integers(p.full_shape));
      flat.narrow(0, p.offset, n).copy_(shard_of(source, p).reshape({-1}).to(flat.device()));
    }
  if (tied_role_ == TiedRole::copy) {
    const auto& wte = all_params_.front();
    const auto n = c10::multiply_integers(wte.full_shape);
    Param shard = wte;
    shard.shape[0] /= tensor_size_;
    copy_.copy_(shard_of(whole.narrow(0, source_.back().front(), n), shard));
  }
}

void RealModel::bind_params(const torch::Tensor& params) {
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    bound_[l].clear();
    for (const auto& p : layers_[l].params) {
      const auto n = c10::multiply_integers(p.shape);
      // variable_data(): the leaf shares the buffer's memory but not its version counter, so an
      // update of another stage's slice (CDP) does not invalidate this layer's saved tensors.
      bound_[l].push_back(
          params.narrow(0, p.offset, n).view(p.shape).variable_data().requires_grad_(true));
    }
  }
  if (tied_role_ == TiedRole::copy) {
    copy_bound_ = copy_.variable_data().requires_grad_(true);
    copy_bound_.mutable_grad() = copy_grad_;
  }
  if (grads_.defined())
    bind_grads(grads_);
}

void RealModel::bind_grads(const torch::Tensor& grads) {
  grads_ = grads;
  for (std::size_t l = 0; l < layers_.size(); ++l)
    for (std::size_t i = 0; i < bound_[l].size(); ++i) {
      const auto& p = layers_[l].params[i];
      bound_[l][i].mutable_grad() =
          grads.narrow(0, p.offset, c10::multiply_integers(p.shape)).view(p.shape);
    }
}

torch::Tensor RealModel::run_layer(int l, const torch::Tensor& x, const Batch& batch) const {
  const auto& p = bound_[static_cast<std::size_t>(l)];
  const int g = first_ + l; // in the whole model
  const bool last = g + 1 == total_layers_;
  if (!gpt_) {
    auto y = F::linear(x, p[0], p[1]);
    return last ? F::mse_loss(y, batch.target) : torch::relu(y);
  }
  if (g == 0) {
    const auto seq = x.size(1);
    if (tensor_size_ == 1)
      return torch::embedding(p[0], x) + p[1].narrow(0, 0, seq);
    // Vocabulary-parallel: a rank looks up the tokens of its rows, zeros for the others, and
    // the TP group's sum is every token's embedding.
    const auto rows = p[0].size(0);
    const auto local = x - tensor_rank_ * rows;
    const auto mine = (local >= 0).logical_and(local < rows).unsqueeze(-1).to(p[0].dtype());
    return reduce_from_tensor_parallel(torch::embedding(p[0], local.clamp(0, rows - 1)) * mine) +
           p[1].narrow(0, 0, seq);
  }
  if (last && tensor_size_ > 1) {
    const auto& wte = tied_role_ == TiedRole::copy ? copy_bound_ : bound_[0][0];
    return vocab_parallel_loss(torch::layer_norm(x, {d_}, p[0], p[1]), wte, batch);
  }
  if (tensor_size_ > 1)
    return tensor_parallel_block(p, x);
  if (last) {
    const auto& wte = tied_role_ == TiedRole::copy ? copy_bound_ : bound_[0][0];
    auto h = torch::layer_norm(x, {d_}, p[0], p[1]);
    auto logits = F::linear(h, wte);
    return F::cross_entropy(logits.view({-1, vocab_}), batch.target.reshape({-1}));
  }
  auto h = torch::layer_norm(x, {d_}, p[0], p[1]);
  auto y = causal_attention(F::linear(h, p[2], p[3]), heads_, d_ / heads_);
  auto out = x + F::linear(y, p[4], p[5]);
  auto h2 = torch::layer_norm(out, {d_}, p[6], p[7]);
  return out + F::linear(torch::gelu(F::linear(h2, p[8], p[9])), p[10], p[11]);
}

torch::Tensor RealModel::copy_to_tensor_parallel(const torch::Tensor& x) const {
  if (!reduce_)
    return x;
  auto y = x.view_as(x); // a node of its own, whose gradient the hook sums
  y.register_hook([reduce = reduce_](torch::Tensor grad) {
    auto sum = grad.contiguous().clone();
    reduce(sum, false);
    return sum;
  });
  return y;
}

torch::Tensor RealModel::reduce_from_tensor_parallel(const torch::Tensor& x) const {
  if (!reduce_)
    return x;
  auto sum = x.detach().contiguous().clone();
  reduce_(sum, false);
  // The sum's value, x's gradient unchanged (x - x.detach() is exactly 0).
  return sum + (x - x.detach());
}

// A GPT-2 block on a tensor-parallel rank: its heads of the attention and its columns of the MLP
// (Megatron-LM's ParallelAttention and ParallelMLP), two all-reduces forward and two backward.
torch::Tensor RealModel::tensor_parallel_block(const std::vector<torch::Tensor>& p,
                                               const torch::Tensor& x) const {
  auto h = copy_to_tensor_parallel(torch::layer_norm(x, {d_}, p[0], p[1]));
  auto y = causal_attention(F::linear(h, p[2], p[3]), heads_ / tensor_size_, d_ / heads_);
  auto out = x + reduce_from_tensor_parallel(F::linear(y, p[4])) + p[5];
  auto h2 = copy_to_tensor_parallel(torch::layer_norm(out, {d_}, p[6], p[7]));
  return out +
         reduce_from_tensor_parallel(F::linear(torch::gelu(F::linear(h2, p[8], p[9])), p[10])) +
         p[11];
}

// Megatron-LM's vocabulary-parallel cross entropy: each rank holds the logits of its rows of the
// vocabulary; the maximum (for stability, no gradient), the sum of the exponentials and the
// target's logit are all-reduced over the TP group, so no rank gathers the whole vocabulary.
torch::Tensor RealModel::vocab_parallel_loss(const torch::Tensor& h, const torch::Tensor& wte,
                                             const Batch& batch) const {
  auto logits = F::linear(copy_to_tensor_parallel(h), wte); // [B, S, V / t]
  auto top = std::get<0>(logits.detach().max(-1, true)).contiguous();
  if (reduce_)
    reduce_(top, true);
  auto z = logits - top;
  auto sum = reduce_from_tensor_parallel(z.exp().sum(-1));
  const auto rows = wte.size(0);
  const auto local = batch.target - tensor_rank_ * rows;
  const auto mine = (local >= 0).logical_and(local < rows).to(z.dtype());
  auto picked = z.gather(-1, local.clamp(0, rows - 1).unsqueeze(-1)).squeeze(-1) * mine;
  return (sum.log() - reduce_from_tensor_parallel(picked)).mean();
}

} // namespace overlapsim::real
