#include "trace/summary.h"

#include "files/atomic_file.h"

#include <algorithm>
#include <fmt/format.h>

namespace overlapsim {

bool fits(const SummaryRow& r) {
  return r.error.empty() &&
         (r.memory_available_bytes <= 0 || r.metrics.peak_memory_bytes <= r.memory_available_bytes);
}

nlohmann::ordered_json to_json(const SummaryRow& r) {
  const Metrics& m = r.metrics;
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  j["algorithm"] = r.algorithm;
  j["workers"] = r.workers;
  if (!r.error.empty()) { // one algorithm that cannot run does not take the others down
    j["measured"] = r.measured;
    j["error"] = r.error;
    return j;
  }
  j["iteration_time_s"] = m.iteration_time_s;
  j["throughput_samples_s"] = m.throughput_samples_s;
  j["throughput_tokens_s"] = m.throughput_samples_s * r.seq_len;
  // The columns every paper reports (docs/MODEL.md, "Model FLOPs utilisation").
  const double tokens_per_gpu =
      r.workers > 0 ? m.throughput_samples_s * r.seq_len / r.workers : 0.0;
  j["tokens_per_s_per_gpu"] = tokens_per_gpu;
  const auto or_null = [](bool known, double v) {
    return known ? nlohmann::ordered_json(v) : nlohmann::ordered_json();
  };
  const bool flops = r.model_flops_per_token > 0;
  j["model_flops_per_token"] = or_null(flops, r.model_flops_per_token);
  j["hardware_flops_per_token"] = or_null(flops, r.hardware_flops_per_token);
  j["model_tflops_per_gpu"] = or_null(flops, r.model_flops_per_token * tokens_per_gpu / 1e12);
  j["hardware_tflops_per_gpu"] = or_null(flops, r.hardware_flops_per_token * tokens_per_gpu / 1e12);
  j["mfu"] = or_null(flops && r.peak_flops_per_gpu > 0,
                     r.model_flops_per_token * tokens_per_gpu / r.peak_flops_per_gpu);
  j["speedup_vs_ddp"] = r.speedup_vs_ddp;
  j["idle_fraction_mean"] = m.idle_fraction_mean;
  j["idle_fraction_max"] = m.idle_fraction_max;
  j["exposed_comm_s"] = m.exposed_comm_s;
  j["waiting_s"] = m.waiting_s;
  j["pipeline_bubble_s"] = m.pipeline_bubble_s;
  j["pipeline_bubble_fraction"] =
      m.iteration_time_s > 0 ? m.pipeline_bubble_s / m.iteration_time_s : 0.0;
  if (!r.pipeline_bubble_fraction_per_stage.empty())
    j["pipeline_bubble_fraction_per_stage"] = r.pipeline_bubble_fraction_per_stage;
  j["comm_bytes_per_step"] = m.comm_bytes_per_step;
  if (!r.measured) { // the real runtime does not know which links its collectives crossed
    j["comm_bytes_per_step_intra_node"] = m.intra_node_bytes_per_step;
    j["comm_bytes_per_step_inter_node"] = m.inter_node_bytes_per_step;
    j["comm_bytes_per_step_wan"] = m.wan_bytes_per_step;
  }
  j["peak_memory_bytes"] = m.peak_memory_bytes;
  j["exceeds_gpu_memory"] = r.gpu_memory_bytes > 0 && m.peak_memory_bytes > r.gpu_memory_bytes;
  j["fits"] = fits(r);
  j["memory_available_bytes"] = r.memory_available_bytes;
  j["simulated_time_s"] = m.simulated_time_s;
  j["measured"] = r.measured;
  nlohmann::ordered_json mem;
  for (int c = 0; c < kMemoryCategories; ++c)
    mem[to_string(static_cast<MemoryCategory>(c))] =
        m.memory_breakdown[static_cast<std::size_t>(c)];
  j["memory_breakdown"] = mem;
  j["compute_s_per_step"] = m.compute_s_per_step;
  j["comm_s_per_step"] = m.comm_s_per_step;
  j["gpu_memory_bytes"] = r.gpu_memory_bytes;
  j["steady_state"] = {
      {"start_s", m.window_start_s}, {"end_s", m.window_end_s}, {"steps", m.steps}};
  // A speedup means little without the batch it was made with (ACCO accumulates a varying number
  // of micro-batches per step): samples and tokens per step go with every speedup.
  const double samples_per_step = m.samples / m.steps;
  j["samples_per_step"] = samples_per_step;
  j["tokens_per_step"] = samples_per_step * r.seq_len;
  if (m.accumulation_mean == 0 && r.micro_batch > 0 && r.workers > 0) {
    // A fixed schedule: every model replica (a GPU, or a TP x PP block of them) runs the same
    // micro-batches each step.
    const int replicas = r.model_replicas > 0 ? r.model_replicas : r.workers;
    const double per_gpu = samples_per_step / (r.micro_batch * replicas);
    j["micro_batches_per_step"] = {
        {"mean", per_gpu}, {"stddev", 0.0}, {"min", per_gpu}, {"max", per_gpu}};
  } else {
    j["micro_batches_per_step"] = {{"mean", m.accumulation_mean},
                                   {"stddev", m.accumulation_stddev},
                                   {"min", m.accumulation_min},
                                   {"max", m.accumulation_max}};
  }
  j["idle_fraction_per_gpu"] = m.idle_fraction;
  if (r.extra.is_object())
    for (const auto& [k, v] : r.extra.items())
      j[k] = v;
  return j;
}

namespace {

std::string csv_cell(const nlohmann::ordered_json& v) {
  if (v.is_string()) {
    const auto s = v.get<std::string>();
    if (s.find_first_of(",\"\n") == std::string::npos)
      return s;
    std::string q = "\"";
    for (char c : s)
      q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  }
  if (v.is_null())
    return "";
  return v.dump();
}

} // namespace

std::string summary_csv(const std::vector<nlohmann::ordered_json>& rows,
                        const std::vector<std::string>& leading) {
  static const char* kFields[] = {"algorithm",
                                  "workers",
                                  "iteration_time_s",
                                  "throughput_samples_s",
                                  "throughput_tokens_s",
                                  "speedup_vs_ddp",
                                  "idle_fraction_mean",
                                  "idle_fraction_max",
                                  "exposed_comm_s",
                                  "waiting_s",
                                  "comm_bytes_per_step",
                                  "comm_bytes_per_step_intra_node",
                                  "comm_bytes_per_step_inter_node",
                                  "comm_bytes_per_step_wan",
                                  "peak_memory_bytes",
                                  "simulated_time_s",
                                  "measured"};
  static const char* kMemory[] = {"params", "grads", "optimizer_state", "buffers", "activations"};
  std::string out;
  for (const auto& k : leading)
    out += csv_cell(nlohmann::ordered_json(k)) + ",";
  for (const char* f : kFields)
    out += fmt::format("{},", f);
  for (const char* m : kMemory)
    out += fmt::format("memory_{}_bytes,", m);
  out += "micro_batches_per_step_mean,micro_batches_per_step_stddev,samples_per_step,"
         "tokens_per_step,exceeds_gpu_memory,fits,memory_available_bytes,update,time_to_target_s,"
         "error,tokens_per_s_per_gpu,model_flops_per_token,hardware_flops_per_token,"
         "model_tflops_per_gpu,hardware_tflops_per_gpu,mfu,pipeline_bubble_s\n";
  const nlohmann::ordered_json none;
  auto at = [&](const nlohmann::ordered_json& j, const char* key) -> const nlohmann::ordered_json& {
    return j.contains(key) ? j[key] : none;
  };
  for (const auto& j : rows) {
    for (const auto& k : leading)
      out += csv_cell(j.contains(k) ? j[k] : none) + ",";
    for (const char* f : kFields)
      out += csv_cell(at(j, f)) + ",";
    for (const char* m : kMemory)
      out += csv_cell(at(at(j, "memory_breakdown"), m)) + ",";
    out += csv_cell(at(at(j, "micro_batches_per_step"), "mean")) + "," +
           csv_cell(at(at(j, "micro_batches_per_step"), "stddev")) + "," +
           csv_cell(at(j, "samples_per_step")) + "," + csv_cell(at(j, "tokens_per_step")) + "," +
           csv_cell(at(j, "exceeds_gpu_memory")) + "," + csv_cell(at(j, "fits")) + "," +
           csv_cell(at(j, "memory_available_bytes")) + "," + csv_cell(at(j, "update")) + "," +
           csv_cell(at(at(j, "time_to_target"), "time_s")) + "," + csv_cell(at(j, "error"));
    // Appended after the older columns, so that their positions hold.
    for (const char* f :
         {"tokens_per_s_per_gpu", "model_flops_per_token", "hardware_flops_per_token",
          "model_tflops_per_gpu", "hardware_tflops_per_gpu", "mfu", "pipeline_bubble_s"})
      out += fmt::format(",{}", csv_cell(at(j, f)));
    out += "\n";
  }
  return out;
}

void write_summary(const std::string& dir, const nlohmann::json& scenario,
                   std::vector<nlohmann::ordered_json> rows,
                   const nlohmann::ordered_json& top_level) {
  nlohmann::ordered_json doc;
  doc["scenario"] = nlohmann::ordered_json::parse(scenario.dump());
  for (const auto& [k, v] : top_level.items())
    doc[k] = v;
  doc["results"] = std::move(rows);
  const auto& results = doc["results"].get_ref<const nlohmann::ordered_json::array_t&>();
  std::vector<std::string> leading;
  if (top_level.contains("sweep"))
    for (const auto& k : top_level["sweep"]["vary"])
      leading.push_back(k.get<std::string>());
  write_file_atomically(dir + "/summary.json", doc.dump(2) + "\n");
  write_file_atomically(dir + "/summary.csv", summary_csv(results, leading));
}

void write_summary(const std::string& dir, const nlohmann::json& scenario,
                   const std::vector<SummaryRow>& rows, const nlohmann::ordered_json& top_level) {
  std::vector<nlohmann::ordered_json> json_rows;
  for (const auto& r : rows)
    json_rows.push_back(to_json(r));
  write_summary(dir, scenario, std::move(json_rows), top_level);
}

} // namespace overlapsim
