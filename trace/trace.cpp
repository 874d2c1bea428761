#include "trace/trace.h"

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
    if (n > in_.size())
      throw std::runtime_error("trace: truncated data");
    std::vector<T> v(n);
    take(v.data(), n * sizeof(T));
    return v;
  }
  void take(void* dst, std::size_t n) {
    if (n > in_.size())
      throw std::runtime_error("trace: truncated data");
    std::memcpy(dst, in_.data(), n);
    in_.remove_prefix(n);
  }

private:
  std::string_view in_;
};

constexpr std::uint32_t kMagic = 0x4f565354; // "OVST"

} // namespace

std::string Trace::serialize() const {
  Writer w;
  w.pod(kMagic);
  w.pod(workers);
  w.pod(gpus_per_node);
  w.pod(measured);
  w.pod(end_time);
  w.pod(static_cast<std::uint64_t>(names.size()));
  for (const auto& n : names) {
    w.pod(static_cast<std::uint64_t>(n.size()));
    w.out += n;
  }
  w.vec(events);
  w.vec(memory);
  w.vec(steps);
  w.vec(accumulations);
  w.vec(peak_memory);
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
  const auto n = r.pod<std::uint64_t>();
  for (std::uint64_t i = 0; i < n; ++i) {
    std::string s(r.pod<std::uint64_t>(), '\0');
    r.take(s.data(), s.size());
    t.names.push_back(std::move(s));
  }
  t.events = r.vec<TraceEvent>();
  t.memory = r.vec<MemorySample>();
  t.steps = r.vec<StepMark>();
  t.accumulations = r.vec<AccumulationMark>();
  t.peak_memory = r.vec<MemoryByCategory>();
  return t;
}

} // namespace overlapsim
