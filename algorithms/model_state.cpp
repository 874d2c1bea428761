#include "algorithms/model_state.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace overlapsim {

double optimizer_state_bytes_per_param(scenario::Optimizer optimizer, scenario::Dtype dtype) {
  const double master = dtype == scenario::Dtype::fp32 ? 0.0 : 4.0;
  switch (optimizer) {
  case scenario::Optimizer::adamw:
    return master + 8.0;
  case scenario::Optimizer::sgd_momentum:
    return master + 4.0;
  case scenario::Optimizer::sgd:
    return master;
  }
  return master;
}

double optimizer_bytes_touched_per_param(scenario::Optimizer optimizer, scenario::Dtype dtype) {
  const double p = scenario::dtype_bytes(dtype);
  const double k = optimizer_state_bytes_per_param(optimizer, dtype);
  const double param_rw =
      dtype == scenario::Dtype::fp32 ? 2 * p : p; // in place, or written from master
  return p /*grad read*/ + 2 * k /*state read+write*/ + param_rw;
}

Slice ParamLayout::layer(BufferId buffer, int l) const {
  const auto i = static_cast<std::size_t>(l);
  return Slice{buffer, offset[i], offset[i + 1] - offset[i]};
}

Slice ParamLayout::layers(BufferId buffer, LayerRange r) const {
  const auto a = static_cast<std::size_t>(r.first), b = static_cast<std::size_t>(r.last);
  return Slice{buffer, offset[a], offset[b] - offset[a]};
}

ParamLayout param_layout(const hw::ModelSpec& model) {
  ParamLayout layout;
  layout.offset.push_back(0);
  for (const auto& l : model.layers)
    layout.offset.push_back(layout.offset.back() +
                            static_cast<std::int64_t>(std::llround(l.params)));
  return layout;
}

Slice shard(BufferId buffer, std::int64_t total, int index, int parts) {
  const std::int64_t base = total / parts, extra = total % parts;
  const std::int64_t count = base + (index < extra ? 1 : 0);
  const std::int64_t offset = index * base + std::min<std::int64_t>(index, extra);
  return Slice{buffer, offset, count};
}

ModelState declare_model_state(Worker& worker, std::int64_t state_elements) {
  return declare_model_state(worker, state_elements, worker.scenario().model.dtype);
}

ModelState declare_model_state(Worker& worker, std::int64_t state_elements, scenario::Dtype dtype) {
  const auto& s = worker.scenario();
  ModelState m;
  m.layout = param_layout(s.model.spec);
  const double p = scenario::dtype_bytes(dtype);
  m.params = worker.declare({"params", MemoryCategory::params, m.layout.total(), p});
  m.grads = worker.declare({"grads", MemoryCategory::grads, m.layout.total(), p});
  m.optimizer_state =
      worker.declare({"optimizer_state", MemoryCategory::optimizer_state, state_elements,
                      optimizer_state_bytes_per_param(s.training.optimizer, dtype)});
  return m;
}

std::vector<Bucket> make_buckets(const ParamLayout& layout, BufferId grads, double element_bytes,
                                 double cap_bytes) {
  const auto cap = std::max<std::int64_t>(1, static_cast<std::int64_t>(cap_bytes / element_bytes));
  std::vector<Bucket> buckets;
  // The open bucket spans [begin, end) of the flat buffer and grows towards the input layers; like
  // PyTorch's, it closes once it holds at least `cap` elements.
  std::int64_t begin = -1, end = -1;
  int ready = -1;
  auto close = [&] {
    if (begin >= 0 && end > begin)
      buckets.push_back(Bucket{Slice{grads, begin, end - begin}, ready});
    begin = end = -1;
  };
  for (int l = static_cast<int>(layout.offset.size()) - 2; l >= 0; --l) {
    const Slice s = layout.layer(grads, l);
    if (s.count == 0)
      continue;
    if (s.count > cap) {
      close();
      const std::int64_t parts = (s.count + cap - 1) / cap;
      for (std::int64_t p = parts - 1; p >= 0; --p) { // output side first, like the rest
        const Slice part = shard(grads, s.count, static_cast<int>(p), static_cast<int>(parts));
        buckets.push_back(Bucket{Slice{grads, s.offset + part.offset, part.count}, l});
      }
      continue;
    }
    if (begin < 0)
      end = s.offset + s.count;
    begin = s.offset;
    ready = l;
    if (end - begin >= cap)
      close();
  }
  close();
  return buckets;
}

void backward_releasing_buckets(Worker& w, const std::vector<Bucket>& buckets, MicroBatch mb,
                                int layers, BufferId params, BufferId grads, int signal,
                                const std::vector<Bucket>* copy_to) {
  int top = layers; // layers [top, layers) are done
  std::size_t b = 0;
  while (b < buckets.size()) {
    const int ready = buckets[b].ready_after_layer;
    if (ready < top) {
      w.backward({ready, top}, mb, params, grads);
      top = ready;
    }
    while (b < buckets.size() && buckets[b].ready_after_layer == ready) {
      if (copy_to)
        w.copy(buckets[b].grads, (*copy_to)[b].grads);
      w.notify(signal, static_cast<std::int64_t>(b++));
    }
  }
  if (top > 0)
    w.backward({0, top}, mb, params, grads);
}

void reduce_buckets_as_released(Worker& w, const std::vector<Bucket>& buckets, CollectiveOp op,
                                const std::vector<Slice>& shards, int step, int signal,
                                bool average) {
  const Group& world = w.topology().world();
  for (std::size_t k = 0; k < buckets.size(); ++k) {
    const auto b = static_cast<std::size_t>(w.await(signal));
    CollectiveCall call;
    call.op = op;
    call.group = &world;
    call.data = buckets[b].grads;
    if (b < shards.size())
      call.out = shards[b];
    call.name = fmt::format("{} bucket {}", to_string(op), b);
    call.step = step;
    call.average = average;
    w.run(call);
  }
}

} // namespace overlapsim
