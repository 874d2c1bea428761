#include "algorithms/cdp.h"

#include "algorithms/cdp_link_order.h"
#include "algorithms/cdp_mp.h"
#include "algorithms/cdp_zero.h"
#include "algorithms/model_state.h"
#include "algorithms/options.h"
#include "scenario/loader.h"

#include <algorithm>
#include <array>
#include <deque>
#include <fmt/format.h>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <utility>

namespace overlapsim {

std::vector<LayerRange> split_stages(const hw::ModelSpec& model, int stages) {
  const int layers = static_cast<int>(model.layers.size());
  if (stages < 1 || layers < stages)
    throw std::invalid_argument(fmt::format(
        "cannot cut a model of {} layers into {} stages of equal compute: CDP gives each GPU of "
        "its ring one stage; use a model with at least {} layers, or at most {} GPUs",
        layers, stages, stages, layers));
  std::vector<double> cost;
  double total = 0;
  for (const auto& l : model.layers) {
    cost.push_back(l.fwd_flops_per_sample + l.bwd_flops_per_sample);
    total += cost.back();
  }
  // Greedy: close stage k once it reaches k/N of the total, leaving a layer for every later stage.
  std::vector<LayerRange> out;
  int first = 0;
  double done = 0;
  for (int k = 0; k < stages; ++k) {
    int last = first + 1;
    done += cost[static_cast<std::size_t>(first)];
    const double target = total * (k + 1) / stages;
    while (last < layers - (stages - k - 1) &&
           done + cost[static_cast<std::size_t>(last)] / 2 <= target) {
      done += cost[static_cast<std::size_t>(last)];
      ++last;
    }
    if (k == stages - 1)
      last = layers;
    out.push_back({first, last});
    first = last;
  }
  return out;
}

namespace {

enum class Rule { v1, v2 };
enum class Setting { multi_gpu, single_gpu, zero, model_parallel };

// kParams: the comm stream applied (step, stage). kReduced: the last worker's complete sum of a
// stage is in a send slot (slot, stage). kPending: a CDP-v2 sum the compute stream applies itself
// (slot, stage, step below). kApplied / kFreed: a relay / send slot is free again. kGrad: CDP-v2,
// this worker's gradient of a stage is in a send slot (step, slot, stage).
enum Signal : int { kParams = 0, kReduced = 1, kPending = 2, kApplied = 3, kFreed = 4, kGrad = 5 };
enum Tag : int { kPartial = 0, kComplete = 1 };

std::int64_t encode(int step, int stage) {
  return (static_cast<std::int64_t>(step) << 20) | stage;
}
int step_of(std::int64_t v) {
  return static_cast<int>(v >> 20);
}
int stage_of(std::int64_t v) {
  return static_cast<int>(v & 0xfffff);
}

struct Options {
  Rule rule;
  Setting setting;
  bool cyclic;
};

struct Partial { // a lap-one receive of `stage` into receive slot `slot`
  int stage = 0;
  CommHandle handle;
  int slot = 0;
};
struct Pending { // a CDP-v2 sum the compute stream applies (in relay slot `slot`)
  int step = 0, stage = 0, slot = 0;
};

class CdpProgram final : public WorkerProgram {
public:
  CdpProgram(Worker& w, Options o) : w_(w), o_(o) {
    const auto& s = w.scenario();
    n_ = o.setting == Setting::multi_gpu ? w.topology().world_size() : s.training.grad_accum;
    stages_ = split_stages(s.model.spec, n_);
    state_ = declare_model_state(w, param_layout(s.model.spec).total());
    const double p = scenario::dtype_bytes(s.model.dtype);
    const std::int64_t total = state_.layout.total();
    const int world = w.topology().world_size();
    const int me = w.rank();
    // CDP-v1 (eq. CDP-v1, PipeDream-2BW's rule) computes on the previous step's parameters while
    // the newest are written: two versions, the second counted as parameters. CDP-v2 keeps one
    // ("we do not need to keep a copy of two parameters, as the parameters in memory are always
    // the freshest available", Sec. 3.2; Table 1, multi-GPU + Cyclic: Psi_P per GPU, as DP).
    if (o.cyclic && o.setting == Setting::multi_gpu && o.rule == Rule::v1) {
      versions_[0] = state_.params;
      versions_[1] = w.declare({"previous_params", MemoryCategory::params, total, p});
    } else if (o.rule == Rule::v1 && o.cyclic) {
      w.declare({"previous_params", MemoryCategory::params, total, p});
    }
    if (o.setting == Setting::multi_gpu && o.cyclic) {
      // The sums travel in stage-sized slots (Sec. 4.2: one stage's gradient per transfer), each
      // reused only once its last transfer and update are done: lap one's receives and sends on
      // the compute stream, lap two's relays on the communication stream. CDP-v1's last worker
      // holds the step's N complete sums until its barrier.
      for (const auto& r : stages_)
        slot_ = std::max(slot_, state_.layout.layers(state_.grads, r).count);
      const bool last = me == world - 1 && world > 1;
      send_slots_ = kSendSlots + (last && o.rule == Rule::v1 ? n_ : 0);
      if (me > 0)
        recv_ = w.declare({"ring_lap1_recv", MemoryCategory::buffers, kRecvSlots * slot_, p});
      send_ = w.declare({"ring_lap1_send", MemoryCategory::buffers, send_slots_ * slot_, p});
      if (!last && world > 1)
        relay_ = w.declare({"ring_lap2_relay", MemoryCategory::buffers, kRelaySlots * slot_, p});
      send_handles_.resize(static_cast<std::size_t>(send_slots_));
      send_busy_.assign(static_cast<std::size_t>(send_slots_), false);
      relay_handles_.resize(kRelaySlots);
      relay_pending_.assign(kRelaySlots, false);
      token_ = w.declare({"start_token", MemoryCategory::buffers, 1, p});
    }
    version_.assign(static_cast<std::size_t>(n_), -1);
    // CDP-v2 runs its link schedule set ahead (algorithms/cdp_link_order.h): the stage times of
    // the cyclic schedule, in FLOPs as split_stages balances them.
    scheduled_ = o.setting == Setting::multi_gpu && o.cyclic && o.rule == Rule::v2 && world > 1;
    if (scheduled_) {
      std::vector<double> fwd, bwd;
      for (const auto& r : stages_) {
        fwd.push_back(0), bwd.push_back(0);
        for (int l = r.first; l < r.last; ++l) {
          fwd.back() += s.model.spec.layers[static_cast<std::size_t>(l)].fwd_flops_per_sample;
          bwd.back() += s.model.spec.layers[static_cast<std::size_t>(l)].bwd_flops_per_sample;
        }
      }
      timeline_.emplace(std::move(fwd), std::move(bwd));
    }
    if (o.setting == Setting::multi_gpu && world > 1) {
      prev_ = (me + world - 1) % world;
      next_ = (me + 1) % world;
      to_prev_ = &w.topology().group({std::min(prev_, me), std::max(prev_, me)});
      to_next_ = &w.topology().group({std::min(next_, me), std::max(next_, me)});
    }
  }

