// A lone collective's simulated time, pinned to what the flow-level simulation gave before the
// full simulation was made fast (issue 64.1, main 743fbdd; the rings re-pinned after NCCL's
// multi-node ring latencies were merged, main d95acc3+transport): NCCL's trees, NVLSTree and rings
// over 2 to 32 DGX H100 nodes, every GPU simulated (cluster.rank_classes: off). Fewer flows, shapes
// computed once per communicator and SimGrid options must keep each within 1e-6 relative. The
// classic trees re-pinned when a star's tree slept its chains (issue 66.1): each is now NCCL's
// closed form, e.g. 2 nodes, 1e9 B: 138 us + 1e9 / (8 x 41.4 / 2 GB/s) = 6.1766 ms (was 6.5229,
// its chains and NIC flows sharing the GPU links), 4 nodes 166 us + 1e9 / 144 GB/s (was 7.80 ms).
// The Simple rings re-pinned with NCCL 2.18+'s ring plateau, 1.4x on sm_80 and newer where 1.9x
// was (issue 66.2): 2 nodes -71.8 us (0.5 x 143.6 us of latency), 4 nodes -147.4 us.
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
  double time_s;   // the flow-level simulation's time before run_flows
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

// The tree/Simple rows at 1 GB include the Simple tree's chunk fill (comm/nccl_tree_pipeline.h;
// DGX H100, 512 KiB chunks: +0.33-0.50 ms, 5.4-7.0% over the 2-16 nodes).
TEST(LoneCollectivePin, TreesNvlsTreeAndRingsKeepTheirFlowLevelTime) {
  const std::vector<Pinned> pinned = {
      {2, "auto", 26214400.0, "nvlstree/Simple", 0.00020848472270531399},
      {2, "auto", 1000000000.0, "nvlstree/Simple", 0.0038146561120772941},
      {2, "tree", 26214400.0, "tree/LL128", 0.00032808086536441924},
      {2, "tree", 1000000000.0, "tree/Simple", 0.006507631653299564},
      {2, "ring", 26214400.0, "ring/LL128", 0.00023560579710144928},
      {2, "ring", 1000000000.0, "ring/Simple", 0.0054093733333333335},
      {4, "auto", 26214400.0, "nvlstree/Simple", 0.00034712229565217391},
      {4, "auto", 1000000000.0, "ring/Simple", 0.0057946644444444445},
      {4, "tree", 26214400.0, "tree/LL128", 0.00037734299516908214},
      {4, "tree", 1000000000.0, "tree/Simple", 0.007509814146053186},
      {4, "ring", 26214400.0, "ring/LL128", 0.00030975265700483091},
      {4, "ring", 1000000000.0, "ring/Simple", 0.0057946644444444445},
      {8, "auto", 26214400.0, "nvlstree/Simple", 0.0004177781410628019},
      {8, "auto", 1000000000.0, "nvlstree/Simple", 0.0062981259671497586},
      {8, "tree", 26214400.0, "tree/LL128", 0.0003943429951690822},
      {8, "tree", 1000000000.0, "tree/Simple", 0.007588469991463814},
      {8, "ring", 26214400.0, "ring/LL128", 0.00045062608695652171},
      {8, "ring", 1000000000.0, "ring/LL128", 0.0062390934782608695},
      {16, "auto", 26214400.0, "nvlstree/Simple", 0.00048843398647342999},
      {16, "auto", 1000000000.0, "nvlstree/Simple", 0.0063687818125603857},
      {16, "tree", 26214400.0, "tree/LL128", 0.00041134299516908216},
      {16, "tree", 1000000000.0, "tree/Simple", 0.007667125836874442},
      {16, "ring", 26214400.0, "ring/LL128", 0.00072866280193236712},
      {16, "ring", 1000000000.0, "ring/LL128", 0.0065630704106280201},
      {32, "auto", 26214400.0, "nvlstree/Simple", 0.00055908983188405798},
      {32, "auto", 1000000000.0, "nvlstree/Simple", 0.0064394376579710146},
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
