#include "scenario/readers.h"

#include "scenario/checkpointing.h"

#include "hw/conv_ops.h"
#include "hw/transformer_ops.h"
#include "hw/units.h"
#include "hw/vit_ops.h"
#include "scenario/calibration.h"
#include "scenario/layer_table.h"

#include <fmt/format.h>
#include <fmt/ranges.h> // fmt::join (in <fmt/format.h> before fmt 11)

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace overlapsim::scenario::yaml {

// The most layers a model may have: real models have hundreds; past this only a mistake (or a
// YAML alias bomb) gets, and the per-layer state would take gigabytes.
constexpr std::size_t kMaxLayers = 100000;

hw::ModelSpec read_layers(const Entry& e) {
  hw::ModelSpec m;
  m.name = "custom";
  for (const auto& l : e.items()) {
    l.expect_map({"name", "params", "fwd_flops_per_sample", "bwd_flops_per_sample",
                  "activation_bytes_per_sample", "output_bytes_per_sample", "repeat"});
    hw::LayerSpec layer;
    layer.name = l.has("name") ? l.child("name").text() : fmt::format("layer{}", m.layers.size());
    layer.params = l.child("params").whole_count(true, 1e13);
    layer.fwd_flops_per_sample = l.child("fwd_flops_per_sample").quantity(hw::parse_count, true);
    layer.bwd_flops_per_sample =
        l.has("bwd_flops_per_sample")
            ? l.child("bwd_flops_per_sample").quantity(hw::parse_count, true)
            : 2 * layer.fwd_flops_per_sample;
    layer.activation_bytes_per_sample =
        l.has("activation_bytes_per_sample")
            ? l.child("activation_bytes_per_sample").quantity(hw::parse_size_bytes, true)
            : 0.0;
    if (l.has("output_bytes_per_sample"))
      layer.output_bytes_per_sample =
          l.child("output_bytes_per_sample").quantity(hw::parse_size_bytes, true);
    if (layer.params == 0 && layer.fwd_flops_per_sample == 0 && layer.bwd_flops_per_sample == 0)
      l.fail("a layer with no parameters and no FLOPs does nothing; give it params or "
             "fwd_flops_per_sample");
    const int repeat = l.has("repeat") ? static_cast<int>(l.child("repeat").integer(1, 100000)) : 1;
    // YAML aliases can list one layer thousands of times: bound the model before it is expanded.
    if (m.layers.size() + static_cast<std::size_t>(repeat) > kMaxLayers)
      l.fail(fmt::format("the model would have more than {} layers (repeat included)", kMaxLayers));
    if (repeat == 1) {
      m.layers.push_back(layer);
    } else {
      for (int i = 0; i < repeat; ++i) {
        hw::LayerSpec copy = layer;
        copy.name = fmt::format("{}{}", layer.name, i);
        m.layers.push_back(copy);
      }
    }
  }
  if (m.layers.empty())
    e.fail("expected at least one layer");
  return m;
}

// Measured per-layer times replace the FLOP-based estimate; the layers must match by count and
// name, since a profile of another model would silently mean nothing.
void apply_profile(ModelConfig& m, const Entry& e, const TrainingSpec& training,
                   ClusterSpec& cluster) {
  const Calibration cal = e.calibration();
  m.profile = e.path_value();
  auto& layers = m.spec.layers;
  if (cal.layers.size() != layers.size())
    e.fail(fmt::format("the profile has {} layers, the model {}: it was measured on another model",
                       cal.layers.size(), layers.size()));
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (cal.layers[i].name != layers[i].name)
      e.fail(fmt::format("profile layer {} is '{}', the model's is '{}'", i, cal.layers[i].name,
                         layers[i].name));
    layers[i].fwd_time_per_sample_s = cal.layers[i].fwd_time_per_sample_s;
    layers[i].bwd_time_per_sample_s = cal.layers[i].bwd_time_per_sample_s;
    if (cal.layers[i].activation_bytes_per_sample > 0)
      layers[i].activation_bytes_per_sample = cal.layers[i].activation_bytes_per_sample;
  }
  // The TP collectives' in-situ cost is per micro-batch of the profiled size: another size moves
  // other bytes, and its TP collectives keep their price on the links.
  if (cal.tensor_parallel > 1 && cal.micro_batch == training.micro_batch) {
    m.spec.tp_comm_measured_tensor = cal.tensor_parallel;
    for (std::size_t i = 0; i < layers.size(); ++i) {
      layers[i].tp_comm_forward_s = cal.layers[i].tp_forward_s;
      layers[i].tp_comm_backward_s = cal.layers[i].tp_backward_s;
    }
  }
  m.spec.optimizer_time_per_param_s = cal.optimizer_time_per_param_s;
  m.spec.optimizer_points = cal.optimizer_points;
  m.spec.optimizer_alone_points = cal.optimizer_alone_points;
  m.spec.memory_shared_by = cal.memory_shared_by;
  // The workers' measured spread, unless the scenario gives a jitter of its own (none included).
  if (cal.compute_jitter_sigma_1s > 0 && !cluster.jitter.given)
    cluster.jitter = Jitter{.distribution = JitterDistribution::lognormal,
                            .sigma_1s = cal.compute_jitter_sigma_1s,
                            .measured = true};
  m.spec.outer_step_time_per_param_s = cal.outer_step_time_per_param_s;
  m.spec.outer_step_alone_time_per_param_s = cal.outer_step_alone_time_per_param_s;
  if (cal.optimizer_estimate_ratio > 0)
    m.spec.optimizer_estimate_ratio = cal.optimizer_estimate_ratio;
  if (cal.back_to_back_compute_ratio > 0)
    m.spec.back_to_back_compute_ratio = cal.back_to_back_compute_ratio;
  m.spec.memory_ops = cal.memory_ops;
  m.spec.replicator_phases = cal.replicator_phases;
  if (cal.memory_bandwidth_Bps > 0)
    cluster.gpu.hbm_bandwidth_Bps = cal.memory_bandwidth_Bps;
  if (cal.comm_interference)
    cluster.gpu.comm_interference = *cal.comm_interference;
  if (cal.compute_interference)
    cluster.gpu.compute_interference = *cal.compute_interference;
  for (const auto& [name, s] : cal.interference_by_op) {
    if (s.comm_interference)
      cluster.gpu.comm_interference_by_op[name] = *s.comm_interference;
    if (s.compute_interference)
      cluster.gpu.compute_interference_by_op[name] = *s.compute_interference;
  }
  for (const auto& [name, cost] : cal.collective_start_costs)
    cluster.gpu.collective_start_cost_by_op[name] = cost;
  if (cal.comm_stream_share)
    cluster.gpu.comm_stream_share = *cal.comm_stream_share;
  if (cal.collective_handoff_wait_s)
    cluster.gpu.collective_handoff_wait_s = *cal.collective_handoff_wait_s;
  if (cal.compute_handoff_wait_s)
    cluster.gpu.compute_handoff_wait_s = *cal.compute_handoff_wait_s;
}