  void run_compute() override {
    if (o_.setting == Setting::single_gpu)
      o_.cyclic ? single_gpu_cyclic() : single_gpu_simultaneous();
    else
      o_.cyclic ? multi_gpu_cyclic() : multi_gpu_simultaneous();
  }

  void run_comm() override {
    if (o_.setting != Setting::multi_gpu || !o_.cyclic || w_.topology().world_size() == 1)
      return;
    if (scheduled_)
      return scheduled_comm();
    // The second lap: the complete gradient of each stage comes round the ring, every worker
    // updates the stage with it and passes it on (the last worker started it).
    if (w_.rank() == w_.topology().world_size() - 1)
      last_worker_lap_two();
    else
      relay_lap_two();
  }

private:
  // CDP-v2's communication stream: both laps, run in the precomputed deadline order of
  // algorithms/cdp_link_order.h. Sends go out one at a time, each once the one before it is done
  // (the link carries one transfer at a time, the earliest needed first); receives are posted in
  // the same order as their slots come free. What arrives is used at once, whatever the order of
  // the sends: a partial sum is added to this worker's gradient (the last worker's complete sum
  // updates its copy), a complete sum updates the stage or goes to the compute stream (older
  // version). Before, lap one's sends left the compute stream as each partial sum was ready and
  // the relays this stream as each arrived: the two shared the link and the relays came in bursts
  // (1.51x the link at 10 GB/s on 8 workers, 8.7% idle; docs/MODEL.md).
  void scheduled_comm() {
    const int me = w_.rank(), steps = total_steps();
    const bool last = me == w_.topology().world_size() - 1;
    // One 1-element message on each pair this stream uses, in one global order (pairs sorted):
    // the real runtime makes a pair's communicator on its first use, both ends together, and
    // the schedule's first uses differ between workers (a cycle of three waited for each other
    // on 3 workers).
    std::set<std::pair<int, int>> pairs;
    auto add = [&](int peer) {
      if (peer >= 0 && peer != me)
        pairs.emplace(std::min(me, peer), std::max(me, peer));
    };
    add(me > 0 ? prev_ : -1);
    add(last ? -1 : next_);
    for (int j = 0; j < n_; ++j)
      add(lap_two_route(j).first), add(lap_two_route(j).second);
    for (const auto& [a, b] : pairs) {
      const int peer = a == me ? b : a;
      w_.run(CollectiveCall{a == me ? CollectiveOp::send : CollectiveOp::recv,
                            &pair(peer),
                            Slice{token_, 0, 1},
                            {},
                            peer,
                            3,
                            "link schedule start",
                            0});
    }
    cdp::LinkOrder sends(*timeline_, me, steps, true);
    cdp::LinkOrder partial_in(*timeline_, me, steps, false, cdp::Lap::partial);
    cdp::LinkOrder complete_in(*timeline_, me, steps, false, cdp::Lap::complete);
    using Key = std::pair<int, int>; // (step, stage)
    struct Posted {
      Key key;
      int slot = -1;
      CommHandle handle;
      bool done = false;
    };
    std::deque<Posted> partials;            // lap one's receives, in the order of the backwards
    std::map<Key, int> grads, sums;         // send slot: this worker's gradient / the sum to send
    std::vector<Posted> relay(kRelaySlots); // slot -1: free; done: received, its send to come
    struct InFlight {
      CommHandle handle;
      int slot = -1; // its send slot (-1: a relay slot)
    };
    std::map<int, InFlight> sending; // by peer: one send in flight to each
    const std::array<int, 2> signals{kGrad, kApplied};
    auto take = [&](int signal, std::int64_t v) {
      if (signal == kApplied)
        relay_pending_[static_cast<std::size_t>(v)] = false;
      else
        grads[{step_of(v), stage_of(v) & 0x3ff}] = stage_of(v) >> 10;
    };
    for (;;) {
      for (const int signal : signals)
        while (auto v = w_.poll(signal))
          take(signal, *v);
      for (auto it = sending.begin(); it != sending.end();) {
        if (!w_.test(it->second.handle)) {
          ++it;
          continue;
        }
        if (it->second.slot >= 0)
          w_.notify(kFreed, it->second.slot);
        it = sending.erase(it);
      }
      for (auto& p : partials)
        p.done = p.done || w_.test(p.handle);
      // Lap one: this worker's gradient plus the partial sum from the previous worker, in the
      // order of the backwards; on the last worker the complete sum, which updates its copy.
      for (;;) {
        const bool first = me == 0; // no partial sum to add
        if (!first && partials.empty())
          break;
        if (!first && !partials.front().done)
          break;
        const Key key =
            first ? (grads.empty() ? Key{-1, -1} : grads.begin()->first) : partials.front().key;
        const auto g = grads.find(key);
        if (g == grads.end())
          break;
        const Slice sum{send_, g->second * slot_, stage_count(key.second)};
        if (!first) {
          w_.accumulate(Slice{recv_, partials.front().slot * slot_, stage_count(key.second)}, sum);
          partials.pop_front();
        }
        if (last) {
          update(key.second, key.first, sum);
          w_.notify(kParams, encode(key.first, key.second));
        }
        sums[key] = g->second;
        grads.erase(g);
      }
      // Lap two: a complete sum updates the stage (or goes to the compute stream) on arrival.
      for (std::size_t k = 0; k < relay.size(); ++k) {
        auto& r = relay[k];
        if (r.slot < 0 || r.done || !w_.test(r.handle))
          continue;
        r.done = true;
        const auto [step, stage] = r.key;
        const Slice sum{relay_, r.slot * slot_, stage_count(stage)};
        if (applies_at_once(stage)) {
          update(stage, step, sum);
          w_.notify(kParams, encode(step, stage));
        } else {
          relay_pending_[k] = true;
          w_.notify(kPending, encode(step, (r.slot << 10) | stage));
        }
        if (lap_two_route(stage).second < 0)
          r = {};
      }
      // Receives, in deadline order as slots come free.
      while (!partial_in.empty() && static_cast<int>(partials.size()) < kRecvSlots) {
        const auto& x = partial_in.front();
        const int slot = static_cast<int>(recvs_++ % kRecvSlots);
        partials.push_back(
            {{x.step, x.stage},
             slot,
             w_.start(p2p(CollectiveOp::recv, x.stage, kPartial, x.step, prev_, *to_prev_,
                          Slice{recv_, slot * slot_, stage_count(x.stage)}))});
        partial_in.pop();
      }
      while (!complete_in.empty()) {
        const auto free = std::find_if(relay.begin(), relay.end(), [&](const Posted& r) {
          const auto k = static_cast<std::size_t>(&r - relay.data());
          return r.slot < 0 && !relay_pending_[k] && w_.test(relay_handles_[k]);
        });
        if (free == relay.end())
          break;
        const auto& x = complete_in.front();
        const int slot = static_cast<int>(free - relay.begin());
        *free = {{x.step, x.stage},
                 slot,
                 w_.start(p2p(CollectiveOp::recv, x.stage, kComplete, x.step, x.from, pair(x.from),
                              Slice{relay_, slot * slot_, stage_count(x.stage)}))};
        complete_in.pop();
      }
      // The earliest-due send whose data is here, one at a time to each peer (taken in the
      // strict order instead, a relay slot waited for a send due a step later while the sum the
      // next forward needs could not be received: a deadlock with 4 relay slots; one send in
      // flight for the whole worker, a send to a peer that had not posted its receive held up
      // the partial sum another needed: a deadlock on bandwidth-sweep.yaml).
      {
        auto relay_of = [&](const cdp::Transfer& x) {
          return std::find_if(relay.begin(), relay.end(), [&](const Posted& p) {
            return p.done && p.key == Key{x.step, x.stage};
          });
        };
        // Each peer takes a lap's sums in the order it posts their receives (deadline order),
        // so only the earliest of each (peer, lap) may go.
        std::set<std::pair<int, int>> passed;
        const auto* x = sends.first([&](const cdp::Transfer& t) {
          if (!passed.emplace(t.to, static_cast<int>(t.lap)).second || sending.contains(t.to))
            return false;
          if (t.lap == cdp::Lap::partial || last)
            return sums.contains({t.step, t.stage});
          return relay_of(t) != relay.end();
        });
        if (x != nullptr) {
          const Key key{x->step, x->stage};
          const int tag = x->lap == cdp::Lap::partial ? kPartial : kComplete;
          if (x->lap == cdp::Lap::partial || last) {
            const auto it = sums.find(key);
            sending[x->to] = {
                w_.start(p2p(CollectiveOp::send, x->stage, tag, x->step, x->to, pair(x->to),
                             Slice{send_, it->second * slot_, stage_count(x->stage)})),
                it->second};
            sums.erase(it);
          } else {
            const auto r = relay_of(*x);
            const auto k = static_cast<std::size_t>(r - relay.begin());
            relay_handles_[k] =
                w_.start(p2p(CollectiveOp::send, x->stage, tag, x->step, x->to, pair(x->to),
                             Slice{relay_, r->slot * slot_, stage_count(x->stage)}));
            sending[x->to] = {relay_handles_[k], -1};
            *r = {};
          }
          sends.take(x);
          continue;
        }
      }
      std::vector<CommHandle> handles;
      for (const auto& [peer, f] : sending)
        handles.push_back(f.handle);
      for (const auto& p : partials)
        if (!p.done)
          handles.push_back(p.handle);
      for (const auto& r : relay)
        if (r.slot >= 0 && !r.done)
          handles.push_back(r.handle);
      const bool idle_relays =
          std::all_of(relay.begin(), relay.end(), [](const Posted& r) { return r.slot < 0; });
      if (handles.empty() && sends.empty() && partial_in.empty() && complete_in.empty() &&
          idle_relays && sums.empty() && partials.empty() && grads.empty())
        break;
      const auto i = w_.wait_any_or_signal(handles, signals);
      if (i >= handles.size()) // a signal: taken here, as await would (it does not block)
        take(signals[i - handles.size()], w_.await(signals[i - handles.size()]));
    }
    for (int k = 0; k < kRelaySlots; ++k)
      free_relay_slot(k);
  }

