// The scenario file's sections, each read and checked by its own reader (cluster_reader.cpp,
// model_reader.cpp, training_reader.cpp); the loader (loader.cpp) parses the file, applies --set
// and calls them in order. Internal to scenario/.
#pragma once

#include "scenario/scenario.h"
#include "scenario/yaml_entry.h"

#include <string>
#include <vector>

namespace overlapsim::scenario::yaml {

// `cluster`: GPU, links, nodes, NICs, sites, stragglers, collectives (and a system preset).
ClusterSpec read_cluster(const Entry& e);
// `model`: a preset or its dimensions, layers, a profile or a per-layer time table; a profile's
// measured GPU and link numbers go into `cluster`.
ModelConfig read_model(const Entry& e, const TrainingSpec& training, ClusterSpec& cluster);
// `training`, `algorithms` and `output`.
TrainingSpec read_training(const Entry& e);
void check_loss_curve_labels(const Entry& training, const Scenario& s);
std::vector<AlgorithmSpec> read_algorithms(const Entry& e);
OutputSpec read_output(const Entry& e, const std::string& name, int world_size);
// `parallelism` (issue 65), checked against the cluster, model and training already read into
// `s`; a TP group that spans nodes adds a warning.
ParallelismSpec read_parallelism(const Entry& e, const Scenario& s,
                                 std::vector<std::string>& warnings);

} // namespace overlapsim::scenario::yaml
