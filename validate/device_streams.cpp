#include "validate/device_streams.h"

#include <fmt/format.h>
#include <stdexcept>

// LibTorch's CUDA builds define USE_C10D_NCCL (NCCL needs CUDA); Debian's CPU LibTorch does not.
#ifdef USE_C10D_NCCL
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <deque>
#endif

namespace overlapsim::real {

#ifdef USE_C10D_NCCL
struct DeviceStreams::Cuda {
  explicit Cuda(c10::DeviceIndex index)
      : index(index), compute(c10::cuda::getStreamFromPool(false, index)),
        comm(c10::cuda::getStreamFromPool(false, index)), origin(cudaEventDefault) {}
  c10::DeviceIndex index;
  c10::cuda::CUDAStream compute;
  c10::cuda::CUDAStream comm;
  at::cuda::CUDAEvent origin; // recorded on an idle device at time 0
  double origin_host_s = 0;
  std::deque<at::cuda::CUDAEvent> events; // deque: events never move once recorded
};
#else
struct DeviceStreams::Cuda {};
#endif

DeviceStreams::DeviceStreams(const torch::Device& device,
                             std::chrono::steady_clock::time_point origin)
    : device_(device), origin_(origin) {
  if (!device.is_cuda())
    return;
#ifdef USE_C10D_NCCL
  c10::cuda::CUDAGuard guard(device.index());
  cuda_ = std::make_unique<Cuda>(device.index());
  const auto stream = c10::cuda::getCurrentCUDAStream(device.index());
  stream.synchronize();
  cuda_->origin_host_s = host_now();
  cuda_->origin.record(stream);
  cuda_->origin.synchronize();
#else
  throw std::runtime_error(fmt::format("device {} needs a CUDA LibTorch (built with NCCL); this "
                                       "one is CPU-only",
                                       device.str()));
#endif
}

DeviceStreams::~DeviceStreams() = default;

double DeviceStreams::host_now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - origin_).count();
}

void DeviceStreams::enter([[maybe_unused]] StreamKind stream) {
#ifdef USE_C10D_NCCL
  if (cuda_) {
    c10::cuda::set_device(cuda_->index);
    // The current stream is per thread: everything this thread launches (and every NCCL
    // collective it starts, which waits for it) goes to its stream.
    c10::cuda::setCurrentCUDAStream(stream == StreamKind::compute ? cuda_->compute : cuda_->comm);
  }
#endif
}

StreamMark DeviceStreams::mark() {
  StreamMark m{host_now(), -1};
#ifdef USE_C10D_NCCL
  if (cuda_) {
    std::lock_guard lock(mutex_);
    cuda_->events.emplace_back(cudaEventDefault);
    cuda_->events.back().record(c10::cuda::getCurrentCUDAStream(cuda_->index));
    m.event = static_cast<int>(cuda_->events.size()) - 1;
  }
#endif
  return m;
}

std::pair<double, double> DeviceStreams::device_allocated_bytes() const {
#ifdef USE_C10D_NCCL
  if (cuda_) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(cuda_->index);
    const auto& all =
        stats.allocated_bytes[static_cast<std::size_t>(c10::CachingAllocator::StatType::AGGREGATE)];
    return {static_cast<double>(all.current), static_cast<double>(all.peak)};
  }
#endif
  return {0.0, 0.0};
}

void DeviceStreams::drain() {
#ifdef USE_C10D_NCCL
  if (cuda_)
    c10::cuda::getCurrentCUDAStream(cuda_->index).synchronize();
#endif
}

void DeviceStreams::wait_for([[maybe_unused]] const StreamMark& m) {
#ifdef USE_C10D_NCCL
  if (m.event < 0)
    return;
  at::cuda::CUDAEvent* event = nullptr;
  {
    std::lock_guard lock(mutex_);
    event = &cuda_->events.at(static_cast<std::size_t>(m.event));
  }
  event->synchronize();
#endif
}

void DeviceStreams::order_after([[maybe_unused]] const StreamMark& m) {
#ifdef USE_C10D_NCCL
  if (m.event < 0)
    return;
  std::lock_guard lock(mutex_);
  cuda_->events.at(static_cast<std::size_t>(m.event))
      .block(c10::cuda::getCurrentCUDAStream(cuda_->index));
#endif
}

bool DeviceStreams::reached([[maybe_unused]] const StreamMark& m) {
#ifdef USE_C10D_NCCL
  if (m.event < 0)
    return true;
  std::lock_guard lock(mutex_);
  return cuda_->events.at(static_cast<std::size_t>(m.event)).query();
#else
  return true;
#endif
}

double DeviceStreams::seconds(const StreamMark& m) {
  if (m.event < 0)
    return m.host_s;
#ifdef USE_C10D_NCCL
  at::cuda::CUDAEvent* event = nullptr;
  {
    std::lock_guard lock(mutex_);
    event = &cuda_->events.at(static_cast<std::size_t>(m.event));
  }
  event->synchronize();
  return cuda_->origin_host_s + cuda_->origin.elapsed_time(*event) / 1000.0;
#else
  return m.host_s;
#endif
}

} // namespace overlapsim::real
