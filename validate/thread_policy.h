// How a CPU worker's threads take turns on its cores, so that communication progresses beside a
// busy compute thread as NCCL does on SMs of its own beside a busy compute stream.
//
// On a CPU a worker's compute thread, its communication thread, Gloo's threads and the kernel's
// network processing share the worker's cores (one core each for two workers on two cores). Two
// scheduling policies decide whether a collective waits for a core it needs:
//  - the compute thread is an idle thread (SCHED_IDLE): any other thread that wakes takes the
//    core at once. At nice 19, Linux's scheduler (EEVDF) let the running compute thread finish its
//    slice and a woken communication thread waited for the next tick, up to 4 ms at HZ=250
//    (perf sched on one FSDP validate: 73 waits over 2 ms, 4 after).
//  - Gloo's event loop is a batch thread (SCHED_BATCH): it runs as before but does not preempt a
//    running thread when data wakes it. Gloo's loop takes a pair's lock with try_lock and, when the
//    thread sending on that pair holds it, polls again at once; preempting the sender on a shared
//    core, it spun until the next tick while the sender could not run: 3-5 ms stalls of one
//    collective in four to ten (FSDP's 400 kB all-gathers beside a backward, DDP's bucket in the
//    profile's sweep: 4 ms against 0.6 ms).
// Neither needs a privilege (a thread may always lower its own policy); both last a thread's life.
#pragma once

#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace overlapsim::real {

// Makes the calling thread a compute thread as a run has it: on a CPU an idle thread, on a GPU
// (where the thread only issues kernels) nice 19. The run's compute thread and the profile's,
// where it measures both streams at once, call it.
void lower_compute_thread_priority(bool on_cpu);

// True on a thread that lower_compute_thread_priority made an idle thread.
bool on_idle_thread();

// A thread that runs calls for an idle thread, at the policy of the thread that created it (a
// normal one: policies are inherited). Gloo's point-to-point send and receive take their pair's
// lock on the calling thread; an idle thread preempted while holding it, with Gloo's loop polling
// for the lock, got the core back only after up to 0.8 s (CDP's relays on the compute stream, mlp
// 100 x 3: one step of 807 ms where the median took 3.7 ms).
class NormalThread {
public:
  NormalThread();
  ~NormalThread();
  NormalThread(const NormalThread&) = delete;
  NormalThread& operator=(const NormalThread&) = delete;

  // Runs `call` there and returns once it has; rethrows what it threw. One call at a time.
  void run(const std::function<void()>& call);

private:
  void serve();

  std::mutex caller_; // one call at a time
  std::mutex mutex_;  // guards what follows
  std::condition_variable cv_;
  const std::function<void()>* call_ = nullptr;
  bool done_ = false;
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

// Calls `start` and makes every thread of this process that it started a batch thread; returns
// how many (Gloo's device: its event loop, one).
int start_batch_threads(const std::function<void()>& start);

// How often a CPU worker's communication thread wakes while it waits with a collective in flight.
// Linux's scheduler (EEVDF) runs a woken or preempted thread only while it is "eligible" (has not
// had more than its share); one that had (Gloo's event loop after receiving, by a few
// microseconds) loses the pick to the running idle compute thread, which then keeps the core
// until the next tick, up to 4 ms at HZ=250, while the collective waits for its data to be read
// (perf sched on ACCO's mlp run: the loop runnable 3.6 ms, the compute thread running). A thread
// that wakes preempts the idle one and the pick is made again, so waiting in slices of this
// length bounds such a stall by it. Measured on 2 cores (mlp, 2 workers, every algorithm, three
// validates each): collectives stalled over 1 ms 11-14 of 302 -> 0-8 (ACCO's one-element counts
// all-reduce: 5-10 of 20 -> 0-1); the wake-ups cost an idle thread computing beside them 2.7% of
// its speed (500 us; 10% at 200 us), which the profile's probes, waiting the same way, measure.
inline constexpr std::chrono::microseconds kCommWaitSlice{500};

} // namespace overlapsim::real
