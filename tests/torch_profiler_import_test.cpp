// `overlapsim profile --import-torch-profiler`: a hand-built Kineto trace whose attribution is
// pinned exactly, the error cases, and the real H100 trace of GPT-Neo 125M (tests/data/h100)
// against its CUDA-event ground truth.
#include "scenario/loader.h"
#include "scenario/torch_profiler_import.h"
#include "test_util.h"

#include <filesystem>
#include <fstream>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <zlib.h>

namespace overlapsim::scenario {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;

// One per test process, so that tests running at once never share a file.
fs::path temp_dir() {
  static const overlapsim::testing::ScratchDir dir;
  return dir.path();
}

// A model of 4 layers (first, 2 blocks, last) as a scenario the trace maps onto.
Scenario four_layer_scenario() {
  const auto path = temp_dir() / "s.yaml";
  std::ofstream(path) << overlapsim::testing::kKinetoScenario;
  return load_scenario(path.string());
}

// One training step of a toy trace starting at `t0` (microseconds). Forward thread 1: modules
// Embed_0, Block_0, Block_1 (each with an inner Linear), then the loss outside any module; the
// autograd thread 2 runs the backward ops, whose sequence numbers name their forward ops; then the
// optimizer. Every CPU op launches one kernel; kernel durations say where they must land.
void add_step(json& events, double t0, long long& correlation, long long seq_base) {
  auto range = [&](const char* cat, const std::string& name, double ts, double dur, int tid,
                   long long seq = -1) {
    json e = {{"ph", "X"},  {"cat", cat},    {"name", name}, {"pid", 1},
              {"tid", tid}, {"ts", t0 + ts}, {"dur", dur}};
    if (seq >= 0)
      e["args"] = {{"Sequence number", seq}};
    events.push_back(e);
  };
  auto launch = [&](double ts, int tid, double kernel_us) {
    const long long c = correlation++;
    events.push_back({{"ph", "X"},
                      {"cat", "cuda_runtime"},
                      {"name", "cudaLaunchKernel"},
                      {"pid", 1},
                      {"tid", tid},
                      {"ts", t0 + ts},
                      {"dur", 0.5},
                      {"args", {{"correlation", c}}}});
    events.push_back({{"ph", "X"},
                      {"cat", "kernel"},
                      {"name", "k"},
                      {"pid", 0},
                      {"tid", 7},
                      {"ts", t0 + ts + 1},
                      {"dur", kernel_us},
                      {"args", {{"correlation", c}}}});
  };
  range("user_annotation", "ProfilerStep#" + std::to_string(seq_base), 0, 1000, 1);
  // Forward: Embed_0 [10, 20], Block_0 [30, 60] with Linear_0 inside, Block_1 [70, 100].
  range("python_function", "nn.Module: Embed_0", 10, 10, 1);
  range("cpu_op", "aten::embedding", 11, 5, 1, seq_base + 1);
  launch(12, 1, 100); // embedding fwd: 100 us
  range("python_function", "nn.Module: Block_0", 30, 30, 1);
  range("python_function", "nn.Module: Linear_0", 31, 20, 1);
  range("cpu_op", "aten::addmm", 32, 5, 1, seq_base + 2);
  launch(33, 1, 200); // block 0 fwd: 200 us
  range("python_function", "nn.Module: Block_1", 70, 30, 1);
  range("python_function", "nn.Module: Linear_1", 71, 20, 1);
  range("cpu_op", "aten::addmm", 72, 5, 1, seq_base + 3);
  launch(73, 1, 300); // block 1 fwd: 300 us
  range("cpu_op", "aten::cross_entropy", 110, 5, 1, seq_base + 4);
  launch(111, 1, 400); // loss, after the blocks, outside any module: head fwd 400 us
  // Memory: Block_1 leaves 8 MB allocated (10 MB then 2 MB freed); a free outside modules.
  events.push_back({{"ph", "i"},
                    {"name", "[memory]"},
                    {"pid", 1},
                    {"tid", 1},
                    {"ts", t0 + 74},
                    {"args", {{"Bytes", 10e6}, {"Device Type", 1}}}});
  events.push_back({{"ph", "i"},
                    {"name", "[memory]"},
                    {"pid", 1},
                    {"tid", 1},
                    {"ts", t0 + 75},
                    {"args", {{"Bytes", -2e6}, {"Device Type", 1}}}});
  // Backward on thread 2, in reverse order; a gradient accumulation kernel without a sequence
  // number follows block 0's backward.
  auto backward = [&](double ts, long long seq, double kernel_us) {
    range("cpu_op", "autograd::engine::evaluate_function: XBackward0", ts, 10, 2, seq);
    range("cpu_op", "XBackward0", ts + 1, 8, 2, seq);
    launch(ts + 2, 2, kernel_us);
  };
  backward(200, seq_base + 4, 40); // head bwd
  backward(220, seq_base + 3, 30); // block 1 bwd
  backward(240, seq_base + 2, 20); // block 0 bwd
  range("cpu_op", "autograd::engine::evaluate_function: AccumulateGrad", 255, 5, 2);
  launch(256, 2, 5);               // loose: follows block 0's backward
  backward(270, seq_base + 1, 10); // embedding bwd
  range("user_annotation", "Optimizer.step#AdamW.step", 300, 50, 1);
  launch(310, 1, 60); // optimizer
}

std::string write_trace(const json& trace, const std::string& name, bool gzip) {
  const auto path = (temp_dir() / name).string();
  const std::string text = trace.dump();
  if (gzip) {
    gzFile f = gzopen(path.c_str(), "wb");
    gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
    gzclose(f);
  } else {
    std::ofstream(path) << text;
  }
  return path;
}

json toy_trace() {
  json events = json::array();
  long long correlation = 100;
  add_step(events, 0, correlation, 1000);
  add_step(events, 5000, correlation, 2000);
  return json{{"deviceProperties", json::array({{{"name", "Toy GPU"}}})}, {"traceEvents", events}};
}

TEST(TorchProfilerImport, AttributesKernelsToLayersAsByHand) {
  const auto s = four_layer_scenario();
  for (bool gz : {false, true}) {
    const auto cal = import_torch_profiler(write_trace(toy_trace(), "toy.json", gz), s);
    ASSERT_EQ(cal.layers.size(), 4u);
    EXPECT_EQ(cal.device, "Toy GPU");
    // Per step (both alike), per sample (micro-batch 2), in seconds.
    const double fwd[] = {100, 200, 300, 400}, bwd[] = {10, 20 + 5, 30, 40};
    const char* names[] = {"embedding", "block0", "block1", "head"};
    for (std::size_t l = 0; l < 4; ++l) {
      EXPECT_EQ(cal.layers[l].name, names[l]);
      EXPECT_NEAR(cal.layers[l].fwd_time_per_sample_s, fwd[l] * 1e-6 / 2, 1e-12) << names[l];
      EXPECT_NEAR(cal.layers[l].bwd_time_per_sample_s, bwd[l] * 1e-6 / 2, 1e-12) << names[l];
    }
    EXPECT_NEAR(cal.layers[2].activation_bytes_per_sample, 8e6 / 2, 1e-6);
    EXPECT_EQ(cal.layers[1].activation_bytes_per_sample, 0.0);
    EXPECT_NEAR(cal.optimizer_time_per_param_s, 60e-6 / 4e6, 1e-18); // 4M parameters
  }
}

TEST(TorchProfilerImport, ErrorsNameTheFileAndTheProblem) {
  const auto s = four_layer_scenario();
  auto error = [&](const std::string& path) {
    try {
      import_torch_profiler(path, s);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(error(write_trace(json{{"a", 1}}, "not-kineto.json", false)),
              HasSubstr("not a PyTorch profiler (Kineto) trace"));
  // Damaged gzip: a valid header, then garbage.
  const auto bad = (temp_dir() / "bad.json.gz").string();
  std::ofstream(bad) << std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", 10) << "garbage!";
  EXPECT_THAT(error(bad), HasSubstr("bad.json.gz"));
  // No steps.
  auto trace = toy_trace();
  json kept = json::array();
  for (const auto& e : trace["traceEvents"])
    if (!e.value("name", "").starts_with("ProfilerStep#"))
      kept.push_back(e);
  trace["traceEvents"] = kept;
  EXPECT_THAT(error(write_trace(trace, "nostep.json", false)), HasSubstr("no ProfilerStep#N"));
  // Two classes with two outermost instances each: ambiguous, both named.
  trace = toy_trace();
  for (auto& e : trace["traceEvents"])
    if (e.value("name", "") == "nn.Module: Embed_0")
      e["name"] = "nn.Module: Other_0";
  for (double t0 : {0.0, 5000.0}) // a second Other around the loss, outside the blocks
    trace["traceEvents"].push_back({{"ph", "X"},
                                    {"cat", "python_function"},
                                    {"name", "nn.Module: Other_1"},
                                    {"pid", 1},
                                    {"tid", 1},
                                    {"ts", t0 + 109},
                                    {"dur", 8}});
  const auto msg = error(write_trace(trace, "ambiguous.json", false));
  EXPECT_THAT(msg, HasSubstr("ambiguous.json"));
  EXPECT_THAT(msg, HasSubstr("Block, Other"));
}

// The real thing: GPT-Neo 125M on one H100 (tests/data/h100, see its README): each block's
// forward and backward within 5% of the CUDA-event ground truth, and the simulated one-GPU step
// with the imported profile within 5% of the measured 309 ms.
TEST(TorchProfilerImport, GptNeo125mOnH100MatchesTheGroundTruth) {
  const fs::path data = fs::path(OVERLAPSIM_SOURCE_DIR) / "tests/data/h100";
  // The data ships with the source: a missing file is a broken checkout, not a reason to skip.
  ASSERT_TRUE(fs::exists(data / "gpt-neo-125m-h100-kineto.json.gz")) << data;
  std::ifstream in(data / "gpt-neo-125m-h100-layers.json");
  ASSERT_TRUE(in) << data / "gpt-neo-125m-h100-layers.json";
  const auto truth = json::parse(in);
  const auto path = temp_dir() / "neo.yaml";
  std::ofstream(path) << R"(name: neo
cluster: {nodes: 1, gpus_per_node: 1, gpu: h100-sxm}
model: {preset: gpt-neo-125m}
training: {micro_batch: 24, seq_len: 1024, steps: 3, warmup_steps: 1}
algorithms: [ddp]
)";
  auto s = load_scenario(path.string());
  const auto cal = import_torch_profiler((data / "gpt-neo-125m-h100-kineto.json.gz").string(), s);
  ASSERT_EQ(cal.layers.size(), 14u);
  for (std::size_t k = 0; k < 12; ++k) {
    const double fwd = cal.layers[k + 1].fwd_time_per_sample_s * 24 * 1e3;
    const double bwd = cal.layers[k + 1].bwd_time_per_sample_s * 24 * 1e3;
    const double fwd_truth = truth["block_fwd_ms"][k].get<double>();
    const double bwd_truth = truth["block_bwd_ms"][k].get<double>();
    EXPECT_NEAR(fwd, fwd_truth, 0.05 * fwd_truth) << "block " << k;
    EXPECT_NEAR(bwd, bwd_truth, 0.05 * bwd_truth) << "block " << k;
  }
  const auto profile = temp_dir() / "neo-profile.json";
  std::ofstream(profile) << calibration_json(cal);
  s = load_scenario(path.string(), {"model.profile=" + profile.string()});
  const auto r = overlapsim::testing::simulate(s, "ddp");
  const double step = truth["median_ms"]["step"].get<double>() * 1e-3;
  EXPECT_NEAR(r.metrics.iteration_time_s, step, 0.05 * step);
}

} // namespace
} // namespace overlapsim::scenario
