// The one place where the c10d API of LibTorch 1.13 (Debian's CPU build, Gloo) and 2.x (the CUDA
// builds GPU users have, NCCL) differ for us. In 2.x ProcessGroupGloo and ProcessGroupNCCL derive
// from c10d::Backend (a ProcessGroup became a dispatcher over backends); in 1.13 they are
// c10d::ProcessGroups. Both bases offer the collectives RealWorker calls (allreduce,
// alltoall_base, allgather, broadcast, reduce, send, recv, barrier) with the same signatures, so
// holding the backend through this alias is all the rest of validate/ needs.
#pragma once

#include <torch/version.h>

#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif

namespace overlapsim::real {

#if TORCH_VERSION_MAJOR >= 2
using CommBackend = c10d::Backend;
#else
using CommBackend = c10d::ProcessGroup;
#endif
using CommBackendPtr = c10::intrusive_ptr<CommBackend>;

// Ends a backend's communicators before the process exits. In 2.x ProcessGroupNCCL's watchdog
// thread otherwise outlives the CUDA context at static destruction (a segfault at exit, seen on
// an H100 after a successful run); 1.13's Gloo groups need nothing.
inline void shutdown([[maybe_unused]] CommBackend& backend) {
#if TORCH_VERSION_MAJOR >= 2
  backend.shutdown();
#endif
}

} // namespace overlapsim::real
