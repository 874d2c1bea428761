// summary.json and summary.csv (SCENARIO.md): one row per algorithm (and per sweep point), the same
// columns for simulated and measured rows.
#pragma once

#include "trace/metrics.h"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace overlapsim {

struct SummaryRow {
  std::string algorithm;
  int workers = 0;
  int seq_len = 1;
  int micro_batch = 0; // samples per micro-batch per GPU; fills micro_batches_per_step when the
                       // trace has no accumulation marks (every algorithm but ACCO's family)
  // Copies of the model that take samples: GPUs / (tensor x pipeline) under 3D parallelism (a
  // TP group and a pipeline share each micro-batch); 0: every worker is one.
  int model_replicas = 0;
  bool measured = false;
  double gpu_memory_bytes = 0;
  // What the algorithm may hold per GPU: gpu_memory_bytes less the reserve
  // (cluster.gpu.memory_reserve); 0: unknown, and every peak fits.
  double memory_available_bytes = 0;
  Metrics metrics;
  // Decoder transformers only (hw/model_flops.h), 0 for any other model: the model FLOPs per
  // token (6 N + 12 L H Q T), the same with the forward FLOPs recomputation runs again, and the
  // GPU's dense peak in the model's precision. summary.json derives model_tflops_per_gpu,
  // hardware_tflops_per_gpu and mfu from them (null when 0).
  double model_flops_per_token = 0;
  double hardware_flops_per_token = 0;
  double peak_flops_per_gpu = 0;
  // Pipeline parallelism (issue 65.3): per stage, its GPUs' mean pipeline bubble over the
  // iteration time (Metrics::pipeline_bubble_per_worker_s); empty without pipelining (pipeline 1).
  std::vector<double> pipeline_bubble_fraction_per_stage;
  double speedup_vs_ddp = 0;    // filled in by the caller, against ddp on the same scenario
  std::string error;            // non-empty: this algorithm could not run; the row has no metrics
  nlohmann::ordered_json extra; // extra fields for summary.json only
};

nlohmann::ordered_json to_json(const SummaryRow& row);

// Whether the row's peak memory per GPU fits in what its GPU has available (summary.json's
// `fits`): what the report ranks, and what every table marks when it does not.
bool fits(const SummaryRow& row);

// Writes summary.json ({"scenario": ..., "results": [...]} plus `top_level` extras) and summary.csv
// into `dir`, each atomically. The JSON-row form serves rows that come from other processes
// (sweeps) or other summaries (merge); they are taken by value, so that a caller done with them
// (merge, holding every shard's rows) moves them in rather than holding them twice.
void write_summary(const std::string& dir, const nlohmann::json& scenario,
                   const std::vector<SummaryRow>& rows,
                   const nlohmann::ordered_json& top_level = nlohmann::ordered_json::object());
void write_summary(const std::string& dir, const nlohmann::json& scenario,
                   std::vector<nlohmann::ordered_json> rows,
                   const nlohmann::ordered_json& top_level = nlohmann::ordered_json::object());

// The CSV of the rows: `leading` columns first (a sweep's varied keys), then the SCENARIO.md
// fields.
std::string summary_csv(const std::vector<nlohmann::ordered_json>& rows,
                        const std::vector<std::string>& leading = {});

} // namespace overlapsim
