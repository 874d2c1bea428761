#include "validate/optimizer_store.h"

#include <fmt/format.h>
#include <stdexcept>

namespace overlapsim::real {

namespace {
torch::Tensor grown(const torch::Tensor& t, std::int64_t size, const torch::Tensor& like) {
  auto bigger = torch::zeros({size}, like.options());
  if (t.defined())
    bigger.narrow(0, 0, t.numel()).copy_(t);
  return bigger;
}
} // namespace

// The buffer's state covers at least [0, state.offset + state.count), with segment boundaries at
// both ends of the slice. Tensors grow to the furthest element stepped so far, so that a state
// buffer declared larger than any slice stepped (CDP's two stage bundles) costs what is used.
OptimizerStore::BufferState& OptimizerStore::prepare(Slice state, const torch::Tensor& like) {
  if (state.offset < 0 || state.count < 0)
    throw std::logic_error(
        fmt::format("optimizer state slice [{}, +{}) is invalid", state.offset, state.count));
  auto& b = buffers_[state.buffer];
  const std::int64_t end = state.offset + state.count, old = b.size();
  if (end > old) {
    const torch::Tensor like_fp = like.detach();
    b.master = grown(b.master, end, like_fp);
    if (config_.kind == scenario::Optimizer::adamw ||
        config_.kind == scenario::Optimizer::sgd_momentum)
      b.m = grown(b.m, end, like_fp);
    if (config_.kind == scenario::Optimizer::adamw)
      b.v = grown(b.v, end, like_fp);
    b.segments.emplace(old, Segment{});
  }
  split(b, state.offset);
  split(b, end);
  return b;
}

void OptimizerStore::split(BufferState& b, std::int64_t at) {
  if (at >= b.size() || b.segments.contains(at))
    return;
  auto it = std::prev(b.segments.upper_bound(at));
  b.segments.emplace(at, it->second);
}

void OptimizerStore::merge(BufferState& b) {
  for (auto it = b.segments.begin(); it != b.segments.end();) {
    auto next = std::next(it);
    if (next != b.segments.end() && next->second == it->second)
      b.segments.erase(next);
    else
      it = next;
  }
}

void OptimizerStore::step(Slice state, const torch::Tensor& params, const torch::Tensor& grad,
                          torch::Tensor out, bool commit) {
  if (params.numel() != state.count || grad.numel() != state.count || out.numel() != state.count)
    throw std::logic_error(fmt::format("optimizer step of {} parameters, {} gradients and {} "
                                       "outputs on a state slice of {}",
                                       params.numel(), grad.numel(), out.numel(), state.count));
  torch::NoGradGuard no_grad;
  std::lock_guard lock(mutex_);
  auto& b = prepare(state, params);
  const std::int64_t end = state.offset + state.count;
  auto view = [&](const torch::Tensor& t, std::int64_t at, std::int64_t n) {
    return t.defined() ? t.narrow(0, at, n) : torch::Tensor();
  };
  // Runs of elements with the same step count take one step each (normally the whole slice).
  for (auto it = b.segments.find(state.offset); it != b.segments.end() && it->first < end;) {
    auto last = it;
    for (auto next = std::next(it);
         next != b.segments.end() && next->first < end && next->second.steps == it->second.steps;
         ++next)
      last = next;
    const std::int64_t begin = it->first;
    const auto after = std::next(last);
    const std::int64_t stop = after == b.segments.end() ? b.size() : after->first;
    const std::int64_t n = stop - begin, local = begin - state.offset;
    for (auto s = it; s != after; ++s)
      if (!s->second.initialised) {
        const auto s_end = std::next(s) == b.segments.end() ? b.size() : std::next(s)->first;
        b.master.narrow(0, s->first, s_end - s->first)
            .copy_(params.narrow(0, s->first - state.offset, s_end - s->first));
        s->second.initialised = true;
      }
    OptimizerSlots slots{view(b.master, begin, n), view(b.m, begin, n), view(b.v, begin, n),
                         it->second.steps};
    apply_optimizer(config_, slots, grad.narrow(0, local, n), out.narrow(0, local, n), commit);
    if (commit)
      for (auto s = it; s != after; ++s)
        ++s->second.steps;
    it = after;
  }
  merge(b);
}

void OptimizerStore::reload(Slice state, const torch::Tensor& params) {
  if (params.numel() != state.count)
    throw std::logic_error(fmt::format("reloading a master slice of {} from {} parameters",
                                       state.count, params.numel()));
  torch::NoGradGuard no_grad;
  std::lock_guard lock(mutex_);
  auto& b = prepare(state, params);
  b.master.narrow(0, state.offset, state.count).copy_(params);
  const std::int64_t end = state.offset + state.count;
  for (auto it = b.segments.find(state.offset); it != b.segments.end() && it->first < end; ++it)
    it->second.initialised = true;
  merge(b);
}

torch::Tensor OptimizerStore::master(Slice state) {
  std::lock_guard lock(mutex_);
  const auto it = buffers_.find(state.buffer);
  auto out = torch::zeros({state.count});
  if (it == buffers_.end())
    return out;
  const std::int64_t n = std::clamp<std::int64_t>(it->second.size() - state.offset, 0, state.count);
  if (n > 0)
    out.narrow(0, 0, n).copy_(it->second.master.narrow(0, state.offset, n).cpu());
  return out;
}

} // namespace overlapsim::real
