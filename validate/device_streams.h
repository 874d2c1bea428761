// A worker's two streams on its device, and the clock that times their ops.
//
// On a CPU the streams are the worker's two threads and an op's time is the wall clock around it.
// On a GPU (a CUDA LibTorch with NCCL) each thread issues to a CUDA stream of its own, so compute
// and communication overlap on the device as in ACCO's reference code; an op is timed by CUDA
// events recorded on its stream before and after it, resolved once at the end, so that timing
// never makes an op wait for the device (no device-wide synchronise per op). The two streams hand
// work to each other through signals; a signal is sent only once the sender's stream has finished
// what it issued (drain()), so a signal means the same thing on a GPU as on a CPU and as in the
// simulator: the work before it is done.
#pragma once

#include "runtime/runtime.h"

#include <chrono>
#include <memory>
#include <mutex>
#include <torch/torch.h>
#include <vector>

namespace overlapsim::real {

// A point on a stream's timeline: the host time when taken, and on a GPU the event that marks it.
struct StreamMark {
  double host_s = 0;
  int event = -1; // index of the CUDA event; -1: the host time is the time
};

class DeviceStreams {
public:
  DeviceStreams(const torch::Device& device, std::chrono::steady_clock::time_point origin);
  ~DeviceStreams();
  DeviceStreams(const DeviceStreams&) = delete;
  DeviceStreams& operator=(const DeviceStreams&) = delete;

  // Makes the calling thread issue to `stream`'s device stream (each thread calls it first).
  void enter(StreamKind stream);
  bool on_gpu() const { return device_.is_cuda(); }
  // Bytes the CUDA caching allocator has handed out on this device now and at most so far
  // (tensors, not the allocator's reserve); 0 on a CPU.
  std::pair<double, double> device_allocated_bytes() const;

  // Now, on the calling thread's stream.
  StreamMark mark();
  // The host waits until the device has reached `m` (a no-op on a CPU).
  void wait_for(const StreamMark& m);
  // What the calling thread issues next runs after `m` (the device waits, not the host).
  void order_after(const StreamMark& m);
  // Whether the device has reached `m` (true on a CPU, where ops are done when they return).
  bool reached(const StreamMark& m);
  // Blocks the calling thread until its own stream has finished everything issued so far (the
  // other stream keeps running). Nothing to do on a CPU.
  void drain();
  // Seconds since the origin at which the stream reached `m` (waits for its event if needed).
  double seconds(const StreamMark& m);
  double host_now() const;

private:
  struct Cuda;
  torch::Device device_;
  std::chrono::steady_clock::time_point origin_;
  std::mutex mutex_;
  std::unique_ptr<Cuda> cuda_; // null on a CPU, or when LibTorch has no CUDA
};

} // namespace overlapsim::real
