#include "validate/real_run.h"

#include "algorithms/algorithm.h"
#include "algorithms/sync_period.h"
#include "parallel/stage_view.h"
#include "validate/clock_origin.h"
#include "validate/heartbeat.h"
#include "validate/host_allocator.h"
#include "validate/profiler.h"
#include "validate/real_worker.h"
#include "validate/thread_policy.h"

#include <cstdlib>
#include <fmt/format.h>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <unistd.h>
#ifdef USE_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace overlapsim::real {

namespace {

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0')
    return std::nullopt;
  return std::string(v);
}

int env_int(const char* name, const std::string& value) {
  try {
    std::size_t used = 0;
    const int v = std::stoi(value, &used);
    if (used == value.size())
      return v;
  } catch (const std::exception&) {
  }
  throw std::runtime_error(
      fmt::format("environment variable {}='{}' is not a number", name, value));
}

std::vector<std::uint8_t> bytes_of(const std::string& s) {
  return {s.begin(), s.end()};
}
std::string string_of(const std::vector<std::uint8_t>& v) {
  return {v.begin(), v.end()};
}

// The job's rendezvous and its process groups, one per (group, stream), created on first use.
class Job {
public:
  Job(const JobEnv& e, const WorkerOptions& o) : env_(e), options_(o) {
    const auto timeout = std::chrono::milliseconds(std::llround(o.timeout_s * 1000));
    if (!e.store_file.empty()) {
      store_ = c10::make_intrusive<c10d::FileStore>(e.store_file, e.world);
    } else {
      c10d::TCPStoreOptions so;
      so.port = static_cast<std::uint16_t>(e.master_port);
      so.isServer = e.rank == 0;
      so.numWorkers = e.world;
      so.timeout = timeout;
      store_ = c10::make_intrusive<c10d::TCPStore>(e.master_addr, so);
    }
    store_->setTimeout(timeout);
    check_backend(o.backend);
    if (o.backend == "gloo") {
      // The device starts Gloo's event loop: a batch thread (validate/thread_policy.h).
      start_batch_threads([&] {
        device_ = e.gloo_iface.empty()
                      ? c10d::ProcessGroupGloo::createDeviceForHostname(
                            e.bind_addr.empty() ? e.master_addr : e.bind_addr)
                      : c10d::ProcessGroupGloo::createDeviceForInterface(e.gloo_iface);
      });
    }
  }

  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;
  ~Job() {
    for (auto& [key, slot] : groups_)
      try {
        if (slot->pg)
          shutdown(*slot->pg);
      } catch (const std::exception&) {
        // Already failing or exiting: the first error has been reported.
      }
  }

  // Created on first use by the group's members. Only the lookup holds the lock: a Gloo or NCCL
  // group's construction waits for every member to construct it too, and with the lock held the
  // other stream's thread could not create a group another rank waits on (CDP's pairs deadlocked).
  CommBackendPtr group(const Group& g, StreamKind stream) {
    GroupSlot* slot = nullptr;
    {
      std::lock_guard lock(mutex_);
      auto& p = groups_[{g.id, static_cast<int>(stream)}];
      if (!p)
        p = std::make_unique<GroupSlot>();
      slot = p.get();
    }
    std::call_once(slot->once, [&] { slot->pg = create_group(g, stream); });
    return slot->pg;
  }

  c10d::Store& store() { return *store_; }