  // The last worker: each complete sum, made in a lap-one send slot, goes to the route's first
  // worker and updates this worker's copy. The compute stream reuses the slot once its one send
  // is done, waited for only when the slot is needed again: a send whose receiver is not ready
  // yet holds up neither the next sum's send nor this worker's update of it (waited for at once,
  // the update of stage 0, which the next forward needs, waited behind stage 1's send).
  void last_worker_lap_two() {
    std::deque<std::pair<int, CommHandle>> sending; // (slot, its send)
    for (int step = 0; step < total_steps(); ++step) {
      for (int k = 0; k < n_; ++k) {
        const auto v = w_.await(kReduced);
        const int slot = step_of(v), stage = stage_of(v);
        sending.emplace_back(
            slot, pass_on_sum(step, stage, slot, Slice{send_, slot * slot_, stage_count(stage)}));
        while (static_cast<int>(sending.size()) > kSendSlots - 2) {
          w_.wait(sending.front().second);
          w_.notify(kFreed, sending.front().first);
          sending.pop_front();
        }
      }
    }
    for (auto& [slot, sent] : sending) {
      w_.wait(sent);
      w_.notify(kFreed, slot);
    }
  }

  // The other workers receive each complete sum into a relay slot and pass it on as it arrives
  // (Sec. 3.2: the last worker "directly transmits" each stage's update; Sec. 4.2 and Table 1: one
  // point-to-point step between two time steps). CDP-v2's boundary stage (N-1-i) comes straight
  // from the last worker, the others from the ring predecessor in stage order. Two receives are
  // in flight: the boundary's, posted at the start of the step, and the predecessor's next, and
  // the stream takes whichever arrives first (Worker::wait_any). Taken in stage order instead,
  // behind sums that travel more hops, the boundary's held up the last worker's send (a message
  // starts when both ends have posted it) and this worker's next forward of the stage, which
  // needs it first and has no slack; found done only between two blocking receives from the
  // predecessor, it waited for the one in progress (8 workers at 12 GB/s: 4.9% idle, 4.0% taken
  // as it arrives; docs/MODEL.md).
  void relay_lap_two() {
    std::int64_t relays = 0;
    // The next relay slot in turn, passing over one a receive still writes (the boundary's, which
    // may arrive after later sums from the predecessor have come and gone).
    std::vector<bool> receiving(kRelaySlots, false);
    auto next_slot = [&] {
      int slot = static_cast<int>(relays++ % kRelaySlots);
      while (receiving[static_cast<std::size_t>(slot)])
        slot = static_cast<int>(relays++ % kRelaySlots);
      free_relay_slot(slot);
      return slot;
    };
    struct Incoming { // a receive of a stage's complete sum into relay slot `slot`
      int stage = -1, slot = -1;
      CommHandle handle;
    };
    auto receive = [&](int step, int stage) {
      const int slot = next_slot();
      const int from = lap_two_route(stage).first;
      receiving[static_cast<std::size_t>(slot)] = true;
      return Incoming{stage, slot,
                      w_.start(p2p(CollectiveOp::recv, stage, kComplete, step, from, pair(from),
                                   Slice{relay_, slot * slot_, stage_count(stage)}))};
    };
    auto relay = [&](int step, Incoming& in) {
      receiving[static_cast<std::size_t>(in.slot)] = false;
      relay_handles_[static_cast<std::size_t>(in.slot)] = pass_on_sum(
          step, in.stage, in.slot, Slice{relay_, in.slot * slot_, stage_count(in.stage)});
      in = {};
    };
    for (int step = 0; step < total_steps(); ++step) {
      const int direct = o_.rule == Rule::v2 ? n_ - 1 - w_.rank() : -1;
      Incoming boundary, ring;
      if (direct >= 0)
        boundary = receive(step, direct);
      int stage = n_ - 1; // the predecessor's next sum, in stage order
      auto post_ring = [&] {
        if (stage == direct)
          --stage;
        if (stage >= 0)
          ring = receive(step, stage--);
      };
      post_ring();
      for (;;) {
        std::array<Incoming*, 2> live{};
        std::array<CommHandle, 2> handles;
        std::size_t count = 0;
        for (Incoming* in : {&boundary, &ring}) // the boundary first: it wins a tie
          if (in->stage >= 0) {
            live[count] = in;
            handles[count++] = in->handle;
          }
        if (count == 0)
          break;
        Incoming& arrived = *live[w_.wait_any(std::span(handles.data(), count))];
        const bool from_ring = &arrived == &ring;
        relay(step, arrived);
        if (from_ring)
          post_ring();
      }
    }
    for (int k = 0; k < kRelaySlots; ++k)
      free_relay_slot(k);
  }

