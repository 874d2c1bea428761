#include "hw/conv_ops.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace overlapsim::hw {

// Where the bytes come from (docs/MODEL.md, "Convolutional models"):
// - cuDNN's tensor-core convolutions work on NHWC; on NCHW tensors each call transposes its
//   activation operands in and its output back (NVIDIA, Convolutional Layers User's Guide,
//   "Tensor Layouts In Memory: NCHW vs NHWC"; cuDNN developer guide, "Tensor Transformations").
//   The transposes are dedicated tiled kernels (nchwToNhwcKernel): they stream, 2 bytes read and 2
//   written an element.
// - An implicit GEMM reads its input map once (the k x k window's reuse stays on chip), not the
//   k^2-times larger unfolded matrix: its bytes are input + weight + output.
// - Batch norm in training is two passes over the map forward and two backward (NVIDIA, Deep
//   Learning Performance Guide, "Memory-Limited Layers": batch norm and ReLU are memory-bound);
//   the per-channel statistics reduce over N x H x W (irregular), the rest streams.

void ConvOpList::forward(KernelOp op) {
  ops_.forward.push_back(std::move(op));
  ops_.quadratic.push_back(false);
}

void ConvOpList::backward(KernelOp op) {
  ops_.backward.push_back(std::move(op));
}

void ConvOpList::conv(const std::string& name, double cin, double cout, double k, double in_hw,
                      double out_hw, bool first_layer) {
  const double x = n_ * cin * in_hw * in_hw, y = n_ * cout * out_hw * out_hw;
  const double w = cin * cout * k * k, pixels = n_ * out_hw * out_hw;
  forward(memory_op(name + " weight cast", 6 * w));
  save(2 * w); // the bf16 weight, kept for the dgrad (and by autocast's cast cache)
  forward(memory_op(name + " input to NHWC", 4 * x));
  KernelOp fwd = gemm_op(name, {pixels, cout, cin * k * k});
  fwd.bytes = 2 * (x + w + y);
  forward(std::move(fwd));
  forward(memory_op(name + " output to NCHW", 4 * y));

  // Backward, in the order it runs reversed (take() reverses the list).
  backward(memory_op(name + " weight grad accumulate", 10 * w));
  KernelOp wgrad = gemm_op(name + " wgrad", {cout, cin * k * k, pixels});
  wgrad.gemm.split_k = true;
  wgrad.bytes = 2 * (x + y) + 4 * w; // the operands, the fp32-accumulated partials' reduction
  backward(std::move(wgrad));
  backward(memory_op(name + " wgrad operands to NHWC", 4 * (x + y)));
  if (!first_layer) {
    backward(memory_op(name + " dgrad output to NCHW", 4 * x));
    // The dgrad of a strided conv has the forward's FLOPs (only the taps that touched an output).
    KernelOp dgrad = gemm_op(name + " dgrad", {pixels, cin, cout * k * k});
    dgrad.bytes = 2 * (x + w + y);
    backward(std::move(dgrad));
    backward(memory_op(name + " dgrad grad to NHWC", 4 * y));
  }
}

void ConvOpList::batch_norm(const std::string& name, double c, double hw) {
  const double e = n_ * c * hw * hw;
  forward(memory_op(name + " statistics", 2 * e, Access::irregular));
  forward(memory_op(name + " normalise", 4 * e));
  save(2 * e + 8 * c); // its bf16 input (the conv's output), fp32 mean and inverse std
  backward(memory_op(name + " backward input grad", 6 * e));
  backward(memory_op(name + " backward reduce", 4 * e, Access::irregular));
}

void ConvOpList::relu(const std::string& name, double c, double hw) {
  const double e = n_ * c * hw * hw;
  forward(memory_op(name, 4 * e));
  // In place on the batch norm's output: autograd keeps the result for threshold_backward, the
  // same storage the next conv (or pool) keeps as its input.
  save(2 * e);
  backward(memory_op(name + " backward", 6 * e));
}

void ConvOpList::add(const std::string& name, double c, double hw) {
  forward(memory_op(name, 6 * n_ * c * hw * hw));
}

void ConvOpList::grad_sum(const std::string& name, double c, double hw) {
  backward(memory_op(name, 6 * n_ * c * hw * hw));
}

void ConvOpList::max_pool(const std::string& name, double c, double in_hw, double out_hw) {
  const double in = n_ * c * in_hw * in_hw, out = n_ * c * out_hw * out_hw;
  forward(memory_op(name, 2 * in + 2 * out + 8 * out, Access::irregular));
  save(8 * out); // int64 indices (its input is the ReLU's saved output)
  // The input's gradient zeroed and the output's gradient scattered through the indices.
  backward(memory_op(name + " backward", 2 * in + 10 * out, Access::irregular));
}

