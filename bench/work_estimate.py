#!/usr/bin/env python3
"""Predicted against measured wall time and memory of `run`, `collective` and `sweep` (issue 63.5).

    bench/work_estimate.py [--bin build/overlapsim] [--only NAME,...]

For each case: the estimates the command prints when refused (`--max-time 1us`: "would take about
X"; `--max-memory 1B`: "would need about Y of memory"), then the command's measured wall time and
peak resident size (os.wait4's ru_maxrss: the largest of the process and the children it waited
for) without the limits, and their ratios. A sweep's memory estimate is its largest point's times
the points run at once. The estimate's
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
    ("collective: 131,072 GPUs, 1K:1G", "collective",
     ROOT / "scenarios" / "frontier-131072-h100-gpt-neo-2.7b.yaml",
     ["--op", "all-reduce", "--size", "1K:1G"]),
    ("sweep: 100 points, 2 jobs", "sweep", None,
     ["--vary", "seed=" + ",".join(str(i) for i in range(1, 101)), "--jobs", "2"]),
]

BYTES = {"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "PB": 1e15}
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


def predicted_memory(binary, command, scenario, extra, out):
    p = subprocess.run(command_line(binary, command, scenario, extra, out) +
                       ["--max-memory", "1B"], capture_output=True, text=True, timeout=120)
    m = re.search(r"would need about ([0-9.e+]+) (B|KB|MB|GB|TB|PB) of memory", p.stderr)
    if not m:
        raise RuntimeError(f"no memory estimate in: {p.stderr.strip()[:300]}")
    return float(m.group(1)) * BYTES[m.group(2)]


def measured(binary, command, scenario, extra, out):
    """Wall seconds and peak resident bytes."""
    start = time.monotonic()
    with tempfile.TemporaryFile() as err:
        p = subprocess.Popen(command_line(binary, command, scenario, extra, out),
                             stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        wall = time.monotonic() - start
        if p.returncode not in (0, 2):
            err.seek(0)
            raise RuntimeError(f"exit {p.returncode}: {err.read().decode()[-300:]}")
    return wall, usage.ru_maxrss * 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=str(ROOT / "build" / "overlapsim"))
    ap.add_argument("--only", default="", help="comma-separated case-name prefixes")
    args = ap.parse_args()
    only = [o for o in args.only.split(",") if o]
    outside = 0
    print(f"{'case':<38} {'time: predicted':>15} {'measured':>9} {'ratio':>6}"
          f" {'memory: predicted':>17} {'measured':>9} {'ratio':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base.yaml"
        base.write_text(BASE)
        for i, (name, command, scenario, extra) in enumerate(CASES):
            if only and not any(name.startswith(o) for o in only):
                continue
            out = os.path.join(tmp, f"out{i}")
            try:
                guess = predicted(args.bin, command, scenario or base, extra, out + "p")
                memory = predicted_memory(args.bin, command, scenario or base, extra, out + "m")
                wall, rss = measured(args.bin, command, scenario or base, extra, out)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                print(f"{name:<38} error: {e}")
                outside += 1
                continue
            ratio, mem_ratio = guess / wall, memory / rss
            flag = "" if 0.5 <= ratio <= 2 and 0.5 <= mem_ratio <= 2 else "  OUTSIDE 2x"
            outside += flag != ""
            print(f"{name:<38} {guess:>14.2f}s {wall:>8.2f}s {ratio:>6.2f}"
                  f" {memory / 1e6:>15.0f}MB {rss / 1e6:>7.0f}MB {mem_ratio:>6.2f}{flag}",
                  flush=True)
    print(f"{outside} case(s) outside 2x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
