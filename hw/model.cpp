#include "hw/model.h"

#include <fmt/format.h>

#include <algorithm>

namespace overlapsim::hw {

namespace {
template <typename F> double sum(const std::vector<LayerSpec>& layers, F field) {
  double s = 0;
  for (const auto& l : layers)
    s += field(l);
  return s;
}

// Seconds at `params` on the line through measured (parameters, seconds) points, ascending.
double interpolate_points(const std::vector<std::pair<double, double>>& p, double params) {
  if (params <= p.front().first)
    return p.front().second * params / p.front().first;
  if (params >= p.back().first)
    return p.back().second * params / p.back().first;
  const auto hi = std::lower_bound(p.begin(), p.end(), params,
                                   [](const auto& point, double v) { return point.first < v; });
  const auto lo = hi - 1;
  return lo->second + (hi->second - lo->second) * (params - lo->first) / (hi->first - lo->first);
}
} // namespace

double ModelSpec::measured_optimizer_seconds(double params) const {
  if (optimizer_points.empty())
    return optimizer_time_per_param_s * params;
  return interpolate_points(optimizer_points, params);
}

double ModelSpec::measured_optimizer_alone_seconds(double params) const {
  if (optimizer_alone_points.empty())
    return measured_optimizer_seconds(params);
  return interpolate_points(optimizer_alone_points, params);
}

double ModelSpec::total_params() const {
  return sum(layers, [](const LayerSpec& l) { return l.params; });
}
double ModelSpec::total_fwd_flops_per_sample() const {
  return sum(layers, [](const LayerSpec& l) { return l.fwd_flops_per_sample; });
}
double ModelSpec::total_bwd_flops_per_sample() const {
  return sum(layers, [](const LayerSpec& l) { return l.bwd_flops_per_sample; });
}
double ModelSpec::total_activation_bytes_per_sample() const {
  return sum(layers, [](const LayerSpec& l) { return l.activation_bytes_per_sample; });
}

ModelSpec transformer_model(std::string name, const TransformerDims& dims, int seq_len) {
  const double d = dims.d_model;
  const double v = dims.vocab;
  const double s = seq_len;
  const double ffn = dims.ffn_dim > 0 ? dims.ffn_dim : 4 * d;
  const double norm = dims.rms_norm ? d : 2 * d; // scale (and bias for LayerNorm)

  ModelSpec m;
  m.name = std::move(name);
  // Embedding: a lookup, no FLOPs; its output (16-bit) is kept for the first block's backward.
  m.layers.push_back(LayerSpec{"embedding", v * d + dims.max_positions * d, 0, 0, 2 * s * d, 0, 0});

  const double d_kv = d / dims.n_heads * dims.kv_heads();
  const double attn_matmul = 2 * d * d + 2 * d * d_kv;          // q, k, v, out projections
  const double mlp_matmul = (dims.gated_mlp ? 3 : 2) * d * ffn; // up (and gate), down
  const double biases = (dims.qkv_bias ? d + 2 * d_kv : 0) + (dims.linear_bias ? d + ffn + d : 0);
  const double block_params = attn_matmul + mlp_matmul + biases + 2 * norm;
  // 2 FLOPs per matmul parameter per token, plus QK^T and AV: 2 x 2 x s^2 x d per sequence.
  const double block_fwd = 2 * (attn_matmul + mlp_matmul) * s + 4 * s * s * d;
  // Korthikanti et al. 2022, eq. 1 for one sample: s d (34 + 5 a s / d) bytes.
  const double block_act = s * d * (34 + 5 * dims.n_heads * s / d);
  for (int i = 0; i < dims.n_layers; ++i) {
    m.layers.push_back(LayerSpec{fmt::format("block{}", i), block_params, block_fwd, 2 * block_fwd,
                                 block_act, 0, 0});
    m.layers.back().seq_quadratic_share = 4 * s * s * d / block_fwd;
  }

  // Head: final norm and the LM projection (tied to the embedding for GPT-2/Neo: no new params).
  const double head_params = norm + (dims.tied_embeddings ? 0 : v * d);
  const double head_fwd = 2 * d * v * s;
  // fp32 logits for the loss, plus the 16-bit normalised input of the projection.
  const double head_act = 4 * s * v + 2 * s * d;
  m.layers.push_back(LayerSpec{"head", head_params, head_fwd, 2 * head_fwd, head_act, 0, 0});
  for (std::size_t l = 0; l + 1 < m.layers.size(); ++l)
    m.layers[l].output_bytes_per_sample = 2 * s * d; // the 16-bit hidden states
  return m;
}

ModelSpec mlp_model(double width, int depth, double bytes_per_activation) {
  ModelSpec m;
  m.name = "mlp";
  // y = relu(W x + b): 2 w^2 FLOPs forward per sample; the input is kept for backward.
  for (int i = 0; i < depth; ++i) {
    m.layers.push_back(LayerSpec{fmt::format("fc{}", i), width * width + width, 2 * width * width,
                                 4 * width * width, width * bytes_per_activation, 0, 0});
    m.layers.back().output_bytes_per_sample = width * bytes_per_activation;
  }
  return m;
}

std::vector<Bottleneck> resnet50_blocks(int image) {
  std::vector<Bottleneck> blocks;
  double hw = image / 4.0; // after the stride-2 stem conv and the stride-2 max pool
  double cin = 64;
  const int counts[] = {3, 4, 6, 3};
  for (int stage = 0; stage < 4; ++stage) {
    const double width = 64.0 * (1 << stage);
    for (int b = 0; b < counts[stage]; ++b) {
      const bool down = b == 0;
      const double out_hw = down && stage > 0 ? hw / 2 : hw; // torchvision: stride on the 3x3
      blocks.push_back({hw, out_hw, cin, width, 4 * width, down});
      hw = out_hw;
      cin = 4 * width;
    }
  }
  return blocks;
}

ModelSpec resnet50_model(int image) {
  ModelSpec m;
  m.name = "resnet-50";
  double hw = image / 2.0; // after the stride-2 stem conv
  auto conv = [](double k, double cin, double cout) { return k * k * cin * cout; };
  // A conv + batch norm + ReLU keeps three 16-bit maps of its output for backward.
  auto kept = [](double h, double c) { return 3 * 2 * h * h * c; };
  {
    const double w = conv(7, 3, 64);
    m.layers.push_back(LayerSpec{"stem", w + 2 * 64, 2 * w * hw * hw, 4 * w * hw * hw,
                                 kept(hw, 64) + 2 * (hw / 2) * (hw / 2) * 64, 0, 0});
    m.layers.back().output_bytes_per_sample = 2 * (hw / 2) * (hw / 2) * 64;
  }
  int index = 0;
  const int counts[] = {3, 4, 6, 3};
  for (const auto& b : resnet50_blocks(image)) {
    int stage = 0, first = 0;
    while (index >= first + counts[stage])
      first += counts[stage++];
    const double h = b.in_hw, oh = b.out_hw, w = b.width, cout = b.out_channels;
    const double c1 = conv(1, b.in_channels, w), c2 = conv(3, w, w), c3 = conv(1, w, cout);
    const double proj = b.downsample ? conv(1, b.in_channels, cout) : 0;
    const double params = c1 + c2 + c3 + proj + 2 * (w + w + cout + (b.downsample ? cout : 0));
    const double macs = c1 * h * h + (c2 + c3 + proj) * oh * oh;
    const double act =
        kept(h, w) + kept(oh, w) + kept(oh, cout) + (b.downsample ? kept(oh, cout) : 0);
    m.layers.push_back(LayerSpec{fmt::format("layer{}.{}", stage + 1, index - first), params,
                                 2 * macs, 4 * macs, act, 0, 0});
    m.layers.back().output_bytes_per_sample = 2 * oh * oh * cout;
    ++index;
  }
  const double fc = 2048.0 * 1000;
  m.layers.push_back(LayerSpec{"fc", fc + 1000, 2 * fc, 4 * fc, 2 * 2048.0, 0, 0});
  return m;
}

VitDims vit_b16_dims() {
  // torchvision vit_b_16: 224 x 224 images in 16 x 16 patches, hidden 768, 12 layers of 12
  // heads, MLP 3072 with nn.GELU, LayerNorm, biases everywhere; nn.MultiheadAttention calls
  // scaled_dot_product_attention (need_weights=False) over the 197 tokens, unmasked.
  VitDims v;
  auto& e = v.encoder;
  e.vocab = v.classes, e.max_positions = v.tokens(), e.d_model = 768, e.n_layers = 12;
  e.n_heads = 12, e.ffn_dim = 3072, e.tied_embeddings = false, e.qkv_bias = true;
  e.linear_bias = true, e.rms_norm = false, e.mlp = TransformerDims::Mlp::gelu;
  e.attention = TransformerDims::Attention::sdpa, e.causal = false;
  return v;
}

ModelSpec vit_model(std::string name, const VitDims& v) {
  const double s = v.tokens(), d = v.encoder.d_model, patches = s - 1;
  ModelSpec m = transformer_model(std::move(name), v.encoder, static_cast<int>(s));
  // Embedding: the patch conv (3 p^2 x d weights and a bias), the class token, the positions.
  const double conv = 3.0 * v.patch * v.patch * d;
  auto& embedding = m.layers.front();
  embedding.params = conv + d + d + s * d;
  embedding.fwd_flops_per_sample = 2 * conv * patches;
  embedding.bwd_flops_per_sample = 2 * conv * patches; // the weight gradient only: no dgrad
  // Head: the final LayerNorm (2d) and the classifier on the class token alone.
  auto& head = m.layers.back();
  head.params = 2 * d + d * v.classes + v.classes;
  head.fwd_flops_per_sample = 2 * d * v.classes;
  head.bwd_flops_per_sample = 4 * d * v.classes;
  head.activation_bytes_per_sample = 4 * s * d + 2 * d + 4 * v.classes;
  return m;
}

std::optional<TransformerDims> find_transformer_preset(std::string_view name) {
  TransformerDims d;
  if (name == "gpt-neo-125m" || name == "gpt-neo-1.3b" || name == "gpt-neo-2.7b") {
    // EleutherAI GPT-Neo configs: vocab 50257, 2048 learned positions, tied head, no q/k/v bias.
    d.vocab = 50257;
    d.max_positions = 2048;
    d.qkv_bias = false;
    // Hugging Face's GPTNeo: "gelu_new" and eager attention (no SDPA path in transformers).
    d.mlp = TransformerDims::Mlp::gelu_new;
    d.attention = TransformerDims::Attention::eager;
    if (name == "gpt-neo-125m")
      d.d_model = 768, d.n_layers = 12, d.n_heads = 12;
    else if (name == "gpt-neo-1.3b")
      d.d_model = 2048, d.n_layers = 24, d.n_heads = 16;
    else
      d.d_model = 2560, d.n_layers = 32, d.n_heads = 20;
    return d;
  }
  if (name == "gpt2-small") {
    // OpenAI GPT-2 (124M): 1024 positions, biases everywhere, tied head.
    d.vocab = 50257, d.max_positions = 1024, d.d_model = 768, d.n_layers = 12, d.n_heads = 12;
    // Hugging Face's GPT2: "gelu_new", SDPA attention by default.
    d.mlp = TransformerDims::Mlp::gelu_new;
    d.attention = TransformerDims::Attention::sdpa;
    return d;
  }
  if (name == "llama2-7b") {
    // Meta Llama 2 7B: rotary positions, SwiGLU MLP of 11008, RMSNorm, no biases, untied head.
    d.vocab = 32000, d.max_positions = 0, d.d_model = 4096, d.n_layers = 32, d.n_heads = 32;
    d.ffn_dim = 11008, d.tied_embeddings = false, d.gated_mlp = true, d.qkv_bias = false;
    d.linear_bias = false, d.rms_norm = true;
    d.mlp = TransformerDims::Mlp::swiglu, d.attention = TransformerDims::Attention::sdpa;
    return d;
  }
  if (name == "olmo2-1b") {
    // AI2 OLMo 2 1B (OLMo-2-0425-1B config.json, as the DeToNATION paper trains it): rotary
    // positions, SwiGLU MLP of 8192, RMSNorm, no biases, untied head, vocab 100352 (padded). Its
    // q/k RMSNorms are left out: 2 x 2048 parameters per layer, element-wise.
    d.vocab = 100352, d.max_positions = 0, d.d_model = 2048, d.n_layers = 16, d.n_heads = 16;
    d.ffn_dim = 8192, d.tied_embeddings = false, d.gated_mlp = true, d.qkv_bias = false;
    d.linear_bias = false, d.rms_norm = true;
    d.mlp = TransformerDims::Mlp::swiglu, d.attention = TransformerDims::Attention::sdpa;
    return d;
  }
  return std::nullopt;
}

std::vector<std::string> model_preset_names() {
  return {"gpt-neo-125m", "gpt-neo-1.3b", "gpt-neo-2.7b", "gpt2-small",
          "llama2-7b",    "olmo2-1b",     "resnet-50",    "vit-b16"};
}

} // namespace overlapsim::hw
