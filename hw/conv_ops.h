// The kernels a convolutional network's layers run in one training micro-batch, as PyTorch eager
// runs them with cuDNN under bf16 autocast in the default NCHW memory format (fp32 master
// weights cast to bf16 each forward, bf16 feature maps, batch norm in cuDNN with fp32 statistics),
// and the tensors autograd keeps for the backward. Priced by the per-kernel roofline
// (hw/roofline.h); the constants and their sources are in docs/MODEL.md ("Convolutional models").
#pragma once

#include "hw/layer_ops.h"

#include <string>

namespace overlapsim::hw {

// Builds one layer's op list from framework-level operations on a micro-batch of `n` samples.
// Every op names the kernels the forward launches and those its backward launches; what autograd
// keeps is declared separately (`save`), once per tensor, by the layer that produces it.
class ConvOpList {
public:
  explicit ConvOpList(double micro_batch) : n_(micro_batch) {}

  // A k x k convolution, bias-free, cin -> cout channels, in_hw -> out_hw (the stride and padding
  // are in out_hw), as an implicit GEMM m = n out_hw^2, n = cout, k = cin k^2: the fp32 weight
  // cast to bf16, the NCHW input transposed to NHWC and the output back (cuDNN's tensor-core
  // kernels work in NHWC); backward: dgrad (none for the network's first layer, whose input
  // needs no gradient) and the split-K wgrad, each transposing its operands, and the bf16 weight
  // gradient added into the fp32 .grad.
  void conv(const std::string& name, double cin, double cout, double k, double in_hw, double out_hw,
            bool first_layer = false);
  // Training-mode batch norm over `c` channels of side `hw` (cuDNN, NCHW): a statistics pass
  // reading the map and a normalising pass reading and writing it; backward: a reduction pass
  // (reads the gradient and the input) and the input-gradient pass.
  void batch_norm(const std::string& name, double c, double hw);
  // In-place ReLU: reads and writes the map; backward: threshold_backward on its saved output.
  void relu(const std::string& name, double c, double hw);
  // A residual add in place (out += identity); its backward hands the gradient to both inputs.
  void add(const std::string& name, double c, double hw);
  // Autograd summing the two gradients of a tensor two ops consumed (a block's input).
  void grad_sum(const std::string& name, double c, double hw);
  // 3x3 stride-2 max pool with int64 indices; backward scatters the gradient through them.
  void max_pool(const std::string& name, double c, double in_hw, double out_hw);
  // Global average pool to one value per channel; backward broadcasts the gradient back.
  void avg_pool(const std::string& name, double c, double hw);
  // nn.Linear under autocast on `rows` x in_features bf16 inputs: the weight cast, one GEMM,
  // dgrad, split-K wgrad and the gradient's accumulation.
  void linear(const std::string& name, double rows, double in_features, double out_features);
  // cross_entropy on bf16 logits: autocast runs it in fp32 (cast, log_softmax, nll); it keeps the
  // fp32 log-probabilities.
  void cross_entropy(double classes);
  // Any other memory-bound op: `bytes` forward, `backward_bytes` in its backward (0: none).
  void memory(const std::string& name, double bytes, Access access, double backward_bytes,
              Access backward_access);
  void save(double bytes) { ops_.saved_bytes += bytes; }
  LayerOps take(); // backward in the reverse order of the forward

  double micro_batch() const { return n_; }

private:
  void forward(KernelOp op);
  void backward(KernelOp op);
  double n_;
  LayerOps ops_;
};

// Op lists of ResNet-50's layers (hw::resnet50_model) on a micro-batch of `micro_batch` images.
// stem: the fp32 batch cast to bf16, 7x7/2 conv, batch norm, ReLU, 3x3/2 max pool.
LayerOps resnet_stem_ops(double micro_batch, int image = 224);
LayerOps bottleneck_ops(const Bottleneck& block, double micro_batch);
// fc: global average pool of 2048 x 7 x 7 (at 224), the 1000-way linear and the loss.
LayerOps resnet_head_ops(double micro_batch, int image = 224);

// Sets each layer of `model` (built by resnet50_model(image)) to its roofline times per sample on
// `gpu` and its activation bytes per sample to what autograd keeps.
void apply_resnet_roofline(ModelSpec& model, const GpuSpec& gpu, double micro_batch,
                           int image = 224);

} // namespace overlapsim::hw
