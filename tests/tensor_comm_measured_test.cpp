// Tensor-parallel collectives measured in situ (issue 65.9): a calibration profile taken under
// parallelism.tensor holds, per layer, what its TP collectives cost a micro-batch's forward and
// backward as a real run pays them (validate/profiler.cpp's time_tensor_comm); the simulator then
// charges those seconds in place of the collectives' price on the TP group's links
// (parallel/stage_view.cpp), only at the TP size and micro-batch they were measured at.
#include "parallel/stage_view.h"
#include "scenario/calibration.h"
#include "sim/sim_runtime.h"
#include "test_util.h"

#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <gtest/gtest.h>

namespace overlapsim {
namespace {

// scenarios/validate-gpt-tiny-pp2-dp2.yaml as TP2 x DP2: gpt-tiny on 4 CPU workers.
constexpr const char* kTinyTp2 =
    "name: tiny-tp2\ncluster: {nodes: 4, gpus_per_node: 1, gpu: {name: cpu, peak_tflops: 0.05, "
    "memory: 16GB, hbm_bandwidth: 10GB/s}, inter_node: ethernet-1g}\n"
    "model: {preset: gpt-tiny, vocab: 256, d_model: 128, n_layers: 4, n_heads: 4, dtype: fp32}\n"
    "training: {micro_batch: 8, seq_len: 64, grad_accum: 4, steps: 3, warmup_steps: 1, "
    "optimizer: adamw}\nparallelism: {tensor: 2}\nalgorithms: [ddp]\n";

// Layer l's measured TP cost: forward (l + 1) ms, backward (l + 1) / 2 ms a micro-batch.
double measured_forward(std::size_t l) {
  return 1e-3 * static_cast<double>(l + 1);
}
double measured_backward(std::size_t l) {
  return 0.5e-3 * static_cast<double>(l + 1);
}

// A profile of the scenario's layers, each 0.1 ms forward and 0.2 ms backward a sample.
scenario::Calibration tiny_profile(const scenario::Scenario& s, int tensor) {
  scenario::Calibration c;
  c.model = s.model.spec.name;
  c.micro_batch = 8;
  c.tensor_parallel = tensor;
  for (std::size_t l = 0; l < s.model.spec.layers.size(); ++l) {
    scenario::LayerTiming t{s.model.spec.layers[l].name, 1e-4, 2e-4};
    t.tp_forward_s = measured_forward(l);
    t.tp_backward_s = measured_backward(l);
    c.layers.push_back(t);
  }
  return c;
}

struct Profiled {
  testing::ScratchDir dir;
  std::string path;
};

std::unique_ptr<Profiled> write_profile(const scenario::Calibration& c) {
  auto p = std::make_unique<Profiled>();
  p->path = (p->dir / "profile.json").string();
  std::ofstream(p->path) << scenario::calibration_json(c);
  return p;
}

TEST(TensorCommMeasured, RoundTripsThroughTheCalibrationFile) {
  const auto s = testing::scenario_from(kTinyTp2);
  const auto p = write_profile(tiny_profile(s, 2));
  const auto back = scenario::read_calibration(p->path);
  EXPECT_EQ(back.tensor_parallel, 2);
  ASSERT_EQ(back.layers.size(), s.model.spec.layers.size());
  for (std::size_t l = 0; l < back.layers.size(); ++l) {
    EXPECT_DOUBLE_EQ(back.layers[l].tp_forward_s, measured_forward(l)) << l;
    EXPECT_DOUBLE_EQ(back.layers[l].tp_backward_s, measured_backward(l)) << l;
  }
  // Without tensor parallelism the keys are not written, and read back as not measured.
  auto plain = tiny_profile(s, 0);
  const auto q = write_profile(plain);
  EXPECT_EQ(scenario::read_calibration(q->path).tensor_parallel, 0);
  EXPECT_DOUBLE_EQ(scenario::read_calibration(q->path).layers[1].tp_forward_s, 0);
}

TEST(TensorCommMeasured, RejectsANegativeCost) {
  const auto s = testing::scenario_from(kTinyTp2);
  auto c = tiny_profile(s, 2);
  c.layers[2].tp_backward_s = -1e-3;
  const auto p = write_profile(c);
  try {
    scenario::read_calibration(p->path);
    ADD_FAILURE() << "a negative TP cost was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("model.layers[2]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("tp_backward_s"), std::string::npos) << e.what();
  }
}

TEST(TensorCommMeasured, ReplacesTheLinkPriceAtTheMeasuredTensorSize) {
  const auto plain = testing::scenario_from(kTinyTp2);
  const auto p = write_profile(tiny_profile(plain, 2));
  const auto s = testing::scenario_from(kTinyTp2, {"model.profile=" + p->path});
  EXPECT_EQ(s.model.spec.tp_comm_measured_tensor, 2);
  const auto views = parallel::stage_views(s, parallel::ParallelLayout::of(s));
  ASSERT_EQ(views.size(), 1u);
  const auto& comm = views.front().tensor_comm;
  ASSERT_EQ(comm.size(), plain.model.spec.layers.size());
  for (std::size_t l = 0; l < comm.size(); ++l) {
    EXPECT_DOUBLE_EQ(comm[l].forward_s, measured_forward(l)) << l;
    EXPECT_DOUBLE_EQ(comm[l].backward_s, measured_backward(l)) << l;
  }
  // The calls and bytes stay the model's (the trace's names and byte counts).
  const auto priced = parallel::stage_views(plain, parallel::ParallelLayout::of(plain));
  EXPECT_EQ(comm[1].forward_calls, priced.front().tensor_comm[1].forward_calls);
  EXPECT_DOUBLE_EQ(comm[1].forward_bytes, priced.front().tensor_comm[1].forward_bytes);
  EXPECT_NE(priced.front().tensor_comm[1].forward_s, measured_forward(1));
}

TEST(TensorCommMeasured, AnotherTensorSizeOrMicroBatchKeepsTheLinkPrice) {
  const auto p = write_profile(tiny_profile(testing::scenario_from(kTinyTp2), 2));
  for (const auto& o :
       {std::string("parallelism.tensor=4"), std::string("training.micro_batch=4")}) {
    const auto s = testing::scenario_from(kTinyTp2, {"model.profile=" + p->path, o});
    const auto plain = testing::scenario_from(kTinyTp2, {o});
    const auto measured = parallel::stage_views(s, parallel::ParallelLayout::of(s));
    const auto priced = parallel::stage_views(plain, parallel::ParallelLayout::of(plain));
    for (std::size_t l = 0; l < measured.front().tensor_comm.size(); ++l) {
      EXPECT_DOUBLE_EQ(measured.front().tensor_comm[l].forward_s,
                       priced.front().tensor_comm[l].forward_s)
          << o << " layer " << l;
      EXPECT_DOUBLE_EQ(measured.front().tensor_comm[l].backward_s,
                       priced.front().tensor_comm[l].backward_s)
          << o << " layer " << l;
    }
  }
}

// The simulated run charges them: per micro-batch, the forward's TP op lasts the layers' measured
// forward sum (1 + 2 + ... + 6 ms = 21 ms for gpt-tiny's embedding, 4 blocks and head), the
// backward's ops together their backward sum (10.5 ms); 4 micro-batches a step.
TEST(TensorCommMeasured, TheSimulatedRunChargesTheMeasuredSeconds) {
  const auto plain = testing::scenario_from(kTinyTp2);
  const auto p = write_profile(tiny_profile(plain, 2));
  const auto s = testing::scenario_from(kTinyTp2, {"model.profile=" + p->path});
  const std::size_t layers = plain.model.spec.layers.size();
  ASSERT_EQ(layers, 6u);
  const auto r = sim::simulate(s, s.algorithms.front());
  double forward = 0, backward = 0;
  for (const auto& e : r.trace.events)
    if (e.worker == 0 && e.step == 1 && e.detail >= 0 &&
        r.trace.name_of(e.detail) == "tensor-parallel") {
      if (r.trace.name_of(e.name).starts_with("tensor-parallel forward"))
        forward += e.end - e.start;
      else
        backward += e.end - e.start;
    }
  EXPECT_NEAR(forward, 4 * 21e-3, 1e-9);
  EXPECT_NEAR(backward, 4 * 10.5e-3, 1e-9);
}

} // namespace
} // namespace overlapsim