  // Time 0 of the traces that follow, one instant on every rank (validate/clock_origin.h);
  // collective. Raises `uncertainty_s` to this alignment's bound where it is larger.
  std::chrono::steady_clock::time_point agree_on_origin(const std::string& name,
                                                        double& uncertainty_s) {
    const ClockOrigin o = real::agree_on_origin(*store_, "clock/" + name, env_.rank, env_.world,
                                                host_clock_id(), steady_now_s);
    uncertainty_s = std::max(uncertainty_s, o.uncertainty_s);
    return std::chrono::steady_clock::time_point(
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
            std::chrono::duration<double>(o.origin_s)));
  }

  // Every rank arrives before any leaves (a store counter: works before any group exists).
  void barrier(const std::string& name) {
    const std::string key = "barrier/" + name;
    store_->add(key, 1);
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::milliseconds(std::llround(options_.timeout_s * 1000));
    while (store_->add(key, 0) < env_.world) {
      if (std::chrono::steady_clock::now() > deadline)
        throw std::runtime_error(
            fmt::format("rank {}: timed out after {} s at '{}' waiting for the other ranks",
                        env_.rank, options_.timeout_s, name));
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }

private:
  struct GroupSlot {
    std::once_flag once;
    CommBackendPtr pg;
  };

  CommBackendPtr create_group(const Group& g, StreamKind stream) {
    const auto timeout = std::chrono::milliseconds(std::llround(options_.timeout_s * 1000));
    // Named by its ranks, not its id: ids follow the order in which each process first asked for
    // a group, which differs between ranks (CDP's pairs).
    std::string name = "group";
    for (const int r : g.ranks)
      name += fmt::format("-{}", r);
    auto prefix = c10::make_intrusive<c10d::PrefixStore>(
        fmt::format("{}/stream{}", name, static_cast<int>(stream)), store_);
    const int index = g.index_of(env_.rank);
#ifdef USE_C10D_NCCL
    if (options_.backend == "nccl") {
      auto o = c10d::ProcessGroupNCCL::Options::create();
      o->timeout = timeout;
      return c10::make_intrusive<c10d::ProcessGroupNCCL>(prefix, index, g.size(), o);
    }
#endif
    auto o = c10d::ProcessGroupGloo::Options::create(timeout);
    o->devices.push_back(device_);
    o->threads = 1; // one op at a time per group, in issue order, as on one NCCL stream
    return c10::make_intrusive<c10d::ProcessGroupGloo>(prefix, index, g.size(), o);
  }

  JobEnv env_;
  WorkerOptions options_;
  c10::intrusive_ptr<c10d::Store> store_;
  std::shared_ptr<::gloo::transport::Device> device_;
  std::mutex mutex_;
  std::map<std::pair<int, int>, std::unique_ptr<GroupSlot>> groups_;
};

std::string encode_losses(const std::vector<LossRecord>& losses) {
  std::ostringstream out;
  out.precision(17);
  for (const auto& l : losses)
    out << l.step << ' ' << l.micro_batch << ' ' << l.loss << ' ' << l.time << '\n';
  return out.str();
}

// Per step: the mean loss of its micro-batches over every rank, the samples the job had consumed
// once it ended, and when it ended (the last rank's step mark).
std::vector<LossPoint> loss_curve(const std::vector<std::string>& per_rank, const Trace& trace,
                                  int steps) {
  std::vector<double> sum(static_cast<std::size_t>(steps)), count(sum.size()), samples(sum.size()),
      end(sum.size());
  for (const auto& text : per_rank) {
    std::istringstream in(text);
    int step = 0, mb = 0;
    double loss = 0, time = 0;
    while (in >> step >> mb >> loss >> time)
      if (step >= 0 && step < steps) {
        sum[static_cast<std::size_t>(step)] += loss;
        count[static_cast<std::size_t>(step)] += 1;
      }
  }
  for (const auto& m : trace.steps)
    if (m.step >= 0 && m.step < steps) {
      samples[static_cast<std::size_t>(m.step)] += m.samples;
      end[static_cast<std::size_t>(m.step)] =
          std::max(end[static_cast<std::size_t>(m.step)], m.time);
    }
  std::vector<LossPoint> out;
  double total = 0;
  for (int s = 0; s < steps; ++s) {
    const auto i = static_cast<std::size_t>(s);
    total += samples[i];
    if (count[i] > 0)
      out.push_back(LossPoint{s, total, sum[i] / count[i], end[i]});
  }
  return out;
}

} // namespace

