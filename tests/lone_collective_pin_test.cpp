// A lone collective's simulated time, pinned to what the flow-level simulation gave before the
// full simulation was made fast (issue 64.1, main 743fbdd): NCCL's trees, NVLSTree and rings over
// 2 to 32 DGX H100 nodes, every GPU simulated (cluster.rank_classes: off). Fewer flows, shapes
// computed once per communicator and SimGrid options must keep each within 1e-6 relative.
#include "sim/collective_timing.h"
#include "test_util.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace overlapsim {
namespace {

using testing::scenario_from;

struct Pinned {
  int nodes;
  const char* algorithm; // cluster.collective_algorithm
  double bytes;
  const char* ran; // the algorithm label the run reports
  double time_s;   // main 743fbdd (`overlapsim collective ... --json`)
};

double lone_all_reduce(int nodes, const std::string& algorithm, double bytes, std::string* ran) {
  const std::string yaml = fmt::format(
      "name: pin\ncluster: {{preset: dgx-h100, nodes: {}}}\nmodel: {{preset: gpt-neo-125m}}\n"
      "training: {{micro_batch: 1, seq_len: 128}}\nalgorithms: [ddp]\n",
      nodes);
  const auto s = scenario_from(
      yaml, {"cluster.rank_classes=off", "cluster.collective_algorithm=" + algorithm});
  const auto t = sim::time_collective(s, CollectiveOp::all_reduce, bytes);
  *ran = t.algorithm;
  return t.time_s;
}

TEST(LoneCollectivePin, TreesNvlsTreeAndRingsKeepTheirFlowLevelTime) {
  const std::vector<Pinned> pinned = {
      {2, "auto", 26214400.0, "nvlstree/Simple", 0.000208484722705314},
      {2, "auto", 1000000000.0, "nvlstree/Simple", 0.003814656112077294},
      {2, "tree", 26214400.0, "tree/LL128", 0.0003361830875866415},
      {2, "tree", 1000000000.0, "tree/Simple", 0.006522869565217391},
      {2, "ring", 26214400.0, "ring/LL128", 0.0003314057971014493},
      {2, "ring", 1000000000.0, "ring/Simple", 0.005640773333333333},
      {4, "auto", 26214400.0, "nvlstree/Simple", 0.0003471222956521739},
      {4, "auto", 1000000000.0, "nvlstree/Simple", 0.006227470121739131},
      {4, "tree", 26214400.0, "tree/LL128", 0.00039454743961352655},
      {4, "tree", 1000000000.0, "tree/Simple", 0.007803888888888889},
      {4, "ring", 26214400.0, "ring/LL128", 0.0005103526570048309},
      {4, "ring", 1000000000.0, "ring/LL128", 0.00620693961352657},
      {8, "auto", 26214400.0, "nvlstree/Simple", 0.0004177781410628019},
      {8, "auto", 1000000000.0, "nvlstree/Simple", 0.006298125967149759},
      {8, "tree", 26214400.0, "tree/LL128", 0.0004115474396135266},
      {8, "tree", 1000000000.0, "tree/Simple", 0.007831888888888888},
      {8, "ring", 26214400.0, "ring/LL128", 0.0008608260869565217},
      {8, "ring", 1000000000.0, "ring/LL128", 0.006649293478260869},
      {16, "auto", 26214400.0, "nvlstree/Simple", 0.00048843398647343},
      {16, "auto", 1000000000.0, "nvlstree/Simple", 0.006368781812560386},
      {16, "tree", 26214400.0, "tree/LL128", 0.0004285474396135266},
      {16, "tree", 1000000000.0, "tree/Simple", 0.007859888888888888},
      {16, "ring", 26214400.0, "ring/LL", 0.0010806846560846564},
      {16, "ring", 1000000000.0, "ring/LL128", 0.007392470410628019},
      {32, "auto", 26214400.0, "nvlstree/Simple", 0.000559089831884058},
      {32, "auto", 1000000000.0, "nvlstree/Simple", 0.006439437657971015},
  };
  for (const auto& p : pinned) {
    std::string ran;
    const double t = lone_all_reduce(p.nodes, p.algorithm, p.bytes, &ran);
    EXPECT_EQ(ran, p.ran) << p.nodes << " " << p.algorithm << " " << p.bytes;
    EXPECT_NEAR(t / p.time_s, 1.0, 1e-6) << p.nodes << " " << p.algorithm << " " << p.bytes;
  }
}

} // namespace
} // namespace overlapsim
