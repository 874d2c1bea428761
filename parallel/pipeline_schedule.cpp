#include "parallel/pipeline_schedule.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <deque>
#include <fmt/format.h>
#include <limits>
#include <stdexcept>

namespace overlapsim::parallel {

namespace {

using Kind = PipelineOp::Kind;

constexpr struct {
  PipelineSchedule schedule;
  std::string_view name;
} schedule_names[] = {
    {PipelineSchedule::gpipe, "gpipe"},
    {PipelineSchedule::one_f_one_b, "1f1b"},
    {PipelineSchedule::interleaved, "interleaved"},
    {PipelineSchedule::zero_bubble_h1, "zero-bubble"},
};

std::size_t at(int i) {
  return static_cast<std::size_t>(i);
}

void check_shape(PipelineSchedule schedule, int p, int m, int v) {
  if (p < 1)
    throw std::invalid_argument(fmt::format("pipeline schedule: {} stages, need at least 1", p));
  if (m < 1)
    throw std::invalid_argument(
        fmt::format("pipeline schedule: {} micro-batches, need at least 1", m));
  if (v < 1)
    throw std::invalid_argument(
        fmt::format("pipeline schedule: {} virtual stages per stage, need at least 1", v));
  if (schedule == PipelineSchedule::interleaved) {
    // Megatron-LM's get_forward_backward_func asserts the same.
    if (m % p != 0)
      throw std::invalid_argument(fmt::format("pipeline schedule interleaved: {} micro-batches "
                                              "is not a multiple of the {} pipeline stages",
                                              m, p));
  } else if (v != 1) {
    throw std::invalid_argument(fmt::format(
        "pipeline schedule {}: {} virtual stages per stage; only interleaved has model chunks",
        to_string(schedule), v));
  }
}

PipelineOp forward(int mb, int chunk = 0) {
  return {Kind::forward, mb, chunk};
}
PipelineOp backward(int mb, int chunk = 0) {
  return {Kind::backward, mb, chunk};
}

std::vector<PipelineOp> gpipe_stage(int m) {
  std::vector<PipelineOp> ops;
  for (int mb = 0; mb < m; ++mb)
    ops.push_back(forward(mb));
  for (int mb = m - 1; mb >= 0; --mb)
    ops.push_back(backward(mb));
  return ops;
}

// forward_backward_pipelining_without_interleaving.
std::vector<PipelineOp> one_f_one_b_stage(int p, int m, int s) {
  const int warmup = std::min(p - s - 1, m);
  const int remaining = m - warmup;
  std::vector<PipelineOp> ops;
  for (int i = 0; i < warmup; ++i)
    ops.push_back(forward(i));
  for (int i = 0; i < remaining; ++i) {
    ops.push_back(forward(warmup + i));
    ops.push_back(backward(i));
  }
  for (int i = remaining; i < m; ++i)
    ops.push_back(backward(i));
  return ops;
}

// forward_backward_pipelining_with_interleaving: the k-th pass over (micro-batch, chunk).
std::vector<PipelineOp> interleaved_stage(int p, int m, int v, int s) {
  const int total = m * v;
  // get_model_chunk_id: chunk of the k-th pass, reversed for backwards; each chunk's data
  // iterator hands out micro-batches in order, p at a time per group of p v passes.
  const auto pass = [&](int k, bool is_forward) {
    const int in_group = k % (p * v);
    const int chunk = in_group / p;
    const int mb = (k / (p * v)) * p + k % p;
    return PipelineOp{is_forward ? Kind::forward : Kind::backward, mb,
                      is_forward ? chunk : v - 1 - chunk};
  };
  int warmup = 0;
  if (m == p) {
    warmup = total; // "all_warmup_microbatches": every forward, then every backward
  } else {
    warmup = (p - s - 1) * 2 + (v - 1) * p;
    warmup = std::min(warmup, total);
  }
  const int remaining = total - warmup;
  std::vector<PipelineOp> ops;
  for (int k = 0; k < warmup; ++k)
    ops.push_back(pass(k, true));
  for (int k = 0; k < remaining; ++k) {
    ops.push_back(pass(warmup + k, true));
    ops.push_back(pass(k, false));
  }
  for (int k = remaining; k < total; ++k)
    ops.push_back(pass(k, false));
  return ops;
}

// sail-sg/zero-bubble-pipeline-parallelism's ZB-H1 (its WeightGradStore in Megatron-LM's
// schedule without interleaving): 1F1B's order, each backward's W either run right after its B or
// queued (FIFO) and run later.
std::vector<PipelineOp> zero_bubble_h1_stage(int p, int m, int s) {
  const int warmup = std::min(p - s - 1, m);
  const int remaining = m - warmup;
  std::vector<PipelineOp> ops;
  std::deque<int> queued; // micro-batches whose W waits
  const auto b = [&](int mb) { ops.push_back({Kind::backward_input, mb, 0}); };
  const auto w = [&](int mb) { ops.push_back({Kind::backward_weight, mb, 0}); };
  const auto pop = [&] {
    w(queued.front());
    queued.pop_front();
  };
  for (int i = 0; i < warmup; ++i)
    ops.push_back(forward(i));
  for (int i = 0; i < remaining; ++i) {
    ops.push_back(forward(warmup + i));
    const bool last = i == remaining - 1;
    // Stage 0 never splits; stage s delays the W of its first s steady backwards, and of the
    // last one, whose B is sent before any W runs.
    const bool split = (i < s || last) && s > 0;
    b(i);
    if (split)
      queued.push_back(i);
    else
      w(i);
    if (last && i >= s && s > 0) // delay W by rank
      pop();
  }
  for (int i = remaining; i < m; ++i) {
    b(i);
    if (s == 0) {
      w(i);
      continue;
    }
    queued.push_back(i);
    if (i >= s)
      pop();
  }
  while (!queued.empty())
    pop();
  return ops;
}

} // namespace

std::string to_string(PipelineSchedule schedule) {
  for (const auto& n : schedule_names)
    if (n.schedule == schedule)
      return std::string(n.name);
  throw std::invalid_argument("pipeline schedule: unknown enumerator");
}

PipelineSchedule parse_pipeline_schedule(std::string_view name) {
  for (const auto& n : schedule_names)
    if (n.name == name)
      return n.schedule;
  throw std::invalid_argument(fmt::format(
      "unknown pipeline schedule '{}': expected gpipe, 1f1b, interleaved or zero-bubble", name));
}

std::string to_string(PipelineOp::Kind kind) {
  switch (kind) {
  case Kind::forward:
    return "forward";
  case Kind::backward:
    return "backward";
  case Kind::backward_input:
    return "backward_input";
  case Kind::backward_weight:
    return "backward_weight";
  }
  throw std::invalid_argument("pipeline op: unknown kind");
}

std::string to_string(const PipelineOp& op) {
  const char* letter = op.kind == Kind::forward          ? "F"
                       : op.kind == Kind::backward       ? "B"
                       : op.kind == Kind::backward_input ? "Bi"
                                                         : "W";
  if (op.chunk == 0)
    return fmt::format("{}{}", letter, op.micro_batch);
  return fmt::format("{}{}.{}", letter, op.micro_batch, op.chunk);
}

PipelineOps pipeline_schedule(PipelineSchedule schedule, int stages, int micro_batches,
                              int virtual_stages) {
  check_shape(schedule, stages, micro_batches, virtual_stages);
  PipelineOps ops(at(stages));
  for (int s = 0; s < stages; ++s) {
    auto& stage = ops[at(s)];
    switch (schedule) {
    case PipelineSchedule::gpipe:
      stage = gpipe_stage(micro_batches);
      break;
    case PipelineSchedule::one_f_one_b:
      stage = one_f_one_b_stage(stages, micro_batches, s);
      break;
    case PipelineSchedule::interleaved:
      stage = interleaved_stage(stages, micro_batches, virtual_stages, s);
      break;
    case PipelineSchedule::zero_bubble_h1:
      stage = zero_bubble_h1_stage(stages, micro_batches, s);
      break;
    }
  }
  return ops;
}

StageDurations uniform_durations(int stages, int virtual_stages, ChunkDurations each) {
  if (stages < 1 || virtual_stages < 1)
    throw std::invalid_argument(fmt::format(
        "uniform durations: {} stages of {} chunks, need at least 1 each", stages, virtual_stages));
  return StageDurations(at(stages), std::vector<ChunkDurations>(at(virtual_stages), each));
}

namespace {

constexpr double not_yet = std::numeric_limits<double>::infinity();

// End times of one stage's ops by (micro-batch, chunk); infinity while not run.
struct Ends {
  int m = 0, v = 0;
  std::vector<double> forward, input_grad, weight_grad;
  Ends(int micro_batches, int chunks)
      : m(micro_batches), v(chunks), forward(at(m * v), not_yet), input_grad(at(m * v), not_yet),
        weight_grad(at(m * v), not_yet) {}
  std::size_t index(int mb, int chunk) const { return at(mb * v + chunk); }
};

} // namespace

PipelineTiming evaluate_schedule(const PipelineOps& ops, const StageDurations& durations,
                                 double p2p_seconds) {
  const int p = static_cast<int>(ops.size());
  if (p < 1)
    throw std::invalid_argument("evaluate schedule: no stages");
  if (durations.size() != ops.size())
    throw std::invalid_argument(fmt::format(
        "evaluate schedule: durations for {} stages, schedule of {}", durations.size(), p));
  const int v = static_cast<int>(durations[0].size());
  if (v < 1)
    throw std::invalid_argument("evaluate schedule: stage 0 has no chunk durations");
  for (int s = 0; s < p; ++s) {
    if (static_cast<int>(durations[at(s)].size()) != v)
      throw std::invalid_argument(
          fmt::format("evaluate schedule: stage {} has durations for {} chunks, stage 0 for {}", s,
                      durations[at(s)].size(), v));
    for (const auto& d : durations[at(s)])
      if (!(d.forward >= 0 && d.backward_input >= 0 && d.backward_weight >= 0) ||
          !std::isfinite(d.forward + d.backward_input + d.backward_weight))
        throw std::invalid_argument(
            fmt::format("evaluate schedule: stage {} has a negative or non-finite duration", s));
  }
  if (!(p2p_seconds >= 0) || !std::isfinite(p2p_seconds))
    throw std::invalid_argument(
        fmt::format("evaluate schedule: p2p time {} is not a finite time >= 0", p2p_seconds));

  int m = 0;
  for (int s = 0; s < p; ++s)
    for (const auto& op : ops[at(s)]) {
      if (op.micro_batch < 0 || op.chunk < 0 || op.chunk >= v)
        throw std::invalid_argument(
            fmt::format("evaluate schedule: stage {} runs {}: micro-batch or chunk out of range "
                        "(chunks 0 .. {})",
                        s, to_string(op), v - 1));
      m = std::max(m, op.micro_batch + 1);
    }

  std::vector<Ends> ends(at(p), Ends(m, v));
  // Listed twice?
  for (int s = 0; s < p; ++s) {
    std::vector<std::vector<bool>> seen(4, std::vector<bool>(at(m * v), false));
    for (const auto& op : ops[at(s)]) {
      auto&& slot =
          seen[static_cast<std::size_t>(op.kind)][ends[at(s)].index(op.micro_batch, op.chunk)];
      if (slot)
        throw std::invalid_argument(
            fmt::format("evaluate schedule: stage {} runs {} twice", s, to_string(op)));
      slot = true;
    }
  }

  const int virtual_count = p * v;
  const auto hop = [&](int from_stage, int to_stage) {
    return from_stage == to_stage ? 0.0 : p2p_seconds;
  };

  PipelineTiming t;
  t.first_start.assign(at(p), 0);
  t.busy.assign(at(p), 0);
  t.bubble.assign(at(p), 0);
  t.peak_in_flight.assign(at(p), 0);
  std::vector<std::size_t> next(at(p), 0);
  std::vector<double> free_at(at(p), 0);

  // When `op` on stage s may start as far as other ops go; infinity while one it needs has not
  // run yet.
  const auto ready = [&](int s, const PipelineOp& op) {
    const auto& own = ends[at(s)];
    const std::size_t i = own.index(op.micro_batch, op.chunk);
    const int vs = op.chunk * p + s;
    switch (op.kind) {
    case Kind::forward: {
      if (vs == 0)
        return 0.0;
      const int prev_stage = (vs - 1) % p;
      const int prev_chunk = (vs - 1) / p;
      return ends[at(prev_stage)].forward[ends[at(prev_stage)].index(op.micro_batch, prev_chunk)] +
             hop(prev_stage, s);
    }
    case Kind::backward:
    case Kind::backward_input: {
      double r = own.forward[i];
      if (vs + 1 < virtual_count) {
        const int next_stage = (vs + 1) % p;
        const int next_chunk = (vs + 1) / p;
        r = std::max(r,
                     ends[at(next_stage)]
                             .input_grad[ends[at(next_stage)].index(op.micro_batch, next_chunk)] +
                         hop(next_stage, s));
      }
      return r;
    }
    case Kind::backward_weight:
      return own.input_grad[i];
    }
    return not_yet;
  };

  std::size_t left = 0;
  for (const auto& stage : ops)
    left += stage.size();
  while (left > 0) {
    bool progressed = false;
    for (int s = 0; s < p; ++s) {
      auto& stage_ends = ends[at(s)];
      const auto& list = ops[at(s)];
      for (auto& n = next[at(s)]; n < list.size(); ++n) {
        const PipelineOp& op = list[n];
        const double r = ready(s, op);
        if (r == not_yet)
          break;
        const double start = std::max(r, free_at[at(s)]);
        const ChunkDurations& d = durations[at(s)][at(op.chunk)];
        const double length = op.kind == Kind::forward          ? d.forward
                              : op.kind == Kind::backward       ? d.backward()
                              : op.kind == Kind::backward_input ? d.backward_input
                                                                : d.backward_weight;
        if (n == 0)
          t.first_start[at(s)] = start;
        const double end = start + length;
        free_at[at(s)] = end;
        t.busy[at(s)] += length;
        const std::size_t i = stage_ends.index(op.micro_batch, op.chunk);
        switch (op.kind) {
        case Kind::forward:
          stage_ends.forward[i] = end;
          break;
        case Kind::backward:
          stage_ends.input_grad[i] = end;
          stage_ends.weight_grad[i] = end;
          break;
        case Kind::backward_input:
          stage_ends.input_grad[i] = end;
          break;
        case Kind::backward_weight:
          stage_ends.weight_grad[i] = end;
          break;
        }
        --left;
        progressed = true;
      }
    }
    if (!progressed) {
      std::string stuck;
      for (int s = 0; s < p; ++s)
        if (next[at(s)] < ops[at(s)].size())
          stuck += fmt::format("{}stage {} at {} (op {})", stuck.empty() ? "" : ", ", s,
                               to_string(ops[at(s)][next[at(s)]]), next[at(s)]);
      throw std::runtime_error(
          fmt::format("evaluate schedule: deadlock, no stage can go on: {}", stuck));
    }
  }

  for (int s = 0; s < p; ++s)
    t.makespan = std::max(t.makespan, free_at[at(s)]);
  double busy_sum = 0;
  for (int s = 0; s < p; ++s) {
    t.bubble[at(s)] = ops[at(s)].empty() ? 0 : t.makespan - t.first_start[at(s)] - t.busy[at(s)];
    busy_sum += t.busy[at(s)];
    // Activations held: +1/v at each forward, -1/v at each backward that frees them (full or B).
    int held = 0, peak = 0;
    for (const auto& op : ops[at(s)]) {
      if (op.kind == Kind::forward)
        peak = std::max(peak, ++held);
      else if (op.kind == Kind::backward || op.kind == Kind::backward_input)
        --held;
    }
    t.peak_in_flight[at(s)] = static_cast<double>(peak) / v;
  }
  t.bubble_fraction = t.makespan > 0 ? 1 - busy_sum / (p * t.makespan) : 0;
  return t;
}

double ideal_bubble_fraction(PipelineSchedule schedule, int stages, int micro_batches,
                             int virtual_stages) {
  check_shape(schedule, stages, micro_batches, virtual_stages);
  const double p = stages, m = micro_batches, v = virtual_stages;
  switch (schedule) {
  case PipelineSchedule::gpipe:
  case PipelineSchedule::one_f_one_b:
    return (p - 1) / (m + p - 1);
  case PipelineSchedule::interleaved:
    return (p - 1) / (v * m + p - 1);
  case PipelineSchedule::zero_bubble_h1:
    // In units of T_F = T_B = T_W: the longer of the steady bound and the F-B chain plus a W.
    return 1 - 3 * m / std::max(3 * m + p - 1, 2 * m + 2 * p - 1);
  }
  throw std::invalid_argument("ideal bubble fraction: unknown schedule");
}

double ideal_bubble_fraction(PipelineSchedule schedule, int stages, int micro_batches,
                             int virtual_stages, ChunkDurations d) {
  check_shape(schedule, stages, micro_batches, virtual_stages);
  if (!(d.forward >= 0 && d.backward_input >= 0 && d.backward_weight >= 0) ||
      !std::isfinite(d.forward + d.backward_input + d.backward_weight))
    throw std::invalid_argument("ideal bubble fraction: a negative or non-finite duration");
  if (schedule != PipelineSchedule::zero_bubble_h1)
    return ideal_bubble_fraction(schedule, stages, micro_batches, virtual_stages);
  const double f = d.forward, b = d.backward_input, w = d.backward_weight;
  if (micro_batches < stages) {
    if (f == b && b == w)
      return ideal_bubble_fraction(schedule, stages, micro_batches, virtual_stages);
    throw std::invalid_argument(
        fmt::format("ideal bubble fraction: ZB-H1 with {} micro-batches < {} stages has a closed "
                    "form here only "
                    "for equal F, B and W times; evaluate_schedule times it",
                    micro_batches, stages));
  }
  const double compute = micro_batches * (f + b + w);
  const double idle = (stages - 1) * (f + b - std::min({w, f, b}));
  return compute + idle > 0 ? idle / (compute + idle) : 0;
}

} // namespace overlapsim::parallel
