#!/usr/bin/env python3
"""Predicted against measured wall time of `overlapsim run`, `collective` and `sweep` (issue 63.5).

    bench/work_estimate.py [--bin build/overlapsim] [--only NAME,...]

For each case: the estimate the command prints when refused (`--max-time 1us`: "would take about
X"), then the command's measured wall time without the limit, and their ratio. The estimate's
model (cli/work_budget.h) is a fit to runs like these on a 2-core machine; each case should land
within 2x (predicted / measured between 0.5 and 2). Timings are noisy on a shared machine: a case
off by more is worth a second run before refitting. Prints numbers and a count of cases outside 2x;
exit status 0 (a benchmark, not a test).
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# A 4 x 2M-parameter model on two nodes of one A100 each, 10 Gb/s between them.
BASE = """name: work-estimate
cluster:
  nodes: 2
  gpus_per_node: 1
  gpu: a100-80gb
  intra_node: nvlink3
  inter_node: {bandwidth: 10Gb/s, latency: 5us}
model:
  layers:
    - {name: block, params: 2M, fwd_flops_per_sample: 20G, repeat: 4}
training: {micro_batch: 2, seq_len: 128, steps: 2}
algorithms: [ddp]
"""

# (name, command, scenario (None: BASE), extra arguments)
CASES = [
    ("compute-ops: 20k steps", "run", None, ["--set", "training.steps=20000"]),
    ("collectives: bucket_cap 4KB", "run", None,
     ["--set", "algorithms=[{name: ddp, bucket_cap: 4KB}]"]),
    ("collectives: bucket_cap 1KB, 8 GPUs", "run", None,
     ["--set", "cluster.gpus_per_node=8", "--set", "training.steps=1",
      "--set", "training.warmup_steps=0", "--set", "algorithms=[{name: ddp, bucket_cap: 1KB}]"]),
    ("unfolded: 256 GPUs x 20 steps", "run", None,
     ["--set", "cluster.nodes=32", "--set", "cluster.gpus_per_node=8",
      "--set", "cluster.rank_classes=off", "--set", "training.steps=20"]),
    ("folded: 1,048,576 GPUs", "run", None,
     ["--set", "cluster.nodes=131072", "--set", "cluster.gpus_per_node=8"]),
    ("steps: 256 nodes flat", "run", None,
     ["--set", "cluster.nodes=256", "--set", "cluster.collectives=steps"]),
    ("steps: 128 x 8 two-level", "run", None,
     ["--set", "cluster.nodes=128", "--set", "cluster.gpus_per_node=8",
      "--set", "cluster.collectives=steps"]),
    ("acco: 100 MB/s link", "run", None,
     ["--set", "cluster.inter_node.bandwidth=800Mb/s", "--set", "algorithms=[acco]"]),
    ("default scenario (6 algorithms)", "run", ROOT / "scenarios" / "default.yaml", []),
    ("collective: 131,072 GPUs, 1KB:1GB", "collective",
     ROOT / "scenarios" / "frontier-131072-h100-gpt-neo-2.7b.yaml",
     ["--op", "all-reduce", "--size", "1KB:1GB"]),
    ("sweep: 100 points, 2 jobs", "sweep", None,
     ["--vary", "seed=" + ",".join(str(i) for i in range(1, 101)), "--jobs", "2"]),
]

UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1, "min": 60, "h": 3600, "days": 86400}


def command_line(binary, command, scenario, extra, out):
    args = [binary, command, str(scenario)] + extra
    if command in ("run", "sweep"):
        args += ["--out", out, "--no-plots", "--no-progress"]
    return args


def predicted(binary, command, scenario, extra, out):
    p = subprocess.run(command_line(binary, command, scenario, extra, out) + ["--max-time", "1us"],
                       capture_output=True, text=True, timeout=120)
    m = re.search(r"would take about ([0-9.e+]+) (ns|us|ms|s|min|h|days)\b", p.stderr)
    if not m:
        raise RuntimeError(f"no estimate in: {p.stderr.strip()[:300]}")
    return float(m.group(1)) * UNITS[m.group(2)]


def measured(binary, command, scenario, extra, out):
    start = time.monotonic()
    p = subprocess.run(command_line(binary, command, scenario, extra, out), capture_output=True,
                       text=True, timeout=600)
    wall = time.monotonic() - start
    if p.returncode not in (0, 2):
        raise RuntimeError(f"exit {p.returncode}: {p.stderr.strip()[:300]}")
    return wall


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=str(ROOT / "build" / "overlapsim"))
    ap.add_argument("--only", default="", help="comma-separated case-name prefixes")
    args = ap.parse_args()
    only = [o for o in args.only.split(",") if o]
    outside = 0
    print(f"{'case':<38} {'predicted':>10} {'measured':>10} {'ratio':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base.yaml"
        base.write_text(BASE)
        for i, (name, command, scenario, extra) in enumerate(CASES):
            if only and not any(name.startswith(o) for o in only):
                continue
            out = os.path.join(tmp, f"out{i}")
            try:
                guess = predicted(args.bin, command, scenario or base, extra, out + "p")
                wall = measured(args.bin, command, scenario or base, extra, out)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                print(f"{name:<38} error: {e}")
                outside += 1
                continue
            ratio = guess / wall
            flag = "" if 0.5 <= ratio <= 2 else "  OUTSIDE 2x"
            outside += flag != ""
            print(f"{name:<38} {guess:>9.2f}s {wall:>9.2f}s {ratio:>6.2f}{flag}", flush=True)
    print(f"{outside} case(s) outside 2x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
