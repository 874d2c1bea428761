// Named GPUs and links a scenario can refer to by preset name. Each preset's numbers carry a
// one-line source comment in presets.cpp (vendor datasheet or paper).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace overlapsim::hw {

struct GpuSpec {
  std::string name;
  double peak_flops_bf16 = 0; // dense bf16/fp16 tensor FLOP/s (no sparsity)
  double peak_flops_fp32 = 0; // dense fp32 FLOP/s (tf32 tensor cores where the vendor quotes them)
  double memory_bytes = 0;    // HBM/GDDR capacity
  double hbm_bandwidth_Bps = 0; // memory bandwidth
  double efficiency = 0.45;     // achievable fraction of peak for transformer training (MFU)
  // Fraction of the compute speed a running collective takes from this GPU (NCCL's kernels hold
  // SMs and HBM bandwidth; Gloo's threads hold CPU cores). 0: overlap is free. `overlapsim
  // profile` measures it; scenarios set it as cluster.gpu.comm_interference.
  double comm_interference = 0;
  // Streaming multiprocessors (compute units): the roofline's wave quantisation of GEMM tiles.
  int sms = 0;
  // Fraction of a collective's speed this GPU's computation takes while it runs beside it (the
  // reverse: compute kernels hold SMs and HBM bandwidth NCCL's kernels need; a CPU worker's compute
  // thread holds the core Gloo's threads need). `overlapsim profile` measures it; scenarios set it
  // as cluster.gpu.compute_interference. No preset sets it: no published measurement we checked
  // separates it.
  double compute_interference = 0;
  // Share of the GPU's compute speed the communication stream's own compute (ACCO's and DPU's
  // update beside the next forward, CDP's sums) gets while the compute stream computes too: 0.5,
  // an even split (a CUDA stream priority, or on a CPU worker the compute thread's lower
  // priority, tilts it). `overlapsim profile` measures it; cluster.gpu.comm_stream_share.
  double comm_stream_share = 0.5;
  // Seconds the first collective (or message) a stream issues after it had to wait for the other
  // stream's signal takes longer (on one H100, ZeRO-1's first reduce-scatter of each layer's
  // buckets took 0.18-1.08 ms, the two issued right after it 20-90 us). 0: none.
  // `overlapsim profile` measures it; cluster.gpu.collective_handoff_wait.
  double collective_handoff_wait_s = 0;
  // Seconds the first compute op a stream runs after it had to wait for the other stream's signal
  // takes longer (on a CPU worker the woken thread's first op: ACCO's one-element fill of the
  // counts right after the gradients' signal took 12-15 us, 4 us back to back). 0: none.
  // `overlapsim profile` measures it; cluster.gpu.compute_handoff_wait.
  double compute_handoff_wait_s = 0;
  // comm_interference and compute_interference of the collective kinds measured apart from the
  // all-reduce, by calibration op name ("reduce_scatter", "all_gather"); the others take the two
  // above. `overlapsim profile` measures them where the algorithms issue those kinds (on a CPU
  // an all-reduce sums on Gloo's thread, a reduce-scatter's stand-in moves the bytes and sums on
  // the comm thread after: each slows and is slowed by compute its own way). No preset sets them.
  std::map<std::string, double, std::less<>> comm_interference_by_op;
  std::map<std::string, double, std::less<>> compute_interference_by_op;
  // The compute a collective's start takes from its worker, by calibration op name: a fixed cost
  // and one per byte of the call's data, in seconds of the device, taken at `share` of the
  // compute's speed while it lasts. On a CPU worker the thread that issues it cuts Gloo's
  // reduce-scatter and all-gather into pieces and copies them (RealWorker), and Gloo's thread and
  // the kernel's TCP stack begin the first piece, above the compute thread's priority but not
  // all the time: FSDP's forward of 0.25 ms beside an all-gather's start took 0.63-0.8 ms, a
  // forward of 1.6 ms lost 0.6 ms (mlp, 2 CPU workers, 100 Mbit/s), where the share of a long
  // transfer (comm_interference) priced 0.27 ms. `overlapsim profile` measures it on CPU
  // workers; a GPU's host issues NCCL's kernels beside the device's compute: none. Not a
  // scenario key.
  struct StartCost {
    static constexpr double kLeastShare = 0.01, kMostShare = 0.99;
    double fixed_s = 0;
    double per_byte_s = 0;
    double share = kMostShare; // in [kLeastShare, kMostShare]
  };
  std::map<std::string, StartCost, std::less<>> collective_start_cost_by_op;
  // What a training process cannot use of memory_bytes (cluster.gpu.memory_reserve): the CUDA
  // context, NCCL's buffers, the caching allocator's fragmentation. Negative: the default,
  // default_memory_reserve_bytes(). Last, as the presets' positional initialisers end before it.
  double memory_reserve_bytes = -1;
  // The CUDA compute capability as 10 x major + minor (80: sm_80, A100; 86: A6000; 90: H100,
  // H200); 0 for a GPU that is not NVIDIA's or not known. NCCL's tuner keys its defaults on it
  // (comm/nccl_model.h): a hardware fact, never read from a preset's name
  // (cluster.gpu.compute_capability for a custom GPU).
  int compute_capability = 0;

