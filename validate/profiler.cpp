#include "validate/profiler.h"

#include "algorithms/model_state.h"
#include "algorithms/replicator.h"
#include "runtime/op_label.h"
#include "validate/profile_statistics.h"
#include "validate/thread_policy.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <fmt/format.h>
#include <functional>
#include <map>
#include <mutex>
#include <numbers>
#include <numeric>
#include <optional>
#include <set>
#include <thread>

namespace overlapsim::real {

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Durations of the events the worker recorded since `from`, by name.
std::map<std::string, std::vector<double>> durations(const Trace& t, std::size_t from) {
  std::map<std::string, std::vector<double>> out;
  for (std::size_t i = from; i < t.events.size(); ++i)
    out[t.name_of(t.events[i].name)].push_back(t.events[i].end - t.events[i].start);
  return out;
}

// Every rank of `group` arrives before any measures (each repeat starts together).
void barrier(RealWorker& w, const Group& group) {
  CollectiveCall call;
  call.op = CollectiveOp::barrier;
  call.group = &group;
  call.name = "barrier";
  w.run(call);
}

// Rank 0's repeat count for a collective measurement, the same on every rank of `group` (each
// must issue the same collectives): `one` is the time of the untimed first run as each rank saw
// it; `slot` is one element of a scratch buffer whose content does not matter.
int agreed_repeats(RealWorker& w, const Group& group, const ProfileOptions& o, double one,
                   Slice slot) {
  w.fill(slot, repeats_for(o, one));
  CollectiveCall count;
  count.op = CollectiveOp::broadcast;
  count.group = &group;
  count.peer = group.ranks.front();
  count.name = "profile repeat count";
  count.data = slot;
  w.run(count);
  return static_cast<int>(w.tensor(slot).item<double>());
}

// Ranks that time their compute together, as data parallelism runs it: DDP's, ZeRO's, FSDP's and
// DiLoCo's workers all step at once, and ops that stream through memory share its bandwidth (two
// CPU workers on one machine: the mlp's AdamW step over 887,040 parameters took 1.6 ms timed
// apart, 2.2-2.5 ms in DDP's and DiLoCo's runs; a C loop of the same passes 0.74 ms alone and
// 1.08 ms beside its twin). On GPUs with memory of their own it costs a barrier a repeat.
struct Lockstep {
  const Group* group = nullptr; // every rank of it runs the same repeats; none: this rank alone
  Slice count;                  // one element of scratch for rank 0's repeat count
};

// Runs `once(r)` untimed for r = 0 (first touches, lazy state: AdamW's first step allocates its
// moments and took 75 ms against 1.6 ms after), then for r = 1, 2, ... the repeats a compute
// quantity gets (ProfileOptions): o.repeats, then as many more as the time they took asks for
// (rank 0's count on every rank of a lockstep group, each repeat after a barrier). Returns the
// index of the first timed event; the barriers and the count's broadcast are communication
// events among them, which no compute quantity reads.
template <class Once>
std::size_t repeat_timed(RealWorker& w, const ProfileOptions& o, const Lockstep& together,
                         Once once) {
  const bool synced = together.group != nullptr && together.group->size() > 1;
  const auto repeat = [&](int r) {
    if (synced)
      barrier(w, *together.group);
    once(r);
  };
  repeat(0);
  const std::size_t from = w.trace().events.size();
  for (int r = 1; r <= o.repeats; ++r)
    repeat(r);
  double spent = 0;
  const Trace& t = w.trace(); // on a GPU this waits for the repeats: their times are then known
  for (std::size_t i = from; i < t.events.size(); ++i)
    if (t.events[i].category != OpCategory::comm)
      spent += t.events[i].end - t.events[i].start;
  int total = repeats_for(o, spent / std::max(1, o.repeats));
  if (synced) {
    // Set without a recorded fill: the loops that time fills read every "fill" after `from`.
    w.tensor(together.count).fill_(static_cast<double>(total));
    CollectiveCall broadcast;
    broadcast.op = CollectiveOp::broadcast;
    broadcast.group = together.group;
    broadcast.peer = together.group->ranks.front();
    broadcast.name = "profile repeat count";
    broadcast.data = together.count;
    w.run(broadcast);
    total = static_cast<int>(w.tensor(together.count).item<double>());
  }
  for (int r = o.repeats + 1; r <= total; ++r)
    repeat(r);
  return from;
}

// Runs `op` on one rank of `world` at a time, the others waiting at a barrier: a memory-bound op
// with no other worker streaming memory beside it (hw::ModelSpec::memory_shared_by). CPU workers
// share their host's DRAM and last-level cache; the loops of repeat_timed run every rank's at
// once, as DDP's, ZeRO-1's and FSDP's steps run, where ACCO's, DPU's and DiLoCo's drift apart.
template <class Op> void one_rank_at_a_time(RealWorker& w, const Group& world, Op op) {
  for (const int turn : world.ranks) {
    barrier(w, world);
    if (turn == w.rank())
      op();
  }
}

// Every member's `mine` (as many values on each), gathered through `buffer` and `out`:
// [member][value].
std::vector<std::vector<double>> members_values(RealWorker& w, const Group& group, BufferId buffer,
                                                BufferId out, const std::vector<double>& mine) {
  const int n = group.size();
  const auto count = static_cast<std::int64_t>(mine.size());
  const Slice slot = shard(buffer, count * n, group.index_of(w.rank()), n);
  for (std::int64_t r = 0; r < count; ++r)
    w.fill(Slice{buffer, slot.offset + r, 1}, mine[static_cast<std::size_t>(r)]);
  CollectiveCall gather;
  gather.op = CollectiveOp::all_gather;
  gather.group = &group;
  gather.name = "profile member times";
  gather.data = slot;
  gather.out = Slice{out, 0, count * n};
  w.run(gather);
  const auto all = w.tensor(gather.out).to(torch::kCPU, torch::kDouble).contiguous();
  const double* v = all.data_ptr<double>();
  std::vector<std::vector<double>> values(static_cast<std::size_t>(n));
  for (int j = 0; j < n; ++j)
    values[static_cast<std::size_t>(j)].assign(v + j * count, v + (j + 1) * count);
  return values;
}

// Times a collective over `group` at the sizes of sweep_sizes, rank-synchronised by a barrier
// before every repeat; returns per size the expected time until the first member finished and,
// over a group, the lag of the member that calls last (last_caller_lag; every member returns
// the same). A group of one has nobody to wait for: its repeats run back to back, as a run
// issues one bucket's after the last. `in_place`: reduce-scatter and all-gather write into `buffer`
// itself (the shard at the rank's place), as ZeRO-1 does; else into `out`.
std::vector<scenario::SizeTime> sweep(RealWorker& w, const Group& group, BufferId buffer,
                                      BufferId out, const ProfileOptions& o, double max_bytes,
                                      CollectiveOp op, bool in_place = false) {
  std::vector<scenario::SizeTime> points;
  for (const double bytes : sweep_sizes(o, max_bytes, calibration_op_name(op), group.size())) {
    const auto elements = std::max<std::int64_t>(group.size(), std::llround(bytes / 4));
    const int me = group.index_of(w.rank());
    CollectiveCall ar;
    ar.op = op;
    ar.group = &group;
    ar.name = "profile";
    // Sizes are the full array, as nccl-tests reports them.
    const Slice mine = shard(buffer, elements, me, group.size());
    ar.data = op == CollectiveOp::all_gather ? mine : Slice{buffer, 0, elements};
    if (op == CollectiveOp::all_gather)
      ar.out = Slice{in_place ? buffer : out, 0, elements};
    if (op == CollectiveOp::reduce_scatter)
      ar.out = in_place ? mine : Slice{out, 0, mine.count};
    std::vector<double> times;
    int repeats = 0;
    for (int r = -1; r < repeats; ++r) { // one untimed warm-up, which sets the count
      if (group.size() > 1)
        barrier(w, group);
      const std::size_t before = w.trace().events.size();
      w.run(ar);
      const auto& e = w.trace().events[before];
      if (r >= 0)
        times.push_back(e.end - e.start);
      else
        repeats = agreed_repeats(w, group, o, e.end - e.start, Slice{out, 0, 1});
    }
    if (group.size() < 2) {
      points.push_back(scenario::SizeTime{static_cast<double>(elements) * 4, expected_time(times)});
      continue;
    }
    // The lag probe: each member in turn calls a twentieth of the op's time (at least 1 ms)
    // after the others; every member's end after the barrier.
    const double late_by = std::max(1e-3, expected_time(times) / 20);
    std::vector<double> values = times;
    for (int k = 0; k < kLastCallerRounds * group.size(); ++k) {
      barrier(w, group);
      const double after_barrier = w.trace().events.back().end;
      if (k % group.size() == me)
        std::this_thread::sleep_for(std::chrono::duration<double>(late_by));
      const std::size_t before = w.trace().events.size();
      w.run(ar);
      values.push_back(w.trace().events[before].end - after_barrier);
    }
    const auto all = members_values(w, group, buffer, out, values);
    std::vector<std::vector<double>> durations, ends;
    for (const auto& m : all) {
      durations.emplace_back(m.begin(), m.begin() + repeats);
      ends.emplace_back(m.begin() + repeats, m.end());
    }
    points.push_back(scenario::SizeTime{static_cast<double>(elements) * 4,
                                        first_end_time(durations), last_caller_lag(ends),
                                        end_spread(durations)});
  }
  return points;
}

// One message between the group's first two ranks: a ping-pong (index 0 sends then receives,
// index 1 receives then sends; the others only pass the barrier), half the round trip as index 0
// saw it. CDP relays its gradient sums this way, and a CPU's Gloo sends a message at a cost of
// its own, not the all-reduce fit's.
std::vector<scenario::SizeTime> ping_pong(RealWorker& w, const Group& group, BufferId buffer,
                                          const ProfileOptions& o, double max_bytes) {
  std::vector<scenario::SizeTime> points;
  const int me = group.index_of(w.rank());
  for (const double bytes : sweep_sizes(o, max_bytes, "send_recv", 2)) {
    const auto elements = std::max<std::int64_t>(1, std::llround(bytes / 4));
    std::vector<double> times;
    int repeats = 0;
    for (int r = -1; r < repeats; ++r) { // one untimed warm-up, which sets the count
      barrier(w, group);
      if (me > 1) { // only pass the barriers, and hear the count
        if (r < 0)
          repeats = agreed_repeats(w, group, o, 0, Slice{buffer, 0, 1});
        continue;
      }
      CollectiveCall send, recv;
      send.op = CollectiveOp::send;
      recv.op = CollectiveOp::recv;
      send.group = recv.group = &group;
      send.peer = recv.peer = group.ranks[static_cast<std::size_t>(1 - me)];
      send.tag = recv.tag = 7;
      send.data = recv.data = Slice{buffer, 0, elements};
      send.name = recv.name = "profile";
      const std::size_t before = w.trace().events.size();
      w.run(me == 0 ? send : recv);
      w.run(me == 0 ? recv : send);
      const auto& first = w.trace().events[before];
      const auto& second = w.trace().events.back();
      if (r >= 0)
        times.push_back((second.end - first.start) / 2);
      else
        repeats = agreed_repeats(w, group, o, second.end - first.start, Slice{buffer, 0, 1});
    }
    if (me == 0)
      points.push_back(scenario::SizeTime{static_cast<double>(elements) * 4, expected_time(times)});
  }
  return points;
}

// What a message pays beyond its time alone when the opposite direction carries one
// (hw::LinkSpec::reverse_busy_s), between the group's first two ranks, where the algorithms send
// messages (CDP). Each repeat times one message from index 1 to index 0 twice, alone and while
// index 0 sends index 1 a message four times as large, begun one message-time earlier (as CDP's
// lap-one partials start while the complete sums of the stage before still flow back); the
// receiver's time from posting to done, paired, so the link's noise cancels. Over TCP through a
// queue (an emulated 100 Mbit/s link: 1.8 MB in 155-250 ms against 143 ms alone) the receiver's
// ready-to-receive notice and the acknowledgements wait behind the other direction's data, for as
// long as it flows: the cost grows with the message, so it is timed at the largest the
// algorithms send (at 0.6 MB it read 17-20 ms where the mlp's 1.77 MB relays paid 70-100 ms, and
// gpt-tiny's 4.8 MB ones 160-230 ms against 22 ms at 1 MiB). The load ends three message-times
// after the timed message starts at the link's rate, past the 1.5-1.7x the runs' messages took. The
// large message goes on the communication stream's connection, the timed one on the compute
// stream's, as CDP's two laps do: on one connection the notice would wait for all of it (Gloo
// writes a pair's messages in order). Returns index 0's median difference over the repeats
// (paired_median_delay: a stall in one of five repeats is not a rate); 0 on the others and where
// nothing is sent.
double reverse_busy_delay(RealWorker& w, const Group& group, BufferId out, const ProfileOptions& o,
                          double max_bytes) {
  const bool messages = std::any_of(o.issued.begin(), o.issued.end(),
                                    [](const auto& s) { return s.first.op == "send_recv"; });
  if (!messages || group.size() < 2)
    return 0;
  double largest = 0;
  for (const auto& [size, calls] : o.issued)
    if (size.op == "send_recv")
      largest = std::max(largest, size.bytes);
  const auto message =
      std::max<std::int64_t>(1, static_cast<std::int64_t>(std::min(largest, max_bytes) / 4));
  const std::int64_t bulk = 4 * message;
  const BufferId load_buffer =
      w.declare({"profile_reverse_load", MemoryCategory::buffers, bulk, 4});
  const int me = group.index_of(w.rank());
  const int peer = group.ranks[static_cast<std::size_t>(me == 0 ? 1 : 0)];
  constexpr int kRepeats = 5;
  std::vector<double> alone, busy;
  double lead = 0;
  w.enter(StreamKind::comm); // every member makes the communication stream's connection
  barrier(w, group);
  w.enter(StreamKind::compute);
  for (int r = -1; r < kRepeats; ++r) { // one untimed warm-up, which sets the lead
    for (const bool loaded : {false, true}) {
      barrier(w, group);
      if (me > 1)
        continue;
      CollectiveCall msg, load;
      msg.op = me == 0 ? CollectiveOp::recv : CollectiveOp::send;
      load.op = me == 0 ? CollectiveOp::send : CollectiveOp::recv;
      msg.group = load.group = &group;
      msg.peer = load.peer = peer;
      msg.tag = 9;
      load.tag = 8;
      msg.data = Slice{out, 0, message};
      load.data = Slice{load_buffer, 0, bulk};
      msg.name = load.name = "profile";
      CommHandle loading;
      if (loaded) {
        w.enter(StreamKind::comm);
        loading = w.start(load);
        w.enter(StreamKind::compute);
      }
      if (me == 0) // both receives posted as late: the same notice, the same wait for it
        std::this_thread::sleep_for(std::chrono::duration<double>(lead));
      const std::size_t before = w.trace().events.size();
      w.run(msg);
      const auto& e = w.trace().events[before];
      const double t = e.end - e.start;
      if (loaded)
        w.wait(loading);
      if (me != 0)
        continue;
      if (r < 0 && !loaded)
        lead = t;
      else if (r >= 0)
        (loaded ? busy : alone).push_back(t);
    }
  }
  return me == 0 ? paired_median_delay(alone, busy) : 0.0;
}

// The alpha-beta fit, or, when noise makes the times not grow with size (a fast loopback and a
// small model), the bound the largest size gives: no latency, its bandwidth. The residual in the
// profile says how well either describes the points.
scenario::LinkFit robust_fit(const std::string& op, int ranks,
                             const std::vector<scenario::SizeTime>& points) {
  try {
    return scenario::fit_alpha_beta(op, ranks, points);
  } catch (const std::runtime_error& e) {
    const auto shape = scenario::ring_shape(op, ranks);
    const auto& big =
        *std::max_element(points.begin(), points.end(),
                          [](const auto& a, const auto& b) { return a.bytes < b.bytes; });
    scenario::LinkFit f;
    f.op = op;
    f.ranks = ranks;
    f.latency_s = 0;
    f.bandwidth_Bps = shape.bus_factor * big.bytes / big.seconds;
    for (const auto& p : points)
      f.max_relative_residual =
          std::max(f.max_relative_residual,
                   std::abs(shape.bus_factor * p.bytes / f.bandwidth_Bps - p.seconds) / p.seconds);
    f.points = points;
    if (ranks > 1) // over one rank a flat time is expected (an in-place all-reduce does nothing)
      fmt::print(stderr, "overlapsim profile: {}; using the largest size's bandwidth instead\n",
                 e.what());
    return f;
  }
}

// Every member's `values` (as many on each member of `group`), member after member in the
// group's order. Collective over `group`. Sent as float32 offsets from a base every member holds
// exactly (the first member's first value, rounded to a float and broadcast): microseconds within
// the second a probe loop lasts.
std::vector<double> all_gathered(RealWorker& w, const Group& group,
                                 const std::vector<double>& values, const std::string& name) {
  const auto n = static_cast<std::int64_t>(values.size());
  const std::int64_t members = group.size();
  if (members <= 1 || n == 0)
    return values;
  const BufferId buffer = w.declare({name, MemoryCategory::buffers, 1 + n + n * members, 4});
  w.fill(Slice{buffer, 0, 1}, values.front());
  CollectiveCall base;
  base.op = CollectiveOp::broadcast;
  base.group = &group;
  base.peer = group.ranks.front();
  base.name = name + " base";
  base.data = Slice{buffer, 0, 1};
  w.run(base);
  const double from = w.tensor(base.data).item<double>();
  std::vector<float> offsets;
  for (const double v : values)
    offsets.push_back(static_cast<float>(v - from));
  CollectiveCall gather;
  gather.op = CollectiveOp::all_gather;
  gather.group = &group;
  gather.name = name;
  gather.data = Slice{buffer, 1, n};
  gather.out = Slice{buffer, 1 + n, n * members};
  w.tensor(gather.data).copy_(torch::tensor(offsets));
  w.run(gather);
  const auto all = w.tensor(gather.out).to(torch::kCPU).to(torch::kDouble).contiguous();
  const double* v = all.data_ptr<double>();
  std::vector<double> out;
  out.reserve(static_cast<std::size_t>(n * members));
  for (std::int64_t i = 0; i < n * members; ++i)
    out.push_back(from + v[i]);
  return out;
}

// The latest start over `group`'s members of each of a series of collectives they ran alike (the
// k-th on every member is one instance), from this member's `starts`: the ranks' traces share a
// time 0 (validate/clock_origin.h), so their starts compare. Collective over `group`.
std::vector<double> last_member_starts(RealWorker& w, const Group& group,
                                       const std::vector<double>& starts) {
  const auto all = all_gathered(w, group, starts, "last member starts");
  std::vector<double> last(starts);
  for (std::size_t i = 0; i < all.size(); ++i)
    last[i % starts.size()] = std::max(last[i % starts.size()], all[i]);
  return last;
}

// How far apart the workers' compute drifts where nothing makes them wait (hw::ModelSpec's
// compute_jitter_sigma_1s). A pass is a forward and backward, layer by layer, that every rank
// began after a barrier (the repeats of the lockstep loops: events [from, to) of this rank's
// trace; the k-th on every rank is one instance). Each pass's span on a rank, less that rank's
// mean span (a steady difference, one core faster, is a straggler's, not noise a pass draws
// afresh) and less the pass's mean over the ranks (what slowed every rank alike), deviates by
// this worker's own noise. Its standard deviation s per mean span T is taken as noise whose
// variance grows with the time computed (interrupts, the other worker's traffic): sigma_1s =
// s / sqrt(T / 1 s), the sigma of a one-second op. Estimated from the mean absolute deviation
// (s = sqrt(pi / 2) E|x| for normal x): the deviations are heavy-tailed (gpt-wide, 37 passes of
// 118 ms: most within 2 ms, one 18.5 ms), and a variance let one stall set the whole number
// (0.19 per op in one profile, 0.05 in the next; the runs' steps spread as 0.03-0.04 would).
// Collective over `world`; 0 where fewer than two ranks or passes.
double compute_jitter_sigma_1s(RealWorker& w, const Group& world, std::size_t from,
                               std::size_t to) {
  const Trace& t = w.trace();
  std::vector<double> spans;
  std::int32_t step = -1;
  double first = 0, last = 0;
  for (std::size_t i = from; i <= to; ++i) {
    const bool pass = i < to && (t.events[i].category == OpCategory::forward ||
                                 t.events[i].category == OpCategory::backward);
    if ((!pass || t.events[i].step != step) && step >= 1)
      spans.push_back(last - first);
    if (!pass) {
      step = -1;
      continue;
    }
    if (t.events[i].step != step) {
      step = t.events[i].step;
      first = t.events[i].start;
    }
    last = t.events[i].end;
  }
  const auto m = static_cast<std::size_t>(world.size());
  // The lockstep loops give every rank as many passes; should one have more (a loop that ran on
  // without a barrier), the first passes of each pair up and the all-gather's sizes still agree.
  const auto counts =
      all_gathered(w, world, {static_cast<double>(spans.size())}, "compute spread passes");
  spans.resize(static_cast<std::size_t>(*std::min_element(counts.begin(), counts.end())));
  const std::size_t passes = spans.size();
  const auto all = all_gathered(w, world, spans, "compute spread");
  if (m < 2 || passes < 2)
    return 0;
  const auto span = [&](std::size_t rank, std::size_t k) { return all[rank * passes + k]; };
  std::vector<double> mean(m, 0.0);
  for (std::size_t j = 0; j < m; ++j)
    for (std::size_t k = 0; k < passes; ++k)
      mean[j] += span(j, k) / static_cast<double>(passes);
  double absolute = 0; // the mean |deviation|
  for (std::size_t k = 0; k < passes; ++k) {
    double centre = 0;
    for (std::size_t j = 0; j < m; ++j)
      centre += (span(j, k) - mean[j]) / static_cast<double>(m);
    for (std::size_t j = 0; j < m; ++j)
      absolute += std::abs(span(j, k) - mean[j] - centre) / static_cast<double>(m * passes);
  }
  // A deviation from the ranks' own mean is (m - 1) / m of a rank's noise's variance.
  const double s = std::sqrt(std::numbers::pi / 2) * absolute *
                   std::sqrt(static_cast<double>(m) / static_cast<double>(m - 1));
  const double span_mean = std::accumulate(mean.begin(), mean.end(), 0.0) / static_cast<double>(m);
  return span_mean > 0 ? s / std::sqrt(span_mean) : 0.0;
}

// How compute and communication slow each other on this worker, both ways (hw::GpuSpec's
// comm_interference and compute_interference), for the collective kinds of one loop.
struct Interference {
  std::optional<double> comm_slows_compute;         // by the loop's collectives
  std::map<std::string, double> compute_slows_comm; // by calibration op name
};

// The model's forward + backward alone, then again while the comm stream runs `ops` (each over a
// gradient-sized buffer, one after the other) over and over: 1 - alone / beside, over the repeats
// that ran entirely beside communication, is the share of compute speed the running collectives
// take; the same ratio of each kind's collectives, alone and those that ran entirely beside
// compute, is the share of its speed compute takes (issue 30: on a CPU, Gloo's threads share the
// cores with the compute thread, and FSDP's all-gather prefetched beside a forward took 2.5x its
// profiled time). On a GPU, NCCL's kernels and the compute kernels share SMs and memory bandwidth
// both ways. Steps `base` + r compute alone, `base` + 1000 + r beside (apart from other loops').
// `scratch` holds n + 1 elements, `shards` n.
Interference measure_interference(RealWorker& w, const Topology& topo, BufferId params,
                                  BufferId grads, BufferId scratch, BufferId shards, std::int64_t n,
                                  int layers, const ProfileOptions& o,
                                  const std::vector<CollectiveOp>& ops, int base) {
  if (topo.world_size() < 2 || ops.empty())
    return {};
  // Read from the trace once both threads are done (on a GPU, event times resolve only then).
  auto fwd_bwd = [&](int step) {
    w.forward({0, layers}, {step, 0}, params);
    w.backward({0, layers}, {step, 0}, params, grads);
  };
  // As many repeats as the profile gives any compute quantity: with a handful, the ratio of two
  // medians swung between 0.17 and 0.59 from one profile to the next on a 2-core machine.
  repeat_timed(w, o, Lockstep{&topo.world(), Slice{scratch, 0, 1}},
               [&](int r) { fwd_bwd(base + r); });
  auto spans = [&](int first_step) {
    std::map<int, std::pair<double, double>> span; // step -> [forward start, backward end]
    for (const auto& e : w.trace().events)
      if ((e.category == OpCategory::forward || e.category == OpCategory::backward) &&
          e.step >= first_step && e.step < first_step + 1000) {
        auto [it, fresh] = span.try_emplace(e.step, e.start, e.end);
        it->second.first = std::min(it->second.first, e.start);
        it->second.second = std::max(it->second.second, e.end);
      }
    return span;
  };
  std::vector<double> alone;
  for (const auto& [step, ab] : spans(base))
    if (step != base) // repeat_timed's untimed first call
      alone.push_back(ab.second - ab.first);

  // Rank 0's `value` on every rank: ranks must issue the same collectives, of the same size.
  auto agreed = [&](double value) {
    w.fill(Slice{scratch, 0, 1}, value);
    CollectiveCall broadcast;
    broadcast.op = CollectiveOp::broadcast;
    broadcast.group = &topo.world();
    broadcast.peer = 0;
    broadcast.name = "interference agreement";
    broadcast.data = Slice{scratch, 0, 1};
    w.run(broadcast);
    return w.tensor(Slice{scratch, 0, 1}).item<double>();
  };
  // A gradient-sized all-reduce, cut to kComputeRepeatsPerProbe forwards + backwards where it
  // takes longer (interference_probe_elements): over an emulated 100 Mbit/s the mlp's took 0.6 s,
  // the loop held two or three, and three profiles gave 0.0006, 0.08 and 0.21 for
  // compute_interference. The other kinds move the same elements.
  CollectiveCall sizing;
  sizing.op = CollectiveOp::all_reduce;
  sizing.group = &topo.world();
  sizing.name = "interference sizing";
  sizing.data = Slice{scratch, 0, n};
  const std::size_t sized = w.trace().events.size();
  w.run(sizing);
  const double full = w.trace().events[sized].end - w.trace().events[sized].start;
  const auto cut = static_cast<std::int64_t>(agreed(
      static_cast<double>(interference_probe_elements(n, median(alone), full, topo.world_size()))));
  const std::int64_t shard = cut / topo.world_size();
  struct Probe {
    CollectiveCall call;
    std::string beside_name;
    std::vector<double> alone, beside;
  };
  std::vector<Probe> probes;
  for (const CollectiveOp op : ops) {
    Probe p;
    p.call.op = op;
    p.call.group = &topo.world();
    if (op == CollectiveOp::reduce_scatter) {
      p.call.data = Slice{scratch, 0, shard * topo.world_size()};
      p.call.out = Slice{shards, 0, shard};
    } else if (op == CollectiveOp::all_gather) {
      p.call.data = Slice{shards, 0, shard};
      p.call.out = Slice{scratch, 0, shard * topo.world_size()};
    } else if (op == CollectiveOp::send) { // a message each way (run_probe)
      p.call.data = Slice{scratch, 0, cut};
      p.call.out = Slice{shards, 0, cut};
    } else {
      p.call.data = Slice{scratch, 0, cut};
    }
    p.beside_name = "interference " + calibration_op_name(op);
    probes.push_back(std::move(p));
  }

  // Each kind alone, back to back as beside compute below (the first untimed), the same count on
  // every rank. Every collective, alone and beside, counts from its last member's start, as
  // validate's per-op table counts a run's: from the rank's own start, a member whose thread
  // returned late from the previous one (a waiting thread wakes late on a core that computes)
  // added its delay to the other's next one, and compute_interference swung from 0.07 to 0.56
  // between two profiles minutes apart (gpt-tiny, loopback).
  // A probe as it ran: its event (a message probe's receive) and when this rank began it (a
  // message probe's send, posted first: the receive's data leaves the peer at the peer's send, so
  // a peer that posted its own receive after this one's had arrived must not shorten it to 0).
  // Found by name once the loop's threads are done (on a GPU, event times resolve only then),
  // the sends paired with the receives in order.
  struct Ran {
    std::size_t event;
    double start;
  };
  auto ran_in = [&](std::size_t from, std::size_t to, const std::string& name) {
    std::vector<Ran> ran;
    std::vector<double> sends;
    for (std::size_t i = from; i < to; ++i) {
      const auto& e = w.trace().events[i];
      const auto& label = w.trace().name_of(e.name);
      if (label == name)
        ran.push_back({i, e.start});
      else if (label == name + " (send)")
        sends.push_back(e.start);
    }
    for (std::size_t j = 0; j < ran.size() && j < sends.size(); ++j)
      ran[j].start = std::min(ran[j].start, sends[j]);
    return ran;
  };
  auto from_last_start = [&](const std::vector<Ran>& ran) {
    std::vector<double> starts;
    for (const Ran& r : ran)
      starts.push_back(r.start);
    const auto last = last_member_starts(w, topo.world(), starts);
    std::vector<double> took;
    for (std::size_t k = 0; k < ran.size(); ++k) {
      const auto& e = w.trace().events[ran[k].event];
      took.push_back(e.end - std::clamp(last[k], e.start, e.end));
    }
    return took;
  };
  // A message probe (op send): each rank sends its ring successor a message while it receives
  // its predecessor's, as CDP's relays cross on every link; the receive is the probe's event (its
  // send carries the name + " (send)").
  auto run_probe = [&](const CollectiveCall& call) {
    if (call.op != CollectiveOp::send) {
      w.run(call);
      return;
    }
    const Group& g = topo.world();
    const int me = g.index_of(w.rank()), size = g.size();
    CollectiveCall send = call, recv = call;
    send.peer = g.ranks[static_cast<std::size_t>((me + 1) % size)];
    send.name = call.name + " (send)";
    recv.op = CollectiveOp::recv;
    recv.peer = g.ranks[static_cast<std::size_t>((me + size - 1) % size)];
    recv.data = call.out;
    send.tag = recv.tag = 10;
    CommHandle sending = w.start(send);
    w.run(recv);
    w.wait(sending);
  };
  const int alone_repeats = std::max(o.repeats, 3);
  double alone_wall = 0; // the timed repeats' span on the clock, every kind
  for (auto& p : probes) {
    p.call.name = "interference alone";
    const std::size_t from = w.trace().events.size();
    for (int r = 0; r <= alone_repeats; ++r)
      run_probe(p.call);
    auto ran = ran_in(from, w.trace().events.size(), p.call.name);
    if (ran.size() > 1) { // the first untimed
      alone_wall += w.trace().events[ran.back().event].end - w.trace().events[ran[0].event].end;
      ran.erase(ran.begin());
    }
    p.alone = from_last_start(ran);
  }
  std::vector<double> probe_medians;
  for (auto& p : probes) {
    probe_medians.push_back(median(p.alone));
    p.call.name = p.beside_name;
  }
  // The same count on every rank (rank 0's, broadcast).
  const std::size_t timed = w.trace().events.size();
  const int rounds = static_cast<int>(agreed(interference_rounds(
      static_cast<int>(alone.size()), median(alone), probe_medians, alone_wall / alone_repeats)));

  // The threads as a run has them: compute on a thread of the lowest priority
  // (lower_compute_thread_priority), the collectives on this one. At equal priority a CPU
  // worker's compute took half the core from Gloo's threads (0.42, gpt-wide) where a run's
  // compute thread yields it (ACCO's reduce-scatter beside backward: 31 ms, 29 ms alone).
  // Yielding, the compute may finish few repeats in `rounds` rounds (a clean-clone test run
  // measured none, and no comm_interference): after every `rounds` the ranks agree (a one-element
  // all-reduce of "done") to go on until each has finished kBeside repeats since the collectives
  // began (the first may straddle their start), at most kMaxBatches times. Twenty since the
  // rounds are sized by the clock (interference_rounds): up to 40% fewer a batch than by the
  // probes' medians, and with ten a parallel clean-clone test run once found no compute
  // repeat beside CDP's messages, which take a worker's core.
  constexpr int kBeside = 4, kMaxBatches = 20;
  std::atomic<bool> comm_done{false};
  std::atomic<int> computed{0};
  std::exception_ptr failure;
  std::thread compute([&] {
    try {
      lower_compute_thread_priority(w.on_cpu());
      w.enter(StreamKind::compute);
      for (int r = 0; !comm_done.load() && r < 100 * static_cast<int>(alone.size()); ++r) {
        fwd_bwd(base + 1000 + r);
        ++computed;
      }
    } catch (...) {
      failure = std::current_exception();
    }
  });
  CollectiveCall done;
  done.op = CollectiveOp::all_reduce;
  done.group = &topo.world();
  done.name = "interference agreement";
  done.data = Slice{scratch, n, 1}; // past the collectives' `cut` elements
  std::exception_ptr comm_failure;
  try {
    w.enter(StreamKind::comm);
    const int before = computed.load();
    for (int batch = 0; batch < kMaxBatches; ++batch) {
      for (int r = 0; r < rounds; ++r)
        for (auto& p : probes)
          run_probe(p.call);
      w.fill(done.data, computed.load() - before > kBeside ? 1.0 : 0.0);
      w.run(done);
      if (w.tensor(done.data).item<double>() >= topo.world_size())
        break;
    }
  } catch (...) {
    comm_failure = std::current_exception();
    w.abort();
  }
  comm_done = true;
  compute.join();
  w.enter(StreamKind::compute);
  if (comm_failure)
    std::rethrow_exception(comm_failure);
  if (failure)
    std::rethrow_exception(failure);

  std::vector<std::vector<Ran>> beside_events;
  double first_comm = 1e300, last_comm = -1;
  for (const auto& p : probes) {
    beside_events.push_back(ran_in(timed, w.trace().events.size(), p.beside_name));
    for (const Ran& r : beside_events.back()) {
      first_comm = std::min(first_comm, w.trace().events[r.event].start);
      last_comm = std::max(last_comm, w.trace().events[r.event].end);
    }
  }
  const auto computing = spans(base + 1000);
  std::vector<double> during;
  double first_compute = 1e300, last_compute = -1;
  for (const auto& [step, ab] : computing) {
    if (ab.first >= first_comm && ab.second <= last_comm)
      during.push_back(ab.second - ab.first);
    first_compute = std::min(first_compute, ab.first);
    last_compute = std::max(last_compute, ab.second);
  }
  const auto share = [](const std::vector<double>& a, const std::vector<double>& b) {
    return a.empty() || b.empty()
               ? std::nullopt
               : std::optional(std::clamp(1.0 - expected_time(a) / expected_time(b), 0.0, 0.9));
  };
  Interference result{share(alone, during), {}};
  for (std::size_t k = 0; k < probes.size(); ++k) {
    // The loop computes back to back, so a collective inside its first and last repeat ran
    // beside compute all along.
    const auto took = from_last_start(beside_events[k]);
    std::vector<double> beside;
    for (std::size_t j = 0; j < took.size(); ++j) {
      const auto& e = w.trace().events[beside_events[k][j].event];
      if (e.start >= first_compute && e.end <= last_compute)
        beside.push_back(took[j]);
    }
    if (const auto s = share(probes[k].alone, beside))
      result.compute_slows_comm[calibration_op_name(ops[k])] = *s;
  }
  return result;
}

// Stores a loop's shares for each kind it measured (interference_by_op), none where it measured
// none.
void keep_shares(scenario::Calibration& cal, const Interference& apart,
                 std::initializer_list<CollectiveOp> ops) {
  for (const auto op : ops) {
    const std::string name = calibration_op_name(op);
    auto& shares = cal.interference_by_op[name];
    shares.comm_interference = apart.comm_slows_compute;
    if (const auto it = apart.compute_slows_comm.find(name); it != apart.compute_slows_comm.end())
      shares.compute_interference = it->second;
    if (!shares.comm_interference && !shares.compute_interference)
      cal.interference_by_op.erase(name);
  }
}

// How much longer the first collective a stream issues after waiting for the other stream's
// signal takes than the ones issued right after it (hw::GpuSpec's collective_handoff_wait_s). The
// run's shape: a thread computing as a run's compute thread does runs forward and then backward
// layer by layer, signalling after each layer as DDP's buckets are; this thread waits for each
// signal and all-reduces one element three times, as a layer's buckets are. On one H100 the
// first reduce-scatter of each layer's buckets took 0.18-1.08 ms, the two after it 20-90 us,
// where one-element all-reduces back to back beside compute waited 1 us more than alone; this
// measured 470-492 us first, 31-63 us next (one CPU worker: 13.3 and 5.5 us).
struct HandoffWaits {
  std::optional<double> collective; // hw::GpuSpec's collective_handoff_wait_s
  std::optional<double> compute;    // and compute_handoff_wait_s
};

HandoffWaits measure_handoff_wait(RealWorker& w, const Topology& topo, BufferId params,
                                  BufferId grads, BufferId scratch, int layers) {
  // With peers, the first all-reduce after a signal also waits for the slowest rank's backward
  // (2 CPU workers: 1.47 ms on one rank, 0.12 ms on the other, 85 us for the next ones): skew,
  // not the hand-off. So each probe counts from its last member's start, as the per-op table
  // counts a run's collectives (trace/op_costs.h).
  // Every other signal, the thread fills one element instead, three times, as ACCO fills its
  // counts after the gradients' signal (the fill's first op after the wait: compute_handoff_wait).
  // The fills are timed as a run times them (RealWorker::start_ops_when_ready): the first from
  // the signal, so it holds the woken thread's wait for its core. Timed from when the thread got
  // to it, a CPU's first fill was 3 us longer than the next ones, where ACCO's and DPU's fills in
  // the runs took 24-28 us against 5 us predicted (mlp, 2 workers on 2 cores).
  constexpr int kRepeats = 12, kPerSignal = 3, kSignal = 9001;
  struct RunTiming {
    RealWorker& w;
    explicit RunTiming(RealWorker& worker) : w(worker) { w.start_ops_when_ready(true); }
    ~RunTiming() { w.start_ops_when_ready(false); }
    RunTiming(const RunTiming&) = delete;
    RunTiming& operator=(const RunTiming&) = delete;
  } run_timing(w);
  CollectiveCall probe;
  probe.op = CollectiveOp::all_reduce;
  probe.group = &topo.world();
  probe.data = Slice{scratch, 0, 1};
  std::exception_ptr failure;
  std::thread compute([&] {
    try {
      lower_compute_thread_priority(w.on_cpu());
      w.enter(StreamKind::compute);
      for (int r = 0; r < kRepeats; ++r) {
        w.forward({0, layers}, {6000 + r, 0}, params);
        for (int l = layers - 1; l >= 0; --l) {
          w.backward({l, l + 1}, {6000 + r, 0}, params, grads);
          w.notify(kSignal, l);
        }
      }
    } catch (...) {
      failure = std::current_exception();
      w.abort();
    }
  });
  std::exception_ptr comm_failure;
  const std::size_t from = w.trace().events.size();
  try {
    w.enter(StreamKind::comm);
    for (int i = 0; i < kRepeats * layers; ++i) {
      w.await(kSignal);
      for (int k = 0; k < kPerSignal; ++k) {
        if (i % 2 == 1) {
          w.fill(Slice{scratch, 1, 1}, static_cast<double>(k));
          continue;
        }
        probe.name = k == 0 ? "hand-off probe first" : "hand-off probe next";
        w.run(probe);
      }
    }
  } catch (...) {
    comm_failure = std::current_exception();
    w.abort();
  }
  compute.join();
  w.enter(StreamKind::compute);
  if (failure)
    std::rethrow_exception(failure);
  if (comm_failure)
    std::rethrow_exception(comm_failure);
  std::vector<std::size_t> probes;
  std::vector<double> starts;
  std::vector<double> fill_first, fill_next;
  {
    const Trace& t = w.trace(); // on a GPU this waits for the probes: their times are then known
    const std::string fill = op_label(MemoryOp::fill).name;
    for (std::size_t i = from; i < t.events.size(); ++i) {
      const auto& e = t.events[i];
      if (t.name_of(e.name).starts_with("hand-off probe ")) {
        probes.push_back(i);
        starts.push_back(e.start);
      } else if (e.stream == StreamKind::comm && t.name_of(e.name) == fill) {
        // The first of each signal's three follows a wait on this stream's previous event.
        const bool first = (fill_first.size() + fill_next.size()) % kPerSignal == 0;
        (first ? fill_first : fill_next).push_back(e.end - e.start);
      }
    }
  }
  HandoffWaits waits;
  if (!fill_first.empty() && !fill_next.empty())
    waits.compute = std::max(0.0, expected_time(fill_first) - expected_time(fill_next));
  const auto last = last_member_starts(w, topo.world(), starts);
  std::vector<double> first, next;
  const Trace& t = w.trace();
  for (std::size_t k = 0; k < probes.size(); ++k) {
    const auto& e = t.events[probes[k]];
    (t.name_of(e.name) == "hand-off probe first" ? first : next)
        .push_back(e.end - std::clamp(last[k], e.start, e.end));
  }
  if (!first.empty() && !next.empty())
    waits.collective = std::max(0.0, expected_time(first) - expected_time(next));
  return waits;
}

// What the start of each collective kind in `ops` costs this worker's compute (hw::GpuSpec's
// collective_start_cost_by_op). On a CPU worker the issuing thread copies Gloo's pieces, and
// Gloo's thread and the kernel's TCP stack begin the first one, above the compute thread's
// priority but not all the time: FSDP's forward of 0.25 ms took 0.63-0.8 ms beside its
// all-gather's start (mlp, 2 workers, 100 Mbit/s), a forward of 1.6 ms lost 0.6 ms, where the
// share of a long transfer (comm_interference) priced 0.27 ms. Measured on fills on a thread
// computing as a run's compute thread does, each alone and beside a collective, every rank at
// once, the pairs interleaved, four ways per kind: fills as long as the model's longest layer
// pass (`beside_s`, at least 2 ms, at most 40 ms: back-to-back fills of about 2 ms timed as one)
// with the collective started once the fill is under way, shards of `piece` and 4 x `piece`
// elements (Gloo's pieces, at most what `capacity` holds): the cost, a line in the bytes. As long
// as a layer (start_probe_fills), because a start's work is not over in 2 ms: gpt-tiny's FSDP
// units (a block's forward of 15 ms) took 4-6 ms longer beside their all-gathers' starts over
// 100 Mbit/s (0.9 MB shards in pieces of 262 KB) than with the all-gathers held back until each
// forward had ended; fills of 2 ms priced the start at 0.3-0.5 ms, fills of 20-32 ms at 1.8-3.2
// ms. The same fill with the larger collective started 3 ms before it (its start's work done, its
// data moving, outlasting the fill): what the transfer alone takes, subtracted (the simulator
// slows compute by the transfer's own share, comm_interference, beside every transfer); and
// fills of about 0.4 ms (shorter than the start's work) with the larger started under way: the
// share of the compute's speed the start's work takes (the larger: ProcessGroupGloo's two threads
// each begin a piece of a call of several, as the runs' calls are). A fill, not a layer: a gpt's
// block took 15-80 ms alone within one loop on a 2-core machine, more than the start costs (and
// fills lost nothing beside gpt-wide's all-gathers, where its units' passes took 3-10% longer
// than with the all-gathers held back: what a start costs a matmul is not all measured here).
// None where the smaller collective lasts less than 10 ms by the profile's fit of its kind
// (`lasts`, seconds for an op over an array of so many bytes, the all-gather's output; loopback):
// there its start and its transfer are one, priced by the transfer's share. `scratch` and `out`
// hold `capacity` elements each.
//
// The transfer's share measured here (`transfer_shares`) replaces the interference loop's where
// both are: compute beside a moving transfer and alone in interleaved pairs, where the loop
// times its compute alone first and beside later, so the machine's drift between the two lands
// in the share (mlp over 100 Mbit/s: the loop's all-gather share 0 to 0.24 over seven profiles
// of one build, ACCO's forward predicted 33% slow at 0.2, where the pairs found 0.0-0.03). The
// compute of those pairs is the model's forward + backward (`model_pass`, lasting about
// `model_pass_s`) beside a call of the kind that outlasts it: fills beside a moving transfer lost
// 0.0-0.03 of their speed over 100 Mbit/s (gpt-wide), where ACCO's and DPU's forwards and backwards
// beside their rounds ran 10-14% slower than priced and fitted that many fewer micro-batches
// (issue 66.5): a fill streams memory, a layer's matmuls reuse caches that the transfer's threads
// and the kernel's TCP stack evict each time they take the core. The fills' own loss beside a
// moving transfer still nets the fills' start costs below.
struct StartCosts {
  std::map<std::string, hw::GpuSpec::StartCost> costs;
  std::map<std::string, double> transfer_shares; // by calibration op name
};

StartCosts measure_start_costs(RealWorker& w, const Topology& topo, BufferId scratch, BufferId out,
                               std::int64_t capacity, std::int64_t piece,
                               std::vector<CollectiveOp> ops,
                               const std::function<double(CollectiveOp, double)>& lasts,
                               double beside_s, const std::function<void(int)>& model_pass,
                               double model_pass_s) {
  StartCosts result;
  auto& costs = result.costs;
  const int world = topo.world_size();
  const std::int64_t large = std::max<std::int64_t>(1, std::min(4 * piece, capacity / world));
  const std::array<std::int64_t, 2> shards{std::max<std::int64_t>(1, large / 4), large};
  // A call's data: the shard for an all-gather, the whole array for the others.
  const auto data_elements = [&](CollectiveOp op, std::int64_t shard) {
    return op == CollectiveOp::all_gather ? shard : shard * world;
  };
  std::erase_if(ops, [&](CollectiveOp op) {
    return lasts(op, static_cast<double>(shards[0] * world) * 4) < 10e-3;
  });
  if (world < 2 || ops.empty())
    return result;
  // The model probes' calls: each kind's shard that outlasts a pass, with room for the call's
  // start (kBefore) and the pass running slower beside it; rank 0's on every rank (each timed its
  // own layers and link, and a collective's calls must be of one size).
  const std::int64_t most = std::max<std::int64_t>(1, capacity / world);
  for (std::size_t k = 0; k < ops.size(); ++k)
    w.fill(Slice{scratch, static_cast<std::int64_t>(k), 1},
           static_cast<double>(
               outlasting_shard(large, most, 2 * model_pass_s + 10e-3, [&](std::int64_t elements) {
                 return lasts(ops[k], static_cast<double>(elements) * world * 4);
               })));
  CollectiveCall agreement;
  agreement.op = CollectiveOp::broadcast;
  agreement.group = &topo.world();
  agreement.peer = 0;
  agreement.name = "start cost agreement";
  agreement.data = Slice{scratch, 0, static_cast<std::int64_t>(ops.size())};
  w.run(agreement);
  std::vector<std::int64_t> model_shards;
  for (std::size_t k = 0; k < ops.size(); ++k)
    model_shards.push_back(std::clamp<std::int64_t>(
        std::llround(w.tensor(Slice{scratch, static_cast<std::int64_t>(k), 1}).item<double>()), 1,
        most));
  // The fills' sizes from one timed fill of up to 1M elements (the second of two).
  const std::int64_t sizing = std::min<std::int64_t>(capacity, 1 << 20);
  w.fill(Slice{scratch, 0, sizing}, 0.0);
  w.fill(Slice{scratch, 0, sizing}, 0.0);
  const auto& sized = w.trace().events.back();
  const double per_element = std::max(sized.end - sized.start, 1e-6) / static_cast<double>(sizing);
  const auto elements_for = [&](double seconds) {
    return std::clamp<std::int64_t>(std::llround(seconds / per_element), 1024, 64 << 20);
  };
  const std::int64_t long_fill = elements_for(2e-3), short_fill = elements_for(0.4e-3);
  // A long probe is this many long fills back to back (a buffer of 40 ms would take ~0.5 GB).
  const int long_fills = start_probe_fills(beside_s, 2e-3);
  const BufferId fills = w.declare({"start_cost_probe", MemoryCategory::buffers, long_fill, 4});
  constexpr int kPairs = 12;
  constexpr std::chrono::microseconds kUnderWay{50}, kBefore{3000};
  constexpr int kModelStep = 60000; // the model probes' steps (apart from other loops')
  // Probe i: its fill's elements, and the collective started beside it (every odd i), under way
  // or before.
  struct Probe {
    std::int64_t elements = 1;
    int fills = 1; // back to back, timed as one
    std::optional<CollectiveCall> call;
    bool before = false;
    bool model = false; // the model's forward + backward instead of fills
  };
  enum Way : std::size_t { kSmall, kLarge, kShort, kMoving, kModel, kWays };
  std::vector<Probe> probes;
  for (std::size_t o = 0; o < ops.size(); ++o)
    for (std::size_t way = 0; way < kWays; ++way) {
      const CollectiveOp op = ops[o];
      const std::int64_t shard = way == kModel ? model_shards[o] : shards[way == kSmall ? 0 : 1];
      CollectiveCall call;
      call.op = op;
      call.group = &topo.world();
      call.name = "start cost probe";
      call.data = Slice{scratch, 0, data_elements(op, shard)};
      if (op == CollectiveOp::all_gather)
        call.out = Slice{out, 0, shard * world};
      else if (op == CollectiveOp::reduce_scatter)
        call.out = Slice{out, 0, shard};
      const std::int64_t elements = way == kShort ? short_fill : long_fill;
      const int repeats = way == kShort ? 1 : long_fills;
      const bool model = way == kModel;
      for (int r = 0; r < kPairs; ++r) {
        probes.push_back({elements, repeats, std::nullopt, false, model});
        probes.push_back({elements, repeats, call, way == kMoving || model, model});
      }
    }
  // The fill of probe i has begun (`started`), has ended (`done`); `go`: probe i may begin.
  std::mutex m;
  std::condition_variable cv;
  int go = -1, started = -1, done = -1;
  bool quit = false;
  const int total = static_cast<int>(probes.size());
  std::exception_ptr failure;
  std::thread compute([&] {
    try {
      lower_compute_thread_priority(w.on_cpu());
      w.enter(StreamKind::compute);
      for (int i = 0; i < total; ++i) {
        {
          std::unique_lock lock(m);
          cv.wait(lock, [&] { return go >= i || quit; });
          if (quit)
            return;
          started = i;
        }
        cv.notify_all();
        const Probe& probe = probes[static_cast<std::size_t>(i)];
        if (probe.model)
          model_pass(kModelStep + i);
        else
          for (int k = 0; k < probe.fills; ++k)
            w.fill(Slice{fills, 0, probe.elements}, 0.0);
        {
          std::lock_guard lock(m);
          done = i;
        }
        cv.notify_all();
      }
    } catch (...) {
      failure = std::current_exception();
      std::lock_guard lock(m);
      started = done = total;
      cv.notify_all();
    }
  });
  std::exception_ptr comm_failure;
  const std::size_t from = w.trace().events.size();
  try {
    w.enter(StreamKind::comm);
    for (int i = 0; i < total; ++i) {
      const Probe& probe = probes[static_cast<std::size_t>(i)];
      barrier(w, topo.world());
      CommHandle handle;
      if (probe.call && probe.before) {
        handle = w.start(*probe.call);
        std::this_thread::sleep_for(kBefore);
      }
      {
        std::unique_lock lock(m);
        go = i;
        cv.notify_all();
        cv.wait(lock, [&] { return started >= i; });
      }
      // This thread's waking took the core from the fill before it took its start time; the fill
      // has it back while this one sleeps, then loses it to the start.
      std::this_thread::sleep_for(kUnderWay);
      if (probe.call && !probe.before)
        handle = w.start(*probe.call);
      {
        std::unique_lock lock(m);
        cv.wait(lock, [&] { return done >= i; });
      }
      w.wait(handle);
    }
  } catch (...) {
    comm_failure = std::current_exception();
    w.abort();
  }
  {
    std::lock_guard lock(m);
    quit = true;
  }
  cv.notify_all();
  compute.join();
  w.enter(StreamKind::compute);
  if (comm_failure)
    std::rethrow_exception(comm_failure);
  if (failure)
    std::rethrow_exception(failure);

  // Each fill's time from where its pair's collective started under way (`lead`; the alone one
  // counts from there too), and each collective's.
  const std::size_t n = probes.size();
  std::vector<double> took(n, 0.0), began(n, 0.0), lead(n, 0.0);
  const Trace& t = w.trace();
  const std::string fill = op_label(MemoryOp::fill).name;
  std::vector<double> issued, ended;
  for (std::size_t i = from, f = 0, k = 0; i < t.events.size(); ++i) {
    const auto& e = t.events[i];
    const bool pass = e.category == OpCategory::forward || e.category == OpCategory::backward;
    if (e.stream == StreamKind::compute && f < n &&
        (probes[f].model ? pass : t.name_of(e.name) == fill)) {
      if (k == 0)
        began[f] = e.start;
      took[f] = e.end - began[f];
      // A model probe ends with its backward, a fill probe with its last fill.
      if (probes[f].model ? e.category == OpCategory::backward
                          : ++k == static_cast<std::size_t>(probes[f].fills)) {
        k = 0;
        ++f;
      } else if (probes[f].model) {
        k = 1;
      }
    } else if (t.name_of(e.name) == "start cost probe") {
      issued.push_back(e.start);
      ended.push_back(e.end);
    }
  }
  for (std::size_t i = 1, c = 0; i < n && c < issued.size(); i += 2, ++c)
    if (!probes[i].before)
      lead[i] = lead[i - 1] = std::clamp(issued[c] - began[i], 0.0, took[i]);
  // A way's pairs, each fill beside its collective against the one alone just before it (the
  // machine drifts by more than the costs over the loop): the median of `f(alone, beside)`.
  const auto paired = [&](std::size_t k, Way way, auto f) {
    std::vector<double> values;
    const std::size_t first = (k * kWays + way) * 2 * kPairs;
    for (std::size_t i = first; i < first + 2 * kPairs; i += 2)
      if (took[i] - lead[i] > 0)
        values.push_back(f(took[i] - lead[i], took[i + 1] - lead[i + 1]));
    return values.empty() ? 0.0 : median(values);
  };
  // A way's pairs' times, alone and beside, where the beside one's call outlasted its compute.
  const auto pairs = [&](std::size_t k, Way way) {
    std::pair<std::vector<double>, std::vector<double>> times;
    const std::size_t first = (k * kWays + way) * 2 * kPairs;
    for (std::size_t i = first; i < first + 2 * kPairs; i += 2) {
      const std::size_t call = i / 2; // the calls, one per pair, in the probes' order
      if (call < ended.size() && ended[call] >= began[i + 1] + took[i + 1]) {
        times.first.push_back(took[i]);
        times.second.push_back(took[i + 1]);
      }
    }
    return times;
  };
  for (std::size_t k = 0; k < ops.size(); ++k) {
    // The transfer's weight against the compute's 1 (what a fill lost beside a moving one, per
    // second of it), and each start's cost net of it, what the fill lost beyond that.
    const auto [fills_alone, fills_beside] = pairs(k, kMoving);
    const double transfer = paired_transfer_weight(fills_alone, fills_beside).value_or(0.0);
    // What the model's passes lost beside one: the kind's comm_interference (the fills' where no
    // call outlasted a pass).
    const auto [passes_alone, passes_beside] = pairs(k, kModel);
    result.transfer_shares[calibration_op_name(ops[k])] =
        paired_transfer_share(passes_alone, passes_beside).value_or(transfer / (1 + transfer));
    const auto lost = [&](double alone, double beside) { return beside - alone * (1 + transfer); };
    const auto bytes = [&](Way way) {
      return static_cast<double>(probes[(k * kWays + way) * 2 * kPairs + 1].call->data.count) * 4;
    };
    const double weight = std::max(0.0, paired(k, kShort, [&](double alone, double beside) {
                                     return beside / alone - 1 - transfer;
                                   }));
    const auto line = start_cost_line(bytes(kSmall), paired(k, kSmall, lost), bytes(kLarge),
                                      paired(k, kLarge, lost));
    if (!line)
      continue;
    auto& cost = costs[calibration_op_name(ops[k])];
    cost.fixed_s = line->fixed_s;
    cost.per_byte_s = line->per_byte_s;
    // Weights add: what the short fill lost beyond the transfer's weight is the start's.
    cost.share = std::clamp(weight / (1 + weight), hw::GpuSpec::StartCost::kLeastShare,
                            hw::GpuSpec::StartCost::kMostShare);
  }
  return result;
}

// The communication stream's share of the device while both streams compute (hw::GpuSpec's
// comm_stream_share): the whole model's optimizer step on this thread, as the communication stream
// (ACCO's and DPU's update runs there beside the next forward), over buffers of its own, while a
// thread computing as the run's compute thread does (lower_compute_thread_priority) runs forward +
// backward. The steps that ran entirely beside compute took `step_alone` (the price the simulator
// gives the step) / share each. On a CPU the compute thread's lower priority gives the update most
// of the core (ACCO's step beside a forward: 7.6 ms for a 6.1 ms step, where an even split
// predicted 12.2 ms); on a GPU, how the two streams' kernels share the SMs.
std::optional<double> measure_comm_stream_share(RealWorker& w, BufferId params, BufferId grads,
                                                std::int64_t n, int layers, const ProfileOptions& o,
                                                double step_alone) {
  if (step_alone <= 0)
    return std::nullopt;
  const BufferId step_params = w.declare({"profile_step_params", MemoryCategory::buffers, n, 4});
  const BufferId step_grads = w.declare({"profile_step_grads", MemoryCategory::buffers, n, 4});
  const BufferId step_state =
      w.declare({"profile_step_state", MemoryCategory::optimizer_state, n, 4});
  auto step = [&](int r) {
    w.optimizer_step(OptimizerStep{.params = Slice{step_params, 0, n},
                                   .grads = Slice{step_grads, 0, n},
                                   .state = Slice{step_state, 0, n},
                                   .grad_scale = 1e-6,
                                   .step = r});
  };
  w.enter(StreamKind::comm);
  step(3000); // first touches: the state's allocation
  std::atomic<bool> computing{false}, stop{false};
  std::exception_ptr failure;
  std::thread compute([&] {
    try {
      lower_compute_thread_priority(w.on_cpu());
      w.enter(StreamKind::compute);
      for (int r = 0; !stop.load() && r < 100000; ++r) {
        w.forward({0, layers}, {4000 + r, 0}, params);
        computing = true;
        w.backward({0, layers}, {4000 + r, 0}, params, grads);
      }
    } catch (...) {
      failure = std::current_exception();
    }
    computing = true;
  });
  while (!computing.load())
    std::this_thread::yield();
  const std::size_t from = w.trace().events.size();
  const int steps =
      repeats_for(o, step_alone) + 2; // the first and last may straddle compute's ends
  for (int r = 1; r <= steps; ++r)
    step(3000 + r);
  stop = true;
  compute.join();
  w.enter(StreamKind::compute);
  if (failure)
    std::rethrow_exception(failure);
  const auto& t = w.trace();
  double first_compute = 1e300, last_compute = -1;
  for (const auto& e : t.events)
    if ((e.category == OpCategory::forward || e.category == OpCategory::backward) &&
        e.step >= 4000 && e.step < 5000) {
      first_compute = std::min(first_compute, e.start);
      last_compute = std::max(last_compute, e.end);
    }
  std::vector<double> beside;
  for (std::size_t i = from; i < t.events.size(); ++i) {
    const auto& e = t.events[i];
    if (e.category == OpCategory::optimizer && e.step > 3000 && e.start >= first_compute &&
        e.end <= last_compute)
      beside.push_back(e.end - e.start);
  }
  if (beside.empty())
    return std::nullopt;
  return std::clamp(step_alone / expected_time(beside), 0.05, 0.95);
}

// Each replicator phase the algorithms run (o.issued_replicator_phases; DeMo's and FlexDeMo's
// encode and decode + update), timed as a step runs them: a Replicator over one piece of buffers of
// its own encodes, exchanges over the world group where the use's group is the world (the same
// collectives on every rank; elsewhere nothing is exchanged and the other workers' blocks stay
// empty), and decodes and updates; at the smallest and largest piece issued (a quarter of it where
// there is one size). A fixed cost per call and a cost per element, by price_name
// (runtime/replicator_use.h).
std::map<std::string, hw::ModelSpec::PhasePrice>
measure_replicator_phases(RealWorker& w, const Topology& topo, const ProfileOptions& o,
                          Slice model_params, Slice model_grads) {
  // Both phases of a use are timed together: keyed by the encode's use.
  struct Sizes {
    std::int64_t smallest = 0, largest = 0;
    std::set<ReplicatorPhase::Kind> phases;
  };
  std::map<ReplicatorUse, Sizes> sizes;
  for (const auto& [size, calls] : o.issued_replicator_phases) {
    ReplicatorUse both = size.use;
    both.phase = ReplicatorPhase::Kind::encode;
    auto [it, fresh] = sizes.try_emplace(both, Sizes{size.elements, size.elements, {}});
    it->second.smallest = std::min(it->second.smallest, size.elements);
    it->second.largest = std::max(it->second.largest, size.elements);
    it->second.phases.insert(size.use.phase);
  }
  std::map<std::string, hw::ModelSpec::PhasePrice> prices;
  for (const auto& [use, issued] : sizes) {
    const std::int64_t largest = issued.largest;
    if (largest < 1)
      continue;
    const std::int64_t small =
        issued.smallest < largest ? issued.smallest : std::max<std::int64_t>(1, largest / 4);
    // The steps a run calls it on: ones that exchange, or (diloco's kind) ones that do not.
    std::vector<int> steps;
    for (int s = 0; steps.size() < 1000 && s < 1000000; ++s)
      if (use.config.exchanges(s) == use.exchanged || use.group_size == 1)
        steps.push_back(s);
    if (steps.empty())
      continue;
    const bool exchange = use.exchanged && use.group_size == topo.world_size();
    // Without an exchange the group only sizes the exchange region and says whether there was one.
    std::vector<int> members;
    for (int i = 0; i < std::max(1, use.group_size); ++i)
      members.push_back(w.rank() + i);
    const Group alone(1 << 20, members);
    const Group& group = exchange ? topo.world() : alone;
    const BufferId slot = w.declare({"profile_replicator_count", MemoryCategory::buffers, 1, 4});
    std::map<ReplicatorPhase::Kind, std::array<double, 2>> at; // expected time at small, largest
    for (const auto& [i, elements] : {std::pair{0, small}, {1, largest}}) {
      const BufferId params =
          w.declare({"profile_replicator_params", MemoryCategory::buffers, elements, 4});
      const BufferId grads =
          w.declare({"profile_replicator_grads", MemoryCategory::buffers, elements, 4});
      const BufferId momentum =
          w.declare({"profile_replicator_momentum", MemoryCategory::optimizer_state, elements, 4});
      // The model's own parameters and gradients (a backward ran), as a run's replicator has them.
      if (elements <= model_grads.count) {
        w.copy(Slice{model_params.buffer, model_params.offset, elements},
               Slice{params, 0, elements});
        w.copy(Slice{model_grads.buffer, model_grads.offset, elements}, Slice{grads, 0, elements});
      } else {
        w.fill(Slice{grads, 0, elements}, 1e-3);
      }
      Replicator replicator(
          w, use.config, group,
          {{Slice{grads, 0, elements}, Slice{params, 0, elements}, Slice{momentum, 0, elements}}},
          1.0);
      const auto once = [&](int r) {
        const int step = steps[static_cast<std::size_t>(r) % steps.size()];
        replicator.encode(step);
        if (exchange)
          replicator.exchange(step);
        replicator.decode_and_update(step);
      };
      once(0); // first touches
      const std::size_t from = w.trace().events.size();
      const auto started = std::chrono::steady_clock::now();
      for (int r = 1; r <= o.repeats; ++r)
        once(r);
      const double one =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count() /
          std::max(1, o.repeats);
      // Every rank exchanges as often: rank 0's count.
      const int total =
          exchange ? agreed_repeats(w, group, o, one, Slice{slot, 0, 1}) : repeats_for(o, one);
      for (int r = o.repeats + 1; r <= total; ++r)
        once(r);
      const auto timed = durations(w.trace(), from);
      for (const auto phase : issued.phases) {
        ReplicatorPhase label;
        label.config = use.config;
        label.phase = phase;
        const auto it = timed.find(op_label(label).name);
        at[phase][static_cast<std::size_t>(i)] =
            it == timed.end() ? 0.0 : expected_time(it->second);
      }
    }
    // Per element that the phase transforms (priced_elements: DeMo's whole blocks).
    const double x0 = priced_elements(use.config, small);
    const double x1 = priced_elements(use.config, largest);
    for (const auto& [phase, t] : at) {
      const double per_element = x1 > x0 ? std::max(0.0, (t[1] - t[0]) / (x1 - x0)) : 0.0;
      ReplicatorUse priced = use;
      priced.phase = phase;
      prices[price_name(priced)] = {std::max(0.0, t[1] - per_element * x1), per_element};
    }
  }
  return prices;
}

// Tensor parallelism in situ (issue 65.9): each layer's forward and backward layer by layer with
// its TP all-reduces inline (Megatron's f and g, blocking on the compute thread as in a run, every
// rank of the TP group in lockstep) and, interleaved repeat by repeat, the same layers without
// them; a layer's TP collectives cost it the difference, per micro-batch. Priced on the links
// instead, the collectives came to 4.7 ms a micro-batch on 4 CPU workers sharing 2 cores, where
// the run's layers took 26 ms more than the profile's (a worker waits at each of the 21 blocking
// all-reduces for a partner descheduled by the worker that shares its core).
template <class LayerByLayer>
void time_tensor_comm(RealWorker& w, RealContext& ctx, const ProfileOptions& o,
                      const Lockstep& together, const LayerByLayer& layer_by_layer,
                      scenario::Calibration& cal) {
  const Group& tensor = ctx.topology.group(o.tensor_group);
  const auto pg = ctx.group(tensor, StreamKind::compute);
  const auto reduce = [&](torch::Tensor& t, bool max) {
    std::vector<torch::Tensor> v{t};
    c10d::AllreduceOptions a;
    a.reduceOp = max ? c10d::ReduceOp::MAX : c10d::ReduceOp::SUM;
    pg->allreduce(v, a)->wait(ctx.timeout);
  };
  // Even steps without the collectives, odd ones with them: the machine's drift over the loop
  // moves both alike.
  constexpr int kTensorStep = 70000;
  const std::size_t from = repeat_timed(w, o, together, [&](int r) {
    ctx.model.set_tensor_reduce({});
    layer_by_layer(kTensorStep + 2 * r);
    // Both halves start together: the ranks' ends of the first drift apart by milliseconds on a
    // shared CPU, which the second's first all-reduce (the embedding's) would otherwise absorb
    // (98 ms of it in one profile, 4 workers on 2 busy cores).
    if (together.group != nullptr)
      barrier(w, *together.group);
    ctx.model.set_tensor_reduce(reduce);
    layer_by_layer(kTensorStep + 2 * r + 1);
    ctx.model.set_tensor_reduce({});
  });
  std::array<std::map<std::string, std::vector<double>>, 2> passes; // without, with
  const Trace& t = w.trace();
  for (std::size_t i = from; i < t.events.size(); ++i) {
    const auto& e = t.events[i];
    if ((e.category == OpCategory::forward || e.category == OpCategory::backward) &&
        e.step >= kTensorStep + 2) // past the untimed first repeat
      passes[(e.step - kTensorStep) % 2][t.name_of(e.name)].push_back(e.end - e.start);
  }
  const auto& model = ctx.scenario.model.spec;
  const auto extra = [&](int l, LayerPass pass) {
    const std::string name = op_label(model, {l, l + 1}, pass).name;
    return std::max(0.0, expected_time(passes[1][name]) - expected_time(passes[0][name]));
  };
  cal.tensor_parallel = tensor.size();
  for (std::size_t l = 0; l < cal.layers.size(); ++l) {
    cal.layers[l].tp_forward_s = extra(static_cast<int>(l), LayerPass::forward);
    cal.layers[l].tp_backward_s = extra(static_cast<int>(l), LayerPass::backward);
  }
}

} // namespace

