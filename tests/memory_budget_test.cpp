// Issue 26.3: a run estimates the simulator's own memory first and refuses past what is available,
// --max-memory or the address-space limit; a simulation that runs out of memory anyway becomes an
// error that says so.
#include "test_util.h"
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli/work_budget.h"
#include "sim/child_process.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <new>
#include <sys/resource.h>
#include <vector>

namespace {

namespace fs = std::filesystem;
using overlapsim::testing::run;
using overlapsim::testing::ScratchDir;
using ::testing::HasSubstr;

TEST(MemoryBudget, EstimateIsTheDocumentedFit) {
  auto s = overlapsim::testing::four_blocks_on_two_nodes(1, 2, "[ddp, acco]");
  // Rank classes would leave out one GPU only, too few to fold (sim/rank_classes.h): 2 GPUs x 3
  // steps x (4 layers x 2 x micro-batches + 1 bucket (200 MB of bf16 over 25 MiB: 7.63) + 4).
  // ACCO, the larger, accumulates 2 micro-batches a round for its 20 ms all-reduce, 2 rounds a
  // step (work_estimate_test.cpp).
  const double buckets = 200e6 / (25.0 * 1024 * 1024);
  EXPECT_NEAR(overlapsim::cli::estimate_work(s).ops, 2 * 3 * (8 * 4 + buckets + 4), 1e-6);
  s.cluster.rank_classes = overlapsim::scenario::RankClassesChoice::off; // 2 GPUs
  const double ops = overlapsim::cli::estimate_work(s).ops;
  EXPECT_NEAR(ops, 2 * 3 * (8 * 4 + buckets + 4), 1e-6);
  const auto m = overlapsim::cli::estimate_memory(s);
  // The traces of both algorithms, and the largest's serialized copy beside them (issue 63.6).
  // 800 B more per collective call: ACCO's and DDP's 2 GPUs x 3 steps x 7.63 buckets.
  const double calls = 2 * 3 * buckets;
  EXPECT_DOUBLE_EQ(m.resident_bytes,
                   40e6 + 100 * ops + 800 * calls + 9 * 1024 * 2 + 1.1 * 4 + 72 * ops * 3);
  // Folded (6 nodes: 5 GPUs left out), 310 B per GPU the representative's stand for beside it.
  s.cluster.rank_classes = overlapsim::scenario::RankClassesChoice::automatic;
  s.cluster.nodes = 6;
  const double folded_ops = overlapsim::cli::estimate_work(s).ops;
  EXPECT_DOUBLE_EQ(overlapsim::cli::estimate_memory(s).resident_bytes,
                   40e6 + 100 * folded_ops + 800 * calls / 2 + 9 * 1024 + 1.1 + 310 * 5 +
                       72 * folded_ops * 3);
  EXPECT_DOUBLE_EQ(m.address_space_bytes, 2.5 * m.resident_bytes + 2 * 2 * 132 * 1024.0);
}

// Every GPU simulated (rank classes off): the full simulation's budget.
const char* kBig = R"(name: big
cluster: {nodes: 2048, gpus_per_node: 8, gpu: a100-80gb, intra_node: nvlink3, rank_classes: off,
          inter_node: {bandwidth: 100Gb/s, latency: 5us}}
model:
  layers:
    - {name: block, params: 2M, fwd_flops_per_sample: 20G, repeat: 4}
training: {micro_batch: 2, seq_len: 128, steps: 1, warmup_steps: 0}
algorithms: [ddp]
)";

TEST(MemoryBudget, ARunPastTheBudgetIsRefusedBeforeSimulating) {
  const ScratchDir dir;
  std::ofstream(dir / "big.yaml") << kBig;
  const std::string args =
      "run " + (dir / "big.yaml").string() + " --no-plots --out " + (dir / "o").string();
  auto r = run(args + " --max-memory 100MB");
  EXPECT_EQ(r.first, 1);
  EXPECT_THAT(r.second, HasSubstr("big.yaml: the simulation would need about"));
  EXPECT_THAT(r.second, HasSubstr("on 16.38k GPUs"));
  EXPECT_THAT(r.second, HasSubstr("more than 100 MB (--max-memory)"));
  // With rank classes (the default) one node's 8 GPUs run for all 16,384: well inside 100 MB.
  r = run(args + " --max-memory 100MB --set cluster.rank_classes=auto");
  EXPECT_EQ(r.first, 0) << r.second;
  EXPECT_THAT(r.second, HasSubstr("simulated as rank classes (8 of 16384 GPUs simulated)"));
  fs::remove_all(dir / "o");
  r = run(args + " --max-memory lots");
  EXPECT_EQ(r.first, 1);
  EXPECT_THAT(r.second, HasSubstr("--max-memory 'lots'"));
#ifdef __SANITIZE_ADDRESS__
  GTEST_SKIP() << "AddressSanitizer maps terabytes of shadow memory: no ulimit -v under it";
#endif
  // Under a 1 GB address-space limit: 32,768 actor stacks alone need 4.3 GB. It aborted inside
  // SimGrid (exit 134, a backtrace) after starting.
  r = run(args, "ulimit -v 1000000;");
  EXPECT_EQ(r.first, 1) << r.second;
  EXPECT_THAT(r.second, HasSubstr("of address space"));
  EXPECT_THAT(r.second, HasSubstr("32.77k actor stacks"));
  EXPECT_THAT(r.second, HasSubstr("(ulimit -v)"));
  EXPECT_FALSE(fs::exists(dir / "o"));
}

// Lowers this (child) process's address-space limit to what it maps now plus `extra` bytes.
void limit_address_space(std::size_t extra) {
  std::ifstream statm("/proc/self/statm");
  std::size_t pages = 0;
  statm >> pages;
  const rlimit limit{pages * 4096 + extra, pages * 4096 + extra};
  ASSERT_EQ(::setrlimit(RLIMIT_AS, &limit), 0);
}

TEST(MemoryBudget, AnAllocationFailureInTheSimulationSaysOutOfMemory) {
#ifdef __SANITIZE_ADDRESS__
  GTEST_SKIP() << "AddressSanitizer reports a failed allocation itself, and maps terabytes";
#endif
  // std::bad_alloc, as C++ code throws it.
  overlapsim::sim::ChildProcess thrown([] {
    limit_address_space(64 << 20);
    std::vector<char> huge(std::size_t{1} << 32);
    return std::string(huge.data(), 1);
  });
  try {
    thrown.collect();
    ADD_FAILURE() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("out of memory"));
    EXPECT_THAT(e.what(), HasSubstr("address-space limit (ulimit -v)"));
  }
  // An abort once memory is exhausted, as SimGrid's allocator (xbt_die) does.
  overlapsim::sim::ChildProcess aborted([] {
    limit_address_space(64 << 20);
    std::vector<void*> blocks;
    while (void* p = std::malloc(1 << 20))
      blocks.push_back(p);
    std::abort();
    return std::string();
  });
  try {
    aborted.collect();
    ADD_FAILURE() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("out of memory"));
  }
  // An abort with memory to spare stays an abort.
  overlapsim::sim::ChildProcess plain([] {
    std::abort();
    return std::string();
  });
  try {
    plain.collect();
    ADD_FAILURE() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("signal 6"));
  }
}

} // namespace