ModelConfig read_model_spec(const Entry& e, const TrainingSpec& training, const hw::GpuSpec& gpu);

constexpr double kMaxModelParams = 1e14;

// model.profile: a per-layer time table (*.tsv, scenario/layer_table.h; the DreamDDP authors'
// profile) is the model itself: one layer per row, the backward taking `bp_s` and the forward
// `fwd_s` (0 without that column) per micro-batch, and every collective over the parameters or
// gradients the sum of its layers' `comm_s` (sim/table_comm_time.h). Without a `params` column a
// layer counts as one parameter, so byte-sized choices (DDP's buckets) and the memory figures mean
// nothing.
bool is_layer_table(const Entry& profile) {
  return profile.text().ends_with(".tsv");
}

ModelConfig read_table_model(const Entry& e, const TrainingSpec& training) {
  for (const char* k : {"preset", "layers"})
    if (e.has(k))
      e.child(k).fail("model.profile is a layer table (.tsv), which defines the layers itself; "
                      "leave out 'preset' and 'layers'");
  e.expect_map({"profile", "dtype"});
  ModelConfig m;
  if (e.has("dtype"))
    m.dtype = e.child("dtype").choice<Dtype>(
        {{"fp32", Dtype::fp32}, {"bf16", Dtype::bf16}, {"fp16", Dtype::fp16}});
  const Entry p = e.child("profile");
  m.profile = p.path_value();
  std::vector<LayerTimes> rows;
  try {
    rows = read_layer_table(m.profile);
  } catch (const std::runtime_error& err) {
    p.fail(err.what());
  }
  m.spec.name = std::filesystem::path(m.profile).stem().string();
  m.spec.comm_times_from_table = true;
  const double samples = training.micro_batch;
  for (const auto& r : rows) {
    hw::LayerSpec l;
    l.name = r.name;
    l.params = r.params > 0 ? r.params : 1.0;
    l.fwd_time_per_sample_s = r.fwd_s / samples;
    l.bwd_time_per_sample_s = r.bp_s / samples;
    l.comm_time_s = r.comm_s;
    m.spec.layers.push_back(std::move(l));
  }
  return m;
}