  // Lap two at one worker: passes the complete sum of `stage` in `slot` on along its route
  // (before the local update: the next worker's copy does not depend on it) and applies it.
  // Returns the send, if any.
  CommHandle pass_on_sum(int step, int stage, int slot, Slice sum) {
    const int to = lap_two_route(stage).second;
    CommHandle sent;
    if (to >= 0)
      sent = w_.start(p2p(CollectiveOp::send, stage, kComplete, step, to, pair(to), sum));
    if (applies_at_once(stage)) {
      update(stage, step, sum);
      w_.notify(kParams, encode(step, stage));
    } else {
      // CDP-v2, a stage this worker runs on the older version: its forward of the next step
      // has begun or is about to, so the single copy is updated by the compute stream once
      // that step's backward of the stage is done (autograd's saved weights stay intact).
      relay_pending_[static_cast<std::size_t>(slot)] = true;
      w_.notify(kPending, encode(step, (slot << 10) | stage));
    }
    return sent;
  }

  // Lap two's route for `stage`: (the worker this one receives the complete sum from, the one it
  // passes it to), -1 where none. The last worker starts every route. Under CDP-v2 it sends
  // straight to the worker whose next forward of the stage has no slack, i = N-1-j (that forward
  // starts as the last backward of the stage ends), which relays it on in ring order: workers
  // i > N-1-j have 2 (i - (N-1-j)) time steps of slack, one per hop for each two, and the others
  // use the older version. Around the ring from worker 0 instead, the boundary worker of stage
  // j = 1 would wait for N-1 hops. CDP-v1 needs no version before the next step: ring order.
  std::pair<int, int> lap_two_route(int stage) const {
    const int world = w_.topology().world_size();
    const int last = world - 1, me = w_.rank();
    const int others = world - 1; // workers 0..N-2, in a cycle
    const int start = o_.rule == Rule::v2 ? (world - 1 - stage) % others : 0;
    auto chain = [&](int k) { return k == 0 ? last : (start + k - 1) % others; };
    int position = 0;
    while (chain(position) != me)
      ++position;
    return {position == 0 ? -1 : chain(position - 1),
            position + 1 < world ? chain(position + 1) : -1};
  }