void ConvOpList::avg_pool(const std::string& name, double c, double hw) {
  const double e = n_ * c * hw * hw;
  forward(memory_op(name, 2 * e + 2 * n_ * c, Access::irregular));
  backward(memory_op(name + " backward", 2 * e + 2 * n_ * c, Access::irregular));
}

void ConvOpList::linear(const std::string& name, double rows, double in, double out) {
  const double w = in * out;
  forward(memory_op(name + " weight cast", 6 * w));
  save(2 * w);
  forward(gemm_op(name, {rows, out, in}));
  backward(memory_op(name + " weight grad accumulate", 10 * w));
  KernelOp wgrad = gemm_op(name + " wgrad", {out, in, rows});
  wgrad.gemm.split_k = true;
  backward(std::move(wgrad));
  backward(gemm_op(name + " dgrad", {rows, in, out}));
}

void ConvOpList::cross_entropy(double classes) {
  const double l = n_ * classes;
  forward(memory_op("logits to fp32", 6 * l));
  forward(memory_op("log_softmax", 8 * l, Access::irregular));
  save(4 * l);
  backward(memory_op("logits grad to bf16", 6 * l));
  backward(memory_op("log_softmax backward", 12 * l, Access::irregular));
  backward(memory_op("nll backward", 4 * l));
}

void ConvOpList::memory(const std::string& name, double bytes, Access access, double backward_bytes,
                        Access backward_access) {
  forward(memory_op(name, bytes, access));
  if (backward_bytes > 0)
    backward(memory_op(name + " backward", backward_bytes, backward_access));
}

LayerOps ConvOpList::take() {
  std::reverse(ops_.backward.begin(), ops_.backward.end());
  return std::move(ops_);
}

LayerOps resnet_stem_ops(double micro_batch, int image) {
  const double n = micro_batch, hw = image, conv_hw = hw / 2, pool_hw = hw / 4;
  ConvOpList l(n);
  const double pixels = n * 3 * hw * hw;
  l.memory("input cast", 6 * pixels, Access::streaming, 0, Access::streaming);
  l.save(4 * pixels + 2 * pixels); // the fp32 batch (alive for the step) and conv1's bf16 input
  l.conv("conv1", 3, 64, 7, hw, conv_hw, true);
  l.batch_norm("bn1", 64, conv_hw);
  l.relu("relu", 64, conv_hw);
  l.max_pool("maxpool", 64, conv_hw, pool_hw);
  l.save(2 * n * 64 * pool_hw * pool_hw); // the pooled map, the first block's input
  return l.take();
}

LayerOps bottleneck_ops(const Bottleneck& b, double micro_batch) {
  ConvOpList l(micro_batch);
  l.conv("conv1", b.in_channels, b.width, 1, b.in_hw, b.in_hw);
  l.batch_norm("bn1", b.width, b.in_hw);
  l.relu("relu1", b.width, b.in_hw);
  l.conv("conv2", b.width, b.width, 3, b.in_hw, b.out_hw);
  l.batch_norm("bn2", b.width, b.out_hw);
  l.relu("relu2", b.width, b.out_hw);
  l.conv("conv3", b.width, b.out_channels, 1, b.out_hw, b.out_hw);
  l.batch_norm("bn3", b.out_channels, b.out_hw);
  if (b.downsample) {
    l.conv("downsample conv", b.in_channels, b.out_channels, 1, b.in_hw, b.out_hw);
    l.batch_norm("downsample bn", b.out_channels, b.out_hw);
  }
  l.add("residual add", b.out_channels, b.out_hw);
  l.relu("relu3", b.out_channels, b.out_hw); // its output is the block's, kept once here
  // The block's input fed conv1 and the identity (or the projection): two gradients summed.
  l.grad_sum("input grad sum", b.in_channels, b.in_hw);
  return l.take();
}

LayerOps resnet_head_ops(double micro_batch, int image) {
  const double n = micro_batch, features = 2048;
  ConvOpList l(n);
  l.avg_pool("avgpool", features, image / 32.0);
  l.save(2 * n * features); // the pooled features, the classifier's input
  l.linear("fc", n, features, 1000);
  l.cross_entropy(1000);
  return l.take();
}

void apply_resnet_roofline(ModelSpec& model, const GpuSpec& gpu, double micro_batch, int image) {
  const auto blocks = resnet50_blocks(image);
  std::size_t next = 0;
  for (auto& layer : model.layers) {
    if (layer.name == "stem")
      set_roofline_costs(layer, resnet_stem_ops(micro_batch, image), gpu, micro_batch);
    else if (layer.name == "fc")
      set_roofline_costs(layer, resnet_head_ops(micro_batch, image), gpu, micro_batch);
    else if (next < blocks.size())
      set_roofline_costs(layer, bottleneck_ops(blocks[next++], micro_batch), gpu, micro_batch);
    else
      throw std::logic_error("apply_resnet_roofline: '" + layer.name + "' is not ResNet-50's");
  }
}

} // namespace overlapsim::hw
