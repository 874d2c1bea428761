#include "hw/transformer_ops.h"

#include <algorithm>
#include <utility>

namespace overlapsim::hw {

namespace {

// Builds one layer's op list. Every forward op is given with how its backward relates to it:
// a GEMM's backward is its two gradient GEMMs; a memory-bound op's backward moves
// `backward_factor` x its forward bytes (reading the gradient and what was saved, writing the
// input's gradient).
class OpList {
public:
  // A projection x[T, k] . W[k, n]: backward dX = dY . W^T (T, k, n) and dW = X^T . dY (k, n, T),
  // plus the fp32 gradient's accumulation (bf16 dW cast and added: 2 + 4 + 4 bytes a parameter).
  void linear(const char* name, double tokens, double n, double k) {
    ops_.forward.push_back(gemm_op(name, {tokens, n, k}));
    ops_.quadratic.push_back(false);
    ops_.backward.push_back(gemm_op(std::string(name) + " dgrad", {tokens, k, n}));
    ops_.backward.push_back(gemm_op(std::string(name) + " wgrad", {k, n, tokens}));
    ops_.backward.push_back(memory_op(std::string(name) + " grad accumulate", 10 * n * k));
  }
  // A batched product without weights (attention): two gradient GEMMs of the same FLOPs.
  void batched(const char* name, GemmShape fwd, GemmShape dgrad_a, GemmShape dgrad_b) {
    ops_.forward.push_back(gemm_op(name, fwd));
    ops_.quadratic.push_back(true);
    ops_.backward.push_back(gemm_op(std::string(name) + " dgrad a", dgrad_a));
    ops_.backward.push_back(gemm_op(std::string(name) + " dgrad b", dgrad_b));
  }
  void memory(const char* name, double bytes, Access access, double backward_factor,
              bool quadratic = false) {
    ops_.forward.push_back(memory_op(name, bytes, access));
    ops_.quadratic.push_back(quadratic);
    if (backward_factor > 0)
      ops_.backward.push_back(
          memory_op(std::string(name) + " backward", backward_factor * bytes, access));
  }
  void fused(KernelOp fwd, KernelOp bwd) {
    ops_.forward.push_back(std::move(fwd));
    ops_.quadratic.push_back(true);
    ops_.backward.push_back(std::move(bwd));
  }
  void save(double bytes) { ops_.saved_bytes += bytes; }
  LayerOps take() {
    // Autograd runs a layer's backward in the reverse order of its forward.
    std::reverse(ops_.backward.begin(), ops_.backward.end());
    return std::move(ops_);
  }

private:
  LayerOps ops_;
};

// Layer norm in one fp32 kernel (read and write the fp32 hidden states); RMSNorm as Hugging Face
// writes it for Llama: pow, mean, rsqrt-multiply, weight-multiply, four fp32 passes.
void norm(OpList& l, const TransformerDims& dims, double elements) {
  if (dims.rms_norm) {
    l.memory("rmsnorm", 28 * elements, Access::streaming, 1.5);
    l.save(12 * elements); // the fp32 input, the normalised product and the variance row
  } else {
    l.memory("layernorm", 8 * elements, Access::irregular, 2.5);
    l.save(4 * elements); // the fp32 input (mean and rstd are per row)
  }
}

} // namespace

LayerOps norm_ops(const TransformerDims& dims, double elements) {
  OpList l;
  norm(l, dims, elements);
  return l.take();
}

namespace {

// Autocast's cast of an fp32 activation to a GEMM's bf16 input, kept by the GEMM for its wgrad.
void cast_for_gemm(OpList& l, const char* name, double elements) {
  l.memory(name, 6 * elements, Access::streaming, 1.0);
  l.save(2 * elements);
}

} // namespace

LayerOps embedding_ops(const TransformerDims& dims, double b, double s) {
  const double e = b * s * dims.d_model;
  // Token (and learned position) gathers into fp32 hidden states, added; only token ids are kept.
  const double gathers = dims.max_positions > 0 ? 2 : 1;
  LayerOps ops;
  ops.forward = {
      memory_op("embedding gather", gathers * 8 * e + (gathers - 1) * 12 * e, Access::irregular)};
  ops.quadratic = {false};
  // Backward: the fp32 weight gradient zeroed, then the rows' gradients accumulated into it.
  ops.backward = {memory_op("embedding grad zero", 4 * dims.vocab * dims.d_model),
                  memory_op("embedding grad scatter", gathers * 12 * e, Access::irregular)};
  return ops;
}

LayerOps block_ops(const TransformerDims& dims, double b, double s) {
  const double d = dims.d_model, t = b * s, e = t * d;
  const double hd = d / dims.n_heads, d_kv = hd * dims.kv_heads();
  const double kv = t * d_kv;
  const double ffn = dims.ffn_dim > 0 ? dims.ffn_dim : 4 * d, f = t * ffn;
  const double heads = b * dims.n_heads;
  const double a = heads * s * s; // attention-score elements
  OpList l;

  // Attention: norm, q/k/v projections (autocast casts the input once per projection).
  norm(l, dims, e);
  cast_for_gemm(l, "cast q input", e);
  l.linear("q proj", t, d, d);
  cast_for_gemm(l, "cast k input", e);
  l.linear("k proj", t, d_kv, d);
  cast_for_gemm(l, "cast v input", e);
  l.linear("v proj", t, d_kv, d);
  if (dims.attention == TransformerDims::Attention::eager) {
    // Head-major copies of q, k, v for the batched matmuls, kept for their backward.
    l.memory("split heads", 4 * (e + 2 * kv), Access::irregular, 1.0);
    l.save(2 * (e + 2 * kv));
    l.batched("scores q.k^T", {s, s, hd, heads}, {s, hd, s, heads}, {s, hd, s, heads});
    // Causal mask (where, to fp32), the attention mask added, softmax in fp32, cast back to bf16.
    if (dims.causal)
      l.memory("causal mask", 6 * a, Access::irregular, 1.0, true);
    l.memory("mask add", 8 * a, Access::irregular, 1.0, true);
    l.memory("softmax", 8 * a, Access::streaming, 1.5, true);
    l.save(4 * a); // softmax keeps its fp32 output
    l.memory("cast probabilities", 6 * a, Access::streaming, 1.0, true);
    l.save(2 * a); // the bf16 probabilities, kept by the product with v
    if (dims.dropout > 0) {
      l.memory("attention dropout", 5 * a, Access::streaming, 1.0, true);
      l.save(a); // the mask
    }
    l.batched("probabilities.v", {s, hd, s, heads}, {s, s, hd, heads}, {s, hd, s, heads});
    l.memory("merge heads", 4 * e, Access::irregular, 1.0);
  } else {
    // A fused flash kernel: QK^T and PV on tensor cores (over the causal half when masked),
    // nothing s^2 in HBM;
    // the backward recomputes the scores (2.5x the forward's FLOPs). FlashAttention-2 reaches
    // ~40% of the dense peak on A100/H100 (Dao 2023, Fig. 4-7).
    KernelOp fwd;
    fwd.name = "flash attention";
    fwd.flops = (dims.causal ? 0.5 : 1.0) * 4 * a * hd;
    fwd.bytes = 2 * (2 * e + 2 * kv);
    fwd.tensor_efficiency = 0.40;
    KernelOp bwd = fwd;
    bwd.name = "flash attention backward";
    bwd.flops = 2.5 * fwd.flops;
    bwd.bytes = 2 * fwd.bytes + 2 * (e + 2 * kv);
    l.fused(fwd, bwd);
    l.save(2 * (2 * e + 2 * kv) + 4 * heads * s); // q, k, v, output and the log-sum-exp rows
  }
  l.save(2 * e); // the output projection's bf16 input
  l.linear("out proj", t, d, d);
  l.memory("residual add", 10 * e, Access::streaming, 1.2);
  if (dims.dropout > 0) {
    l.memory("residual dropout", 2.5 * 2 * e, Access::streaming, 1.0);
    l.save(e);
  }

  // MLP.
  norm(l, dims, e);
  switch (dims.mlp) {
  case TransformerDims::Mlp::gelu:
    cast_for_gemm(l, "cast up input", e);
    l.linear("up proj", t, ffn, d);
    l.memory("gelu", 4 * f, Access::streaming, 1.5);
    l.save(2 * f + 2 * f); // gelu's input and the down projection's
    break;
  case TransformerDims::Mlp::gelu_new:
    cast_for_gemm(l, "cast up input", e);
    l.linear("up proj", t, ffn, d);
    // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): mul, to fp32, pow, mul, add, mul, tanh,
    // add, mul: 72 bytes an element moved, 14 kept; then cast back for the down projection.
    l.memory("gelu_new", 72 * f, Access::streaming, 1.25);
    l.save(14 * f);
    cast_for_gemm(l, "cast down input", f);
    break;
  case TransformerDims::Mlp::swiglu:
    cast_for_gemm(l, "cast gate input", e);
    l.linear("gate proj", t, ffn, d);
    cast_for_gemm(l, "cast up input", e);
    l.linear("up proj", t, ffn, d);
    l.memory("silu", 4 * f, Access::streaming, 1.5);
    l.memory("gate multiply", 6 * f, Access::streaming, 1.7);
    l.save(2 * f + 2 * f + 2 * f + 2 * f); // gate, silu(gate), up, the product
    break;
  }
  l.linear("down proj", t, d, ffn);
  l.memory("residual add", 10 * e, Access::streaming, 1.2);
  if (dims.dropout > 0) {
    l.memory("residual dropout", 2.5 * 2 * e, Access::streaming, 1.0);
    l.save(e);
  }
  return l.take();
}

LayerOps head_ops(const TransformerDims& dims, double b, double s) {
  const double d = dims.d_model, t = b * s, e = t * d;
  const double logits = t * dims.vocab;
  OpList l;
  norm(l, dims, e);
  cast_for_gemm(l, "cast head input", e);
  l.linear("lm head", t, dims.vocab, d);
  // The loss in fp32 (Hugging Face: logits.float()), log-softmax over the vocabulary (its fp32
  // output kept), the NLL gather; backward: the dense fp32 gradient zeroed and scattered.
  l.memory("logits to fp32", 6 * logits, Access::streaming, 1.0);
  l.memory("log_softmax", 8 * logits, Access::irregular, 1.5);
  // Kept to the backward: log_softmax's output, and the fp32 logits the model returns to the
  // caller (alive until the step ends).
  l.save(4 * logits + 4 * logits);
  auto ops = l.take();
  ops.backward.insert(ops.backward.begin(), memory_op("nll grad zero", 4 * logits));
  return ops;
}

void apply_roofline(ModelSpec& model, const TransformerDims& dims, const GpuSpec& gpu,
                    double micro_batch, double seq_len) {
  auto apply = [&](LayerSpec& layer, const LayerOps& ops) {
    set_roofline_costs(layer, ops, gpu, micro_batch);
  };
  const auto block = block_ops(dims, micro_batch, seq_len);
  for (auto& layer : model.layers) {
    if (layer.name == "embedding")
      apply(layer, embedding_ops(dims, micro_batch, seq_len));
    else if (layer.name == "head")
      apply(layer, head_ops(dims, micro_batch, seq_len));
    else
      apply(layer, block);
  }
}

} // namespace overlapsim::hw