  std::int64_t stage_count(int stage) const { return stage_grads(stage).count; }

  // Whether the communication stream updates `stage` the moment its complete sum is here: always
  // under CDP-v1 (it writes the other version) and for CDP-v2's stages j >= N - 1 - i (the next
  // forward waits for it, nothing of the stage is in flight); the others wait for the backward.
  bool applies_at_once(int stage) const {
    return o_.rule == Rule::v1 || stage >= n_ - 1 - w_.rank();
  }

  // Communication stream: waits until relay slot `k` has sent its sum and, when the compute
  // stream applies that sum, until it has.
  void free_relay_slot(int k) {
    const auto i = static_cast<std::size_t>(k);
    if (relay_handles_[i].valid())
      w_.wait(relay_handles_[i]);
    relay_handles_[i] = {};
    while (relay_pending_[i]) {
      const auto freed = static_cast<std::size_t>(w_.await(kApplied));
      relay_pending_[freed] = false;
    }
  }

  // Compute stream: waits until lap-one send slot `k` is free (its send done; on the last worker,
  // the communication stream done with the complete sum).
  void free_send_slot(int k) {
    const auto i = static_cast<std::size_t>(k);
    if (send_handles_[i].valid())
      w_.wait(send_handles_[i]);
    send_handles_[i] = {};
    while (send_busy_[i]) {
      const auto freed = static_cast<std::size_t>(w_.await(kFreed));
      send_busy_[freed] = false;
    }
  }

  // Compute stream, CDP-v2: applies the older-version sums the communication stream handed over
  // for stages with nothing in flight. `stage_done` is the stage whose backward of `step` just
  // ended, `need` a (step, stage) the next forward must have (-1 / nullopt: none).
  void apply_pending(int stage_done, int step, std::optional<std::pair<int, int>> need) {
    auto take = [&](std::int64_t v) {
      pending_.push_back({step_of(v), stage_of(v) & 0x3ff, stage_of(v) >> 10});
    };
    while (auto v = w_.poll(kPending))
      take(*v);
    // Nothing is in flight in the stages >= `stage_done` once its backward is done, nor in the
    // stages >= need's before the forward of need's stage. A sum goes in when the rule's version
    // may (step - 1 after a backward of `step`, need's step before a forward): applying every
    // one allowed, not only the stage at hand, frees the relay slots in the order they filled.
    auto ready = [&](const Pending& p) {
      return (stage_done >= 0 && p.stage >= stage_done && p.step < step) ||
             (need && p.stage >= need->second && p.step <= need->first);
    };
    for (;;) {
      for (auto it = pending_.begin(); it != pending_.end();) {
        if (!ready(*it)) {
          ++it;
          continue;
        }
        update(it->stage, it->step, Slice{relay_, it->slot * slot_, stage_count(it->stage)});
        auto& v = version_[static_cast<std::size_t>(it->stage)];
        v = std::max(v, it->step);
        w_.notify(kApplied, it->slot);
        it = pending_.erase(it);
      }
      if (!need || version_[static_cast<std::size_t>(need->second)] >= need->first)
        return;
      take(w_.await(kPending));
    }
  }

  const Group& pair(int peer) const {
    return w_.topology().group({std::min(peer, w_.rank()), std::max(peer, w_.rank())});
  }

  int total_steps() const {
    return w_.scenario().training.warmup_steps + w_.scenario().training.steps;
  }

  Slice stage_grads(int stage) const {
    return state_.layout.layers(state_.grads, stages_[static_cast<std::size_t>(stage)]);
  }

  Slice stage_slice(BufferId buffer, int stage) const {
    return state_.layout.layers(buffer, stages_[static_cast<std::size_t>(stage)]);
  }

  // The buffer holding parameter version v (the update of step v applied; -1: the initial ones).
  BufferId version_buffer(int v) const {
    return versions_[static_cast<std::size_t>((std::max(v, -1) + 1) % 2)];
  }

  CollectiveCall p2p(CollectiveOp op, int stage, int tag, int step, int peer, const Group& g,
                     Slice data) const {
    CollectiveCall c;
    c.op = op;
    c.group = &g;
    c.data = data;
    c.peer = peer;
    // The link schedule sends a peer's sums in deadline order among those ready, which need not
    // be the order the receiver posted them in: a tag per stage and lap matches each with its
    // own receive (FIFO per tag: a stage's steps go in order). 4 and up: clear of the start
    // token's 2.
    c.tag = scheduled_ ? 4 + 2 * stage + tag : tag;
    c.step = step;
    c.name = fmt::format("{} {} stage {}", op == CollectiveOp::send ? "send" : "recv",
                         tag == kPartial ? "partial grad" : "summed grad", stage);
    return c;
  }

  // Updates `stage` from the summed gradients `sum` of its N micro-batches (their mean). In the
  // multi-GPU cycle the result is parameter version `step`, written to its own buffer.
  void update(int stage, int step, Slice sum) {
    const Slice g = stage_grads(stage);
    OptimizerStep op{.params = Slice{state_.params, g.offset, g.count},
                     .grads = sum,
                     .state = Slice{state_.optimizer_state, g.offset, g.count},
                     .grad_scale = 1.0 / n_,
                     .step = step};
    if (versions_[1] >= 0)
      op.out = stage_slice(version_buffer(step), stage);
    w_.optimizer_step(op);
  }