std::optional<JobEnv> job_env_from_environment() {
  JobEnv e;
  if (auto r = env("RANK"), w = env("WORLD_SIZE"); r && w) {
    e.rank = env_int("RANK", *r), e.world = env_int("WORLD_SIZE", *w);
    e.launched_by = env("OVERLAPSIM_LAUNCHER").value_or("torchrun-style");
  } else if (auto sr = env("SLURM_PROCID"), sw = env("SLURM_NTASKS"); sr && sw) {
    e.rank = env_int("SLURM_PROCID", *sr), e.world = env_int("SLURM_NTASKS", *sw);
    e.launched_by = "slurm";
  } else if (auto orr = env("OMPI_COMM_WORLD_RANK"), ow = env("OMPI_COMM_WORLD_SIZE"); orr && ow) {
    e.rank = env_int("OMPI_COMM_WORLD_RANK", *orr), e.world = env_int("OMPI_COMM_WORLD_SIZE", *ow);
    e.launched_by = "open-mpi";
  } else {
    return std::nullopt;
  }
  if (e.world < 1 || e.rank < 0 || e.rank >= e.world)
    throw std::runtime_error(
        fmt::format("rank {} is outside a world of {} (from the {} environment)", e.rank, e.world,
                    e.launched_by));
  if (auto a = env("MASTER_ADDR"))
    e.master_addr = *a;
  else if (e.world > 1 && e.launched_by != "overlapsim")
    throw std::runtime_error(fmt::format(
        "MASTER_ADDR is not set: a {} job needs the address of rank 0's host (and MASTER_PORT, "
        "default 29500)",
        e.launched_by));
  if (auto p = env("MASTER_PORT"))
    e.master_port = env_int("MASTER_PORT", *p);
  e.store_file = env("OVERLAPSIM_STORE_FILE").value_or("");
  e.bind_addr = env("OVERLAPSIM_BIND_ADDR").value_or("");
  e.gloo_iface = env("GLOO_SOCKET_IFNAME").value_or("");
  return e;
}

void check_backend(const std::string& backend) {
  if (backend == "gloo")
    return;
  if (backend != "nccl")
    throw std::runtime_error(fmt::format("--backend '{}': expected gloo or nccl", backend));
#ifndef USE_C10D_NCCL
  throw std::runtime_error("--backend nccl: this overlapsim was built against a LibTorch without "
                           "CUDA/NCCL (Debian's is CPU-only); build against an official CUDA "
                           "LibTorch (CMAKE_PREFIX_PATH) to run on GPUs");
#endif
}

std::pair<int, int> job_shape(const scenario::Scenario& s, int world) {
  if (s.cluster.world_size() == world)
    return {s.cluster.nodes, s.cluster.gpus_per_node};
  return {world, 1};
}

