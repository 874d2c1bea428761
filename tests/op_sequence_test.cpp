// Algorithms' op sequences on a recording Worker (recording_worker.h), against hand-derived
// expectations: what each stream issues, in order, with its layers, slices, groups and bytes.
#include "recording_worker.h"
#include "test_util.h"

#include "algorithms/algorithm.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace overlapsim {
namespace {

using testing::RecordingWorker;
using Ops = std::vector<std::string>;

// Four layers of 100, 200, 300 and 400 parameters (bf16: 2 bytes each): the flat buffers hold
// layer 0 at [0:100], 1 at [100:300], 2 at [300:600] and 3 at [600:1000].
scenario::Scenario four_layers(int nodes, int gpus_per_node, const std::string& training) {
  return testing::scenario_from("name: ops\n" + testing::round_cluster(nodes, gpus_per_node) +
                                "model:\n  dtype: bf16\n  layers:\n"
                                "    - {name: l0, params: 100, fwd_flops_per_sample: 1G}\n"
                                "    - {name: l1, params: 200, fwd_flops_per_sample: 1G}\n"
                                "    - {name: l2, params: 300, fwd_flops_per_sample: 1G}\n"
                                "    - {name: l3, params: 400, fwd_flops_per_sample: 1G}\n"
                                "training: {micro_batch: 1, seq_len: 1, optimizer: adamw, " +
                                training + "}\nalgorithms: [ddp]\n");
}

std::unique_ptr<Algorithm> algorithm(const std::string& name,
                                     const std::map<std::string, std::string>& options = {}) {
  scenario::AlgorithmSpec spec;
  spec.name = spec.label = name;
  spec.where = "test";
  for (const auto& [k, v] : options)
    spec.options[k] = scenario::AlgorithmOption{v, "test"};
  return make_algorithm(spec);
}

// The ops that start with none of `prefixes`.
Ops without(const Ops& ops, const std::vector<std::string>& prefixes) {
  Ops out;
  for (const auto& op : ops) {
    bool drop = false;
    for (const auto& p : prefixes)
      drop = drop || op.rfind(p, 0) == 0;
    if (!drop)
      out.push_back(op);
  }
  return out;
}

TEST(OpSequence, DdpReducesBucketsInReverseLayerOrder) {
  // bucket_cap 1000 B = 500 elements. From the output layer: layer 3 (400) stays open, layer 2
  // brings it to 700 >= 500 and closes bucket 0 = [300:1000], ready after layer 2's backward;
  // layers 1 and 0 make bucket 1 = [0:300] (300 elements, closed at the end).
  RecordingWorker w(four_layers(2, 1, "grad_accum: 2, warmup_steps: 0, steps: 1"));
  w.execute(*algorithm("ddp", {{"bucket_cap", "1000B"}}));
  // Micro-batch 0 runs under no_sync; the last one's backward stops at each bucket boundary, copies
  // the bucket into the reducer's buffer and hands it over (signal 0); after every bucket is
  // reduced (signal 1) the buffer is copied back into .grad for the step, scaled by
  // 1 / (2 workers x 2 micro-batches).
  EXPECT_EQ(w.ops(StreamKind::compute),
            (Ops{"forward [0,4) mb 0.0", "backward [0,4) mb 0.0", "forward [0,4) mb 0.1",
                 "backward [2,4) mb 0.1", "copy grads[300:1000] -> ddp_gradient_buckets[300:1000]",
                 "notify 0 = 0", "backward [0,2) mb 0.1",
                 "copy grads[0:300] -> ddp_gradient_buckets[0:300]", "notify 0 = 1", "await 1 -> 0",
                 "copy ddp_gradient_buckets[0:1000] -> grads[0:1000]",
                 "optimizer step 0: params[0:1000], grads grads[0:1000], state "
                 "optimizer_state[0:1000], scale 0.25",
                 "step done 0 (2 samples)"}));
  EXPECT_EQ(w.ops(StreamKind::comm),
            (Ops{"await 0 -> 0",
                 "all-reduce world ddp_gradient_buckets[300:1000] 1400 B \"all-reduce bucket 0\"",
                 "await 0 -> 1",
                 "all-reduce world ddp_gradient_buckets[0:300] 600 B \"all-reduce bucket 1\"",
                 "notify 1 = 0"}));
}

TEST(OpSequence, DdpSplitsLayersLargerThanTheBucketCap) {
  // bucket_cap 300 B = 150 elements: layer 3 (400) splits into 3 parts of 134, 133, 133 and
  // layer 2 (300) and layer 1 (200) into 2 each, the output side first; layer 0 (100) is a
  // bucket of its own. A layer's parts are all ready after its backward.
  RecordingWorker w(four_layers(2, 1, "grad_accum: 1, warmup_steps: 0, steps: 1"));
  w.execute(*algorithm("ddp", {{"bucket_cap", "300B"}, {"gradient_as_bucket_view", "true"}}));
  EXPECT_EQ(w.ops(StreamKind::compute),
            (Ops{"forward [0,4) mb 0.0", "backward [3,4) mb 0.0", "notify 0 = 0", "notify 0 = 1",
                 "notify 0 = 2", "backward [2,3) mb 0.0", "notify 0 = 3", "notify 0 = 4",
                 "backward [1,2) mb 0.0", "notify 0 = 5", "notify 0 = 6", "backward [0,1) mb 0.0",
                 "notify 0 = 7", "await 1 -> 0",
                 "optimizer step 0: params[0:1000], grads grads[0:1000], state "
                 "optimizer_state[0:1000], scale 0.5",
                 "step done 0 (1 samples)"}));
  EXPECT_EQ(w.ops(StreamKind::comm, "all-reduce"),
            (Ops{"all-reduce world grads[867:1000] 266 B \"all-reduce bucket 0\"",
                 "all-reduce world grads[734:867] 266 B \"all-reduce bucket 1\"",
                 "all-reduce world grads[600:734] 268 B \"all-reduce bucket 2\"",
                 "all-reduce world grads[450:600] 300 B \"all-reduce bucket 3\"",
                 "all-reduce world grads[300:450] 300 B \"all-reduce bucket 4\"",
                 "all-reduce world grads[200:300] 200 B \"all-reduce bucket 5\"",
                 "all-reduce world grads[100:200] 200 B \"all-reduce bucket 6\"",
                 "all-reduce world grads[0:100] 200 B \"all-reduce bucket 7\""}));
}

TEST(OpSequence, Zero1PairsEachReduceScatterWithAnAllGatherOfTheSamePiece) {
  // DDP's buckets ([300:1000], [0:300]); rank 1 of 2 owns the second half of each: [650:1000]
  // and [150:300], whose optimizer state lies back to back at [0:350] and [350:500].
  RecordingWorker w(four_layers(2, 1, "grad_accum: 1, warmup_steps: 0, steps: 2"), 1);
  w.execute(*algorithm("zero1", {{"bucket_cap", "1000B"}}));
  const Ops step = {
      "await 0 -> 0",
      "reduce-scatter world grads[300:1000] -> grads[650:1000] 1400 B \"reduce-scatter bucket 0\"",
      "await 0 -> 1",
      "reduce-scatter world grads[0:300] -> grads[150:300] 600 B \"reduce-scatter bucket 1\"",
      "notify 1 = 0",
      "await 2 -> 0",
      "all-gather world params[650:1000] -> params[300:1000] 700 B \"all-gather params bucket 0\"",
      "all-gather world params[150:300] -> params[0:300] 300 B \"all-gather params bucket 1\"",
      "notify 3 = 0"};
  Ops both = step;
  both.insert(both.end(), step.begin(), step.end());
  EXPECT_EQ(w.ops(StreamKind::comm), both);
  EXPECT_EQ(w.ops(StreamKind::compute, "optimizer step 1"),
            (Ops{"optimizer step 1: params[650:1000], grads grads[650:1000], state "
                 "optimizer_state[0:350], scale 0.5",
                 "optimizer step 1: params[150:300], grads grads[150:300], state "
                 "optimizer_state[350:500], scale 0.5"}));
  // The sharded steps run after the reduce-scatters (signal 1) and before the all-gathers
  // (signal 2), and the next forward waits for the gathered parameters (signal 3).
  EXPECT_EQ(without(w.ops(StreamKind::compute), {"forward", "backward", "notify 0"}),
            (Ops{"await 1 -> 0",
                 "optimizer step 0: params[650:1000], grads grads[650:1000], state "
                 "optimizer_state[0:350], scale 0.5",
                 "optimizer step 0: params[150:300], grads grads[150:300], state "
                 "optimizer_state[350:500], scale 0.5",
                 "notify 2 = 0", "await 3 -> 0", "step done 0 (1 samples)", "await 1 -> 0",
                 "optimizer step 1: params[650:1000], grads grads[650:1000], state "
                 "optimizer_state[0:350], scale 0.5",
                 "optimizer step 1: params[150:300], grads grads[150:300], state "
                 "optimizer_state[350:500], scale 0.5",
                 "notify 2 = 0", "await 3 -> 0", "step done 1 (1 samples)"}));
}

TEST(OpSequence, StreamingDilocoSynchronisesFragmentsInTurn) {
  // H = 4, two fragments of two layers ([0:300] and [300:1000]), tau = 1, 8 steps. Fragment p
  // starts its sync after steps c with c % 4 == p H / 2, while c + tau <= 8: fragment 1 after
  // steps 2 and 6, fragment 0 after step 4. Each merges tau = 1 step later.
  RecordingWorker w(four_layers(2, 1, "grad_accum: 1, warmup_steps: 0, steps: 8"));
  w.execute(*algorithm("streaming-diloco", {{"H", "4"},
                                            {"fragments", "2"},
                                            {"overlap_steps", "1"},
                                            {"alpha", "0.5"},
                                            {"outer_lr", "0.7"},
                                            {"outer_momentum", "0.9"}}));
  const std::string anchor = "outer anchor (theta at the period's start)";
  const auto outer = [&](int step, const std::string& range) {
    return "outer step " + std::to_string(step) + ": params fragments in flight" + range +
           ", anchor " + anchor + range + ", momentum outer momentum" + range + ", merge params" +
           range + " alpha 0.5";
  };
  EXPECT_EQ(without(w.ops(StreamKind::compute), {"forward", "backward", "optimizer", "step done"}),
            (Ops{"copy params[0:1000] -> " + anchor + "[0:1000]", "fill outer momentum[0:1000] = 0",
                 // after step 2 (step index 1): fragment 1's snapshot goes out
                 "copy params[300:1000] -> fragments in flight[300:1000]", "notify 0 = 1",
                 // one step later it is back and merged
                 "await 1 -> 1", outer(2, "[300:1000]"),
                 "copy params[0:300] -> fragments in flight[0:300]", "notify 0 = 0", "await 1 -> 0",
                 outer(4, "[0:300]"), "copy params[300:1000] -> fragments in flight[300:1000]",
                 "notify 0 = 1", "await 1 -> 1", outer(6, "[300:1000]")}));
  // Where the snapshots and merges sit among the inner steps.
  Ops steps;
  for (const auto& op : w.ops(StreamKind::compute))
    if (op.rfind("step done", 0) == 0 || op.rfind("notify", 0) == 0 || op.rfind("outer", 0) == 0)
      steps.push_back(op.substr(0, op.find(':')));
  EXPECT_EQ(steps, (Ops{"step done 0 (1 samples)", "notify 0 = 1", "step done 1 (1 samples)",
                        "outer step 2", "step done 2 (1 samples)", "notify 0 = 0",
                        "step done 3 (1 samples)", "outer step 4", "step done 4 (1 samples)",
                        "notify 0 = 1", "step done 5 (1 samples)", "outer step 6",
                        "step done 6 (1 samples)", "step done 7 (1 samples)"}));
  EXPECT_EQ(w.ops(StreamKind::comm),
            (Ops{"await 0 -> 1",
                 "all-reduce world fragments in flight[300:1000] 1400 B avg \"average fragment 1 "
                 "(outer)\"",
                 "notify 1 = 1", "await 0 -> 0",
                 "all-reduce world fragments in flight[0:300] 600 B avg \"average fragment 0 "
                 "(outer)\"",
                 "notify 1 = 0", "await 0 -> 1",
                 "all-reduce world fragments in flight[300:1000] 1400 B avg \"average fragment 1 "
                 "(outer)\"",
                 "notify 1 = 1"}));
}

TEST(OpSequence, FlexDemoExchangesShardsAcrossNodesEveryPeriod) {
  // Two nodes of two GPUs; rank 0 shards each one-layer unit with rank 1 (its node) and owns the
  // first half: [0:50], [100:200], [300:450], [600:800]. Its replicas are {0,2} (the same local
  // index on each node). The diloco replicator at compression 0.5 all-reduces the gradient shards
  // every round(1 / 0.5) = 2 steps: after steps 1 and 3; steps 0 and 2 update locally.
  RecordingWorker w(four_layers(2, 2, "grad_accum: 1, warmup_steps: 0, steps: 4"));
  w.execute(*algorithm("flexdemo", {{"replicator", "diloco"}, {"compression", "0.5"}}));
  Ops exchange;
  for (int piece = 0; piece < 4; ++piece) {
    static const char* const shards[] = {"[0:50] 100", "[100:200] 200", "[300:450] 300",
                                         "[600:800] 400"};
    exchange.push_back(fmt::format("all-reduce {{0,2}} grads{} B avg \"all-reduce gradient piece "
                                   "{} (diloco)\"",
                                   shards[piece], piece));
  }
  Ops twice = exchange;
  twice.insert(twice.end(), exchange.begin(), exchange.end());
  EXPECT_EQ(w.ops(StreamKind::comm, "{0,2}"), twice);
  // Inside the node, per step: each unit's shard gathered for the forward (input first) and
  // again for the backward (output first, reshard_after_forward), and its gradients
  // reduce-scattered onto the shard, output first.
  const Ops gathers = w.ops(StreamKind::comm, "all-gather {0,1}");
  ASSERT_EQ(gathers.size(), 4U * 8);
  const auto gather = [](int unit, const std::string& shard, const std::string& whole,
                         const char* pass) {
    return fmt::format("all-gather {{0,1}} params{} -> params{} {} B \"all-gather unit {} ({})\"",
                       shard, whole, 2 * (unit + 1) * 50, unit, pass);
  };
  EXPECT_EQ(
      Ops(gathers.begin(), gathers.begin() + 8),
      (Ops{gather(0, "[0:50]", "[0:100]", "fwd"), gather(1, "[100:200]", "[100:300]", "fwd"),
           gather(2, "[300:450]", "[300:600]", "fwd"), gather(3, "[600:800]", "[600:1000]", "fwd"),
           gather(3, "[600:800]", "[600:1000]", "bwd"), gather(2, "[300:450]", "[300:600]", "bwd"),
           gather(1, "[100:200]", "[100:300]", "bwd"), gather(0, "[0:50]", "[0:100]", "bwd")}));
  const Ops reductions = w.ops(StreamKind::comm, "reduce-scatter");
  ASSERT_EQ(reductions.size(), 4U * 4);
  EXPECT_EQ(
      Ops(reductions.begin(), reductions.begin() + 4),
      (Ops{"reduce-scatter {0,1} grads[600:1000] -> grads[600:800] 800 B \"reduce-scatter unit 3\"",
           "reduce-scatter {0,1} grads[300:600] -> grads[300:450] 600 B \"reduce-scatter unit 2\"",
           "reduce-scatter {0,1} grads[100:300] -> grads[100:200] 400 B \"reduce-scatter unit 1\"",
           "reduce-scatter {0,1} grads[0:100] -> grads[0:50] 200 B \"reduce-scatter unit 0\""}));
  // The compute stream: encode every piece, then (after the exchange) decode and update; no
  // optimizer step.
  EXPECT_TRUE(w.ops(StreamKind::compute, "optimizer").empty());
  EXPECT_EQ(
      w.ops(StreamKind::compute, "replicator decode piece 0"),
      (Ops{"replicator decode piece 0 step 0, no exchange", "replicator decode piece 0 step 1",
           "replicator decode piece 0 step 2, no exchange", "replicator decode piece 0 step 3"}));
  // After the backward: encode every piece, hand over to the exchange (signal 4), await it
  // (signal 5), decode and update every piece, release the next step's gathers (signal 3).
  const Ops after_backward =
      without(w.ops(StreamKind::compute), {"forward", "backward", "await 0", "notify 1"});
  ASSERT_EQ(after_backward.size(), 4U * 13);
  Ops step1{"await 2 -> 0"};
  for (int piece = 0; piece < 4; ++piece)
    step1.push_back(fmt::format("replicator encode piece {} step 1", piece));
  step1.insert(step1.end(), {"notify 4 = 0", "await 5 -> 0"});
  for (int piece = 0; piece < 4; ++piece)
    step1.push_back(fmt::format("replicator decode piece {} step 1", piece));
  step1.insert(step1.end(), {"notify 3 = 0", "step done 1 (1 samples)"});
  EXPECT_EQ(Ops(after_backward.begin() + 13, after_backward.begin() + 26), step1);
}

TEST(OpSequence, AccoAlternatesEstimateAndCommitSteps) {
  // One micro-batch per round (min = max = 1), two optimizer steps of two rounds each. Rank 0 of
  // 2 owns parameters [0:500]. The estimate round (stage 1) reduces its gradients and computes
  // theta~(t+1) without committing it; the correction (stage 2) adds the kept sum of g~ to its
  // shard, divides by both rounds' summed micro-batch counts and commits theta(t+1).
  RecordingWorker w(four_layers(2, 1, "grad_accum: 2, warmup_steps: 0, steps: 2"));
  w.execute(*algorithm("acco", {{"min_micro_batches", "1"}, {"max_micro_batches", "1"}}));
  const auto round = [](int step, int stage) {
    const std::string s = " (stage " + std::to_string(stage) + ")";
    const std::string count = stage == 1 ? "micro_batch_counts[0:1]" : "micro_batch_counts[1:2]";
    Ops ops{"fill " + count + " = 1",
            "all-reduce world " + count + " 8 B \"all-reduce counts" + s + "\""};
    if (stage == 2)
      ops.push_back("accumulate handoff_buffer[0:500] += reduced_grads_shard[0:500]");
    ops.push_back("reduce-scatter world handoff_buffer[0:1000] -> reduced_grads_shard[0:500] "
                  "2000 B \"reduce-scatter grads" +
                  s + "\"");
    ops.push_back("optimizer step " + std::to_string(step) +
                  ": params[0:500], grads reduced_grads_shard[0:500], state "
                  "optimizer_state[0:500], scale 0.5, out handoff_buffer[0:500], divisor " +
                  (stage == 1 ? "micro_batch_counts[0:1], estimate" : "micro_batch_counts[0:2]"));
    ops.push_back("all-gather world handoff_buffer[0:500] -> handoff_buffer[0:1000] 1000 B "
                  "\"all-gather params" +
                  s + "\"");
    if (stage == 2)
      ops.push_back("step done " + std::to_string(step) + " (2 samples)");
    return ops;
  };
  Ops expected;
  for (int step = 0; step < 2; ++step)
    for (int stage = 1; stage <= 2; ++stage) {
      const Ops r = round(step, stage);
      expected.insert(expected.end(), r.begin(), r.end());
    }
  EXPECT_EQ(without(w.ops(StreamKind::comm), {"await", "notify"}), expected);
  // Each step holds the estimate round's micro-batch and the correction's.
  EXPECT_EQ(w.ops(StreamKind::compute, "accumulation"),
            (Ops{"accumulation step 0: 2 micro-batches", "accumulation step 1: 2 micro-batches"}));
  // Buffer_i: the first round only leaves its gradients; every later one first takes the
  // parameters the finished round produced.
  const Ops copies = w.ops(StreamKind::compute, "copy");
  ASSERT_EQ(copies.size(), 7U);
  EXPECT_EQ(copies[0], "copy grads[0:1000] -> handoff_buffer[0:1000]");
  for (std::size_t i = 1; i < copies.size(); i += 2) {
    EXPECT_EQ(copies[i], "copy handoff_buffer[0:1000] -> params[0:1000]");
    EXPECT_EQ(copies[i + 1], "copy grads[0:1000] -> handoff_buffer[0:1000]");
  }
}

TEST(OpSequence, AccoWpCommitsThenEstimatesFromTheSameGradients) {
  RecordingWorker w(four_layers(2, 1, "grad_accum: 1, warmup_steps: 0, steps: 2"));
  w.execute(*algorithm("acco-wp", {{"min_micro_batches", "1"}, {"max_micro_batches", "1"}}));
  const std::string common = ": params[0:500], grads reduced_grads_shard[0:500], state "
                             "optimizer_state[0:500], scale 0.5, out handoff_buffer[0:500], "
                             "divisor micro_batch_counts[0:1]";
  EXPECT_EQ(w.ops(StreamKind::comm, "optimizer"),
            (Ops{"optimizer step 0" + common, "optimizer step 0" + common + ", estimate",
                 "optimizer step 1" + common, "optimizer step 1" + common + ", estimate"}));
}

TEST(OpSequence, DeadlockIsReportedNotHung) {
  // A program whose compute stream awaits a signal nobody sends.
  class Stuck final : public Algorithm {
    class Program final : public WorkerProgram {
    public:
      explicit Program(Worker& w) : w_(w) {}
      void run_compute() override { w_.await(7); }
      void run_comm() override { w_.notify(1); }

    private:
      Worker& w_;
    };

  public:
    std::string name() const override { return "stuck"; }
    std::unique_ptr<WorkerProgram> program(Worker& w) const override {
      return std::make_unique<Program>(w);
    }
  };
  RecordingWorker w(four_layers(2, 1, "steps: 1"));
  try {
    w.execute(Stuck{});
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "stuck: deadlock: the compute stream awaits signal 7 that nobody sends");
  }
}

} // namespace
} // namespace overlapsim
