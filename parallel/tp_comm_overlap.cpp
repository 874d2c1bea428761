#include "parallel/tp_comm_overlap.h"

#include <algorithm>
#include <limits>

namespace overlapsim::parallel {

OverlapConstants overlap_constants(OverlapMethod method, int tensor) {
  switch (method) {
  case OverlapMethod::ring_exchange:
    return {.comm_sms = 1, .sm_margin = false, .splits = std::max(1, tensor)};
  case OverlapMethod::pipeline:
    return {.comm_sms = 16, .sm_margin = true, .splits = 4};
  case OverlapMethod::bulk:
    return {.comm_sms = 16, .sm_margin = true, .splits = 0};
  }
  return {};
}

double overlap_extra_seconds(double comm_s, double gemm_s, OverlapMethod method, int tensor,
                             int sms) {
  if (gemm_s <= 0)
    return comm_s;
  const auto c = overlap_constants(method, tensor);
  const double sigma =
      c.sm_margin && sms > c.comm_sms ? static_cast<double>(sms) / (sms - c.comm_sms) : 1.0;
  const double slowed = sigma * gemm_s;
  const double fill = c.splits > 0 ? std::min(comm_s, slowed) / c.splits : 0.0;
  return std::max(comm_s, slowed) + fill - gemm_s;
}

namespace {

bool is_gemm(const hw::KernelOp& op) {
  return op.gemm.m > 0;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

} // namespace

OverlappedComm overlap_block_comm(const std::vector<hw::KernelOp>& ops,
                                  const std::vector<hw::TpCommOp>& comm,
                                  const std::vector<double>& comm_seconds, bool backward,
                                  const hw::GpuSpec& gpu, int tensor) {
  std::vector<bool> used(ops.size(), false);
  OverlappedComm out;
  for (std::size_t i = 0; i < comm.size(); ++i) {
    const auto& c = comm[i];
    const double seconds = comm_seconds[i];
    std::vector<std::size_t> paired;
    OverlapMethod method = OverlapMethod::ring_exchange;
    const auto take = [&](std::size_t k) {
      if (k < ops.size() && is_gemm(ops[k]) && !used[k])
        paired.push_back(k);
    };
    if (!c.beside.empty()) {
      method = OverlapMethod::bulk;
      for (std::size_t k = 0; k < ops.size(); ++k)
        if (ops[k].name == c.beside) {
          take(k);
          break;
        }
    } else if (c.kind == hw::TpCollective::all_gather && !backward) {
      for (std::size_t k = c.position; k < ops.size() && is_gemm(ops[k]); ++k)
        take(k);
    } else if (c.kind == hw::TpCollective::all_gather) {
      for (std::size_t k = c.position; k < ops.size(); ++k)
        if (is_gemm(ops[k]) && ends_with(ops[k].name, " dgrad")) {
          take(k);
          break;
        }
    } else if (c.kind == hw::TpCollective::reduce_scatter && !backward && c.position > 0) {
      method = OverlapMethod::pipeline;
      take(c.position - 1);
    }
    double gemm_s = 0;
    for (const std::size_t k : paired) {
      used[k] = true;
      gemm_s += hw::kernel_time_s(gpu, ops[k]);
    }
    const double extra = overlap_extra_seconds(seconds, gemm_s, method, tensor, gpu.sms);
    out.exposed_s += extra;
    out.hidden_s += std::max(0.0, seconds - extra);
  }
  return out;
}

} // namespace overlapsim::parallel
