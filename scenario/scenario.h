// A scenario, typed: the cluster, the model, the training setup, the algorithms to compare and
// where the outputs go. scenario/ turns a user's YAML file into this (loader.h); every other module
// reads it.
#pragma once

#include "comm/collective_price.h"
#include "hw/fat_tree.h"
#include "hw/model.h"
#include "hw/presets.h"
#include "scenario/calibration.h"
#include "scenario/loss_curve.h"

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace overlapsim::scenario {

struct Straggler {
  int gpu = 0;           // global index: node * gpus_per_node + local
  double slowdown = 1.0; // every compute op on that GPU takes this many times as long
};

enum class JitterDistribution { none, lognormal, normal };

// Per compute op multiplicative noise with mean 1 (lognormal: mu = -sigma^2/2; normal: N(1, sigma)
// clamped to >= 0.05), drawn from a per-GPU generator seeded from (seed, gpu).
struct Jitter {
  JitterDistribution distribution = JitterDistribution::none;
  double sigma = 0; // of every op, whatever its length
  // Or, > 0: the sigma of a one-second op; an op of t seconds draws sigma_1s / sqrt(t) (at most
  // kMaxSigma), so its noise's variance grows with its time and a worker's noise adds up over its
  // compute the same however finely the ops cut it (hw::ModelSpec's measured
  // compute_jitter_sigma_1s, docs/MODEL.md).
  double sigma_1s = 0;
  bool given = false; // the scenario's own (cluster.jitter): a profile's never replaces it
  bool measured =
      false; // sigma_1s is the calibration profile's (model.profile), not the scenario's
  static constexpr double kMaxSigma = 0.5;
  // The sigma an op of `seconds` at nominal speed draws with.
  double sigma_of(double seconds) const;
  bool active() const {
    return distribution != JitterDistribution::none && (sigma > 0 || sigma_1s > 0);
  }
};

enum class NetworkModel { exact, tcp };
// nccl: NCCL's own cost model (protocols, channels, ring/tree/NVLS; comm/nccl_model.h) paces the
// flows; fused: the alpha-beta network view, each collective as concurrent flows at link speed;
// steps: the same, step by step.
using CollectiveFidelity = comm::CollectiveFidelity;
using CollectiveAlgorithm = comm::CollectiveAlgorithm;
using NcclProtocolChoice = comm::NcclProtocolChoice; // comm/collective_price.h
// Rank classes (issue 29; sim/rank_classes.h): auto simulates one node's ranks for every node's
// where nothing tells the nodes apart, off always simulates every rank, statistical also folds
// nodes told apart only by their random draws and slowdowns (jitter, per-GPU sequence lengths,
// stragglers): an approximation, labelled as one in every output (sim/slowest_of.h).
enum class RankClassesChoice { automatic, off, statistical };

// A WAN between groups of nodes: each site lists its nodes; traffic between sites crosses the WAN
// link of the source site and of the destination site (each carries `wan.latency / 2`).
struct Site {
  std::string name;
  std::vector<int> nodes;
};

// Nodes whose GPUs are of another type than `cluster.gpu` (cluster.node_types, issue 64.2): each
// of their GPUs computes at its own preset's roofline and holds its own memory.
struct NodeType {
  std::vector<int> nodes; // ascending
  hw::GpuSpec gpu;
};

// How one collective's measured time differs from its link's (Gloo on CPU runs reduce-scatter
// as an all-to-all, all-gather as list all-gathers: neither costs what the link's all-reduce fit
// says): the simulator runs the op with the bytes that give its measured time (BytesMap).
using CollectiveBytesMap = BytesMap;

struct ClusterSpec {
  int nodes = 1;
  int gpus_per_node = 1;
  hw::GpuSpec gpu;
  hw::LinkSpec intra_node;
  hw::LinkSpec inter_node;
  int nics_per_node = 1;
  std::vector<Straggler> stragglers;
  Jitter jitter;
  NetworkModel network_model = NetworkModel::exact;
  CollectiveFidelity collectives = CollectiveFidelity::nccl;
  CollectiveAlgorithm collective_algorithm = CollectiveAlgorithm::automatic;
  NcclProtocolChoice nccl_protocol = NcclProtocolChoice::automatic;
  RankClassesChoice rank_classes = RankClassesChoice::automatic;
  std::vector<Site> sites;          // empty: one site, no WAN
  std::vector<NodeType> node_types; // empty: every node's GPUs are `gpu`
  hw::LinkSpec wan;
  hw::FabricSpec fabric;   // the switches between nodes (hw/fat_tree.h)
  std::string calibration; // calibration profile whose fitted links replaced the given ones
  // By nccl-tests op name ("reduce_scatter", "all_gather"): from a calibration profile's per-op
  // fits; an op not listed runs with its own bytes.
  std::map<std::string, CollectiveBytesMap> collective_bytes;
  // By nccl-tests op name and whether in place: a calibration profile's measured collectives over
  // a group of one rank (Calibration::local_ops); an op measured in one form only prices both, an
  // op not listed costs nothing over one rank.
  std::map<std::pair<std::string, bool>, LinkFit> local_collectives;

  int world_size() const { return nodes * gpus_per_node; }
  double slowdown_of(int rank) const;
  // The type of node `node`'s GPUs: its entry in node_types (index), -1 for `gpu`.
  int node_type_of(int node) const;
  const hw::GpuSpec& gpu_of_node(int node) const;
};

enum class Dtype { fp32, bf16, fp16 };
enum class Optimizer { adamw, sgd, sgd_momentum };

// model.activation_checkpointing (Chen et al. 2016; PyTorch's torch.utils.checkpoint): the
// checkpointable layers (a transformer's blocks; every layer of any other model) are cut into
// segments of `every` consecutive layers. The forward keeps only each segment's input (the output
// of the layer before it); the backward re-runs a segment's forward from that input just before
// the segment's backward, so one segment's activations are alive at a time. `full` is every: 1.
struct ActivationCheckpointing {
  int every = 0;           // layers per segment; 0: none, every activation is kept
  int first = 0, last = 0; // the checkpointable layers [first, last)
  std::string where;       // "file.yaml:12": validate refuses a scenario that sets it

  bool enabled() const { return every > 0; }
  // The segment that `layer` belongs to, or -1 when its activations are kept as usual.
  int segment_of(int layer) const {
    if (!enabled() || layer < first || layer >= last)
      return -1;
    return (layer - first) / every;
  }
};

struct ModelConfig {
  hw::ModelSpec spec;        // resolved layers (preset, explicit list, or profile-calibrated)
  std::string preset;        // empty for an explicit layer list
  Dtype dtype = Dtype::bf16; // params, grads and communication
  std::string profile;       // calibration profile path, if any
  // "roofline" (per-op times on the scenario's GPU, hw/layer_ops.h; default of transformers,
  // resnet-50 and vit-b16)
  // or "flops" (FLOPs at the GPU's flat efficiency; `layers:` lists, mlp, any preset on request).
  std::string compute = "flops";
  // The dimensions of a sized preset (mlp: width, depth; gpt-tiny: vocab, d_model, n_layers,
  // n_heads), which the real runs build the model from.
  std::map<std::string, double> dims;
  // A transformer's whole shape (presets, `transformer`, gpt-tiny): what a tensor-parallel rank's
  // kernels are priced from (parallel/stage_view.h); unset for other models.
  std::optional<hw::TransformerDims> transformer;
  ActivationCheckpointing checkpointing;
};

// How long each micro-batch's sequences are (training.seq_len_distribution). A micro-batch draws
// one length L <= seq_len for all its samples (padded to its longest: the largest of `max_of`
// draws); its forward and backward cost scales with L: linearly, and quadratically for the
// attention part (hw::LayerSpec::seq_quadratic_share).
struct SeqLenDistribution {
  enum class Kind { fixed, lengths, lognormal, uniform };
  Kind kind = Kind::fixed;      // fixed: every micro-batch has seq_len
  std::vector<int> lengths;     // empirical: drawn uniformly from these
  double median = 0, sigma = 0; // lognormal
  int min = 1, max = 1;         // uniform integers
  int max_of = 1;               // a padded micro-batch: the longest of this many draws
};

struct TrainingSpec {
  int micro_batch = 1;
  int seq_len = 1024;
  SeqLenDistribution seq_len_distribution;
  int grad_accum = 1;
  int steps = 20;
  // Where `steps` was written ("file.yaml:12"), empty when it is the default: a default window
  // grows to whole synchronisation periods of each algorithm, a written one is the user's
  // (algorithms/sync_period.h).
  std::string steps_where;
  int warmup_steps = 1; // steps simulated before the steady-state window opens
  Optimizer optimizer = Optimizer::adamw;
  // Used by real runs (validate/); the simulator's timing does not depend on them.
  double learning_rate = 1e-3;
  double weight_decay = 0;
  // Time to target (docs/SCENARIO.md): the loss to reach, and loss curves supplied for it (a
  // real run's own curve is its measured one).
  std::optional<double> target_loss;
  std::string loss_curve; // the file, resolved against the scenario's directory
  LossCurves loss_curves; // its contents, by algorithm label
};

// An algorithm entry with its options, kept as text plus where it was written so that the
// algorithm that reads an option can report a bad value with file and line.
struct AlgorithmOption {
  std::string value;
  std::string where; // "file.yaml:12"
};

struct AlgorithmSpec {
  std::string name;
  std::string label; // how outputs name it (defaults to name): the same algorithm can run twice
  std::map<std::string, AlgorithmOption> options;
  std::string where;
};

struct OutputSpec {
  std::string dir;
  bool traces = true;          // write trace-<algorithm>.json
  bool plots = true;           // draw PNGs when python3 + matplotlib are present
  bool trace_gzip = false;     // write trace-<algorithm>.json.gz instead (zlib; Perfetto opens it)
  std::vector<int> trace_gpus; // the GPUs the traces show; empty: all
};

// 3D parallelism (issue 65; the `parallelism` section, docs/SCENARIO.md): Megatron-style tensor
// parallelism (with or without sequence parallelism), pipeline stages and their schedule, and data
// parallelism over what is left (GPUs / (tensor x pipeline)). parallel/layout.h places the ranks
// and layers, parallel/memory.h prices the memory per GPU.
enum class PipelineSchedule { gpipe, one_f_one_b, interleaved, zero_bubble };
enum class Recompute { none, selective, full }; // Korthikanti et al. 2022
enum class ParallelAxis { tensor, data, pipeline };

struct ParallelismSpec {
  int tensor = 1;
  bool sequence_parallel = false;
  int pipeline = 1;
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
  int virtual_stages = 1; // model chunks per GPU (interleaved 1F1B only)
  // Model layers (ModelSpec::layers, embedding and head included) per chunk, chunk c = v x
  // pipeline + stage for virtual chunk v; empty: `balanced`.
  std::vector<int> stages;
  // How ranks map to GPUs, the fastest-varying axis first: Megatron's "tp-dp-pp" (the default)
  // puts a TP group on consecutive GPUs, inside a node where it fits.
  std::array<ParallelAxis, 3> order = {ParallelAxis::tensor, ParallelAxis::data,
                                       ParallelAxis::pipeline};
  Recompute recompute = Recompute::none;
  bool tp_comm_overlap = false;
  // Where the section and its sizes were written ("file.yaml:12" or "--set parallelism.tensor"),
  // empty when not written: errors about them name it.
  std::string where, tensor_where, pipeline_where;

  int data_parallel(int world_size) const { return world_size / (tensor * pipeline); }
  int chunks() const { return pipeline * virtual_stages; }
  bool is_default() const; // as if the section were not written
};

struct Scenario {
  std::string name;
  std::uint64_t seed = 1;
  ClusterSpec cluster;
  ModelConfig model;
  TrainingSpec training;
  std::vector<AlgorithmSpec> algorithms;
  OutputSpec output;
  ParallelismSpec parallelism;
  std::string source; // the file it was read from
  // Keys the scenario writes that change nothing here ("file.yaml:5: key 'cluster.gpu.efficiency'
  // has no effect: ..."): run, sweep and validate print them, report.md lists them (issue 27.6).
  std::vector<std::string> warnings;
};

double dtype_bytes(Dtype dtype);
std::string to_string(Dtype dtype);
std::string to_string(Optimizer optimizer);
std::string to_string(NetworkModel model);
std::string to_string(CollectiveFidelity fidelity);
std::string to_string(CollectiveAlgorithm algorithm);
std::string to_string(NcclProtocolChoice protocol); // auto, LL, LL128, Simple (NCCL_PROTO's)
std::string to_string(RankClassesChoice choice);    // auto, off, statistical
std::string to_string(JitterDistribution distribution);
std::string to_string(PipelineSchedule schedule); // gpipe, 1f1b, interleaved, zero-bubble
std::string to_string(Recompute recompute);       // none, selective, full
std::string to_string(ParallelAxis axis);         // tp, dp, pp
std::string order_string(const std::array<ParallelAxis, 3>& order); // "tp-dp-pp"

} // namespace overlapsim::scenario
