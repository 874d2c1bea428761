// `overlapsim profile` and the first phase of `overlapsim validate`: measures what the simulator
// needs to predict a real run. Per layer, the forward and backward time of one micro-batch
// (the expected time over repeats, profile_statistics.h, run through RealWorker exactly as training
// runs them); one optimizer step and one buffer copy; and collective times over a size sweep on
// each link class (nccl-tests style), fitted to alpha-beta (scenario/calibration.h).
#pragma once

#include "scenario/calibration.h"
#include "validate/profile_statistics.h"
#include "validate/real_worker.h"

namespace overlapsim::real {

// Every rank of the job calls it (the collective sweep needs them all); all ranks return the
// same collective fits and their own compute timings; the point-to-point fit (`send_recv`), a
// ping-pong between ranks 0 and 1, only rank 0, which writes the profile.
scenario::Calibration profile_costs(RealContext& context, int rank, const ProfileOptions& options);

} // namespace overlapsim::real
