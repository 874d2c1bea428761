#include "trace/trace.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <type_traits>

namespace overlapsim {

std::int32_t Trace::intern(std::string_view name) {
  if (index_.size() != names.size()) { // rebuilt after deserialize or a copy
    index_.clear();
    for (std::size_t i = 0; i < names.size(); ++i)
      index_.emplace(names[i], static_cast<std::int32_t>(i));
  }
  auto [it, inserted] =
      index_.try_emplace(std::string(name), static_cast<std::int32_t>(names.size()));
  if (inserted)
    names.emplace_back(name);
  return it->second;
}

void Trace::append(const Trace& other) {
  std::vector<std::int32_t> remap(other.names.size());
  for (std::size_t i = 0; i < other.names.size(); ++i)
    remap[i] = intern(other.names[i]);
  for (TraceEvent e : other.events) {
    e.name = remap[static_cast<std::size_t>(e.name)];
    if (e.detail >= 0)
      e.detail = remap[static_cast<std::size_t>(e.detail)];
    events.push_back(e);
  }
  memory.insert(memory.end(), other.memory.begin(), other.memory.end());
  steps.insert(steps.end(), other.steps.begin(), other.steps.end());
  accumulations.insert(accumulations.end(), other.accumulations.begin(), other.accumulations.end());
  if (peak_memory.size() < other.peak_memory.size())
    peak_memory.resize(other.peak_memory.size(), MemoryByCategory{});
  for (std::size_t w = 0; w < other.peak_memory.size(); ++w)
    for (std::size_t c = 0; c < peak_memory[w].size(); ++c)
      peak_memory[w][c] = std::max(peak_memory[w][c], other.peak_memory[w][c]);
  end_time = std::max(end_time, other.end_time);
}

namespace {

class Writer {
public:
  template <typename T> void pod(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    out.append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  template <typename T> void vec(const std::vector<T>& v) {
    pod(static_cast<std::uint64_t>(v.size()));
    out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  std::string out;
};

class Reader {
public:
  explicit Reader(std::string_view in) : in_(in) {}
  template <typename T> T pod() {
    T v;
    take(&v, sizeof(T));
    return v;
  }
  template <typename T> std::vector<T> vec() {
    const auto n = pod<std::uint64_t>();
    if (n > in_.size() / sizeof(T)) // before allocating: a damaged count is not a size
      throw std::runtime_error("trace: truncated data");
    std::vector<T> v(n);
    take(v.data(), n * sizeof(T));
    return v;
  }
  void take(void* dst, std::size_t n) {
    if (n > in_.size())
      throw std::runtime_error("trace: truncated data");
    if (n == 0)
      return; // an empty vector's data() may be null, which memcpy may not be given
    std::memcpy(dst, in_.data(), n);
    in_.remove_prefix(n);
  }

private:
  std::string_view in_;
};

constexpr std::uint32_t kMagic = 0x4f565354; // "OVST"

} // namespace

std::vector<double> Trace::class_sizes() const {
  std::vector<double> sizes(static_cast<std::size_t>(std::max(workers, 0)),
                            class_of.empty() ? 1.0 : 0.0);
  for (const auto w : class_of)
    sizes[static_cast<std::size_t>(w)] += 1;
  return sizes;
}

std::string Trace::serialize() const {
  Writer w;
  w.pod(kMagic);
  w.pod(workers);
  w.pod(gpus_per_node);
  w.pod(measured);
  w.pod(end_time);
  const auto strings = [&w](const std::vector<std::string>& list) {
    w.pod(static_cast<std::uint64_t>(list.size()));
    for (const auto& n : list) {
      w.pod(static_cast<std::uint64_t>(n.size()));
      w.out += n;
    }
  };
  strings(names);
  w.vec(events);
  w.vec(memory);
  w.vec(steps);
  w.vec(accumulations);
  w.vec(peak_memory);
  w.vec(representative);
  w.vec(class_of);
  strings(gpu_roles);
  return std::move(w.out);
}

Trace Trace::deserialize(std::string_view bytes) {
  Reader r(bytes);
  if (r.pod<std::uint32_t>() != kMagic)
    throw std::runtime_error("trace: not a serialized trace");
  Trace t;
  t.workers = r.pod<int>();
  t.gpus_per_node = r.pod<int>();
  t.measured = r.pod<bool>();
  t.end_time = r.pod<double>();
  const auto strings = [&r] {
    std::vector<std::string> list;
    const auto n = r.pod<std::uint64_t>();
    for (std::uint64_t i = 0; i < n; ++i) {
      std::string s(r.pod<std::uint64_t>(), '\0');
      r.take(s.data(), s.size());
      list.push_back(std::move(s));
    }
    return list;
  };
  t.names = strings();
  t.events = r.vec<TraceEvent>();
  t.memory = r.vec<MemorySample>();
  t.steps = r.vec<StepMark>();
  t.accumulations = r.vec<AccumulationMark>();
  t.peak_memory = r.vec<MemoryByCategory>();
  t.representative = r.vec<std::int32_t>();
  t.class_of = r.vec<std::int32_t>();
  t.gpu_roles = strings();
  return t;
}

} // namespace overlapsim
