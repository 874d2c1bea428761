#!/usr/bin/env python3
"""How close `overlapsim validate` predicts real runs on this machine: the calibrate -> predict ->
measure loop, repeated, for ddp, acco, zero1, dpu and cdp-v2 on loopback and (as root) on an
emulated link. Prints, per setting and algorithm, the predicted and measured iteration time (median
over repeats), the error of the medians, the repeat spread (max - min over median, measured) and
the median |error| over the algorithms. Load-dependent: no pass/fail, numbers only.

    python3 bench/validate_accuracy.py [--repeats 3] [--workers 2] [--links loopback,100Mbit/s]
        [--cpu-bind cores|none] [--profile-time S]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ALGORITHMS = "ddp,acco,zero1,dpu,cdp-v2"


def run(scenario, workers, link, cpu_bind, profile_time, out):
    cmd = [os.path.join(ROOT, "build", "overlapsim"), "validate", scenario, "--workers",
           str(workers), "--algorithms", ALGORITHMS, "--cpu-bind", cpu_bind, "--no-plots",
           "--out", out]
    if profile_time is not None:
        cmd += ["--profile-time", str(profile_time)]
    if link != "loopback":
        cmd += ["--emulate-link", link]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    with open(os.path.join(out, "comparison.json")) as f:
        rows = json.load(f)["rows"]
    return {r["algorithm"]: (r["predicted"], r["measured"]) for r in rows
            if r["metric"] == "iteration_time_s"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--links", default="loopback,100Mbit/s")
    ap.add_argument("--scenario", default=os.path.join(ROOT, "scenarios", "validate-mlp.yaml"))
    ap.add_argument("--cpu-bind", default="cores", choices=["cores", "none"])
    ap.add_argument("--profile-time", type=float, default=None,
                    help="validate's --profile-time (its default when left out)")
    a = ap.parse_args()
    links = [l for l in a.links.split(",") if l == "loopback" or os.geteuid() == 0]
    load = os.getloadavg()[0]
    print(f"# validate accuracy: {os.path.basename(a.scenario)}, {a.workers} workers, "
          f"{os.cpu_count()} cores, load {load:.2f}, {a.repeats} repeats, cpu-bind {a.cpu_bind}, "
          f"profile-time {'default' if a.profile_time is None else a.profile_time}")
    print(f"{'link':<11} {'algorithm':<8} {'predicted':>10} {'measured':>10} {'error':>8} "
          f"{'spread':>7}")
    for link in links:
        runs = []
        with tempfile.TemporaryDirectory() as tmp:
            for i in range(a.repeats):
                runs.append(run(a.scenario, a.workers, link, a.cpu_bind, a.profile_time,
                                os.path.join(tmp, str(i))))
        errors = []
        for algo in ALGORITHMS.split(","):
            pred = statistics.median(r[algo][0] for r in runs)
            meas = [r[algo][1] for r in runs]
            med = statistics.median(meas)
            err = (pred - med) / med
            errors.append(abs(err))
            spread = (max(meas) - min(meas)) / med
            print(f"{link:<11} {algo:<8} {pred:10.4f} {med:10.4f} {100 * err:+7.1f}% "
                  f"{100 * spread:6.1f}%")
        print(f"{link:<11} median |error| {100 * statistics.median(errors):.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
