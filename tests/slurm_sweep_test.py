#!/usr/bin/env python3
"""scripts/slurm-sweep.sbatch as a Slurm array would run it: two array tasks on a 2 x 2 grid, then
`merge`; the merged summary holds exactly the rows of the same sweep run whole (docs/SWEEPS.md).

    python3 tests/slurm_sweep_test.py SOURCE_DIR OVERLAPSIM
"""
import json
import os
import subprocess
import sys
import tempfile


def rows(path):
    with open(os.path.join(path, "summary.json")) as f:
        doc = json.load(f)
    return sorted(json.dumps(r, sort_keys=True) for r in doc["results"])


def main():
    source, binary = sys.argv[1], sys.argv[2]
    script = os.path.join(source, "scripts", "slurm-sweep.sbatch")
    scenario = os.path.join(source, "scenarios", "bandwidth-sweep.yaml")
    vary = ["cluster.inter_node.bandwidth=1Gb/s,100Gb/s", "cluster.nodes=2,4"]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "array")
        for task in range(2):
            env = dict(os.environ, OVERLAPSIM=binary, SLURM_ARRAY_TASK_ID=str(task),
                       SLURM_ARRAY_TASK_COUNT="2", SLURM_CPUS_PER_TASK="1")
            subprocess.run(["bash", script, scenario, out] + vary, env=env, check=True,
                           stdout=subprocess.DEVNULL)
        shards = sorted(os.listdir(out))
        assert shards == ["shard-0", "shard-1"], shards
        merged = os.path.join(tmp, "merged")
        subprocess.run([binary, "merge", merged] + [os.path.join(out, s) for s in shards],
                       check=True, stdout=subprocess.DEVNULL)
        whole = os.path.join(tmp, "whole")
        cmd = [binary, "sweep", scenario, "--no-plots", "--no-progress", "--out", whole]
        for v in vary:
            cmd += ["--vary", v]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        got, want = rows(merged), rows(whole)
        assert len(want) == 4 * 3, len(want)  # 4 points x 3 algorithms
        assert got == want, "the merged array differs from the whole sweep"
        # Outside an array (no task id) the script refuses, naming why.
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
        r = subprocess.run(["bash", script, scenario, out] + vary, env=env,
                           capture_output=True, text=True)
        assert r.returncode != 0 and "not an array task" in r.stderr, r.stderr
    print("slurm-sweep: 2 array tasks merged = the whole sweep (12 rows)")


if __name__ == "__main__":
    main()