// model.activation_checkpointing: none | full | {every: k}. A transformer checkpoints its blocks
// (Hugging Face's gradient_checkpointing and Megatron's recompute wrap the decoder layers, not the
// embedding or the LM head); any other model, every layer.
ActivationCheckpointing read_checkpointing(const Entry& e, const ModelConfig& m) {
  ActivationCheckpointing c = checkpointing_of(m, 0);
  c.where = e.where();
  if (e.is_map()) {
    e.expect_map({"every"});
    c.every = static_cast<int>(e.child("every").integer(1, std::max(1, c.last - c.first)));
    return c;
  }
  c.every = e.choice<int>({{"none", 0}, {"full", 1}});
  return c;
}

ModelConfig read_model(const Entry& e, const TrainingSpec& training, ClusterSpec& cluster) {
  if (e.has("profile") && is_layer_table(e.child("profile")))
    return read_table_model(e, training);
  ModelConfig m = read_model_spec(e, training, cluster.gpu);
  // Parameter counts become int64 element counts of every buffer (params, grads, optimizer state).
  if (!(m.spec.total_params() <= kMaxModelParams))
    e.fail(fmt::format("the model has {} parameters; at most {} are supported",
                       hw::format_count(m.spec.total_params()), hw::format_count(kMaxModelParams)));
  if (e.has("profile"))
    apply_profile(m, e.child("profile"), training, cluster);
  if (e.has("activation_checkpointing"))
    m.checkpointing = read_checkpointing(e.child("activation_checkpointing"), m);
  return m;
}

// The transformer family's keys: `preset: transformer` requires the shape; a named transformer
// preset (gpt-neo-125m, ...) is an instance whose values any of these keys override.
constexpr std::array<std::string_view, 14> kTransformerKeys = {
    "vocab",     "d_model",         "n_layers", "n_heads",   "n_kv_heads", "d_ff",     "mlp",
    "attention", "tied_embeddings", "norm",     "positions", "bias",       "qkv_bias", "dropout"};

hw::TransformerDims read_transformer_dims(const Entry& e, hw::TransformerDims d, bool required) {
  using Mlp = hw::TransformerDims::Mlp;
  using Attention = hw::TransformerDims::Attention;
  auto count = [&](const char* key, double max) {
    if (e.has(key) || required)
      return e.child(key).whole_count(false, max);
    return -1.0;
  };
  if (const double v = count("vocab", 1e8); v > 0)
    d.vocab = v;
  if (const double v = count("d_model", 1e6); v > 0)
    d.d_model = v;
  if (e.has("n_layers") || required)
    d.n_layers = static_cast<int>(e.child("n_layers").integer(1, 100000));
  if (e.has("n_heads") || required)
    d.n_heads = static_cast<int>(e.child("n_heads").integer(1, 100000));
  if (e.has("n_kv_heads"))
    d.n_kv_heads = static_cast<int>(e.child("n_kv_heads").integer(1, d.n_heads));
  if (e.has("d_ff"))
    d.ffn_dim = e.child("d_ff").whole_count(false, 1e7);
  if (e.has("mlp")) {
    d.mlp = e.child("mlp").choice<Mlp>(
        {{"gelu", Mlp::gelu}, {"gelu-new", Mlp::gelu_new}, {"swiglu", Mlp::swiglu}});
    d.gated_mlp = d.mlp == Mlp::swiglu;
  }
  if (e.has("attention"))
    d.attention = e.child("attention")
                      .choice<Attention>({{"eager", Attention::eager},
                                          {"sdpa", Attention::sdpa},
                                          {"flash", Attention::flash}});
  if (e.has("tied_embeddings"))
    d.tied_embeddings = e.child("tied_embeddings").boolean();
  if (e.has("norm"))
    d.rms_norm = e.child("norm").choice<bool>({{"layernorm", false}, {"rmsnorm", true}});
  if (e.has("positions"))
    d.max_positions = static_cast<double>(e.child("positions").integer(0, 1 << 24));
  if (e.has("bias"))
    d.linear_bias = e.child("bias").boolean();
  if (e.has("qkv_bias"))
    d.qkv_bias = e.child("qkv_bias").boolean();
  if (e.has("dropout"))
    d.dropout = e.child("dropout").number(0, 0.99);
  if (std::fmod(d.d_model, d.n_heads) != 0)
    e.child(e.has("n_heads") ? "n_heads" : "d_model").fail("d_model must be a multiple of n_heads");
  if (d.n_heads % d.kv_heads() != 0)
    e.child("n_kv_heads").fail("n_heads must be a multiple of n_kv_heads");
  return d;
}

