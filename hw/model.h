// The workload: a model as an ordered list of layers (input to output) with the costs the simulator
// needs, and the presets built from published architectures.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace overlapsim::hw {

struct LayerSpec {
  std::string name;
  double params = 0;                      // parameter count
  double fwd_flops_per_sample = 0;        // forward FLOPs for one sample (seq_len tokens)
  double bwd_flops_per_sample = 0;        // backward FLOPs; 2x forward unless the layer says so
  double activation_bytes_per_sample = 0; // bytes kept from forward to backward for one sample
  // Measured times (from a calibration profile) override the FLOP-based estimate when > 0.
  double fwd_time_per_sample_s = 0;
  double bwd_time_per_sample_s = 0;
  // Bytes the layer's output takes per sample: what model parallelism sends to the next GPU.
  double output_bytes_per_sample = 0;
  // Modelled times (the roofline of hw/transformer_ops.h on the scenario's GPU): used when no
  // measured time is given, instead of the FLOPs at the GPU's flat efficiency.
  double fwd_model_time_per_sample_s = 0;
  double bwd_model_time_per_sample_s = 0;
  // The share of the forward's cost that grows with seq_len squared (attention scores and their
  // product with V); the rest grows linearly. Scales shorter sequences (seq_len_distribution).
  double seq_quadratic_share = 0;
  // Seconds of an all-reduce of the layer's parameters, from a per-layer table (model.profile:
  // *.tsv); used only when ModelSpec::comm_times_from_table is set.
  double comm_time_s = 0;
  // Measured (a calibration profile under tensor parallelism, ModelSpec::tp_comm_measured_tensor):
  // the layer's TP collectives' cost to one micro-batch's forward and backward as a real run pays
  // it, replacing their price on the TP group's links (parallel/stage_view.h).
  double tp_comm_forward_s = 0;
  double tp_comm_backward_s = 0;
};

struct ModelSpec {
  std::string name;
  std::vector<LayerSpec> layers;
  // Measured (calibration profile): one optimizer step's time per parameter it updates; replaces
  // the memory-bandwidth estimate when > 0.
  double optimizer_time_per_param_s = 0;
  // Measured steps over flat slices, (parameters, seconds) ascending: interpolated where given
  // (optimizer_step_time). Measured with every worker stepping at once.
  std::vector<std::pair<double, double>> optimizer_points;
  // The same steps measured alone: no other worker sharing this one's memory system
  // (memory_shared_by) ran a memory-bound op beside them; empty: not measured.
  std::vector<std::pair<double, double>> optimizer_alone_points;
  // Workers (consecutive ranks) that shared one memory system where the profile measured the
  // memory-bound ops (optimizer steps, element-wise ops): CPU workers on one host share its DRAM
  // and last-level cache, GPUs have memory of their own (1). Two CPU workers streaming at once
  // each ran 1.3-1.5x slower than one alone (issue 30.2): such an op is priced alone and slowed
  // while another worker of its memory system runs one (sim/memory_contention.h).
  int memory_shared_by = 1;
  // The tensor-parallel size the layers' tp_comm_forward_s / tp_comm_backward_s were measured at
  // (0: none measured); a job of another TP size prices its TP collectives on the links.
  int tp_comm_measured_tensor = 0;
  // Measured: ACCO's estimate (Algorithm 1 line 27: the step's result written to another buffer,
  // master and moments kept) over a committed step of the same shard; 1: the same price.
  double optimizer_estimate_ratio = 1;
  // Measured: a micro-batch whose forward follows a backward on its stream, with no other op
  // between (ACCO's and DPU's rounds, gradient accumulation), runs its forward and backward at
  // this ratio of the layers' times (which are a whole step's, after the optimizer); 1: the same.
  double back_to_back_compute_ratio = 1;
  // Measured: DiLoCo's outer step per parameter; replaces the memory-bandwidth estimate when > 0.
  double outer_step_time_per_param_s = 0;
  // Measured: the same with no other worker on the machine streaming memory beside it (CPU
  // workers of one host; memory_shared_by); 0: outer_step_time_per_param_s throughout.
  double outer_step_alone_time_per_param_s = 0;
  // Measured element-wise ops by name ("copy", "accumulate", "fill", "reload master"): a fixed
  // cost per call and a cost per byte moved (issue 30.3); an op not listed is priced at the memory
  // bandwidth.
  struct MemoryOpPrice {
    double fixed_s = 0;
    double per_byte_s = 0; // with every worker running it at once
    // With no other worker of the memory system running a memory-bound op (memory_shared_by);
    // 0: not measured (per_byte_s either way).
    double alone_per_byte_s = 0;
  };
  std::map<std::string, MemoryOpPrice> memory_ops;
  // Measured replicator phases (DeMo, FlexDeMo) by runtime/replicator_use.h's price_name: a fixed
  // cost per call and a cost per element of the piece (issue 30.3); a phase not listed runs its
  // memory-bound kernels (algorithms/replicator_cost.h).
  struct PhasePrice {
    double fixed_s = 0;
    double per_element_s = 0;
  };
  std::map<std::string, PhasePrice> replicator_phases;
  // The layers came from a per-layer time table: collectives over the model's parameters or
  // gradients take the table's comm_time_s, not the network model's time (docs/MODEL.md).
  bool comm_times_from_table = false;

  double total_params() const;
  // Seconds of a measured optimizer step over `params` parameters: between two measured points
  // on their line, beyond them in proportion to the nearest; else optimizer_time_per_param_s per
  // parameter; 0 when nothing was measured (the simulator then streams the bytes through HBM).
  double measured_optimizer_seconds(double params) const;
  // The same over optimizer_alone_points; measured_optimizer_seconds where those are empty.
  double measured_optimizer_alone_seconds(double params) const;
  double total_fwd_flops_per_sample() const;
  double total_bwd_flops_per_sample() const;
  double total_activation_bytes_per_sample() const;
};