  // The parameters micro-batch `mb` uses for `stage` at `step` (see await_params).
  BufferId params_for(int step, int stage, int mb) const {
    if (versions_[1] < 0)
      return state_.params;
    const bool fresh = o_.rule == Rule::v2 && stage >= n_ - 1 - mb;
    return version_buffer(step - (fresh ? 1 : 2));
  }

  // Blocks until this worker holds the version of `stage` that micro-batch `mb` must use at `step`.
  void await_params(int step, int stage, int mb) {
    // CDP-v2: fresh (updated by step - 1) for stages j >= N - 1 - i (0-based), else one step older.
    // CDP-v1: one step older for every stage.
    const bool fresh = o_.rule == Rule::v2 && stage >= n_ - 1 - mb;
    const int needed = step - (fresh ? 1 : 2);
    if (!applies_at_once(stage) && w_.topology().world_size() > 1) {
      apply_pending(-1, step, std::pair{needed, stage});
      return;
    }
    while (version_[static_cast<std::size_t>(stage)] < needed) {
      const auto v = w_.await(kParams);
      version_[static_cast<std::size_t>(stage_of(v))] =
          std::max(version_[static_cast<std::size_t>(stage_of(v))], step_of(v));
    }
  }

  void multi_gpu_cyclic() {
    const int world = w_.topology().world_size();
    const int me = w_.rank();
    const double samples = w_.scenario().training.micro_batch;
    // Worker i starts two time steps after worker i-1: the predecessor's token arrives once it has
    // run the forward of its first two stages.
    const Group* self_chain = world > 1 ? to_prev_ : nullptr;
    const Slice token_slice{token_, 0, 1};
    if (me > 0) {
      CollectiveCall token{CollectiveOp::recv, self_chain, token_slice, {}, prev_, 2,
                           "start token",      0};
      w_.run(token);
    }
    std::deque<Partial> partials;  // lap-one receives not yet passed on
    std::vector<CommHandle> sends; // the start token
    for (int step = 0; step < total_steps(); ++step) {
      for (int j = 0; j < n_; ++j) {
        await_params(step, j, me);
        w_.forward(stages_[static_cast<std::size_t>(j)], MicroBatch{step, 0},
                   params_for(step, j, me));
        if (step == 0 && j == std::min(1, n_ - 1) && me + 1 < world) {
          CollectiveCall token{CollectiveOp::send, to_next_, token_slice, {}, next_, 2,
                               "start token",      0};
          sends.push_back(w_.start(token));
        }
      }
      // The next worker has waited for the token since it started: its send is done by now.
      // Waited here, not after the last step: Gloo's send has no completion time of its own, and
      // waited at the end the real runtime timed it from the last relay on its group to the wait
      // (a 1-6 ms "start token" inside the measured window, which no prediction has).
      for (auto& h : sends)
        w_.wait(h);
      sends.clear();
      for (int j = n_ - 1; j >= 0; --j) {
        // At most kRecvSlots receives posted: the oldest is passed on before a slot is reused.
        while (static_cast<int>(partials.size()) >= kRecvSlots)
          pass_on(partials, step, 1);
        if (scheduled_) {
          // CDP-v2: the gradient goes to a send slot and the communication stream does the rest
          // in its link schedule (scheduled_comm).
          w_.backward(stages_[static_cast<std::size_t>(j)], MicroBatch{step, 0},
                      params_for(step, j, me), state_.grads);
          const int slot = static_cast<int>(sends_++ % send_slots_);
          free_send_slot(slot);
          w_.copy(stage_grads(j), Slice{send_, slot * slot_, stage_count(j)});
          send_busy_[static_cast<std::size_t>(slot)] = true;
          w_.notify(kGrad, encode(step, (slot << 10) | j));
          if (!applies_at_once(j))
            apply_pending(j, step, std::nullopt);
          continue;
        }
        Partial partial{j, {}, static_cast<int>(recvs_++ % kRecvSlots)};
        if (me > 0 && world > 1)
          partial.handle = w_.start(p2p(CollectiveOp::recv, j, kPartial, step, prev_, *to_prev_,
                                        Slice{recv_, partial.slot * slot_, stage_count(j)}));
        w_.backward(stages_[static_cast<std::size_t>(j)], MicroBatch{step, 0},
                    params_for(step, j, me), state_.grads);
        partials.push_back(partial);
        // Every worker waits for the partial sum: the complete sum the ring makes is what the
        // boundary worker's next forward of the stage waits for, so each partial goes on at once
        // instead of after the next stage's backward when it is a little late (tested, not
        // waited for, one that arrived just after the test lost a whole backward at every hop;
        // waiting shifts this worker later instead, towards the stagger that needs no wait).
        // (Lap one stays on the compute streams: a real runtime matches a send and its receive
        // on the same stream's communicator.)
        pass_on(partials, step);
        if (o_.rule == Rule::v2 && world > 1 && !applies_at_once(j))
          apply_pending(j, step, std::nullopt);
      }
      pass_on(partials, step);
      // CDP-v1's barrier: the last worker releases every stage's complete sum together.
      for (auto v : std::exchange(reduced_after_barrier_, {}))
        w_.notify(kReduced, v);
      w_.step_done(step, samples);
    }
    // The last step's older-version sums (no next backward to wait for), so that every update
    // is applied and the communication stream gets its relay slots back.
    if (o_.rule == Rule::v2 && world > 1 && !applies_at_once(0))
      for (int j = 0; j < n_; ++j)
        if (!applies_at_once(j))
          apply_pending(-1, total_steps(), std::pair{total_steps() - 1, j});
    for (auto& h : sends)
      w_.wait(h);
    for (int k = 0; k < send_slots_; ++k)
      if (me + 1 < world)
        free_send_slot(k);
  }

