#include "sim/sim_runtime.h"

#include "files/interruption.h"
#include "sim/child_process.h"
#include "sim/collective/network.h"
#include "sim/platform.h"
#include "sim/sim_worker.h"

#include <cstring>
#include <fmt/format.h>
#include <new>
#include <optional>
#include <simgrid/s4u.hpp>
#include <span>
#include <stdexcept>
#include <sys/mman.h>
#include <xbt/log.h>

namespace overlapsim::sim {

namespace sg4 = simgrid::s4u;

namespace {

// The child's reply: plain values and length-prefixed strings, in the order written (one binary,
// so one layout).
template <class T> void put(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}
void put_string(std::string& out, const std::string& s) {
  put(out, static_cast<std::uint32_t>(s.size()));
  out += s;
}
template <class T> T take(std::string_view& in) {
  T value{};
  std::memcpy(&value, in.data(), sizeof value);
  in.remove_prefix(sizeof value);
  return value;
}
std::string take_string(std::string_view& in) {
  const auto len = take<std::uint32_t>(in);
  std::string s(in.substr(0, len));
  in.remove_prefix(len);
  return s;
}

// A folded run's trace as classes (trace/trace.h): the running GPUs become workers 0, 1, ... in
// rank order; each stands for itself, and the representative node's GPU p for GPU p of every node
// that did not run.
void fold_into_classes(Trace& trace, const RankClasses& classes) {
  std::vector<std::int32_t> worker_of(static_cast<std::size_t>(classes.world), -1);
  for (int r = 0; r < classes.world; ++r)
    if (classes.simulated(r)) {
      worker_of[static_cast<std::size_t>(r)] =
          static_cast<std::int32_t>(trace.representative.size());
      trace.representative.push_back(r);
    }
  const auto worker = [&](std::int32_t rank) { return worker_of[static_cast<std::size_t>(rank)]; };
  for (auto& e : trace.events)
    e.worker = worker(e.worker);
  for (auto& m : trace.memory)
    m.worker = worker(m.worker);
  for (auto& s : trace.steps)
    s.worker = worker(s.worker);
  for (auto& a : trace.accumulations)
    a.worker = worker(a.worker);
  trace.workers = static_cast<int>(trace.representative.size());
  trace.class_of.resize(static_cast<std::size_t>(classes.world));
  for (int r = 0; r < classes.world; ++r)
    trace.class_of[static_cast<std::size_t>(r)] = worker(classes.representative(r));
}

// Trace events the child sent ahead of its reply, each block in memory of its own that is returned
// to the system as soon as it is copied into the trace: the parent holds the events once (plus a
// block), where an allocator would keep freed blocks resident for a while.
class SpilledEvents {
public:
  SpilledEvents() = default;
  SpilledEvents(const SpilledEvents&) = delete;
  SpilledEvents& operator=(const SpilledEvents&) = delete;
  ~SpilledEvents() {
    for (auto& b : blocks_)
      release(b);
  }

