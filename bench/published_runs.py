#!/usr/bin/env python3
"""Published 3D-parallel training runs against the simulator, uncalibrated (issue 65.8).

Runs every scenarios/published/*.yaml (or the files given) with `overlapsim run --no-plots --set
output.traces=false` and prints one row each: the run, its GPUs, the published metric (MFU, or
TFLOP/s per GPU as Megatron counts it), the simulated value, the error and whether it is within
15%. Each scenario names its metric in a header comment, `# target: mfu=0.43` or
`# target: hardware_tflops_per_gpu=150` (summary.json's fields, docs/SCENARIO.md). A scenario the
binary refuses because 3D parallelism is not simulated yet prints "not simulated yet: <the error>"
and the bench still exits 0; any other failure (a scenario that does not load) prints "failed:
<the error>" and makes the exit status 1. A summary line ends the table. docs/MODEL.md, "Published 3D-parallel
runs", holds the table and the sources.

    python3 bench/published_runs.py [--bin build/overlapsim] [SCENARIO.yaml ...]
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOLERANCE = 0.15
TARGET = re.compile(r"^#\s*target:\s*([a-z_]+)\s*=\s*([0-9.eE+-]+)\s*$")


def read_target(path):
    """(metric, value) from the scenario's `# target: metric=value` header line."""
    with open(path) as f:
        for line in f:
            m = TARGET.match(line.strip())
            if m:
                return m.group(1), float(m.group(2))
            if line.strip() and not line.startswith("#"):
                break
    raise ValueError(f"{path}: no '# target: metric=value' line in its header comment")


def gpus(path):
    """nodes x gpus_per_node as the scenario writes them (no YAML parser needed)."""
    text = open(path).read()
    nodes = re.search(r"^\s+nodes:\s*(\d+)", text, re.M)
    per = re.search(r"^\s+gpus_per_node:\s*(\d+)", text, re.M)
    return int(nodes.group(1)) * int(per.group(1)) if nodes and per else None


def show(metric, value):
    if metric == "mfu":
        return f"{100 * value:.1f}% MFU"
    return f"{value:.1f} TFLOP/s"


def run(binary, path, out):
    """The first result row of summary.json, or the error text of a refused run."""
    p = subprocess.run([binary, "run", path, "--no-plots", "--no-progress", "--out", out,
                        "--set", "output.traces=false"], capture_output=True, text=True)
    if p.returncode != 0:
        lines = [l for l in (p.stderr or p.stdout).strip().splitlines() if l.strip()]
        text = lines[-1] if lines else f"exit status {p.returncode}"
        return None, text.removeprefix("overlapsim run: ").replace(ROOT + os.sep, "")
    with open(os.path.join(out, "summary.json")) as f:
        rows = [r for r in json.load(f)["results"] if "error" not in r]
    if not rows:
        return None, "no algorithm ran"
    return rows[0], None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "overlapsim"))
    ap.add_argument("scenarios", nargs="*")
    a = ap.parse_args()
    paths = a.scenarios or sorted(glob.glob(os.path.join(ROOT, "scenarios", "published", "*.yaml")))
    header = f"{'run':<34} {'GPUs':>6} {'published':>16} {'simulated':>16} {'error':>8}  within 15%?"
    print(header)
    print("-" * len(header))
    simulated = within = refused = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for path in paths:
            name = os.path.splitext(os.path.basename(path))[0]
            metric, published = read_target(path)
            row, error = run(a.bin, path, os.path.join(tmp, name))
            n = gpus(path)
            lead = f"{name:<34} {n if n else '?':>6} {show(metric, published):>16}"
            if row is None and "not simulated yet" in error:
                refused += 1
                print(f"{lead}  not simulated yet: {error}")
                continue
            if row is None:
                failed += 1
                print(f"{lead}  failed: {error}")
                continue
            value = row.get(metric)
            if value is None:
                refused += 1
                print(f"{lead}  not simulated yet: summary.json has no {metric}")
                continue
            simulated += 1
            err = (value - published) / published
            ok = abs(err) <= TOLERANCE
            within += ok
            print(f"{lead} {show(metric, value):>16} {100 * err:>+7.1f}%  {'yes' if ok else 'NO'}")
    print(f"\n{len(paths)} published runs: {simulated} simulated, {within} within 15%, "
          f"{refused} not simulated yet" + (f", {failed} failed" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
