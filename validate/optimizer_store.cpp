#include "validate/optimizer_store.h"

#include <fmt/format.h>
#include <stdexcept>
#include <vector>

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
OptimizerStore::BufferState& OptimizerStore::prepare(Slice state, const torch::Tensor& like,
                                                     std::unique_lock<std::mutex>& lock) {
  if (state.offset < 0 || state.count < 0)
    throw std::logic_error(
        fmt::format("optimizer state slice [{}, +{}) is invalid", state.offset, state.count));
  auto& b = buffers_[state.buffer];
  const std::int64_t end = state.offset + state.count;
  if (end > b.size()) {
    wait_idle(b, lock); // their views are of the tensors this replaces
    const std::int64_t old = b.size();
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
  }
  split(b, state.offset);
  split(b, end);
  return b;
}

void OptimizerStore::wait_idle(BufferState& b, std::unique_lock<std::mutex>& lock) {
  idle_.wait(lock, [&b] { return b.in_flight == 0; });
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
  // Runs of elements with the same step count take one step each (normally the whole slice):
  // planned, masters never stepped nor reloaded started from `params`, and the views taken under
  // the lock; applied outside it (the buffer's tensors stay while the step is in flight); counted
  // under it again.
  struct Run {
    OptimizerSlots slots;
    std::int64_t local, n;
  };
  std::vector<Run> runs;
  const std::int64_t end = state.offset + state.count;
  std::unique_lock lock(mutex_);
  auto& b = prepare(state, params, lock);
  auto view = [&](const torch::Tensor& t, std::int64_t at, std::int64_t n) {
    return t.defined() ? t.narrow(0, at, n) : torch::Tensor();
  };
  for (auto it = b.segments.find(state.offset); it != b.segments.end() && it->first < end;) {
    auto last = it;
    for (auto next = std::next(it);
         next != b.segments.end() && next->first < end && next->second.steps == it->second.steps;
         ++next)
      last = next;
    const auto after = std::next(last);
    const std::int64_t begin = it->first;
    const std::int64_t n = (after == b.segments.end() ? b.size() : after->first) - begin;
    for (auto s = it; s != after; ++s)
      if (!s->second.initialised) {
        const auto s_end = std::next(s) == b.segments.end() ? b.size() : std::next(s)->first;
        b.master.narrow(0, s->first, s_end - s->first)
            .copy_(params.narrow(0, s->first - state.offset, s_end - s->first));
        s->second.initialised = true;
      }
    runs.push_back({OptimizerSlots{view(b.master, begin, n), view(b.m, begin, n),
                                   view(b.v, begin, n), it->second.steps},
                    begin - state.offset, n});
    it = after;
  }
  ++b.in_flight;
  lock.unlock();
  try {
    for (Run& r : runs)
      apply_optimizer(config_, r.slots, grad.narrow(0, r.local, r.n), out.narrow(0, r.local, r.n),
                      commit);
  } catch (...) {
    lock.lock();
    --b.in_flight;
    lock.unlock();
    idle_.notify_all();
    throw;
  }
  lock.lock();
  --b.in_flight;
  if (commit) {
    split(b, state.offset);
    split(b, end);
    for (auto it = b.segments.find(state.offset); it != b.segments.end() && it->first < end; ++it)
      ++it->second.steps;
  }
  merge(b);
  lock.unlock();
  idle_.notify_all();
}

void OptimizerStore::reload(Slice state, const torch::Tensor& params) {
  if (params.numel() != state.count)
    throw std::logic_error(fmt::format("reloading a master slice of {} from {} parameters",
                                       state.count, params.numel()));
  torch::NoGradGuard no_grad;
  std::unique_lock lock(mutex_);
  auto& b = prepare(state, params, lock);
  wait_idle(b, lock); // a step in flight of these elements reads the master it replaces
  b.master.narrow(0, state.offset, state.count).copy_(params);
  const std::int64_t end = state.offset + state.count;
  for (auto it = b.segments.find(state.offset); it != b.segments.end() && it->first < end; ++it)
    it->second.initialised = true;
  merge(b);
}

torch::Tensor OptimizerStore::master(Slice state) {
  std::unique_lock lock(mutex_);
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
