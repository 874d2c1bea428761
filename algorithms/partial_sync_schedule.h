// Partial synchronisation of local SGD (DreamDDP paper: Tang et al., "DreamDDP: Accelerating Data
// Parallel Distributed LLM Training with Layer-wise Scheduled Partial Synchronization", arXiv
// 2502.11058): which layers are averaged at which local iteration of a period of H, and what that
// costs in the authors' cost model (Sec. 3.2-3.3): within one iteration the backward runs from the
// output layer to the input, a layer's all-reduce may start once its own backward is done, the
// all-reduces run one at a time on one communication stream, and what is still communicating when
// the backward ends is exposed wait. Forward time and the optimizer are not part of this model.
//
// Layers are indexed in forward order (0 = input side); an assignment gives each layer the local
// iteration h in [0, H) at which it is averaged. Iteration 0 is the first of the period and, in
// every schedule here, holds the layers nearest the output (Algorithm 2 assigns in backward order).
#pragma once

#include <vector>

namespace overlapsim {

struct LayerCosts {
  std::vector<double> bp_s;   // backward time of each layer
  std::vector<double> comm_s; // time of the layer's all-reduce on the serial communication stream
  int layers() const { return static_cast<int>(bp_s.size()); }
  double total_bp() const;
  double total_comm() const;
};

using Assignment = std::vector<int>; // layer -> local iteration in [0, H)

// Exposed communication wait of each local iteration of a period under `assignment`.
std::vector<double> period_waits(const LayerCosts& costs, const Assignment& assignment, int H);
double total_wait(const LayerCosts& costs, const Assignment& assignment, int H);

// Definition 1 / Example 1 (PLSGD-ENP): in backward order, groups of ceil(L/H) layers, the last
// group taking what is left (125 layers, H = 10: nine groups of 13 and one of 8, as in the authors'
// code).
Assignment equal_number_partition(int layers, int H);

// Algorithm 2 (SolveSubProblem): depth-first search over sequential splits in backward order with
// the at-least-one assignment (Property 3), optimal hiding (Property 1) and delayed CO assignment
// (Property 2) pruning; returns the explored solution of least total wait (the first on ties).
Assignment dreamddp_schedule(const LayerCosts& costs, int H);

// Every sequential split of the layers (backward order, groups may be empty) into H iterations:
// C(L+H-1, H-1) candidates. The reference optimum for small L (throws when L > 14).
Assignment brute_force_schedule(const LayerCosts& costs, int H);

// Sec. 3.4, bubble filling: for each iteration h, the output-side layers synchronised at earlier
// iterations whose all-reduce can be added to iteration h without increasing its wait (taken from
// the output layer downward while that holds). extra[h] lists them in backward order.
std::vector<std::vector<int>> bubble_filling(const LayerCosts& costs, const Assignment& assignment,
                                             int H);

// Average seconds per iteration over `iterations` iterations as the DreamDDP authors' code counts
// them (data README): S-SGD bp + comm; FLSGD bp + (iterations/H - 1) comm / iterations; PLSGD
// bp + (iterations/H) W / iterations; DreamDDP bp + (iterations/H - 1) W / iterations, W being the
// total wait of a period. The simulator instead averages over whole periods.
struct CostModelTimes {
  double s_sgd = 0;
  double flsgd = 0;
  double plsgd_enp = 0;
  double dreamddp = 0;
};
CostModelTimes cost_model_iteration_times(const LayerCosts& costs, int H, int iterations = 1000);

} // namespace overlapsim