  double comm_interference_of(std::string_view op) const;
  double compute_interference_of(std::string_view op) const;
  // Whether any kind's share is above 0.
  bool any_comm_interference() const;
  bool any_compute_interference() const;
  // Seconds collective_start_cost_by_op gives a start of `op` over `bytes` (0: none measured),
  // and the share of the compute's speed it takes.
  double collective_start_seconds(std::string_view op, double bytes) const;
  double collective_start_share(std::string_view op) const;
  // memory_reserve_bytes, or the default where the scenario set none.
  double memory_reserve() const;
  // What a training process can hold: the capacity less the reserve (an algorithm fits when its
  // peak is at most this).
  double memory_available() const { return memory_bytes - memory_reserve(); }
};

// The default reserve of a GPU of `memory_bytes`: 1 GB for the CUDA context and library
// workspaces (a bare PyTorch CUDA context shows ~0.8 GB in nvidia-smi, pytorch/pytorch#34323) and
// NCCL's buffers (NCCL_BUFFSIZE, 4 MiB per channel and peer, allocated outside PyTorch's
// allocator), plus 5% of the capacity for the caching allocator's fragmentation (memory reserved
// but not allocated, torch.cuda.memory_reserved() - memory_allocated(); an assumption, not a
// measurement). An 80 GB GPU keeps 5 GB back: 75 GB available. At most half the capacity, so that
// a small custom device keeps some.
double default_memory_reserve_bytes(double memory_bytes);

// What carries a link's bytes: the facts collective libraries key on (NCCL enables LL128 over
// NVLink, a node with NVSwitch and InfiniBand has a NIC per GPU). Never read from a preset's name.
enum class LinkKind { unknown, nvlink, pcie, infiniband, omnipath, ethernet, wan, xgmi };
const char* to_string(LinkKind kind);

struct LinkSpec {
  std::string name;
  // What collectives reach (line rate x efficiency): the bandwidth the simulator uses. Intra-node:
  // per GPU and direction; inter-node: per NIC and direction.
  double bandwidth_Bps = 0;
  double latency_s = 0; // one-way GPU-to-GPU latency across this network (alpha)
  // The share of the line rate NCCL's ring reaches on this fabric (nccl-tests busbw / line rate).
  double efficiency = 1;
  // What a message between two ends pays before it moves when the opposite direction between
  // them carries a message (cluster.<link>.reverse_busy_delay; `overlapsim profile` measures it):
  // over TCP its acknowledgements and the receiver's ready-to-receive notice queue behind the
  // other direction's data, so it starts late and ramps up slowly. 0 on a fabric that does not.
  double reverse_busy_s = 0;
  LinkKind kind = LinkKind::unknown; // cluster.<link>.kind for a custom link
  // NVSwitch 3 reduces in the switch (NVLink SHARP): NCCL's NVLS algorithms (H100/H200 HGX).
  bool nvlink_sharp = false;
  // What the transport's software adds to each message a network step sends, beyond the wire and
  // the latency (cluster.<link>.message_cost): aws-ofi-nccl's RDMA protocol on EFA has the
  // receiver send a control message before the sender writes (a rendezvous per message). 0 on
  // InfiniBand and RoCE verbs, whose cost NCCL's own hop figures hold.
  double message_cost_s = 0;
  // The latency the network's NCCL plugin reports (ncclNetProperties_t::latency;
  // cluster.<link>.plugin_latency). NCCL's tuner adds it to every network hop it prices, twice
  // under Simple (tuning.cc, "Also add the flush extra latency"), so it steers which algorithm and
  // protocol run; it is a selection input, not a cost the run pays (aws-ofi-nccl reports 75 us on
  // p4d/p4de/p5 because NCCL then chooses better, commit d87d61e0). 0: NCCL's own InfiniBand/RoCE
  // transport, GPUDirect-TCPX/TCPXO (their plugins report 0).
  double plugin_latency_s = 0;
  // NCCL_BUFFSIZE where the network's NCCL profile sets it (cluster.<link>.nccl_buffsize): GCP's
  // TCPXO profile (nccl-env-profile.sh) sets 8 MiB. NCCL's Simple tree moves an eighth of it a
  // chunk (comm/nccl_tree_pipeline.h). 0: NCCL's default, 4 MiB.
  double nccl_buffsize_bytes = 0;

  double line_rate_Bps() const { return bandwidth_Bps / efficiency; }
};

// A link of `line_rate_Bps` of which collectives reach `efficiency`.
LinkSpec link_at(std::string name, double line_rate_Bps, double latency_s, double efficiency);

std::optional<GpuSpec> find_gpu_preset(std::string_view name);
std::optional<LinkSpec> find_link_preset(std::string_view name);
std::vector<std::string> gpu_preset_names();
std::vector<std::string> link_preset_names();

} // namespace overlapsim::hw
