// A per-layer time table in tab-separated form: one header line naming the columns, then one row
// per layer in forward order (input to output). `bp_s` (backward seconds) and `comm_s` (seconds of
// the layer's all-reduce) are required; `fwd_s`, `params` (the layer's parameter count) and
// `module` (the layer's name) are optional, other columns are ignored. This is the format of the
// DreamDDP authors' measured profile (scenarios/data/gpt2-8w-10gbit-layers.tsv, issue 13).
#pragma once

#include <string>
#include <vector>

namespace overlapsim::scenario {

struct LayerTimes {
  std::string name;
  double fwd_s = 0; // 0 when the table has no forward column
  double bp_s = 0;
  double comm_s = 0;
  double params = 0; // 0 when the table has no params column
};

// Throws std::runtime_error naming the file, line and column of what is wrong.
std::vector<LayerTimes> read_layer_table(const std::string& path);
// The same from text (name_for_errors stands for the file in messages).
std::vector<LayerTimes> parse_layer_table(const std::string& text,
                                          const std::string& name_for_errors);

} // namespace overlapsim::scenario