  // Lap one: once a stage's partial sum from the previous worker has arrived (and this worker's own
  // backward of it is done), send the new partial sum on; the last worker hands the complete sum to
  // its communication stream instead (CDP-v1: only after the N-th micro-batch's whole backward).
  // Waits for the receives (at most `limit` of them).
  void pass_on(std::deque<Partial>& partials, int step, int limit = 1 << 30) {
    const int world = w_.topology().world_size();
    const bool last = w_.rank() == world - 1;
    while (!partials.empty() && limit-- > 0) {
      auto& [stage, handle, recv_slot] = partials.front();
      if (handle.valid())
        w_.wait(handle);
      // This worker's partial sum: its own gradient plus what the previous worker sent.
      const int slot = static_cast<int>(sends_++ % send_slots_);
      free_send_slot(slot);
      const Slice sum{send_, slot * slot_, stage_count(stage)};
      w_.copy(stage_grads(stage), sum);
      if (w_.rank() > 0 && world > 1)
        w_.accumulate(Slice{recv_, recv_slot * slot_, stage_count(stage)}, sum);
      if (world == 1) {
        update(stage, step, sum), w_.notify(kParams, encode(step, stage));
      } else if (last) {
        send_busy_[static_cast<std::size_t>(slot)] = true;
        if (o_.rule == Rule::v2)
          w_.notify(kReduced, encode(slot, stage));
        else
          reduced_after_barrier_.push_back(encode(slot, stage));
      } else {
        send_handles_[static_cast<std::size_t>(slot)] =
            w_.start(p2p(CollectiveOp::send, stage, kPartial, step, next_, *to_next_, sum));
      }
      partials.pop_front();
    }
  }

  void multi_gpu_simultaneous() {
    const double samples = w_.scenario().training.micro_batch;
    const Group& world = w_.topology().world();
    for (int step = 0; step < total_steps(); ++step) {
      for (int j = 0; j < n_; ++j)
        w_.forward(stages_[static_cast<std::size_t>(j)], MicroBatch{step, 0}, state_.params);
      for (int j = n_ - 1; j >= 0; --j)
        w_.backward(stages_[static_cast<std::size_t>(j)], MicroBatch{step, 0}, state_.params,
                    state_.grads);
      all_reduce_and_update(world, step);
      w_.step_done(step, samples);
    }
  }

  void all_reduce_and_update(const Group& world, int step) {
    const std::int64_t total = state_.layout.total();
    CollectiveCall c;
    c.op = CollectiveOp::all_reduce;
    c.group = &world;
    c.data = Slice{state_.grads, 0, total};
    c.name = "all-reduce grads";
    c.step = step;
    w_.run(c);
    w_.optimizer_step(OptimizerStep{.params = Slice{state_.params, 0, total},
                                    .grads = Slice{state_.grads, 0, total},
                                    .state = Slice{state_.optimizer_state, 0, total},
                                    .grad_scale = 1.0 / n_,
                                    .step = step});
  }

  // One device, N micro-batches: micro-batch i runs its op p (forwards 0..N-1, then backwards
  // N-1..0) at time step 2N s + 2i + p; each time step runs the ops due, in micro-batch order.
  // Training goes on past the last measured step (its micro-batches count in no step) until that
  // step ends, so the cycle stays full to the end of the measurement.
  void single_gpu_cyclic() {
    const double samples = w_.scenario().training.micro_batch;
    const Group& world = w_.topology().world();
    const int steps = total_steps();
    const int period = 2 * n_;
    bool done = false;
    for (int k = 0; !done; ++k) {
      for (int i = 0; i < n_ && !done; ++i) {
        const int t = k - 2 * i;
        if (t < 0 || t / period > steps)
          continue;
        const int step = t / period, p = t % period;
        const MicroBatch mb{step, i};
        if (p < n_) {
          w_.forward(stages_[static_cast<std::size_t>(p)], mb, state_.params);
          continue;
        }
        const int stage = period - 1 - p;
        w_.backward(stages_[static_cast<std::size_t>(stage)], mb, state_.params, state_.grads);
        if (i + 1 < n_)
          continue;
        // The N-th micro-batch completed this stage's gradient: CDP-v2 updates it at once,
        // CDP-v1 all stages after its last backward.
        if (o_.rule == Rule::v2 && w_.topology().world_size() == 1)
          update(stage, step, stage_grads(stage));
        if (stage == 0) {
          if (w_.topology().world_size() > 1)
            all_reduce_and_update(world, step);
          else if (o_.rule == Rule::v1)
            for (int j = 0; j < n_; ++j)
              update(j, step, stage_grads(j));
          w_.step_done(step, samples * n_);
          done = step + 1 == steps;
        }
      }
    }
  }

  // The DP counterpart on one device: the N micro-batches through every stage together, so the
  // activations of all of them are held at the end of the forward pass.
  void single_gpu_simultaneous() {
    const double samples = w_.scenario().training.micro_batch;
    const Group& world = w_.topology().world();
    for (int step = 0; step < total_steps(); ++step) {
      for (int j = 0; j < n_; ++j)
        for (int i = 0; i < n_; ++i)
          w_.forward(stages_[static_cast<std::size_t>(j)], MicroBatch{step, i}, state_.params);
      for (int j = n_ - 1; j >= 0; --j)
        for (int i = 0; i < n_; ++i)
          w_.backward(stages_[static_cast<std::size_t>(j)], MicroBatch{step, i}, state_.params,
                      state_.grads);
      if (w_.topology().world_size() > 1) {
        all_reduce_and_update(world, step);
      } else {
        const std::int64_t total = state_.layout.total();
        w_.optimizer_step(OptimizerStep{.params = Slice{state_.params, 0, total},
                                        .grads = Slice{state_.grads, 0, total},
                                        .state = Slice{state_.optimizer_state, 0, total},
                                        .grad_scale = 1.0 / n_,
                                        .step = step});
      }
      w_.step_done(step, samples * n_);
    }
  }

