#include "hw/transformer_ops.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

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
  // A collective after the forward ops listed so far.
  void forward_comm(TpCollective kind, double bytes, std::string where) {
    comm_.forward.push_back({kind, bytes, ops_.forward.size(), std::move(where), {}, true});
  }
  // A collective in the backward between the backward ops of the forward ops listed so far (which
  // run after it) and those of the forward ops listed later (before it).
  void backward_comm(TpCollective kind, double bytes, std::string where, std::string beside = {}) {
    comm_.backward.push_back(
        {kind, bytes, ops_.backward.size(), std::move(where), std::move(beside), true});
  }
  LayerOps take() {
    // Autograd runs a layer's backward in the reverse order of its forward.
    std::reverse(ops_.backward.begin(), ops_.backward.end());
    const std::size_t n = ops_.backward.size();
    std::reverse(comm_.backward.begin(), comm_.backward.end());
    for (auto& c : comm_.backward)
      c.position = n - c.position;
    return std::move(ops_);
  }
  // After take().
  TensorParallelComm take_comm() { return std::move(comm_); }

private:
  LayerOps ops_;
  TensorParallelComm comm_;
};

// One rank's share of a tensor-parallel group: `t` ranks, sequence parallelism `sp` (off at 1).
struct Rank {
  double t = 1;
  bool sp = false;
  explicit Rank(const TensorParallel& tp) : t(tp.size), sp(tp.sequence_parallel && tp.size > 1) {
    if (tp.size < 1)
      throw std::invalid_argument(fmt::format("tensor parallel size {}: expected >= 1", tp.size));
  }
  bool parallel() const { return t > 1; }
};

bool divides(double t, double n) {
  return n >= t && std::fmod(n, t) == 0;
}

// Key/value heads a rank holds: n_kv_heads / t, or one (replicated) where there are fewer than t.
double kv_heads_per_rank(const TransformerDims& dims, const Rank& r) {
  const double kv = dims.kv_heads();
  if (kv >= r.t) {
    if (!divides(r.t, kv))
      throw std::invalid_argument(
          fmt::format("tensor parallel size {}: n_kv_heads {} is not a multiple of it", r.t, kv));
    return kv / r.t;
  }
  if (!divides(kv, r.t))
    throw std::invalid_argument(fmt::format(
        "tensor parallel size {}: not a multiple of n_kv_heads {}, which it would replicate", r.t,
        kv));
  return 1;
}

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

double vocab_per_rank(const TransformerDims& dims, int tp_size) {
  if (tp_size <= 1)
    return dims.vocab;
  const double multiple = 128.0 * tp_size;
  return std::ceil(dims.vocab / multiple) * multiple / tp_size;
}

const char* to_string(TpCollective kind) {
  switch (kind) {
  case TpCollective::all_reduce:
    return "all_reduce";
  case TpCollective::reduce_scatter:
    return "reduce_scatter";
  case TpCollective::all_gather:
    return "all_gather";
  }
  return "?";
}

double TensorParallelComm::bytes() const {
  double total = 0;
  for (const auto& c : forward)
    total += c.bytes;
  for (const auto& c : backward)
    total += c.bytes;
  return total;
}

