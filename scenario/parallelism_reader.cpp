// The `parallelism` section (issue 65): tensor, sequence and pipeline parallelism, their schedule,
// stages, rank order and recomputation, checked against the cluster, the model and the training
// setup (docs/SCENARIO.md, "3D parallelism").
#include "scenario/readers.h"

#include "hw/model.h"

#include <fmt/format.h>

#include <cmath>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

namespace overlapsim::scenario::yaml {

namespace {

// "tp-dp-pp": a permutation of tp, dp and pp, the fastest-varying axis first.
std::array<ParallelAxis, 3> read_order(const Entry& e) {
  const std::string text = e.text();
  std::array<ParallelAxis, 3> order{};
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (;;) {
    const std::size_t dash = text.find('-', start);
    parts.push_back(text.substr(start, dash == std::string::npos ? dash : dash - start));
    if (dash == std::string::npos)
      break;
    start = dash + 1;
  }
  bool seen[3] = {false, false, false};
  bool ok = parts.size() == 3;
  for (std::size_t i = 0; ok && i < 3; ++i) {
    const std::string& p = parts[i];
    const ParallelAxis axis = p == "tp"   ? ParallelAxis::tensor
                              : p == "dp" ? ParallelAxis::data
                              : p == "pp" ? ParallelAxis::pipeline
                                          : ParallelAxis{3};
    const auto k = static_cast<std::size_t>(axis);
    if (k > 2 || seen[k]) {
      ok = false;
      break;
    }
    seen[k] = true;
    order[i] = axis;
  }
  if (!ok)
    e.fail(
        fmt::format("expected a permutation of tp, dp and pp joined by '-', the fastest-varying "
                    "first (tp-dp-pp, tp-pp-dp, dp-tp-pp, dp-pp-tp, pp-tp-dp, pp-dp-tp), got '{}'",
                    text));
  return order;
}

// The stride of `axis` in the rank numbering: the product of the sizes of the axes before it.
int stride_of(const ParallelismSpec& p, ParallelAxis axis, int world) {
  int stride = 1;
  for (const ParallelAxis a : p.order) {
    if (a == axis)
      break;
    stride *= a == ParallelAxis::tensor     ? p.tensor
              : a == ParallelAxis::pipeline ? p.pipeline
                                            : p.data_parallel(world);
  }
  return stride;
}

// The transformer shape that tensor parallelism splits: heads, KV heads, hidden and FFN sizes.
struct SplitDims {
  double heads = 0, kv_heads = 0, hidden = 0, ffn = 0;
};
std::optional<SplitDims> split_dims(const ModelConfig& m) {
  if (m.dims.contains("n_heads")) {
    const auto at = [&](const char* k) { return m.dims.at(k); };
    return SplitDims{at("n_heads"), at("n_kv_heads"), at("d_model"), at("d_ff")};
  }
  if (m.preset == "vit-b16") {
    const auto& d = hw::vit_b16_dims().encoder;
    return SplitDims{static_cast<double>(d.n_heads), static_cast<double>(d.kv_heads()), d.d_model,
                     d.ffn_dim > 0 ? d.ffn_dim : 4 * d.d_model};
  }
  return std::nullopt;
}

} // namespace

ParallelismSpec read_parallelism(const Entry& e, const Scenario& s,
                                 std::vector<std::string>& warnings) {
  e.expect_map({"tensor", "sequence_parallel", "pipeline", "schedule", "virtual_stages", "stages",
                "order", "recompute", "tp_comm_overlap"});
  ParallelismSpec p;
  p.where = e.where();
  const int world = s.cluster.world_size();
  if (e.has("tensor")) {
    const Entry t = e.child("tensor");
    p.tensor = static_cast<int>(t.integer(1, 1 << 20));
    p.tensor_where = t.where();
    if (world % p.tensor != 0)
      t.fail(fmt::format("{} does not divide the cluster's {} GPUs", p.tensor, world));
  }
  if (e.has("sequence_parallel"))
    p.sequence_parallel = e.child("sequence_parallel").boolean();
  if (e.has("pipeline")) {
    const Entry pp = e.child("pipeline");
    p.pipeline = static_cast<int>(pp.integer(1, 1 << 20));
    p.pipeline_where = pp.where();
    if (world % p.pipeline != 0)
      pp.fail(fmt::format("{} does not divide the cluster's {} GPUs", p.pipeline, world));
    if (world % (p.tensor * p.pipeline) != 0)
      pp.fail(fmt::format("tensor x pipeline = {} x {} = {} does not divide the cluster's {} GPUs",
                          p.tensor, p.pipeline, p.tensor * p.pipeline, world));
  }
  if (e.has("schedule"))
    p.schedule = e.child("schedule")
                     .choice<PipelineSchedule>({{"gpipe", PipelineSchedule::gpipe},
                                                {"1f1b", PipelineSchedule::one_f_one_b},
                                                {"interleaved", PipelineSchedule::interleaved},
                                                {"zero-bubble", PipelineSchedule::zero_bubble}});
  if (e.has("virtual_stages")) {
    const Entry v = e.child("virtual_stages");
    p.virtual_stages = static_cast<int>(v.integer(1, 1 << 16));
    if (p.virtual_stages > 1 && p.schedule != PipelineSchedule::interleaved)
      v.fail(fmt::format("{} model chunks per GPU need schedule: interleaved (the schedule is {})",
                         p.virtual_stages, to_string(p.schedule)));
  }
  // Megatron's interleaved schedule runs the micro-batches in groups of `pipeline` (its
  // get_forward_backward_func asserts num_microbatches % pipeline == 0).
  if (p.schedule == PipelineSchedule::interleaved && s.training.grad_accum % p.pipeline != 0)
    e.child("schedule")
        .fail(fmt::format(
            "interleaved 1F1B needs the micro-batches per step (training.grad_accum: {}) to be a "
            "multiple of pipeline ({})",
            s.training.grad_accum, p.pipeline));
  if (e.has("order"))
    p.order = read_order(e.child("order"));
  if (e.has("recompute"))
    p.recompute = e.child("recompute")
                      .choice<Recompute>({{"none", Recompute::none},
                                          {"selective", Recompute::selective},
                                          {"full", Recompute::full}});
  if (e.has("tp_comm_overlap"))
    p.tp_comm_overlap = e.child("tp_comm_overlap").boolean();
  // Megatron asserts it: TransformerEngine's userbuffers overlap SP's all-gathers and
  // reduce-scatters, not the all-reduces of TP alone.
  if (p.tp_comm_overlap && p.tensor > 1 && !p.sequence_parallel)
    e.child("tp_comm_overlap")
        .fail("needs sequence_parallel: true (Megatron's tp_comm_overlap overlaps the "
              "all-gathers and reduce-scatters of sequence parallelism with the GEMMs)");
  if (p.recompute != Recompute::none && s.model.checkpointing.enabled())
    e.child("recompute")
        .fail("model.activation_checkpointing already recomputes: use one of the two (recompute: "
              "Megatron's per-block recomputation; activation_checkpointing: Hugging Face's)");

  // Tensor parallelism splits heads (and KV heads), the hidden size and the FFN size.
  if (p.tensor > 1)
    if (const auto d = split_dims(s.model)) {
      const Entry t = e.child("tensor");
      const auto check = [&](double n, const char* what) {
        if (std::fmod(n, p.tensor) != 0)
          t.fail(fmt::format("{} does not divide the model's {} {}", p.tensor,
                             static_cast<long long>(n), what));
      };
      check(d->heads, "attention heads (n_heads)");
      check(d->kv_heads, "KV heads (n_kv_heads)");
      check(d->hidden, "hidden size (d_model)");
      check(d->ffn, "FFN size (d_ff)");
    }

  // Stages: layer counts per chunk, or the blocks split evenly.
  const int layers = static_cast<int>(s.model.spec.layers.size());
  const int chunks = p.chunks();
  if (e.has("stages") && !e.child("stages").is_scalar()) {
    const Entry st = e.child("stages");
    for (const auto& item : st.items())
      p.stages.push_back(static_cast<int>(item.integer(0, layers)));
    if (static_cast<int>(p.stages.size()) != chunks)
      st.fail(fmt::format("expected {} layer counts (pipeline x virtual_stages = {} x {}), got {}",
                          chunks, p.pipeline, p.virtual_stages, p.stages.size()));
    for (std::size_t c = 0; c < p.stages.size(); ++c)
      if (p.stages[c] == 0)
        st.fail(fmt::format("stage {} has no layer; every stage needs at least one", c));
    const int sum = std::accumulate(p.stages.begin(), p.stages.end(), 0);
    if (sum != layers)
      st.fail(fmt::format("the counts add up to {} layers, the model has {} (embedding and head "
                          "included)",
                          sum, layers));
  } else {
    if (e.has("stages"))
      e.child("stages").choice<int>({{"balanced", 0}});
    // The blocks: the layers between a first "embedding" and a last "head" (a transformer's,
    // ViT's), else every layer, as parallel::ParallelLayout places them.
    const auto& l = s.model.spec.layers;
    const bool framed = l.size() >= 2 && l.front().name == "embedding" && l.back().name == "head";
    const int n = layers - (framed ? 2 : 0);
    if (chunks > n) {
      const Entry at = e.has("stages")     ? e.child("stages")
                       : e.has("pipeline") ? e.child("pipeline")
                                           : e;
      at.fail(fmt::format("{} stages (pipeline x virtual_stages = {} x {}) for {} blocks: a stage "
                          "would have no layer",
                          chunks, p.pipeline, p.virtual_stages, n));
    }
  }

  // A TP group whose GPUs sit on several nodes sends every layer's all-reduces over the network.
  if (p.tensor > 1) {
    const int stride = stride_of(p, ParallelAxis::tensor, world);
    const int gpn = s.cluster.gpus_per_node;
    bool crosses = false; // a group's ranks ascend: its first and last GPU on one node or not
    for (int r = 0; r < world && !crosses; ++r)
      crosses = (r / stride) % p.tensor == 0 && r / gpn != (r + (p.tensor - 1) * stride) / gpn;
    if (crosses)
      warnings.push_back(fmt::format(
          "{}: key 'parallelism.tensor': a TP group of {} GPUs (order {}) spans several nodes of "
          "{} GPUs: its all-reduces cross the inter-node network (Megatron keeps TP inside a node)",
          e.child("tensor").where(), p.tensor, order_string(p.order), gpn));
  }
  // Keys that change nothing in this scenario load with a warning (SCENARIO.md, "Keys with no
  // effect"): TP's options without TP, the pipeline's without stages.
  const auto no_effect = [&](const char* key, const std::string& why) {
    if (e.has(key))
      warnings.push_back(fmt::format("{}: key 'parallelism.{}' has no effect: {}",
                                     e.child(key).where(), key, why));
  };
  if (p.tensor == 1) {
    if (p.sequence_parallel)
      no_effect("sequence_parallel", "no tensor parallelism (parallelism.tensor: 1)");
    if (p.tp_comm_overlap)
      no_effect("tp_comm_overlap", "no tensor parallelism (parallelism.tensor: 1)");
  }
  if (p.pipeline == 1)
    for (const char* key : {"schedule", "stages"})
      no_effect(key, "one pipeline stage (parallelism.pipeline: 1)");
  // Megatron recomputes transformer blocks only (parallel/stage_view.h).
  if (p.recompute != Recompute::none && !s.model.dims.contains("n_heads"))
    no_effect("recompute", "not a transformer (no blocks to recompute); "
                           "model.activation_checkpointing recomputes any model's layers");
  return p;
}

} // namespace overlapsim::scenario::yaml
