// `overlapsim profile` and the first phase of `overlapsim validate`: measures what the simulator
// needs to predict a real run. Per layer, the forward and backward time of one micro-batch
// (median of repeats, run through RealWorker exactly as training runs them); one optimizer step
// and one buffer copy; and collective times over a size sweep on each link class (nccl-tests
// style), fitted to alpha-beta (scenario/calibration.h).
#pragma once

#include "scenario/calibration.h"
#include "validate/real_worker.h"

namespace overlapsim::real {

struct ProfileOptions {
  int repeats = 5;      // timed repeats per layer and per collective size (median)
  double max_bytes = 0; // largest collective size; 0: the model's gradients
  double min_bytes = 4096;
  int sizes = 7; // geometric steps from min_bytes to max_bytes
};

// Every rank of the job calls it (the collective sweep needs them all); all ranks return the
// same collective fits and their own compute timings; the point-to-point fit (`send_recv`), a
// ping-pong between ranks 0 and 1, only rank 0, which writes the profile.
scenario::Calibration profile_costs(RealContext& context, int rank, const ProfileOptions& options);

} // namespace overlapsim::real
