#!/usr/bin/env python3
"""The uncalibrated compute model (per-op roofline, docs/MODEL.md) against measured one-GPU steps.

For each `<tag>-h100-layers.json` in tests/data/h100 (CUDA-event medians of a real job: preset,
micro-batch, step, per-block times, peak memory), simulates the same job on
scenarios/gpt-neo-125m-1x1-h100.yaml with no profile, and prints predicted vs measured: step,
block forward/backward, time outside the blocks, peak memory. Extra measurements a layers file
does not carry can be given as TAG=PRESET:MICRO_BATCH:STEP_MS arguments (e.g. the issue's
gpt-neo-1.3b=gpt-neo-1.3b:8:430). Numbers only, no pass/fail.

    python3 bench/compute_model_accuracy.py [DATA_DIR] [TAG=PRESET:MB:STEP_MS ...]
"""
import glob
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "build", "overlapsim")
SCENARIO = os.path.join(ROOT, "scenarios", "gpt-neo-125m-1x1-h100.yaml")


def simulate(preset, micro_batch, out):
    subprocess.run([BIN, "run", SCENARIO, "--no-plots", "--no-progress", "--out", out,
                    "--set", f"model.preset={preset}", "--set", f"training.micro_batch={micro_batch}"],
                   check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(out, "summary.json")) as f:
        s = json.load(f)
    return s["scenario"]["model"]["layers"], s["results"][0]


def err(pred, real):
    return f"{pred:9.2f} vs {real:9.2f} ({100 * (pred - real) / real:+6.1f}%)"


def main():
    args = sys.argv[1:]
    data = args.pop(0) if args and "=" not in args[0] else os.path.join(ROOT, "tests", "data", "h100")
    cases = []
    for path in sorted(glob.glob(os.path.join(data, "*-h100-layers.json"))):
        with open(path) as f:
            cases.append(json.load(f))
    for a in args:
        tag, spec = a.split("=", 1)
        preset, mb, step = spec.split(":")
        cases.append({"model": tag, "preset": preset, "micro_batch": int(mb),
                      "median_ms": {"step": float(step)}})
    print("# uncalibrated roofline vs measured (H100 SXM, bf16 autocast, AdamW); ms and GB")
    with tempfile.TemporaryDirectory() as tmp:
        for c in cases:
            preset = c.get("preset", c["model"])
            layers, r = simulate(preset, c["micro_batch"], os.path.join(tmp, c["model"]))
            mb = c["micro_batch"]
            print(f"{c['model']} (micro-batch {mb})")
            print(f"  step           {err(1e3 * r['iteration_time_s'], c['median_ms']['step'])}")
            if "block_fwd_ms" in c:
                blocks = [l for l in layers if l["name"].startswith("block")]
                bf = 1e3 * mb * blocks[0]["fwd_model_time_per_sample_s"]
                bb = 1e3 * mb * blocks[0]["bwd_model_time_per_sample_s"]
                real_bf = sorted(c["block_fwd_ms"])[len(c["block_fwd_ms"]) // 2]
                real_bb = sorted(c["block_bwd_ms"])[len(c["block_bwd_ms"]) // 2]
                print(f"  block fwd      {err(bf, real_bf)}")
                print(f"  block bwd      {err(bb, real_bb)}")
                rest = [l for l in layers if not l["name"].startswith("block")]
                of = 1e3 * mb * sum(l["fwd_model_time_per_sample_s"] for l in rest)
                ob = 1e3 * mb * sum(l["bwd_model_time_per_sample_s"] for l in rest)
                print(f"  outside fwd    {err(of, c['outside_blocks_ms']['fwd'])}")
                print(f"  outside bwd    {err(ob, c['outside_blocks_ms']['bwd'])}")
            if "peak_memory_bytes" in c:
                print(f"  peak memory    {err(r['peak_memory_bytes'] / 1e9, c['peak_memory_bytes'] / 1e9)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
