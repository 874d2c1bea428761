#include "scenario/torch_profiler_import.h"
#include "scenario/user_json.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <istream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <streambuf>
#include <unordered_map>
#include <vector>
#include <zlib.h>

namespace overlapsim::scenario {

namespace {

using nlohmann::json;

// A trace's bytes as they inflate (gzread reads gzip and plain files alike): the parse takes them
// as they come, so a gzip bomb is refused at its first byte that is not JSON, or at
// kMaxInflatedTraceBytes, never held whole (issue 63.7: 3 GB of zeros was std::bad_alloc).
class GzipTraceBuf : public std::streambuf {
public:
  explicit GzipTraceBuf(const std::string& path) : path_(path) {
    check_user_file(path, kProfilerTrace);
    file_ = gzopen(path.c_str(), "rb");
    if (file_ == nullptr)
      throw std::runtime_error(fmt::format("{}: cannot open", path));
  }
  ~GzipTraceBuf() override { gzclose(file_); }
  GzipTraceBuf(const GzipTraceBuf&) = delete;
  GzipTraceBuf& operator=(const GzipTraceBuf&) = delete;

protected:
  int_type underflow() override {
    const int n = gzread(file_, buf_.data(), static_cast<unsigned>(buf_.size()));
    if (n < 0) {
      int err = Z_OK;
      throw std::runtime_error(
          fmt::format("{}: damaged gzip data ({})", path_, gzerror(file_, &err)));
    }
    inflated_ += static_cast<std::uintmax_t>(n);
    if (inflated_ > kMaxInflatedTraceBytes) // a gzip bomb, or not a trace
      throw std::runtime_error(fmt::format("{}: inflates to more than {} GiB; expected a {}", path_,
                                           kMaxInflatedTraceBytes >> 30, kProfilerTrace.what));
    check_runs(n);
    if (n == 0)
      return traits_type::eof();
    setg(buf_.data(), buf_.data(), buf_.data() + n);
    return traits_type::to_int_type(buf_[0]);
  }

private:
  // nlohmann's lexer keeps a token's bytes, and the whitespace before it, until the token ends:
  // gigabytes of spaces, or of one string, would be held before the parse budget sees them. No
  // trace has a run of 16 MiB between two structural characters.
  static constexpr std::size_t kMaxRun = std::size_t{16} << 20;
  void check_runs(int n) {
    for (int k = 0; k < n; ++k) {
      const char c = buf_[static_cast<std::size_t>(k)];
      if (in_string_
              ? !escaped_ && c == '"'
              : c == '"' || c == '{' || c == '}' || c == '[' || c == ']' || c == ',' || c == ':') {
        in_string_ = in_string_ != (c == '"');
        run_ = 0;
        continue;
      }
      escaped_ = in_string_ && !escaped_ && c == '\\';
      if (++run_ > kMaxRun)
        throw std::runtime_error(
            fmt::format("{}: more than {} MiB of one string, number or whitespace at byte {}; "
                        "expected a {}",
                        path_, kMaxRun >> 20, inflated_ - static_cast<std::uintmax_t>(n - k),
                        kProfilerTrace.what));
    }
  }

