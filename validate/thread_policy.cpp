#include "validate/thread_policy.h"

#include <charconv>
#include <filesystem>
#include <sched.h>
#include <set>
#include <string>
#include <sys/resource.h>
#include <sys/types.h>
#include <unistd.h>
#include <utility>

namespace overlapsim::real {
namespace {

// The ids of this process's threads (Linux lists them under /proc/self/task).
std::set<pid_t> process_threads() {
  std::set<pid_t> ids;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    const std::string name = entry.path().filename().string();
    pid_t id = 0;
    if (std::from_chars(name.data(), name.data() + name.size(), id).ec == std::errc{})
      ids.insert(id);
  }
  return ids;
}

thread_local bool idle_thread = false;

} // namespace

void lower_compute_thread_priority(bool on_cpu) {
  // nice 19 first: it stays where SCHED_IDLE is refused (a container's seccomp policy).
  ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 19);
  if (on_cpu) {
    const sched_param none{};
    idle_thread = ::sched_setscheduler(0, SCHED_IDLE, &none) == 0; // 0: the calling thread
  }
}

bool on_idle_thread() {
  return idle_thread;
}

NormalThread::NormalThread() : thread_([this] { serve(); }) {}

NormalThread::~NormalThread() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void NormalThread::run(const std::function<void()>& call) {
  std::lock_guard one_call(caller_);
  std::unique_lock lock(mutex_);
  call_ = &call;
  done_ = false;
  error_ = nullptr;
  cv_.notify_all();
  cv_.wait(lock, [&] { return done_; });
  if (error_)
    std::rethrow_exception(std::exchange(error_, nullptr));
}

void NormalThread::serve() {
  std::unique_lock lock(mutex_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || call_ != nullptr; });
    if (call_ == nullptr)
      return;
    const auto* call = std::exchange(call_, nullptr);
    lock.unlock();
    std::exception_ptr error;
    try {
      (*call)();
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    error_ = error;
    done_ = true;
    cv_.notify_all();
  }
}

int start_batch_threads(const std::function<void()>& start) {
  const std::set<pid_t> before = process_threads();
  start();
  int batched = 0;
  const sched_param none{};
  for (const pid_t id : process_threads())
    if (!before.contains(id) && ::sched_setscheduler(id, SCHED_BATCH, &none) == 0)
      ++batched;
  return batched;
}

} // namespace overlapsim::real