namespace {

// Megatron's activations in the tensor-parallel collectives: bf16.
constexpr double kCommBytesPerValue = 2;

struct Built {
  LayerOps ops;
  TensorParallelComm comm;
};

Built build_embedding(const TransformerDims& dims, double b, double s, const TensorParallel& tp) {
  const Rank r(tp);
  const double e = b * s * dims.d_model;
  const double rows = vocab_per_rank(dims, tp.size);
  // Token (and learned position) gathers into fp32 hidden states, added; only token ids are kept.
  const double gathers = dims.max_positions > 0 ? 2 : 1;
  Built out;
  auto& ops = out.ops;
  ops.forward = {
      memory_op("embedding gather", gathers * 8 * e + (gathers - 1) * 12 * e, Access::irregular)};
  ops.quadratic = {false};
  // Backward: the fp32 weight gradient zeroed, then the rows' gradients accumulated into it.
  ops.backward = {memory_op("embedding grad zero", 4 * rows * dims.d_model),
                  memory_op("embedding grad scatter", gathers * 12 * e, Access::irregular)};
  if (!r.parallel())
    return out;
  // The rows of tokens outside the rank's part of the vocabulary zeroed (and their gradient).
  ops.forward.push_back(memory_op("vocab mask", 8 * e, Access::irregular));
  ops.quadratic.push_back(false);
  ops.backward.insert(ops.backward.begin(), memory_op("vocab mask backward", 8 * e));
  const double bytes = kCommBytesPerValue * e;
  const bool scatter = r.sp && dims.max_positions <= 0;
  out.comm.forward.push_back({scatter ? TpCollective::reduce_scatter : TpCollective::all_reduce,
                              bytes,
                              ops.forward.size(),
                              scatter ? "reduce-scatter of the vocabulary-parallel lookup"
                                      : "all-reduce of the vocabulary-parallel lookup",
                              {},
                              true});
  if (r.sp)
    out.comm.backward.push_back({TpCollective::all_gather,
                                 bytes,
                                 0,
                                 "all-gather of the sequence-parallel output's gradient",
                                 {},
                                 true});
  return out;
}

// A column-parallel projection's input: without sequence parallelism the replicated norm output,
// cast by autocast for each projection as today (`cast_name`); with it, the rank's slice cast once
// and all-gathered (the slice kept; the backward gathers it again and reduce-scatters the input
// gradient). `first` and `last` name the projections the gathered input feeds.
void column_parallel_input(OpList& l, const Rank& r, const char* sp_cast_name, double e_slice,
                           double comm_bytes, const std::string& first, const std::string& what) {
  if (r.sp) {
    cast_for_gemm(l, sp_cast_name, e_slice);
    l.backward_comm(TpCollective::reduce_scatter, comm_bytes,
                    fmt::format("reduce-scatter of the {} input gradient", what), first + " wgrad");
    l.forward_comm(TpCollective::all_gather, comm_bytes,
                   fmt::format("all-gather before {}", first));
  } else if (r.parallel()) {
    l.backward_comm(TpCollective::all_reduce, comm_bytes,
                    fmt::format("all-reduce of the {} input gradient", what), first + " wgrad");
  }
}

// After the last column-parallel projection of a group: the backward's gather of the saved slice,
// which its wgrads need (Megatron: beside the dgrad).
void regather(OpList& l, const Rank& r, double comm_bytes, const std::string& last,
              const std::string& what) {
  if (r.sp)
    l.backward_comm(TpCollective::all_gather, comm_bytes,
                    fmt::format("all-gather of the saved {} input again", what), last + " dgrad");
}

// After a row-parallel projection: its partial sums reduced (forward), and with sequence
// parallelism the gradient gathered before its backward.
void row_parallel_output(OpList& l, const Rank& r, double comm_bytes, const std::string& name) {
  if (r.sp) {
    l.forward_comm(TpCollective::reduce_scatter, comm_bytes,
                   fmt::format("reduce-scatter after {}", name));
    l.backward_comm(TpCollective::all_gather, comm_bytes,
                    fmt::format("all-gather of the gradient before {} backward", name));
  } else if (r.parallel()) {
    l.forward_comm(TpCollective::all_reduce, comm_bytes, fmt::format("all-reduce after {}", name));
  }
}

Built build_block(const TransformerDims& dims, double b, double s, const TensorParallel& tp) {
  const Rank r(tp);
  if (r.parallel() && !divides(r.t, dims.n_heads))
    throw std::invalid_argument(fmt::format(
        "tensor parallel size {}: n_heads {} is not a multiple of it", r.t, dims.n_heads));
  const double d = dims.d_model, t = b * s, e = t * d;
  // Per rank: the hidden elements of the replicated (sequence-parallel: sliced) parts, and of the
  // rank's heads.
  const double e_rep = r.sp ? e / r.t : e, e_loc = e / r.t;
  const double hd = d / dims.n_heads, d_kv = hd * kv_heads_per_rank(dims, r);
  const double kv = t * d_kv;
  const double ffn_all = dims.ffn_dim > 0 ? dims.ffn_dim : 4 * d;
  if (r.parallel() && !divides(r.t, ffn_all))
    throw std::invalid_argument(
        fmt::format("tensor parallel size {}: d_ff {} is not a multiple of it", r.t, ffn_all));
  const double ffn = ffn_all / r.t, f = t * ffn;
  const double heads = b * (dims.n_heads / r.t);
  const double a = heads * s * s; // attention-score elements
  const double comm = kCommBytesPerValue * e;
  OpList l;

  // Attention: norm, q/k/v projections (autocast casts the input once per projection).
  norm(l, dims, e_rep);
  column_parallel_input(l, r, "cast qkv input", e_rep, comm, "q proj", "attention");
  if (!r.sp)
    cast_for_gemm(l, "cast q input", e);
  l.linear("q proj", t, d / r.t, d);
  if (!r.sp)
    cast_for_gemm(l, "cast k input", e);
  l.linear("k proj", t, d_kv, d);
  if (!r.sp)
    cast_for_gemm(l, "cast v input", e);
  l.linear("v proj", t, d_kv, d);
  regather(l, r, comm, "v proj", "attention");
  if (dims.attention == TransformerDims::Attention::eager) {
    // Head-major copies of q, k, v for the batched matmuls, kept for their backward.
    l.memory("split heads", 4 * (e_loc + 2 * kv), Access::irregular, 1.0);
    l.save(2 * (e_loc + 2 * kv));
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
    l.memory("merge heads", 4 * e_loc, Access::irregular, 1.0);
  } else {
    // A fused flash kernel: QK^T and PV on tensor cores (over the causal half when masked),
    // nothing s^2 in HBM;
    // the backward recomputes the scores (2.5x the forward's FLOPs). FlashAttention-2 reaches
    // ~40% of the dense peak on A100/H100 (Dao 2023, Fig. 4-7).
    KernelOp fwd;
    fwd.name = "flash attention";
    fwd.flops = (dims.causal ? 0.5 : 1.0) * 4 * a * hd;
    fwd.bytes = 2 * (2 * e_loc + 2 * kv);
    fwd.tensor_efficiency = 0.40;
    KernelOp bwd = fwd;
    bwd.name = "flash attention backward";
    bwd.flops = 2.5 * fwd.flops;
    bwd.bytes = 2 * fwd.bytes + 2 * (e_loc + 2 * kv);
    l.fused(fwd, bwd);
    l.save(2 * (2 * e_loc + 2 * kv) + 4 * heads * s); // q, k, v, output and the log-sum-exp rows
  }
  l.save(2 * e_loc); // the output projection's bf16 input
  l.linear("out proj", t, d, d / r.t);
  row_parallel_output(l, r, comm, "out proj");
  l.memory("residual add", 10 * e_rep, Access::streaming, 1.2);
  if (dims.dropout > 0) {
    l.memory("residual dropout", 2.5 * 2 * e_rep, Access::streaming, 1.0);
    l.save(e_rep);
  }

  // MLP.
  norm(l, dims, e_rep);
  const char* first = dims.mlp == TransformerDims::Mlp::swiglu ? "gate proj" : "up proj";
  column_parallel_input(l, r, "cast mlp input", e_rep, comm, first, "MLP");
  switch (dims.mlp) {
  case TransformerDims::Mlp::gelu:
    if (!r.sp)
      cast_for_gemm(l, "cast up input", e);
    l.linear("up proj", t, ffn, d);
    regather(l, r, comm, "up proj", "MLP");
    l.memory("gelu", 4 * f, Access::streaming, 1.5);
    l.save(2 * f + 2 * f); // gelu's input and the down projection's
    break;
  case TransformerDims::Mlp::gelu_new:
    if (!r.sp)
      cast_for_gemm(l, "cast up input", e);
    l.linear("up proj", t, ffn, d);
    regather(l, r, comm, "up proj", "MLP");
    // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): mul, to fp32, pow, mul, add, mul, tanh,
    // add, mul: 72 bytes an element moved, 14 kept; then cast back for the down projection.
    l.memory("gelu_new", 72 * f, Access::streaming, 1.25);
    l.save(14 * f);
    cast_for_gemm(l, "cast down input", f);
    break;
  case TransformerDims::Mlp::swiglu:
    if (!r.sp)
      cast_for_gemm(l, "cast gate input", e);
    l.linear("gate proj", t, ffn, d);
    if (!r.sp)
      cast_for_gemm(l, "cast up input", e);
    l.linear("up proj", t, ffn, d);
    regather(l, r, comm, "up proj", "MLP");
    l.memory("silu", 4 * f, Access::streaming, 1.5);
    l.memory("gate multiply", 6 * f, Access::streaming, 1.7);
    l.save(2 * f + 2 * f + 2 * f + 2 * f); // gate, silu(gate), up, the product
    break;
  }
  l.linear("down proj", t, d, ffn);
  row_parallel_output(l, r, comm, "down proj");
  l.memory("residual add", 10 * e_rep, Access::streaming, 1.2);
  if (dims.dropout > 0) {
    l.memory("residual dropout", 2.5 * 2 * e_rep, Access::streaming, 1.0);
    l.save(e_rep);
  }
  Built out;
  out.ops = l.take();
  out.comm = l.take_comm();
  return out;
}

Built build_head(const TransformerDims& dims, double b, double s, const TensorParallel& tp) {
  const Rank r(tp);
  const double d = dims.d_model, t = b * s, e = t * d;
  const double e_rep = r.sp ? e / r.t : e;
  const double vocab = vocab_per_rank(dims, tp.size), logits = t * vocab;
  const double comm = kCommBytesPerValue * e;
  OpList l;
  norm(l, dims, e_rep);
  column_parallel_input(l, r, "cast head input", e_rep, comm, "lm head", "LM head");
  if (!r.sp)
    cast_for_gemm(l, "cast head input", e);
  l.linear("lm head", t, vocab, d);
  regather(l, r, comm, "lm head", "LM head");
  // The loss in fp32 (Hugging Face: logits.float()), log-softmax over the vocabulary (its fp32
  // output kept), the NLL gather; backward: the dense fp32 gradient zeroed and scattered.
  l.memory("logits to fp32", 6 * logits, Access::streaming, 1.0);
  if (r.parallel())
    l.forward_comm(TpCollective::all_reduce, 4 * t, "all-reduce of the logits' max");
  l.memory("log_softmax", 8 * logits, Access::irregular, 1.5);
  if (r.parallel()) {
    l.forward_comm(TpCollective::all_reduce, 4 * t, "all-reduce of the target logit");
    l.forward_comm(TpCollective::all_reduce, 4 * t, "all-reduce of the sum of exponentials");
  }
  // Kept to the backward: log_softmax's output, and the fp32 logits the model returns to the
  // caller (alive until the step ends).
  l.save(4 * logits + 4 * logits);
  Built out;
  out.ops = l.take();
  out.comm = l.take_comm();
  out.ops.backward.insert(out.ops.backward.begin(), memory_op("nll grad zero", 4 * logits));
  for (auto& c : out.comm.backward)
    ++c.position;
  return out;
}

} // namespace

