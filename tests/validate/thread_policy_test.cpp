#include "validate/thread_policy.h"

#include <condition_variable>
#include <gtest/gtest.h>
#include <mutex>
#include <sched.h>
#include <stdexcept>
#include <string>
#include <sys/resource.h>
#include <thread>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <unistd.h>

namespace overlapsim::real {
namespace {

struct Policy {
  int scheduler = -1;
  int nice = 0;
};

// The calling thread's policy, read from another thread's point of view as the kernel keeps it.
Policy policy_of(pid_t tid) {
  return {::sched_getscheduler(tid), ::getpriority(PRIO_PROCESS, static_cast<id_t>(tid))};
}

Policy policy_after_lowering(bool on_cpu) {
  Policy p;
  std::thread([&] {
    lower_compute_thread_priority(on_cpu);
    p = policy_of(::gettid());
  }).join();
  return p;
}

// On a CPU the compute thread is an idle thread (any thread that wakes takes its core at once);
// on a GPU, where it only issues kernels, nice 19 as before.
TEST(ThreadPolicy, ComputeThreadIsIdleOnACpuAndNice19OnAGpu) {
  const Policy cpu = policy_after_lowering(true);
  EXPECT_EQ(cpu.scheduler, SCHED_IDLE);
  EXPECT_EQ(cpu.nice, 19);
  const Policy gpu = policy_after_lowering(false);
  EXPECT_EQ(gpu.scheduler, SCHED_OTHER);
  EXPECT_EQ(gpu.nice, 19);
  // Only the calling thread changed.
  EXPECT_EQ(policy_of(::gettid()).scheduler, SCHED_OTHER);
}

// An idle thread's call runs on the normal thread, which kept its creator's policy; what the call
// throws reaches the caller.
TEST(ThreadPolicy, AnIdleThreadsCallsRunOnANormalThread) {
  NormalThread normal;
  bool idle = false;
  pid_t caller = 0, runner = 0;
  int runner_scheduler = -1;
  bool rethrown = false;
  std::thread([&] {
    lower_compute_thread_priority(true);
    idle = on_idle_thread();
    caller = ::gettid();
    normal.run([&] {
      runner = ::gettid();
      runner_scheduler = ::sched_getscheduler(0);
    });
    try {
      normal.run([] { throw std::runtime_error("in the call"); });
    } catch (const std::runtime_error& e) {
      rethrown = std::string(e.what()) == "in the call";
    }
  }).join();
  EXPECT_TRUE(idle);
  EXPECT_FALSE(on_idle_thread());
  EXPECT_NE(runner, caller);
  EXPECT_EQ(runner_scheduler, SCHED_OTHER);
  EXPECT_TRUE(rethrown);
}

// The threads `start` started become batch threads; one already running does not.
TEST(ThreadPolicy, OnlyTheThreadsStartedBecomeBatchThreads) {
  std::mutex m;
  std::condition_variable cv;
  bool release = false;
  pid_t earlier_id = 0, started_id = 0;
  auto park = [&](pid_t& id) {
    {
      std::lock_guard lock(m);
      id = ::gettid();
    }
    cv.notify_all();
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return release; });
  };
  std::thread earlier([&] { park(earlier_id); });
  {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return earlier_id != 0; });
  }
  std::thread started;
  const int batched = start_batch_threads([&] {
    started = std::thread([&] { park(started_id); });
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return started_id != 0; });
  });
  EXPECT_EQ(batched, 1);
  EXPECT_EQ(policy_of(started_id).scheduler, SCHED_BATCH);
  EXPECT_EQ(policy_of(earlier_id).scheduler, SCHED_OTHER);
  {
    std::lock_guard lock(m);
    release = true;
  }
  cv.notify_all();
  earlier.join();
  started.join();
}

// The real run relies on Gloo's device starting its event loop when it is created (the thread
// made a batch thread there): a LibTorch that started it later would leave it preempting.
TEST(ThreadPolicy, GloosDeviceStartsItsEventLoopWhenCreated) {
  std::shared_ptr<::gloo::transport::Device> device;
  const int batched = start_batch_threads(
      [&] { device = c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"); });
  EXPECT_GE(batched, 1);
}

} // namespace
} // namespace overlapsim::real