// GPT-style decoder (GPT-2, GPT-Neo, Llama). Layers: "embedding" (token + learned position
// embeddings), n_layers blocks "block<i>", "head" (final norm + LM head; tied to the embedding for
// GPT-2/Neo, so the head's params are only the norm's and its FLOPs the 2*d*vocab matmul).
struct TransformerDims {
  enum class Mlp {
    gelu,     // one fused GELU kernel (nn.GELU, F.gelu)
    gelu_new, // Hugging Face's "gelu_new" (GPT-2, GPT-Neo): the tanh formula as 8 fp32 kernels
    swiglu,   // silu(gate) x up (Llama): three ffn matrices
  };
  enum class Attention {
    eager, // scores materialised: b x heads x s^2 written, masked, softmaxed in fp32, cast back
    sdpa,  // PyTorch scaled_dot_product_attention: a fused flash kernel, nothing s^2 in HBM
    flash, // FlashAttention kernels: the same cost model as sdpa
  };
  double vocab = 50257;
  double d_model = 768;
  int n_layers = 12;
  int n_heads = 12;
  int n_kv_heads = 0;          // grouped-query attention; 0 means n_heads
  double ffn_dim = 0;          // 0 means 4 * d_model
  double max_positions = 2048; // learned position embeddings; 0 for rotary (Llama)
  bool tied_embeddings = true;
  bool gated_mlp = false;  // SwiGLU (three ffn matrices), Llama
  bool qkv_bias = true;    // GPT-2: yes, GPT-Neo: no
  bool linear_bias = true; // biases on out-proj and MLP (false for Llama)
  bool rms_norm = false;   // RMSNorm (scale only) instead of LayerNorm (scale and bias)
  Mlp mlp = Mlp::gelu;     // selects gated_mlp's matrices only through the roofline's op list
  Attention attention = Attention::eager;
  double dropout = 0; // attention-probability and residual dropout (0: none run)
  // Decoder attention masks the future (flash kernels skip the masked half); an encoder (ViT)
  // attends over the whole sequence.
  bool causal = true;

  int kv_heads() const { return n_kv_heads > 0 ? n_kv_heads : n_heads; }
};

// Forward FLOPs per sample: 2 x (matmul params) x seq_len + attention 4 x seq_len^2 x d_model per
// block; backward 2x forward. Activations per block per sample: seq_len x d_model x (34 + 5 x
// n_heads x seq_len / d_model) bytes (Korthikanti et al. 2022, 16-bit activations, no
// recomputation).
ModelSpec transformer_model(std::string name, const TransformerDims& dims, int seq_len);

// A multi-layer perceptron: `depth` Linear(width, width) layers with bias and ReLU, on `width`-wide
// fp32 inputs; the same structure the validate backend builds for real.
ModelSpec mlp_model(double width, int depth, double bytes_per_activation = 4);

// ResNet-50 (He et al. 2016) on image x image inputs: layers "stem" (7x7 conv, max pool), the 16
// bottleneck blocks "layer<s>.<b>", and "fc" (pool + 1000-way classifier). Params and FLOPs from
// the convolutions (2 FLOPs per multiply-add), batch norms included in params; activations: 16-bit
// outputs of every conv, batch norm and ReLU kept for backward.
ModelSpec resnet50_model(int image = 224);

// One bottleneck block of a ResNet as torchvision builds it (v1.5: the stride on the 3x3 conv):
// 1x1 in -> width, 3x3 width -> width (stride), 1x1 width -> out, each with batch norm, ReLU
// after the first two and after the residual add; `downsample` projects the identity with a
// strided 1x1 conv and batch norm.
struct Bottleneck {
  double in_hw = 0, out_hw = 0; // side of the input and output feature maps
  double in_channels = 0, width = 0, out_channels = 0;
  bool downsample = false;
};
// ResNet-50's 16 bottlenecks on image x image inputs, input to output ("layer<s>.<b>").
std::vector<Bottleneck> resnet50_blocks(int image = 224);

// A vision transformer (Dosovitskiy et al. 2021) as torchvision's VisionTransformer builds it:
// a patch x patch stride-patch conv embeds the image into (image / patch)^2 tokens, a learned
// class token is prepended and learned positions added, `encoder` blocks (pre-norm, non-causal)
// run over the tokens, a final LayerNorm and a linear head classify the class token.
struct VitDims {
  int image = 224, patch = 16;
  double classes = 1000;
  TransformerDims encoder; // vocab and max_positions unused: the embedding is the patch conv
  double tokens() const { return (image / patch) * (image / patch) + 1.0; }
};
// ViT-B/16: d_model 768, 12 layers, 12 heads, MLP 3072 (GELU), 86,567,656 parameters.
VitDims vit_b16_dims();
// Layers "embedding" (patch conv, class token, positions), "block<i>", "head" (final norm and
// classifier), with params, FLOPs and activations as transformer_model counts a block.
ModelSpec vit_model(std::string name, const VitDims& dims);

// Presets: gpt-neo-125m, gpt-neo-1.3b, gpt-neo-2.7b, gpt2-small, llama2-7b, olmo2-1b
// (transformers), resnet-50 (resnet50_model) and vit-b16 (vit_model).
std::optional<TransformerDims> find_transformer_preset(std::string_view name);
std::vector<std::string> model_preset_names();

} // namespace overlapsim::hw