LayerOps embedding_ops(const TransformerDims& dims, double b, double s, const TensorParallel& tp) {
  return build_embedding(dims, b, s, tp).ops;
}
LayerOps block_ops(const TransformerDims& dims, double b, double s, const TensorParallel& tp) {
  return build_block(dims, b, s, tp).ops;
}
LayerOps head_ops(const TransformerDims& dims, double b, double s, const TensorParallel& tp) {
  return build_head(dims, b, s, tp).ops;
}
TensorParallelComm embedding_tp_comm(const TransformerDims& dims, double b, double s,
                                     const TensorParallel& tp) {
  return build_embedding(dims, b, s, tp).comm;
}
TensorParallelComm block_tp_comm(const TransformerDims& dims, double b, double s,
                                 const TensorParallel& tp) {
  return build_block(dims, b, s, tp).comm;
}
TensorParallelComm head_tp_comm(const TransformerDims& dims, double b, double s,
                                const TensorParallel& tp) {
  return build_head(dims, b, s, tp).comm;
}

void apply_roofline(ModelSpec& model, const TransformerDims& dims, const GpuSpec& gpu,
                    double micro_batch, double seq_len, const TensorParallel& tp) {
  auto apply = [&](LayerSpec& layer, const LayerOps& ops) {
    set_roofline_costs(layer, ops, gpu, micro_batch);
  };
  const auto block = block_ops(dims, micro_batch, seq_len, tp);
  for (auto& layer : model.layers) {
    if (layer.name == "embedding")
      apply(layer, embedding_ops(dims, micro_batch, seq_len, tp));
    else if (layer.name == "head")
      apply(layer, head_ops(dims, micro_batch, seq_len, tp));
    else
      apply(layer, block);
  }
}

} // namespace overlapsim::hw