std::map<std::string, double> dims_map(const hw::TransformerDims& d) {
  // Also what tensor parallelism leaves whole on every rank (parallel/memory.h): parameters per
  // hidden unit of one norm (1 RMSNorm, 2 LayerNorm), biases on the out and down projections,
  // learned positions, and whether the LM head is the token embedding.
  return {{"vocab", d.vocab},
          {"d_model", d.d_model},
          {"n_layers", d.n_layers},
          {"n_heads", d.n_heads},
          {"n_kv_heads", d.kv_heads()},
          {"d_ff", d.ffn_dim > 0 ? d.ffn_dim : 4 * d.d_model},
          {"norm_params", d.rms_norm ? 1 : 2},
          {"linear_bias", d.linear_bias ? 1 : 0},
          {"positions", d.max_positions},
          {"tied_embeddings", d.tied_embeddings ? 1 : 0}};
}

ModelConfig read_model_spec(const Entry& e, const TrainingSpec& training, const hw::GpuSpec& gpu) {
  std::vector<std::string_view> allowed = {
      "preset", "layers",  "dtype",   "width",
      "depth",  "profile", "compute", "activation_checkpointing"};
  allowed.insert(allowed.end(), kTransformerKeys.begin(), kTransformerKeys.end());
  e.expect_map(allowed);
  ModelConfig m;
  if (e.has("dtype"))
    m.dtype = e.child("dtype").choice<Dtype>(
        {{"fp32", Dtype::fp32}, {"bf16", Dtype::bf16}, {"fp16", Dtype::fp16}});
  if (e.has("preset") == e.has("layers"))
    e.fail("expected exactly one of 'preset' or 'layers'");
  auto reject = [&](const auto& keys, const std::string& why) {
    for (const std::string_view k : keys)
      if (e.has(std::string(k)))
        e.child(std::string(k)).fail(why);
  };
  // The roofline needs an op list (transformers, resnet-50, vit-b16); the others keep their FLOPs.
  bool roofline = false;
  if (e.has("compute"))
    roofline = e.child("compute").choice<bool>({{"roofline", true}, {"flops", false}});
  auto flops_only = [&](const std::string& what) {
    if (roofline)
      e.child("compute").fail(fmt::format(
          "the roofline models transformers, resnet-50 and vit-b16; {} takes 'flops'", what));
  };
  if (e.has("layers")) {
    reject(kTransformerKeys, "a transformer key; a 'layers' list gives its costs itself");
    flops_only("a 'layers' list");
    m.spec = read_layers(e.child("layers"));
    return m;
  }
  const Entry p = e.child("preset");
  m.preset = p.text();
  if (m.preset == "mlp") {
    reject(kTransformerKeys, "not a parameter of preset 'mlp'");
    flops_only("preset 'mlp'");
    const double width = e.child("width").whole_count(false, 1e6);
    const int depth = static_cast<int>(e.child("depth").integer(1, 100000));
    m.spec = hw::mlp_model(width, depth);
    m.dims = {{"width", width}, {"depth", depth}};
    return m;
  }
  reject(std::array<std::string_view, 2>{"width", "depth"},
         fmt::format("not a parameter of preset '{}'", m.preset));
  if (m.preset == "resnet-50" || m.preset == "vit-b16") {
    reject(kTransformerKeys, fmt::format("not a parameter of preset '{}'", m.preset));
    const auto vit = hw::vit_b16_dims();
    m.spec = m.preset == "vit-b16" ? hw::vit_model(m.preset, vit) : hw::resnet50_model();
    if (!e.has("compute") || roofline) {
      m.compute = "roofline";
      if (m.preset == "vit-b16")
        hw::apply_vit_roofline(m.spec, vit, gpu, training.micro_batch);
      else
        hw::apply_resnet_roofline(m.spec, gpu, training.micro_batch);
    }
    return m;
  }
  hw::TransformerDims dims;
  if (m.preset == "transformer") {
    dims = read_transformer_dims(e, dims, true);
  } else if (m.preset == "gpt-tiny") {
    // validate's own GPT-2-style model: learned positions up to seq_len, tied embeddings, biases,
    // eager attention, a fused GELU.
    dims.max_positions = training.seq_len;
    dims = read_transformer_dims(e, dims, true);
  } else if (const auto preset = hw::find_transformer_preset(m.preset)) {
    dims = read_transformer_dims(e, *preset, false);
  } else {
    std::string names = "transformer, mlp, gpt-tiny";
    for (const auto& n : hw::model_preset_names())
      names += ", " + n;
    p.fail(fmt::format("unknown model preset '{}'; expected one of: {} (or a 'layers' list)",
                       m.preset, names));
  }
  m.spec = hw::transformer_model(m.preset, dims, training.seq_len);
  m.dims = dims_map(dims);
  m.transformer = dims;
  if (!e.has("compute") || roofline) {
    m.compute = "roofline";
    hw::apply_roofline(m.spec, dims, gpu, training.micro_batch, training.seq_len);
  }
  return m;
}

} // namespace overlapsim::scenario::yaml
