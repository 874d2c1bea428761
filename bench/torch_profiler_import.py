#!/usr/bin/env python3
"""The PyTorch-profiler import against ground truth: for each `<tag>-h100-kineto.json.gz` in
tests/data/h100 (by default) with its `<tag>-h100-layers.json` (CUDA-event medians), imports the trace onto
scenarios/gpt-neo-125m-1x1-h100.yaml (micro-batch and preset from the layers file), prints each
block's forward and backward against the truth, and the simulated one-GPU step with the imported
profile against the measured one. Numbers only, no pass/fail.

    python3 bench/torch_profiler_import.py [DATA_DIR]
"""
import glob
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "build", "overlapsim")
PRESETS = {"gpt-neo-125m": "gpt-neo-125m", "gpt-neo-1.3b": "gpt-neo-1.3b"}


def main():
    data = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests", "data", "h100")
    traces = sorted(glob.glob(os.path.join(data, "*-h100-kineto.json.gz")))
    if not traces:
        print(f"no traces in {data}")
        return 0
    for trace in traces:
        tag = os.path.basename(trace)[: -len("-h100-kineto.json.gz")]
        with open(os.path.join(data, f"{tag}-h100-layers.json")) as f:
            truth = json.load(f)
        preset = next((p for k, p in PRESETS.items() if tag.startswith(k)), None)
        with tempfile.TemporaryDirectory() as tmp:
            prof = os.path.join(tmp, "p.json")
            sets = ["--set", f"model.preset={preset}", "--set",
                    f"training.micro_batch={truth['micro_batch']}", "--set",
                    f"training.seq_len={truth['seq_len']}"]
            scenario = os.path.join(ROOT, "scenarios", "gpt-neo-125m-1x1-h100.yaml")
            subprocess.run([BIN, "profile", scenario, "--import-torch-profiler", trace, "--out",
                            prof] + sets, check=True, stdout=subprocess.DEVNULL)
            with open(prof) as f:
                layers = json.load(f)["model"]["layers"]
            subprocess.run([BIN, "run", scenario, "--no-plots", "--out", os.path.join(tmp, "o"),
                            "--set", f"model.profile={prof}"] + sets, check=True,
                           stdout=subprocess.DEVNULL)
            with open(os.path.join(tmp, "o", "summary.json")) as f:
                step = json.load(f)["results"][0]["iteration_time_s"] * 1e3
        mb = truth["micro_batch"]
        print(f"# {tag}: micro-batch {mb} x {truth['seq_len']}, {truth['gpu']}")
        print(f"{'block':>5} {'fwd ms':>8} {'truth':>8} {'err':>7} {'bwd ms':>8} {'truth':>8} "
              f"{'err':>7}")
        worst = 0
        for k, (f_t, b_t) in enumerate(zip(truth["block_fwd_ms"], truth["block_bwd_ms"])):
            f = layers[k + 1]["fwd_time_per_sample_s"] * mb * 1e3
            b = layers[k + 1]["bwd_time_per_sample_s"] * mb * 1e3
            worst = max(worst, abs(f / f_t - 1), abs(b / b_t - 1))
            print(f"{k:>5} {f:8.3f} {f_t:8.3f} {100 * (f / f_t - 1):+6.1f}% {b:8.3f} {b_t:8.3f} "
                  f"{100 * (b / b_t - 1):+6.1f}%")
        real = truth["median_ms"]["step"]
        print(f"worst block error {100 * worst:.1f}%; simulated step {step:.1f} ms vs measured "
              f"{real:.1f} ms ({100 * (step / real - 1):+.1f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