  Worker& w_;
  Options o_;
  bool scheduled_ = false;                      // CDP-v2's link schedule (scheduled_comm)
  std::optional<cdp::CyclicTimeline> timeline_; // its deadlines
  int n_ = 1;
  std::vector<LayerRange> stages_;
  ModelState state_;
  BufferId versions_[2] = {-1, -1}; // multi-GPU CDP-v1: parameter versions by parity
  // Ring slots, each one stage (the largest): enough that a transfer is rarely waited for before
  // its slot comes round again (a partial sum is received two time steps after it is sent).
  static constexpr int kRecvSlots = 3, kSendSlots = 4, kRelaySlots = 4;
  std::int64_t slot_ = 0; // elements per slot
  int send_slots_ = kSendSlots;
  BufferId recv_ = -1, send_ = -1, relay_ = -1;
  std::int64_t recvs_ = 0, sends_ = 0;
  std::vector<CommHandle> send_handles_, relay_handles_;
  std::vector<bool> send_busy_, relay_pending_;
  std::vector<Pending> pending_;
  BufferId token_ = -1;
  std::vector<int> version_; // per stage: the last step whose update this worker applied
  int prev_ = -1, next_ = -1;
  const Group* to_prev_ = nullptr;
  const Group* to_next_ = nullptr;
  std::vector<std::int64_t> reduced_after_barrier_;
};

class Cdp final : public Algorithm {
public:
  Cdp(std::string name, Options o) : name_(std::move(name)), o_(o) {}
  std::string name() const override { return name_; }
  // The single-GPU setting's GPUs are data-parallel replicas of one device's cycle (Sec. 4.2):
  // each runs the same interleaved micro-batches and meets the others only in the step's
  // all-reduce over the world, so rank classes fold them exactly (issue 64.2). The other settings
  // cut the model into one stage per GPU and pass sums point to point: worker i's stage boundary
  // (CDP-v2: N-1-i) and its place in the relay route are its own, so no two GPUs are alike
  // (docs/ARCHITECTURE.md, "Rank classes").
  bool node_symmetric() const override { return o_.setting == Setting::single_gpu; }
  std::unique_ptr<WorkerProgram> program(Worker& w) const override {
    if (o_.setting == Setting::zero)
      return make_cdp_zero_program(w, o_.cyclic);
    if (o_.setting == Setting::model_parallel)
      return make_cdp_mp_program(w, o_.cyclic);
    return std::make_unique<CdpProgram>(w, o_);
  }

private:
  std::string name_;
  Options o_;
};

std::unique_ptr<Algorithm> make_cdp(const scenario::AlgorithmSpec& spec, Rule rule) {
  const AlgorithmOptions opts(spec, rule == Rule::v1 ? cdp_v1_descriptor() : cdp_v2_descriptor());
  const auto setting = opts.choice("setting");
  const auto schedule = opts.choice("schedule");
  if ((setting == "zero" || setting == "model-parallel") && rule == Rule::v1 &&
      schedule == "cyclic")
    throw scenario::ScenarioError(fmt::format(
        "{}: key 'algorithms.{}.setting': the {} setting keeps one version of each stage's "
        "parameters, which is CDP-v2's rule; use cdp-v2",
        spec.options.at("setting").where, spec.name, setting));
  const Setting chosen = setting == "multi-gpu"    ? Setting::multi_gpu
                         : setting == "single-gpu" ? Setting::single_gpu
                         : setting == "zero"       ? Setting::zero
                                                   : Setting::model_parallel;
  return std::make_unique<Cdp>(spec.name, Options{rule, chosen, schedule == "cyclic"});
}

} // namespace

std::unique_ptr<Algorithm> make_cdp_v1(const scenario::AlgorithmSpec& spec) {
  return make_cdp(spec, Rule::v1);
}
std::unique_ptr<Algorithm> make_cdp_v2(const scenario::AlgorithmSpec& spec) {
  return make_cdp(spec, Rule::v2);
}

namespace {
std::vector<OptionSchema> cdp_options() {
  return {{"setting",
           OptionType::choice,
           "multi-gpu",
           0,
           0,
           {"multi-gpu", "single-gpu", "zero", "model-parallel"},
           "the CDP paper's settings (Sec. 4.1-4.4): data parallel over GPUs, one GPU, ZeRO-DP, "
           "model parallel (zero and model-parallel: cdp-v2 only)"},
          {"schedule",
           OptionType::choice,
           "cyclic",
           0,
           0,
           {"cyclic", "simultaneous"},
           "cyclic: micro-batches start a stage apart; simultaneous: all at once (the DP it "
           "compares with)"}};
}
} // namespace

const AlgorithmDescriptor& cdp_v1_descriptor() {
  static const AlgorithmDescriptor d{
      "cdp-v1",
      "Cyclic Data Parallelism, rule 1: micro-batches a stage apart, two parameter versions",
      "Fournier and Oyallon, Cyclic Data Parallelism, 2024, Sec. 3.2, Eq. (CDP-v1)",
      UpdateKind::synchronous,
      true,
      "#55A868",
      cdp_options(),
      make_cdp_v1};
  return d;
}

const AlgorithmDescriptor& cdp_v2_descriptor() {
  static const AlgorithmDescriptor d{
      "cdp-v2",
      "Cyclic Data Parallelism, rule 2: each stage's update applied as its gradients arrive",
      "Fournier and Oyallon, Cyclic Data Parallelism, 2024, Sec. 3.2, Eq. (CDP-v2)",
      UpdateKind::synchronous,
      true,
      "#64B5CD",
      cdp_options(),
      make_cdp_v2};
  return d;
}

} // namespace overlapsim