  const std::string& path_;
  bool in_string_ = false, escaped_ = false;
  std::size_t run_ = 0;
  gzFile file_ = nullptr;
  std::array<char, 1 << 16> buf_{};
  std::uintmax_t inflated_ = 0;
};

enum class RangeKind { op, module, annotation };

struct Range {
  double start = 0, end = 0;
  RangeKind kind = RangeKind::op;
  std::string name;
  long long seq = -1; // autograd sequence number (cpu ops)
  int parent = -1;
};

// One CPU thread's ranges, nested: the innermost range around a time and its ancestors.
class ThreadRanges {
public:
  void add(Range r) { ranges_.push_back(std::move(r)); }
  void finish() {
    std::sort(ranges_.begin(), ranges_.end(), [](const Range& a, const Range& b) {
      return a.start != b.start ? a.start < b.start : a.end > b.end;
    });
    std::vector<int> open;
    for (int i = 0; i < static_cast<int>(ranges_.size()); ++i) {
      auto& r = ranges_[static_cast<std::size_t>(i)];
      while (!open.empty() && ranges_[static_cast<std::size_t>(open.back())].end < r.start)
        open.pop_back();
      r.parent = open.empty() ? -1 : open.back();
      open.push_back(i);
    }
    starts_.reserve(ranges_.size());
    for (const auto& r : ranges_)
      starts_.push_back(r.start);
  }
  // Innermost range containing t, or -1. With properly nested ranges, every range around t is an
  // ancestor of the last range starting at or before t.
  int innermost(double t) const {
    int i =
        static_cast<int>(std::upper_bound(starts_.begin(), starts_.end(), t) - starts_.begin()) - 1;
    while (i >= 0 && ranges_[static_cast<std::size_t>(i)].end < t)
      i = ranges_[static_cast<std::size_t>(i)].parent;
    return i;
  }
  const Range& at(int i) const { return ranges_[static_cast<std::size_t>(i)]; }
  int size() const { return static_cast<int>(ranges_.size()); }

private:
  std::vector<Range> ranges_;
  std::vector<double> starts_;
};

struct Launch {
  long long tid = 0;
  double ts = 0;
};

constexpr std::string_view kModulePrefix = "nn.Module: ";

// "GPTNeoBlock_3" -> "GPTNeoBlock".
std::string class_of(const std::string& instance) {
  const auto pos = instance.rfind('_');
  return pos == std::string::npos ? instance : instance.substr(0, pos);
}

long long tid_of(const json& e) {
  const auto& t = e.at("tid");
  return t.is_number() ? t.get<long long>()
                       : static_cast<long long>(std::hash<std::string>{}(t.dump()));
}

} // namespace

Calibration import_torch_profiler(const std::string& path, const Scenario& scenario) {
  json trace;
  {
    GzipTraceBuf inflated(path);
    std::istream in(&inflated);
    std::uintmax_t budget = kProfilerTrace.max_parsed_bytes;
    trace = parse_user_json<json>(in, path, kProfilerTrace, budget);
  }
  if (!trace.is_object() || !trace.contains("traceEvents") || !trace["traceEvents"].is_array())
    throw std::runtime_error(
        fmt::format("{}: not a PyTorch profiler (Kineto) trace: no \"traceEvents\" list", path));

  const auto& layers = scenario.model.spec.layers;
  const int layer_count = static_cast<int>(layers.size());
  if (layer_count < 3)
    throw std::runtime_error(fmt::format(
        "{}: the scenario's model has {} layers; a profiler trace maps onto a first layer, "
        "repeated blocks and a last layer (e.g. embedding, block0.., head)",
        path, layer_count));
  const int blocks = layer_count - 2;

  std::map<long long, ThreadRanges> threads;
  std::vector<std::pair<double, double>> steps;   // ProfilerStep#N ranges
  std::unordered_map<long long, Launch> launches; // by correlation id
  struct GpuOp {
    long long correlation;
    double dur;
  };
  std::vector<GpuOp> gpu_ops;
  struct MemoryEvent {
    long long tid;
    double ts;
    double bytes;
  };
  std::vector<MemoryEvent> memory;
  std::string device;
  if (trace.contains("deviceProperties") && trace["deviceProperties"].is_array() &&
      !trace["deviceProperties"].empty())
    device = trace["deviceProperties"][0].value("name", "");

  try {
    std::size_t index = 0;
    for (const auto& e : trace["traceEvents"]) {
      const std::size_t i = index++;
      if (!e.is_object() || !e.contains("ph"))
        continue;
      const std::string ph = e.value("ph", "");
      const std::string cat = e.value("cat", "");
      const std::string name = e.value("name", "");
      if (ph == "i" && name == "[memory]") {
        const auto& a = e.value("args", json::object());
        if (a.value("Device Type", 0) == 1) // CUDA
          memory.push_back({tid_of(e), e.at("ts").get<double>(), a.value("Bytes", 0.0)});
        continue;
      }
      if (ph != "X")
        continue;
      const double ts = e.at("ts").get<double>();
      const double dur = e.value("dur", 0.0);
      // A negative duration was summed into the layers' times (issue 63.9); a trace covers at most
      // hours, 1e13 microseconds is days.
      if (!std::isfinite(ts) || !std::isfinite(dur) || dur < 0 || dur > 1e13)
        throw std::runtime_error(
            fmt::format("{}: key 'traceEvents.{}.dur' ({}): expected a duration from 0 to 1e13 "
                        "microseconds, got {}",
                        path, i, name.substr(0, 200), e.value("dur", json()).dump()));
      const auto& args = e.contains("args") ? e["args"] : json::object();
      if (cat == "kernel" || cat == "gpu_memset" || cat == "gpu_memcpy") {
        if (args.contains("correlation"))
          gpu_ops.push_back({args["correlation"].get<long long>(), dur});
      } else if (cat == "cuda_runtime" || cat == "cuda_driver") {
        if (args.contains("correlation"))
          launches[args["correlation"].get<long long>()] = Launch{tid_of(e), ts};
      } else if (cat == "user_annotation" && name.starts_with("ProfilerStep#")) {
        steps.emplace_back(ts, ts + dur);
      } else if (cat == "cpu_op" || cat == "python_function" || cat == "user_annotation") {
        Range r{ts, ts + dur, RangeKind::op, name, -1, -1};
        if (cat == "python_function") {
          if (!name.starts_with(kModulePrefix))
            continue;
          r.kind = RangeKind::module;
          r.name = name.substr(kModulePrefix.size());
        } else if (cat == "user_annotation") {
          r.kind = RangeKind::annotation;
        } else if (args.contains("Sequence number")) {
          r.seq = args["Sequence number"].get<long long>();
        }
        threads[tid_of(e)].add(std::move(r));
      }
    }
  } catch (const json::exception& e) {
    throw std::runtime_error(fmt::format("{}: malformed trace event: {}", path, e.what()));
  }
  if (steps.empty())
    throw std::runtime_error(fmt::format(
        "{}: no ProfilerStep#N ranges: record with torch.profiler.schedule(...) and call "
        "prof.step() after every training step",
        path));
  for (auto& [tid, t] : threads)
    t.finish();
  std::sort(steps.begin(), steps.end());
  auto step_of = [&](double ts) {
    for (std::size_t i = 0; i < steps.size(); ++i)
      if (ts >= steps[i].first && ts <= steps[i].second)
        return static_cast<int>(i);
    return -1;
  };

  // Module instances inside the steps: the block class has exactly `blocks` instances, none of
  // them inside an instance of another class that has as many (attention inside a block).
  std::map<std::string, double> first_seen;              // instance -> first start
  std::map<std::string, std::set<std::string>> enclosed; // instance -> classes around it
  for (const auto& [tid, t] : threads)
    for (int i = 0; i < t.size(); ++i) {
      const Range& r = t.at(i);
      if (r.kind != RangeKind::module || step_of(r.start) < 0)
        continue;
      auto [it, fresh] = first_seen.emplace(r.name, r.start);
      if (!fresh)
        it->second = std::min(it->second, r.start);
      for (int p = r.parent; p >= 0; p = t.at(p).parent)
        if (t.at(p).kind == RangeKind::module)
          enclosed[r.name].insert(class_of(t.at(p).name));
    }
  std::map<std::string, std::vector<std::string>> instances; // class -> instances
  for (const auto& [instance, start] : first_seen)
    instances[class_of(instance)].push_back(instance);
  std::set<std::string> candidates;
  for (const auto& [cls, list] : instances)
    if (static_cast<int>(list.size()) == blocks)
      candidates.insert(cls);
  std::set<std::string> outermost;
  for (const auto& cls : candidates) {
    bool inside_other = false;
    for (const auto& instance : instances[cls])
      for (const auto& around : enclosed[instance])
        inside_other = inside_other || (around != cls && candidates.contains(around));
    if (!inside_other)
      outermost.insert(cls);
  }
  if (outermost.size() != 1) {
    std::string seen;
    for (const auto& [cls, list] : instances)
      seen += fmt::format("{}{} x{}", seen.empty() ? "" : ", ", cls, list.size());
    throw std::runtime_error(fmt::format(
        "{}: cannot tell which modules are the scenario's {} blocks: {} (modules in the trace: "
        "{}); record with with_modules=True, and check the scenario's model",
        path, blocks,
        outermost.empty() ? std::string("no module class has that many instances")
                          : fmt::format("several classes have {} outermost instances: {}", blocks,
                                        fmt::join(outermost, ", ")),
        seen.empty() ? "none" : seen));
  }
  const std::string block_class = *outermost.begin();
  std::vector<std::pair<double, std::string>> order;
  for (const auto& instance : instances[block_class])
    order.emplace_back(first_seen[instance], instance);
  std::sort(order.begin(), order.end());
  std::map<std::string, int> block_index;
  for (std::size_t k = 0; k < order.size(); ++k)
    block_index[order[k].second] = static_cast<int>(k);
  // Per step, when its first block starts: modules (and loose ops) before it are the first layer.
  std::vector<double> first_block(steps.size(), 1e300);
  for (const auto& [tid, t] : threads)
    for (int i = 0; i < t.size(); ++i) {
      const Range& r = t.at(i);
      const int s =
          r.kind == RangeKind::module && block_index.contains(r.name) ? step_of(r.start) : -1;
      if (s >= 0)
        first_block[static_cast<std::size_t>(s)] =
            std::min(first_block[static_cast<std::size_t>(s)], r.start);
    }

  // The forward op of each autograd sequence number: its first occurrence.
  std::unordered_map<long long, Launch> forward_op;
  for (const auto& [tid, t] : threads)
    for (int i = 0; i < t.size(); ++i) {
      const Range& r = t.at(i);
      if (r.seq < 0)
        continue;
      auto [it, fresh] = forward_op.emplace(r.seq, Launch{tid, r.start});
      if (!fresh && r.start < it->second.ts)
        it->second = Launch{tid, r.start};
    }

  // The layer of a forward point (thread, time): its block, else before or after the blocks.
  auto forward_layer = [&](long long tid, double ts) {
    const auto& t = threads.at(tid);
    for (int i = t.innermost(ts); i >= 0; i = t.at(i).parent)
      if (const auto it = block_index.find(t.at(i).name);
          t.at(i).kind == RangeKind::module && it != block_index.end())
        return 1 + it->second;
    const int s = step_of(ts);
    return s >= 0 && ts < first_block[static_cast<std::size_t>(s)] ? 0 : layer_count - 1;
  };
  enum class Phase { forward, backward, optimizer, unknown };
  struct Attribution {
    Phase phase = Phase::unknown;
    int layer = -1;
  };
  auto attribute = [&](long long tid, double ts) {
    Attribution a;
    if (!threads.contains(tid))
      return a;
    const auto& t = threads.at(tid);
    long long seq = -1;
    bool in_backward = false;
    for (int i = t.innermost(ts); i >= 0; i = t.at(i).parent) {
      const Range& r = t.at(i);
      if (r.kind == RangeKind::annotation &&
          (r.name.starts_with("Optimizer.step") || r.name.starts_with("Optimizer.zero_grad")))
        return Attribution{Phase::optimizer, -1};
      if (r.kind == RangeKind::module)
        return Attribution{Phase::forward, forward_layer(tid, ts)};
      if (seq < 0 && r.seq >= 0)
        seq = r.seq;
      in_backward = in_backward || r.name.starts_with("autograd::engine::evaluate_function");
      if (r.name.starts_with("autograd::engine::evaluate_function") && r.seq >= 0)
        seq = r.seq; // the backward node's own number, as its forward op recorded it
      if (r.name.starts_with("autograd::engine::evaluate_function") && seq >= 0) {
        const auto it = forward_op.find(seq);
        if (it != forward_op.end() && !(it->second.tid == tid && it->second.ts == r.start))
          return Attribution{Phase::backward, forward_layer(it->second.tid, it->second.ts)};
      }
    }
    // Outside the modules and the autograd engine: a forward op (the loss, say) before or after
    // the blocks. Inside the engine without a forward op (gradient accumulation): unknown.
    return in_backward ? a : Attribution{Phase::forward, forward_layer(tid, ts)};
  };

  // Kernel time per (phase, layer), following launch order per thread for loose kernels.
  std::vector<double> fwd(static_cast<std::size_t>(layer_count)),
      bwd(static_cast<std::size_t>(layer_count)), activation(static_cast<std::size_t>(layer_count));
  double optimizer = 0;
  std::set<int> steps_seen;
  struct Timed {
    Launch launch;
    double dur;
  };
  std::vector<Timed> timed;
  for (const auto& op : gpu_ops)
    if (const auto it = launches.find(op.correlation); it != launches.end())
      timed.push_back({it->second, op.dur});
  std::sort(timed.begin(), timed.end(), [](const Timed& a, const Timed& b) {
    return a.launch.tid != b.launch.tid ? a.launch.tid < b.launch.tid : a.launch.ts < b.launch.ts;
  });
  Attribution last;
  long long last_tid = -1;
  for (const auto& k : timed) {
    const int s = step_of(k.launch.ts);
    if (s < 0)
      continue;
    steps_seen.insert(s);
    if (k.launch.tid != last_tid)
      last = Attribution{};
    last_tid = k.launch.tid;
    Attribution a = attribute(k.launch.tid, k.launch.ts);
    if (a.phase == Phase::unknown)
      a = last.phase != Phase::unknown
              ? last
              : Attribution{Phase::forward, forward_layer(k.launch.tid, k.launch.ts)};
    last = a;
    const double seconds = k.dur * 1e-6; // trace times are microseconds
    if (a.phase == Phase::optimizer)
      optimizer += seconds;
    else
      (a.phase == Phase::forward ? fwd : bwd)[static_cast<std::size_t>(a.layer)] += seconds;
  }
  if (steps_seen.empty())
    throw std::runtime_error(
        fmt::format("{}: no GPU kernel launched inside a ProfilerStep: record with "
                    "activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]",
                    path));
  // Activations: what each layer's forward leaves allocated on the device.
  for (const auto& m : memory) {
    if (step_of(m.ts) < 0 || !threads.contains(m.tid))
      continue;
    const auto a = attribute(m.tid, m.ts);
    if (a.phase == Phase::forward)
      activation[static_cast<std::size_t>(a.layer)] += m.bytes;
  }

  const double n = static_cast<double>(steps_seen.size());
  const double batch = scenario.training.micro_batch;
  Calibration cal;
  cal.source = "torch profiler: " + path;
  cal.device = device;
  cal.model = scenario.model.spec.name;
  cal.micro_batch = scenario.training.micro_batch;
  for (int l = 0; l < layer_count; ++l) {
    const auto i = static_cast<std::size_t>(l);
    LayerTiming t{layers[i].name, fwd[i] / n / batch, bwd[i] / n / batch};
    t.activation_bytes_per_sample = std::max(0.0, activation[i] / n / batch);
    cal.layers.push_back(t);
  }
  const double params = scenario.model.spec.total_params();
  cal.optimizer_time_per_param_s = params > 0 ? optimizer / n / params : 0;
  return cal;
}

} // namespace overlapsim::scenario