  void add(std::string_view bytes) {
    if (bytes.size() % sizeof(TraceEvent) != 0)
      throw std::runtime_error("simulation: a damaged block of trace events");
    void* p =
        ::mmap(nullptr, bytes.size(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
      throw std::bad_alloc();
    std::memcpy(p, bytes.data(), bytes.size());
    blocks_.push_back({p, bytes.size()});
    events_ += bytes.size() / sizeof(TraceEvent);
  }

  // The blocks, then `tail`, as the trace's events; each block freed once copied.
  void prepend_to(std::vector<TraceEvent>& tail) {
    if (blocks_.empty())
      return;
    std::vector<TraceEvent> all;
    all.reserve(events_ + tail.size());
    for (auto& b : blocks_) {
      const auto* first = static_cast<const TraceEvent*>(b.data);
      all.insert(all.end(), first, first + b.size / sizeof(TraceEvent));
      release(b);
    }
    blocks_.clear();
    all.insert(all.end(), tail.begin(), tail.end());
    tail = std::move(all);
  }

private:
  struct Block {
    void* data = nullptr;
    std::size_t size = 0;
  };
  static void release(Block& b) {
    if (b.data != nullptr)
      ::munmap(b.data, b.size);
    b.data = nullptr;
  }
  std::vector<Block> blocks_;
  std::size_t events_ = 0;
};

} // namespace

// Algorithms that cannot run on the data-parallel dimension of a pipeline, and why. (ACCO,
// ACCO-WP and DPU can: a round is one pass of the schedule, algorithms/acco.cpp.)
static void refuse_on_a_pipeline(const scenario::Scenario& scenario, const Algorithm& algorithm) {
  if (scenario.parallelism.pipeline < 2)
    return;
  const std::string name = algorithm.name();
  if (name.starts_with("cdp"))
    throw std::runtime_error(fmt::format(
        "{} cannot run on a pipeline (parallelism.pipeline: {}): its cyclic schedule is itself a "
        "pipeline of stages over the GPUs",
        name, scenario.parallelism.pipeline));
}

namespace {

// Takes blocks of trace events as they are recorded; the result's trace then holds only the events
// after the last block, in the same order (SimContext::spill).
using EventSpill = std::function<void(std::span<const TraceEvent>)>;

// simulate_in_process(), an unfolded run handing its events to `spill` in blocks instead of
// keeping them.
SimulationResult simulate_spilling(const scenario::Scenario& scenario, const Algorithm& algorithm,
                                   const ProgressFn& progress, const EventSpill& spill) {
  static bool used = false;
  if (used)
    throw std::logic_error("simulate_in_process: SimGrid runs one simulation per process");
  used = true;

  xbt_log_control_set("root.thres:critical");
  int argc = 1;
  char name[] = "overlapsim";
  char* argv[] = {name, nullptr};
  sg4::Engine engine(&argc, argv);
  configure_engine(engine, scenario.cluster);
  const RankClasses classes = choose_rank_classes(scenario, algorithm);
  const Platform platform = build_platform(scenario.cluster, classes);

  const Topology topology(scenario.cluster.nodes, scenario.cluster.gpus_per_node);
  Network network(platform, scenario.cluster, topology);
  // Tensor or pipeline parallelism or Megatron's recomputation (issue 65): each worker runs its
  // stage's model at its TP shard and its algorithm sees its data-parallel group as the world
  // (sim/sim_worker.h).
  std::optional<ParallelPlacement> placement;
  if (scenario.parallelism.tensor > 1 || scenario.parallelism.pipeline > 1 ||
      scenario.parallelism.recompute != scenario::Recompute::none) {
    refuse_on_a_pipeline(scenario, algorithm);
    try {
      placement.emplace(scenario, topology);
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(e.what());
    }
  }
  SimulationResult result;
  result.warnings = platform.warnings;
  result.simulation = classes.describe();
  if (classes.statistical())
    result.approximation = classes.approximation;
  Trace& trace = result.trace;
  trace.workers = topology.world_size();
  trace.gpus_per_node = topology.gpus_per_node();
  if (placement)
    for (int g = 0; g < topology.world_size(); ++g) {
      const auto c = placement->layout.coordinates(g);
      std::string role;
      if (scenario.parallelism.pipeline > 1)
        role = fmt::format("stage {}", c.pipeline);
      if (scenario.parallelism.tensor > 1)
        role += fmt::format("{}tp {}", role.empty() ? "" : ", ", c.tensor);
      trace.gpu_roles.push_back(fmt::format("{}, dp {}", role, c.data));
    }
  std::vector<int> stand_in;
  for (int r = 0; r < topology.world_size(); ++r)
    stand_in.push_back(classes.representative(r));
  MemoryContention memory(std::move(stand_in), scenario.model.spec.memory_shared_by);
  SimContext context{scenario,
                     topology,
                     platform,
                     network,
                     trace,
                     progress,
                     result.collective_calls,
                     result.replicator_calls,
                     memory,
                     placement ? &*placement : nullptr,
                     &classes,
                     node_type_layer_times(scenario)};
  // A folded run renumbers its workers at the end (fold_into_classes), and has few events.
  if (!classes.folded)
    context.spill = spill;
  std::optional<StatisticalFold> statistical;
  if (classes.statistical())
    context.statistical = &statistical.emplace(scenario, classes, platform.nominal_speed);

  std::vector<int> ranks; // the simulated ones: all, or the representative node's
  for (int r = 0; r < topology.world_size(); ++r)
    if (classes.simulated(r))
      ranks.push_back(r);
  std::vector<std::unique_ptr<SimWorker>> workers;
  std::vector<std::unique_ptr<WorkerProgram>> programs;
  for (const int r : ranks) {
    workers.push_back(std::make_unique<SimWorker>(context, r));
    programs.push_back(algorithm.program(*workers.back()));
  }
  // Actor names carry the stream: 'c' compute, 'm' communication (sim_worker.cpp reads it).
  int finished = 0;
  // An exception in an actor (out of memory, an error inside SimGrid) would abort the process
  // with a backtrace; the first one stops the simulation and becomes its error message instead.
  std::string failure;
  const auto guarded = [&failure, &finished](int rank, const char* stream, auto body) {
    return [&failure, &finished, rank, stream, body] {
      try {
        body();
        ++finished;
      } catch (const std::exception& e) {
        if (failure.empty()) {
          // Out of memory reads as such (issue 63.6: rows said "... std::bad_alloc").
          const bool no_memory = dynamic_cast<const std::bad_alloc*>(&e) != nullptr;
          failure = fmt::format("GPU {} ({} stream) at t = {} s: {}", rank, stream,
                                sg4::Engine::get_clock(),
                                no_memory ? "out of memory (std::bad_alloc)" : e.what());
          sg4::Actor::kill_all();
        }
      }
    };
  };
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const int r = ranks[i];
    auto* host = platform.gpus[static_cast<std::size_t>(r)];
    auto* program = programs[i].get();
    sg4::Actor::create(fmt::format("c{}", r), host,
                       guarded(r, "compute", [program] { program->run_compute(); }));
    sg4::Actor::create(fmt::format("m{}", r), host,
                       guarded(r, "communication", [program] { program->run_comm(); }));
  }
  engine.run();
  if (!failure.empty())
    throw std::runtime_error(failure);
  // SimGrid returns from run() when no actor can progress: a stream waits for something that never
  // comes (a signal nobody sends, a collective some ranks never join).
  if (const int waiting = 2 * static_cast<int>(ranks.size()) - finished; waiting > 0)
    throw std::runtime_error(fmt::format("deadlock at t = {} s: {} streams never finished",
                                         sg4::Engine::get_clock(), waiting));
  trace.end_time = sg4::Engine::get_clock();
  for (const auto& w : workers)
    trace.peak_memory.push_back(w->peak_memory());
  if (classes.folded)
    fold_into_classes(trace, classes);
  return result;
}

} // namespace

SimulationResult simulate_in_process(const scenario::Scenario& scenario, const Algorithm& algorithm,
                                     const ProgressFn& progress) {
  return simulate_spilling(scenario, algorithm, progress, {});
}

SimulationResult simulate(const scenario::Scenario& scenario, const scenario::AlgorithmSpec& spec,
                          const ProgressFn& progress) {
  const auto algorithm = make_algorithm(spec); // bad options fail here, in the caller
  return simulate(scenario, *algorithm, progress);
}

SimulationResult simulate(const scenario::Scenario& scenario, const Algorithm& algorithm,
                          const ProgressFn& progress) {
  // The trace's events stream to this process in blocks while the child simulates (issue 64.1: a
  // 1,024-GPU run's 5.7 million events, 550 MB, were held by both processes, several times).
  ChildProcess child([&](const ChildProcess::SendPart& send) {
    const auto spill = [&send](std::span<const TraceEvent> events) {
      send({reinterpret_cast<const char*>(events.data()), events.size_bytes()});
    };
    auto result = simulate_spilling(scenario, algorithm, progress, spill);
    std::string body;
    put(body, static_cast<std::uint32_t>(result.warnings.size()));
    for (const auto& w : result.warnings)
      put_string(body, w);
    put_string(body, result.simulation);
    put_string(body, result.approximation);
    put(body, static_cast<std::uint32_t>(result.collective_calls.size()));
    for (const auto& [size, calls] : result.collective_calls) {
      put_string(body, size.op);
      put(body, static_cast<std::int32_t>(size.ranks));
      put(body, size.bytes);
      put(body, calls);
    }
    put(body, static_cast<std::uint32_t>(result.replicator_calls.size()));
    for (const auto& [size, calls] : result.replicator_calls) {
      const auto& c = size.use.config;
      put(body, static_cast<std::uint8_t>(c.kind));
      put(body, static_cast<std::int32_t>(c.chunk));
      put(body, static_cast<std::int32_t>(c.top_k));
      put(body, c.compression);
      put(body, c.decay);
      put(body, static_cast<std::uint8_t>(c.sign));
      put(body, c.value_bytes);
      put(body, c.seed);
      put(body, static_cast<std::uint8_t>(size.use.phase));
      put(body, static_cast<std::uint8_t>(size.use.exchanged));
      put(body, static_cast<std::int32_t>(size.use.group_size));
      put(body, size.elements);
      put(body, calls);
    }
    // The trace's bytes, then the trace freed before they are joined to the rest: one copy of
    // the trace at a time (issue 63.6: 200,000 steps ran out of memory in this child).
    std::string trace_bytes = result.trace.serialize();
    result.trace = Trace{};
    body.reserve(body.size() + trace_bytes.size());
    body += trace_bytes;
    return body;
  });
  std::string reply;
  SpilledEvents spilled;
  try {
    reply = child.collect([&spilled](std::string_view part) { spilled.add(part); });
  } catch (const Interrupted&) {
    throw;
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(
        fmt::format("simulation of '{}' failed: {}", algorithm.name(), e.what()));
  }
  std::string_view body(reply);
  SimulationResult result;
  for (auto n = take<std::uint32_t>(body); n > 0; --n)
    result.warnings.push_back(take_string(body));
  result.simulation = take_string(body);
  result.approximation = take_string(body);
  for (auto n = take<std::uint32_t>(body); n > 0; --n) {
    CollectiveSize size;
    size.op = take_string(body);
    size.ranks = take<std::int32_t>(body);
    size.bytes = take<double>(body);
    result.collective_calls[size] = take<std::int64_t>(body);
  }
  for (auto n = take<std::uint32_t>(body); n > 0; --n) {
    ReplicatorSize size;
    auto& c = size.use.config;
    c.kind = static_cast<ReplicatorKind>(take<std::uint8_t>(body));
    c.chunk = take<std::int32_t>(body);
    c.top_k = take<std::int32_t>(body);
    c.compression = take<double>(body);
    c.decay = take<double>(body);
    c.sign = take<std::uint8_t>(body) != 0;
    c.value_bytes = take<double>(body);
    c.seed = take<std::uint64_t>(body);
    size.use.phase = static_cast<ReplicatorPhase::Kind>(take<std::uint8_t>(body));
    size.use.exchanged = take<std::uint8_t>(body) != 0;
    size.use.group_size = take<std::int32_t>(body);
    size.elements = take<std::int64_t>(body);
    result.replicator_calls[size] = take<std::int64_t>(body);
  }
  result.trace = Trace::deserialize(body);
  std::string{}.swap(reply);
  spilled.prepend_to(result.trace.events);
  return result;
}

} // namespace overlapsim::sim