WorkerResult run_worker(const scenario::Scenario& s, const JobEnv& e, const WorkerOptions& o) {
  // Stable timings on few cores: one intra-op thread per worker (NOTES.md).
  at::set_num_threads(1);
  keep_freed_host_memory();
  torch::manual_seed(s.seed);
  if (const auto hb = env("OVERLAPSIM_HEARTBEAT"))
    set_heartbeat_file(*hb);
  Job job(e, o);
  const auto [nodes, gpus] = job_shape(s, e.world);
  const Topology topology(nodes, gpus);
  std::atomic<bool> aborted{false};
  torch::Device device = torch::kCPU;
  if (o.backend == "nccl")
    device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(e.rank % gpus));
  Dataset data(s);
  data.to(device); // micro-batches are gathered on the device, never copied in a timed op
  auto group_fn = [&job](const Group& g, StreamKind stream) { return job.group(g, stream); };
  const auto timeout = std::chrono::milliseconds(std::llround(o.timeout_s * 1000));
  // Both streams' world groups exist before anything runs: creating a group is itself collective.
  job.group(topology.world(), StreamKind::compute);
  job.group(topology.world(), StreamKind::comm);

  // Every rank cuts Gloo's reduce-scatters and all-gathers into the same pieces.
  std::int64_t piece_elements = kMaxPieceBytes / 4;
  if (o.gloo_piece_bytes > 0)
    piece_elements = std::max<std::int64_t>(1, o.gloo_piece_bytes / 4);
  else if (o.backend == "gloo" && e.world > 1)
    piece_elements =
        agreed_piece_elements(*job.group(topology.world(), StreamKind::compute), e.world, timeout);

  WorkerResult result;
  result.root = e.rank == 0;
  if (o.backend == "gloo")
    result.gloo_piece_bytes = 4 * piece_elements;
  const int repeats = std::max(1, o.repeats);
  const int parts = static_cast<int>(s.algorithms.size()) * repeats + (o.profile ? 1 : 0);
  int parts_done = 0;
  const auto part_done = [&] {
    ++parts_done;
    if (e.rank == 0 && o.progress)
      o.progress(parts_done, parts);
  };
  if (o.profile) {
    // Under tensor parallelism each rank times its shard of every layer, without the TP
    // collectives (the model has no reducer) for the layers' compute,
    scenario::Scenario profiled = s;
    std::unique_ptr<RealModel> shard;
    std::vector<int> tensor_group;
    if (s.parallelism.tensor > 1) {
      auto whole = s;
      whole.parallelism.pipeline = 1;
      whole.parallelism.stages.clear();
      const parallel::ParallelLayout layout = parallel::ParallelLayout::of(whole);
      profiled = parallel::stage_views(whole, layout).front().scenario;
      shard =
          std::make_unique<RealModel>(s, profiled, 0, static_cast<int>(s.model.spec.layers.size()),
                                      layout.coordinates(e.rank).tensor, layout.tensor());
      // And then with them, in situ (validate/profiler.cpp's time_tensor_comm): the TP group's
      // process group is created here, before anything runs, as for the runs below.
      tensor_group = layout.tensor_group(e.rank);
      job.group(topology.group(tensor_group), StreamKind::compute);
    }
    const auto owned = shard ? std::move(shard) : std::make_unique<RealModel>(s);
    RealModel& model = *owned;
    RealContext ctx{profiled,
                    topology,
                    model,
                    data,
                    OptimizerConfig::from(s.training),
                    group_fn,
                    job.agree_on_origin("profile", result.clock_uncertainty_s),
                    timeout,
                    &aborted,
                    device,
                    piece_elements};
    result.calibration = profile_costs(ctx, e.rank, [&] {
      ProfileOptions p;
      p.min_time_s = o.profile_time_s;
      p.issued = o.profile_sizes;
      p.issued_replicator_phases = o.profile_replicator_phases;
      p.tensor_group = tensor_group;
      return p;
    }());
    part_done();
  }

  if (e.rank == 0)
    result.runs.resize(s.algorithms.size());
  // Repeats interleaved: a machine that slows down (a VM's neighbours) slows one repeat of every
  // algorithm, not every repeat of one.
  for (int repeat = 0; repeat < repeats; ++repeat)
    for (std::size_t index = 0; index < s.algorithms.size(); ++index) {
      const auto& a = s.algorithms[index];
      // Each run's own keys in the store: its start, its time 0, its hand-over.
      const std::string run_name =
          repeat == 0 ? a.label : fmt::format("{}/repeat{}", a.label, repeat + 1);
      const auto algorithm = make_algorithm(a);
      // The window the simulator predicts for it: whole periods of local SGD's H (issue 27.3).
      const auto windowed = with_measured_steps(s, a);
      // Under pipeline parallelism each worker builds only its stage's layers and its algorithm
      // sees the stage's model and its data-parallel group, as in the simulator.
      std::optional<parallel::ParallelLayout> layout;
      std::optional<ParallelPlace> place;
      std::optional<Topology> data_view;
      std::optional<scenario::Scenario> stage_scenario;
      if (s.parallelism.tensor > 1 || s.parallelism.pipeline > 1) {
        layout.emplace(parallel::ParallelLayout::of(windowed));
        place = parallel_place(*layout, topology, e.rank, s.parallelism.schedule,
                               windowed.training.grad_accum);
        stage_scenario = parallel::stage_views(windowed, *layout)
                             .at(static_cast<std::size_t>(place->stage))
                             .scenario;
        data_view.emplace(topology.view(layout->data_group(e.rank)));
        // Created before the run (creating a group is collective): every TP group, then each
        // stage meets its neighbours in stage order, so no pair waits on another.
        if (place->tensor_parallel())
          job.group(*place->tensor, StreamKind::compute);
        for (const Group* pair : {place->to_previous, place->to_next})
          if (pair != nullptr)
            job.group(*pair, StreamKind::compute);
      }
      RealModel model = place
                            ? RealModel(windowed, *stage_scenario, place->layers.first,
                                        place->layers.last, place->tensor_rank, place->tensor_size)
                            : RealModel(windowed);
      job.barrier("start/" + run_name);
      RealContext ctx{stage_scenario ? *stage_scenario : windowed,
                      topology,
                      model,
                      data,
                      OptimizerConfig::from(s.training),
                      group_fn,
                      job.agree_on_origin("run/" + run_name, result.clock_uncertainty_s),
                      timeout,
                      &aborted,
                      device,
                      piece_elements,
                      place ? &*place : nullptr,
                      data_view ? &*data_view : nullptr};
      RealWorker worker(ctx, e.rank);
      worker.start_ops_when_ready();
      auto program = algorithm->program(worker);
      // Every rank's streams start at once, as the simulator's do: rank 0 left the origin's
      // agreement 10-14 ms after the others (it answers for the store), and the compute streams of
      // ACCO and DPU, which never wait for each other's, kept that lead (rank 1's forwards 8-9.5 ms
      // ahead from the first, in every run). A barrier of the world's process group, not the
      // store's (polled every 2 ms).
      job.group(topology.world(), StreamKind::compute)->barrier()->wait();
      // The first failure is the cause; the other stream then stops with "the other stream failed".
      std::exception_ptr failure[2];
      std::atomic<int> first_failure{-1};
      std::thread comm([&] {
        worker.enter(StreamKind::comm);
        try {
          program->run_comm();
        } catch (...) {
          failure[1] = std::current_exception();
          int none = -1;
          first_failure.compare_exchange_strong(none, 1);
          worker.abort();
        }
      });
      std::thread compute([&] {
        worker.enter(StreamKind::compute);
        lower_compute_thread_priority(worker.on_cpu());
        try {
          program->run_compute();
        } catch (...) {
          failure[0] = std::current_exception();
          int none = -1;
          first_failure.compare_exchange_strong(none, 0);
          worker.abort();
        }
      });
      compute.join();
      comm.join();
      if (first_failure.load() >= 0)
        std::rethrow_exception(failure[first_failure.load()]);

      Trace local = worker.trace();
      local.end_time = worker.now();
      const std::string key = "run/" + run_name;
      job.store().set(fmt::format("{}/trace/{}", key, e.rank), bytes_of(local.serialize()));
      job.store().set(fmt::format("{}/loss/{}", key, e.rank),
                      bytes_of(encode_losses(worker.losses())));
      if (e.rank == 0) {
        MeasuredRun run;
        run.algorithm = a.label;
        run.trace.workers = topology.world_size();
        run.trace.gpus_per_node = gpus;
        run.trace.measured = true;
        std::vector<std::string> losses;
        for (int r = 0; r < e.world; ++r) {
          run.trace.append(
              Trace::deserialize(string_of(job.store().get(fmt::format("{}/trace/{}", key, r)))));
          losses.push_back(string_of(job.store().get(fmt::format("{}/loss/{}", key, r))));
        }
        run.loss =
            loss_curve(losses, run.trace, windowed.training.warmup_steps + windowed.training.steps);
        result.runs[index].push_back(std::move(run));
      }
      part_done();
    }
  // Rank 0 serves the TCP store and leaves last: it has read every rank's hand-over above.
  return result;
}

std::string error_summary(const std::exception& e) {
  std::string text = e.what();
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e))
    text = c10_error->what_without_backtrace();
  // A message that embeds one (a c10::Error's text rethrown in another exception) is cut there too.
  for (const char* marker : {"Exception raised from", "frame #"})
    if (const auto at = text.find(marker); at != std::string::npos)
      text.resize(at);
  std::string line;
  for (const char c : text) {
    if (c == '\n' || c == '\r') {
      if (!line.empty() && line.back() != ' ')
        line += line.back() == '.' || line.back() == ':' ? " " : "; ";
    } else {
      line += c;
    }
  }
  while (!line.empty() && (line.back() == ' ' || line.back() == ';'))
    line.pop_back();
  return line.empty() ? std::string("an error without a message") : line;
}

} // namespace overlapsim::real