scenario::Calibration profile_costs(RealContext& ctx, int rank, const ProfileOptions& o) {
  const auto& s = ctx.scenario;
  RealWorker w(ctx, rank);
  w.enter(StreamKind::compute);
  const auto layout = param_layout(s.model.spec);
  const std::int64_t n = layout.total();
  const BufferId params = w.declare({"params", MemoryCategory::params, n, 4});
  const BufferId grads = w.declare({"grads", MemoryCategory::grads, n, 4});
  const BufferId state = w.declare({"optimizer_state", MemoryCategory::optimizer_state, n, 4});
  const int layers = static_cast<int>(s.model.spec.layers.size());
  const Lockstep together{
      &ctx.topology.world(),
      Slice{w.declare({"profile_repeat_count", MemoryCategory::buffers, 1, 4}), 0, 1}};
  // CPU workers of one host share its memory system (a GPU has its own): the memory-bound ops are
  // measured with every worker running them at once and, here, one worker at a time too.
  const bool shared_memory = !ctx.device.is_cuda() && ctx.topology.world_size() > 1;

  // Forward and backward layer by layer as a run computes them (repeat r): every op below is
  // timed after them, in the state a run leaves the caches in.
  const auto layer_by_layer = [&](int r) {
    const MicroBatch mb{r, 0};
    for (int l = 0; l < layers; ++l)
      w.forward({l, l + 1}, mb, params);
    for (int l = layers - 1; l >= 0; --l)
      w.backward({l, l + 1}, mb, params, grads);
  };
  // And every worker's memory-bound op after it at once: left to the workers' compute, whose
  // ends differ by milliseconds, a 1.6 ms copy overlapped the other worker's in some repeats and
  // not in others (its price then anywhere between the alone and the contended one: the whole
  // model's step profiled at 11.5 ms in one validate and 17.2 ms in the next).
  const auto layer_by_layer_then_together = [&](int r) {
    layer_by_layer(r);
    if (shared_memory)
      barrier(w, ctx.topology.world());
  };

  scenario::Calibration cal;
  cal.source = "overlapsim profile";
  if (shared_memory)
    cal.memory_shared_by = ctx.topology.world_size();
  cal.device = ctx.device.is_cuda()
                   ? fmt::format("cuda:{}", ctx.device.index())
                   : fmt::format("cpu ({} intra-op thread)", at::get_num_threads());
  cal.model = s.model.spec.name;
  cal.micro_batch = s.training.micro_batch;

  // Layer by layer, as DDP's bucketed backward runs them, each repeat a whole step: forward,
  // backward, optimizer step and copy (the data movement of ACCO's hand-off). Timed each in a loop
  // of its own, the ops ran 10-30% faster than inside a run (the optimizer's reads and writes,
  // 16 bytes a parameter under AdamW, evict the weights and activations from the caches); inside
  // the step they agree within a few percent (mlp, 1 worker: forward 2.02 vs 2.10 ms, backward
  // 3.49 vs 3.62 ms, optimizer 2.38 vs 2.62 ms; before: 1.83, 3.17 and 1.99 ms).
  const std::size_t first_timed = repeat_timed(w, o, together, [&](int r) {
    layer_by_layer_then_together(r);
    w.optimizer_step(OptimizerStep{.params = Slice{params, 0, n},
                                   .grads = Slice{grads, 0, n},
                                   .state = Slice{state, 0, n},
                                   .grad_scale = 1e-6,
                                   .step = r});
    w.copy(Slice{grads, 0, n}, Slice{state, 0, n});
  });
  // The ops by the names the worker gave them (runtime/op_label.h).
  auto d = durations(w.trace(), first_timed);
  const std::string optimizer_step = op_label(OptimizerStep{}).name;
  cal.optimizer_time_per_param_s = expected_time(d[optimizer_step]) / static_cast<double>(n);
  // The shards the algorithms step (ZeRO-1, ACCO, FSDP: 1/world; FlexDeMo: 1/GPUs per node), each
  // after a forward and backward as in a run (issue 30.1): where the optimizer state fits a cache,
  // a shard steps several times faster than its share of the full step.
  // And the parameter counts the algorithms step (optimizer_step_sizes): CDP's stages, FSDP's
  // units, a one-tensor stage whose step is all the call's own cost.
  std::vector<std::int64_t> shards;
  for (const int k : {ctx.topology.world_size(), s.cluster.gpus_per_node})
    if (k > 1 && n / k > 0 && std::find(shards.begin(), shards.end(), n / k) == shards.end())
      shards.push_back(n / k);
  // The shards first, as before the issued counts were measured (a 2,048,640-parameter shard
  // stepped in 12-13.5 ms after smaller steps had warmed the start of a state they shared, 15-16
  // ms first, and 16.7-17 ms in ZeRO-1's, ACCO's and DPU's runs; now each size has its own).
  const auto stepped = optimizer_step_sizes(o, n, shards);
  for (const std::int64_t p : stepped)
    if (std::find(shards.begin(), shards.end(), p) == shards.end())
      shards.push_back(p);
  // Each size steps optimizer state of its own: over a prefix of one shared state, the elements
  // that smaller sizes had stepped counted other steps than the rest, and the store applied the
  // step once per run of equal counts (a 7,087,872-parameter step over five such runs profiled
  // 609 us on an H100, against 250 us in FSDP's run).
  std::map<std::int64_t, BufferId> states{{n, state}};
  const auto state_of = [&](std::int64_t size) {
    auto [it, added] = states.try_emplace(size, state);
    if (added)
      it->second = w.declare({fmt::format("profile_optimizer_state_{}", size),
                              MemoryCategory::optimizer_state, size, 4});
    return Slice{it->second, 0, size};
  };
  const auto step_of = [&](std::int64_t shard, int r) {
    w.optimizer_step(OptimizerStep{.params = Slice{params, 0, shard},
                                   .grads = Slice{grads, 0, shard},
                                   .state = state_of(shard),
                                   .grad_scale = 1e-6,
                                   .step = r});
  };
  // On a GPU the algorithms step their shards one after another (ZeRO-1's buckets, FSDP's units),
  // each issued while the one before runs, so a step's events time the device's work; a step
  // issued to an idle device times the host issuing its kernels instead (H100, gpt-tiny: a
  // 1,536-parameter step profiled at 188 us alone, 31.5 us as FSDP's last unit). Each repeat steps
  // the size twice there and times the second.
  const int steps_per_repeat = ctx.device.is_cuda() ? 2 : 1;
  for (const std::int64_t shard : shards) {
    const std::size_t from = repeat_timed(w, o, together, [&](int r) {
      layer_by_layer_then_together(r);
      for (int k = 0; k < steps_per_repeat; ++k)
        step_of(shard, r);
    });
    cal.optimizer_points.emplace_back(
        static_cast<double>(shard),
        expected_time(every_nth(durations(w.trace(), from)[optimizer_step], steps_per_repeat)));
  }
  std::sort(cal.optimizer_points.begin(), cal.optimizer_points.end());
  // Each size again one worker at a time, and the whole model's step (ACCO's and DPU's shards
  // stepped beside the other worker's compute in 4.9 ms where both stepping took 7.3 ms).
  if (shared_memory) {
    auto sizes = shards;
    sizes.push_back(n);
    for (const std::int64_t size : sizes) {
      const std::size_t from = repeat_timed(w, o, together, [&](int r) {
        layer_by_layer(r);
        one_rank_at_a_time(w, ctx.topology.world(), [&] { step_of(size, r); });
      });
      cal.optimizer_alone_points.emplace_back(
          static_cast<double>(size), expected_time(durations(w.trace(), from)[optimizer_step]));
    }
    std::sort(cal.optimizer_alone_points.begin(), cal.optimizer_alone_points.end());
    cal.optimizer_alone_points.erase(
        std::unique(cal.optimizer_alone_points.begin(), cal.optimizer_alone_points.end(),
                    [](const auto& a, const auto& b) { return a.first == b.first; }),
        cal.optimizer_alone_points.end());
  }
  // ACCO's estimate at the parameters it updates (the most called count), where an algorithm
  // makes one, against the committed step measured just the same: its own price, not the step's
  // (issue 30.3).
  std::int64_t estimated = 0, most_calls = 0;
  for (const auto& [size, calls] : o.issued)
    if (size.op == kOptimizerEstimate && calls > most_calls && size.bytes >= 1 && size.bytes <= n) {
      estimated = std::llround(size.bytes);
      most_calls = calls;
    }
  if (estimated > 0) {
    const std::int64_t shard = estimated;
    const BufferId estimate = w.declare(
        {"profile_estimate", MemoryCategory::buffers, std::max<std::int64_t>(1, shard), 4});
    const auto timed = [&](bool commit) {
      const std::size_t from = repeat_timed(w, o, together, [&](int r) {
        layer_by_layer_then_together(r);
        w.optimizer_step(OptimizerStep{.params = Slice{params, 0, shard},
                                       .grads = Slice{grads, 0, shard},
                                       .state = state_of(shard),
                                       .grad_scale = 1e-6,
                                       .step = r,
                                       .out = commit ? Slice{} : Slice{estimate, 0, shard},
                                       .commit = commit});
      });
      return expected_time(
          durations(w.trace(), from)[op_label(OptimizerStep{.commit = commit}).name]);
    };
    const double committed = timed(true);
    if (committed > 0)
      cal.optimizer_estimate_ratio = timed(false) / committed;
  }
  if (!shards.empty())
    cal.optimizer_points.emplace_back(static_cast<double>(n), expected_time(d[optimizer_step]));
  cal.memory_bandwidth_Bps =
      2.0 * 4 * static_cast<double>(n) / expected_time(d[op_label(MemoryOp::copy).name]);
  // Each element-wise op its own price (issue 30.3): accumulate and fill borrowed the copy's
  // bandwidth (ACCO's accumulate was priced 3.5x its measured time on a CPU, a fill of DPU's few
  // counts at nothing against its dispatch cost). Each timed over one element and over the model:
  // a fixed cost per call and a cost per byte (the bytes SimWorker counts: copy reads and writes,
  // accumulate reads two and writes one, fill writes, a master's reload reads the parameters and
  // writes the master). Each one-element op right after the whole model's: on a GPU it then
  // queues behind a running kernel, as a run's fills and copies do, and is timed as the device
  // runs it; issued to an idle stream (after the other ops of one element) its events timed the
  // host's launch instead (H100: a fill of one element 38 us profiled, 3.7-4.4 us in ACCO's and
  // DPU's runs).
  // Each op in a loop of its own, right after forward + backward as a run's are, into a buffer of
  // its own: timed one after another over the same buffers, each found the previous one's bytes
  // in the caches (the mlp's accumulate right after a copy into the same buffer profiled at 92
  // GB/s, 48 GB/s in a loop of its own, and ran 1.8-2.3x the first price in ACCO's and CDP's
  // runs). After a whole step instead (the optimizer's update too) the copy priced 5.9e-11 s a
  // byte against 3.4e-11 and DDP's copies came out 79% slow: a run's copies follow the backward.
  // Every worker at once, then (shared_memory) one worker at a time: the cost per byte alone.
  {
    const BufferId written = w.declare(
        {"profile_element_wise", MemoryCategory::buffers, std::max<std::int64_t>(1, n), 4});
    const auto run_op = [&](MemoryOp op, std::int64_t count) {
      switch (op) {
      case MemoryOp::copy:
        return w.copy(Slice{grads, 0, count}, Slice{written, 0, count});
      case MemoryOp::accumulate:
        return w.accumulate(Slice{grads, 0, count}, Slice{written, 0, count});
      case MemoryOp::fill:
        return w.fill(Slice{written, 0, count}, 0);
      case MemoryOp::reload_master:
        return w.reload_master(Slice{params, 0, count}, Slice{state, 0, count});
      }
    };
    const auto whole_then_one = [&](MemoryOp op) {
      for (const std::int64_t count : {n, std::int64_t{1}})
        run_op(op, count);
    };
    // (fixed, per byte) of `op` from its events after `from`.
    const auto price = [&](MemoryOp op, double bytes_per_element,
                           std::size_t from) -> std::optional<std::pair<double, double>> {
      const auto timed = durations(w.trace(), from);
      const auto it = timed.find(op_label(op).name);
      if (it == timed.end())
        return std::nullopt;
      std::vector<double> all, one; // each repeat: the whole model's, then one element's
      for (std::size_t i = 0; i < it->second.size(); ++i)
        (i % 2 == 0 ? all : one).push_back(it->second[i]);
      const double fixed = expected_time(one);
      const double bytes = bytes_per_element * static_cast<double>(n - 1);
      return std::pair{fixed, bytes > 0 ? std::max(0.0, expected_time(all) - fixed) / bytes : 0.0};
    };
    for (const auto& [op, bytes_per_element] : {std::pair{MemoryOp::copy, 8.0},
                                                {MemoryOp::accumulate, 12.0},
                                                {MemoryOp::fill, 4.0},
                                                {MemoryOp::reload_master, 8.0}}) {
      const std::string name = op_label(op).name;
      const auto together_price =
          price(op, bytes_per_element, repeat_timed(w, o, together, [&](int r) {
                  layer_by_layer_then_together(r);
                  whole_then_one(op);
                }));
      if (!together_price)
        continue;
      cal.memory_ops[name] = {together_price->first, together_price->second};
      if (!shared_memory)
        continue;
      const auto alone_price =
          price(op, bytes_per_element, repeat_timed(w, o, together, [&](int r) {
                  layer_by_layer(r);
                  one_rank_at_a_time(w, ctx.topology.world(), [&] { whole_then_one(op); });
                }));
      if (alone_price && alone_price->second > 0)
        cal.memory_ops[name].alone_per_byte_s = alone_price->second;
    }
  }
  cal.replicator_phases =
      measure_replicator_phases(w, ctx.topology, o, Slice{params, 0, n}, Slice{grads, 0, n});
  // DiLoCo's outer step over the whole model, after a period's last inner step as in a run
  // (issue 30.3): on a CPU it makes several element-wise passes and reloads the inner optimizer's
  // master copy, which a copy's bandwidth prices 12x short (gpt-tiny, 2 workers: 3.5 vs 41.6 ms).
  // Without the inner optimizer step before it (its parameters and state warm in the caches) it
  // measured 16.8 ms against 9.4 ms in the run.
  {
    const BufferId anchor = w.declare({"anchor", MemoryCategory::optimizer_state, n, 4});
    const BufferId momentum = w.declare({"outer_momentum", MemoryCategory::optimizer_state, n, 4});
    w.copy(Slice{params, 0, n}, Slice{anchor, 0, n});
    w.fill(Slice{momentum, 0, n}, 0);
    const auto inner_then_outer = [&](int r) {
      w.optimizer_step(OptimizerStep{.params = Slice{params, 0, n},
                                     .grads = Slice{grads, 0, n},
                                     .state = Slice{state, 0, n},
                                     .grad_scale = 1e-6,
                                     .step = r});
      w.outer_step(OuterStep{.params = Slice{params, 0, n},
                             .anchor = Slice{anchor, 0, n},
                             .momentum = Slice{momentum, 0, n},
                             .inner_state = Slice{state, 0, n},
                             .step = r});
    };
    const auto per_param = [&](std::size_t from) {
      return expected_time(durations(w.trace(), from)[op_label(OuterStep{}).name]) /
             static_cast<double>(n);
    };
    cal.outer_step_time_per_param_s = per_param(repeat_timed(w, o, together, [&](int r) {
      layer_by_layer_then_together(r);
      inner_then_outer(r);
    }));
    // And one worker at a time: the outer steps follow the parameters' all-reduce, whose members
    // end apart, so in a run they overlap only in part (gpt-tiny over 100 Mbit/s: 4.5-5.2 ms
    // measured against 7.3-8.0 ms priced at the price of both at once).
    if (shared_memory)
      cal.outer_step_alone_time_per_param_s = per_param(repeat_timed(w, o, together, [&](int r) {
        layer_by_layer(r);
        one_rank_at_a_time(w, ctx.topology.world(), [&] { inner_then_outer(r); });
      }));
  }
  // Micro-batches back to back, as ACCO's and DPU's rounds and gradient accumulation run them:
  // each repeat a micro-batch after the step's optimizer and copy, as above (even steps from
  // kBackToBackStep), then one right after its backward (odd steps), their ratio taken within
  // the loop: against the layers' times from the other loops, the machine's drift between them
  // (0.90 and 0.99 on the mlp in two profiles) weighed as much as the caches. Kept out of the
  // layers' times below.
  constexpr int kBackToBackStep = 50000;
  const std::size_t back_to_back_from = repeat_timed(w, o, together, [&](int r) {
    layer_by_layer(kBackToBackStep + 2 * r);
    layer_by_layer(kBackToBackStep + 2 * r + 1);
    w.optimizer_step(OptimizerStep{.params = Slice{params, 0, n},
                                   .grads = Slice{grads, 0, n},
                                   .state = Slice{state, 0, n},
                                   .grad_scale = 1e-6,
                                   .step = r});
    w.copy(Slice{grads, 0, n}, Slice{state, 0, n});
  });
  // Each layer's forward and backward from every loop above (each ran them layer by layer before
  // its op, a step's worth of state after them), not the first loop's alone: the samples then
  // span the whole compute part of the profile, not its first second or two, and this machine's
  // speed drifts by more than the ops' own spread (gpt-tiny, two CPU workers, 60 repeats back to
  // back: forward + backward 230-274 ms, the first loop's five repeats of one profile 97.5 ms of
  // forward a repeat against 89.1 ms in a loop a few seconds later).
  {
    std::map<std::string, std::vector<double>> passes;
    const Trace& t = w.trace();
    for (std::size_t i = first_timed; i < t.events.size(); ++i) {
      const auto& e = t.events[i];
      // Step 0 is each loop's untimed first repeat.
      if ((e.category == OpCategory::forward || e.category == OpCategory::backward) &&
          e.step >= 1 && e.step < kBackToBackStep)
        passes[t.name_of(e.name)].push_back(e.end - e.start);
    }
    // The machine's drift over those loops, recorded beside the prices (issue 62.11).
    if (const double drift = compute_drift(passes); std::isfinite(drift))
      cal.compute_drift = drift;
    const auto& model = s.model.spec;
    const double b = s.training.micro_batch;
    for (int l = 0; l < layers; ++l) {
      const auto timed = [&](LayerPass pass) {
        return expected_time(passes[op_label(model, {l, l + 1}, pass).name]);
      };
      cal.layers.push_back(scenario::LayerTiming{model.layers[static_cast<std::size_t>(l)].name,
                                                 timed(LayerPass::forward) / b,
                                                 timed(LayerPass::backward) / b});
    }
    // The micro-batch after a backward over the one after the step, each layer's passes by name.
    std::array<std::map<std::string, std::vector<double>>, 2> passes_after; // step, backward
    for (std::size_t i = back_to_back_from; i < t.events.size(); ++i) {
      const auto& e = t.events[i];
      if ((e.category == OpCategory::forward || e.category == OpCategory::backward) &&
          e.step >= kBackToBackStep + 2) // past the untimed first repeat
        passes_after[(e.step - kBackToBackStep) % 2][t.name_of(e.name)].push_back(e.end - e.start);
    }
    std::array<double, 2> after{}; // after the step, after a backward
    for (int l = 0; l < layers; ++l)
      for (const auto pass : {LayerPass::forward, LayerPass::backward})
        for (std::size_t k = 0; k < 2; ++k)
          after[k] += expected_time(passes_after[k][op_label(model, {l, l + 1}, pass).name]);
    if (after[0] > 0 && after[1] > 0)
      cal.back_to_back_compute_ratio = std::clamp(after[1] / after[0], 0.25, 4.0);
  }
  cal.compute_jitter_sigma_1s =
      compute_jitter_sigma_1s(w, ctx.topology.world(), first_timed, back_to_back_from);
  if (o.tensor_group.size() > 1)
    time_tensor_comm(w, ctx, o, together, layer_by_layer, cal);

  // Links: across nodes on the world group, inside a node on node 0's group.
  const Topology& topo = ctx.topology;
  // Up to the gradients' size, and at least 4 MiB: below that, loopback times are mostly noise.
  const double max_bytes =
      o.max_bytes > 0 ? o.max_bytes : std::max({4.0 * n, 4.0 * 1024 * 1024, 2 * o.min_bytes});
  double largest = max_bytes; // and any size the algorithms issue
  for (const auto& [size, calls] : o.issued)
    largest = std::max(largest, size.bytes);
  w.enter(StreamKind::comm);
  const BufferId scratch =
      w.declare({"profile_buffer", MemoryCategory::buffers, std::llround(largest / 4) + 1, 4});
  const BufferId scratch_out =
      w.declare({"profile_output", MemoryCategory::buffers, std::llround(largest / 4) + 1, 4});
  // Every collective the algorithms use, each fitted on its own: the link's fit is the
  // all-reduce's, and on a CPU Gloo's reduce-scatter (an all-to-all here) and all-gather cost
  // what they cost, not what the all-reduce implies (scenario::collective_bytes_map).
  auto measure = [&](const Group& group, std::optional<scenario::LinkFit>& link,
                     std::vector<scenario::LinkFit>& ops) {
    for (const auto op :
         {CollectiveOp::all_reduce, CollectiveOp::reduce_scatter, CollectiveOp::all_gather}) {
      const std::string name = calibration_op_name(op);
      auto fit =
          robust_fit(name, group.size(), sweep(w, group, scratch, scratch_out, o, max_bytes, op));
      if (op == CollectiveOp::all_reduce)
        link = fit;
      else
        ops.push_back(fit);
    }
    const auto messages = ping_pong(w, group, scratch, o, max_bytes);
    const double reverse_busy = reverse_busy_delay(w, group, scratch_out, o, max_bytes);
    if (!messages.empty()) {
      ops.push_back(robust_fit("send_recv", 2, messages));
      ops.back().reverse_busy_s = reverse_busy;
    }
  };
  if (topo.world_size() > 1) {
    if (topo.nodes() > 1)
      measure(topo.world(), cal.inter_node, cal.inter_node_ops);
    else
      measure(topo.world(), cal.intra_node, cal.intra_node_ops);
  } else {
    // One worker: no link, but each collective still costs what the library does over one rank
    // (Calibration::local_ops), in place (the all-reduce always) and out of place.
    for (const auto op :
         {CollectiveOp::all_reduce, CollectiveOp::reduce_scatter, CollectiveOp::all_gather})
      for (const bool in_place : {true, false}) {
        if (op == CollectiveOp::all_reduce && !in_place)
          continue;
        auto fit =
            robust_fit(calibration_op_name(op), 1,
                       sweep(w, topo.world(), scratch, scratch_out, o, max_bytes, op, in_place));
        fit.in_place = in_place;
        cal.local_ops.push_back(std::move(fit));
      }
  }
  if (topo.nodes() > 1 && topo.gpus_per_node() > 1 && topo.node_of(rank) == 0) {
    const auto points =
        sweep(w, topo.intra_node(0), scratch, scratch_out, o, max_bytes, CollectiveOp::all_reduce);
    cal.intra_node = robust_fit("all_reduce", topo.gpus_per_node(), points);
  }
  w.enter(StreamKind::compute);
  // The all-reduce's shares stand for every kind; a reduce-scatter and an all-gather, where the
  // algorithms issue them, measured in a loop of their own (on a CPU, gpt-tiny: compute kept
  // 0.13-0.16 of its speed beside them, 0.27-0.32 beside all-reduces of the same elements; the
  // all-reduce lost 0.13-0.15 of its speed beside compute, they 0.0-0.10).
  const auto interference = measure_interference(w, topo, params, grads, scratch, scratch_out, n,
                                                 layers, o, {CollectiveOp::all_reduce}, 1000);
  cal.comm_interference = interference.comm_slows_compute;
  if (const auto it = interference.compute_slows_comm.find("all_reduce");
      it != interference.compute_slows_comm.end())
    cal.compute_interference = it->second;
  const bool sharded = std::any_of(o.issued.begin(), o.issued.end(), [](const auto& issued) {
    return issued.first.ranks > 1 &&
           (issued.first.op == "reduce_scatter" || issued.first.op == "all_gather");
  });
  if (sharded) {
    const auto apart =
        measure_interference(w, topo, params, grads, scratch, scratch_out, n, layers, o,
                             {CollectiveOp::reduce_scatter, CollectiveOp::all_gather}, 7000);
    keep_shares(cal, apart, {CollectiveOp::reduce_scatter, CollectiveOp::all_gather});
  }
  // Messages (CDP's relays) too, where sent: on loopback Gloo a message beside a backward moved
  // as fast as alone (1.0-2.5 ms against the ping-pong's 0.85-2.1 ms), where the all-reduce's
  // share (0.33) priced it 1.5-1.7x as long.
  const bool messages = std::any_of(o.issued.begin(), o.issued.end(), [](const auto& issued) {
    return issued.first.op == "send_recv";
  });
  if (messages) {
    const auto apart = measure_interference(w, topo, params, grads, scratch, scratch_out, n, layers,
                                            o, {CollectiveOp::send}, 13000);
    keep_shares(cal, apart, {CollectiveOp::send});
  }
  // What each kind's start costs the compute beside it, on CPU workers (a GPU's host issues
  // beside the device's compute).
  if (!ctx.device.is_cuda()) {
    std::vector<CollectiveOp> started;
    for (const auto op :
         {CollectiveOp::all_reduce, CollectiveOp::reduce_scatter, CollectiveOp::all_gather})
      if (std::any_of(o.issued.begin(), o.issued.end(), [&](const auto& issued) {
            return issued.first.ranks > 1 && issued.first.op == calibration_op_name(op);
          }))
        started.push_back(op);
    // How long a call lasts by the link's fit of its kind (the all-reduce's: the link's own).
    const auto& link = topo.nodes() > 1 ? cal.inter_node : cal.intra_node;
    const auto& fits = topo.nodes() > 1 ? cal.inter_node_ops : cal.intra_node_ops;
    const auto lasts = [&](CollectiveOp op, double bytes) {
      const std::string name = calibration_op_name(op);
      for (const auto& fit : fits)
        if (fit.op == name)
          return fit.local_seconds_for(bytes);
      return link ? link->local_seconds_for(bytes) : 0.0;
    };
    // The longest layer pass: the most of a start any one op beside it sees.
    double longest = 0;
    for (const auto& l : cal.layers)
      longest = std::max({longest, l.fwd_time_per_sample_s, l.bwd_time_per_sample_s});
    // The model's forward + backward, what ACCO's and DPU's rounds run beside their transfers.
    double pass_s = 0;
    for (const auto& l : cal.layers)
      pass_s += (l.fwd_time_per_sample_s + l.bwd_time_per_sample_s) * s.training.micro_batch;
    const auto model_pass = [&](int step) {
      w.forward({0, layers}, {step, 0}, params);
      w.backward({0, layers}, {step, 0}, params, grads);
    };
    auto measured =
        measure_start_costs(w, topo, scratch, scratch_out, n, ctx.gloo_piece_elements, started,
                            lasts, longest * s.training.micro_batch, model_pass, pass_s);
    cal.collective_start_costs = std::move(measured.costs);
    for (const auto& [name, share] : measured.transfer_shares)
      cal.interference_by_op[name].comm_interference = share;
  }
  const auto handoff = measure_handoff_wait(w, topo, params, grads, scratch, layers);
  cal.collective_handoff_wait_s = handoff.collective;
  cal.compute_handoff_wait_s = handoff.compute;
  cal.comm_stream_share =
      measure_comm_stream_share(w, params, grads, n, layers, o, expected_time(d[optimizer_step]));
  return cal;
}

} // namespace overlapsim::real
