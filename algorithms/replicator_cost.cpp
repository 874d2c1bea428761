#include "algorithms/replicator_cost.h"

namespace overlapsim {

using hw::Access;
using hw::memory_op;

std::vector<hw::KernelOp> replicator_kernels(const ReplicatorPhase& op, double param_bytes) {
  const auto& c = op.config;
  const double e = static_cast<double>(op.params.count);
  const double k = static_cast<double>(c.selected(op.params.count)); // selected per worker
  const double v = c.value_bytes;
  const double p = param_bytes;
  std::vector<hw::KernelOp> out;
  if (op.phase == ReplicatorPhase::Kind::encode) {
    if (c.kind == ReplicatorKind::diloco)
      return out;
    // m <- beta m + s g: read m and g, write m.
    out.push_back(memory_op("decoupled momentum", e * (8 + p)));
    if (!op.exchanged)
      return out;
    switch (c.kind) {
    case ReplicatorKind::demo:
      // DCT-II of every block: read m, write the coefficients.
      out.push_back(memory_op("dct encode", e * 8));
      // Top-k of |coefficient| per block: read them; write k values and indices.
      out.push_back(memory_op("top-k", e * 4 + k * (v + 4), Access::irregular));
      // The own selection decoded: zero-fill, scatter, inverse DCT; subtracted from m.
      out.push_back(memory_op("dct decode own", e * 4 + k * 8 + e * 8));
      out.push_back(memory_op("remove transmitted", e * 12));
      break;
    case ReplicatorKind::random:
    case ReplicatorKind::striding:
      // Read the indices and the selected momentum, write the values, zero them in m.
      out.push_back(memory_op("select + remove", k * (8 + v + 4), Access::irregular));
      break;
    case ReplicatorKind::diloco:
      break;
    }
    return out;
  }
  if (op.exchanged) {
    switch (c.kind) {
    case ReplicatorKind::demo: {
      // Everyone's pairs summed into zeroed blocks with a count per coefficient (the mean), the
      // inverse DCT of the blocks.
      const double n = op.group_size;
      out.push_back(memory_op("dct decode", e * 8 + n * k * (v + 4 + 8), Access::irregular));
      out.push_back(memory_op("inverse dct", e * 8));
      break;
    }
    case ReplicatorKind::random:
    case ReplicatorKind::striding:
      out.push_back(memory_op("scatter decode", e * 4 + k * (v + 4), Access::irregular));
      break;
    case ReplicatorKind::diloco:
      break;
    }
  }
  // theta <- theta - lr sign(Q): read Q, update the fp32 master (read, write) and write the
  // working copy of 16-bit parameters; fp32 parameters are their own master.
  out.push_back(memory_op("demo-sgd update", e * (p < 4 ? 12 + p : 12)));
  return out;
}

} // namespace overlapsim
