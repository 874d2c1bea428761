#!/usr/bin/env python3
"""Wall time and peak RSS of `overlapsim run` for DDP x GPT-Neo 2.7B x 10 steps at scale (issue 29).

    bench/scale.py [--gpus 1024,4096,16384] [--bin build/overlapsim] [--force] [--set KEY=VALUE ...]
    bench/scale.py --compare --gpus 64,256,1024,4096    # rank classes against the full simulation
    bench/scale.py --three-d                            # Llama-2 70B TP8 x PP4 on 16,384 H100s
    bench/scale.py --three-d --compare --gpus 256 --straggler 9   # folded vs full, 3D (issue 65.6)
    bench/scale.py --full-sweep          # the full (unfolded) simulation, 64..4,096 H100s (issue 64.1)
    bench/scale.py --statistical --gpus 256,1024   # rank_classes: statistical vs full (issue 64.2)
    bench/scale.py --statistical --three-d --gpus 256   # the same for Llama-2 70B TP8 x PP4 (64.5)

One line per size: GPUs, nodes x GPUs per node, wall seconds, CPU seconds (user + system: what
the run cost on a machine other jobs share), peak RSS of the child (os.wait4), and the summary's `simulation` field (`classes (8 of N GPUs simulated)` or `full (...)`).
Prints numbers only; no pass/fail. Extra --set pairs go to every run, e.g.
--set cluster.rank_classes=off for the full simulation. --scenario picks another base (its cluster
preset and fabric are kept; nodes, model and steps are set as above), e.g. the H100 one of issue 64:

    bench/scale.py --scenario scenarios/frontier-131072-h100-gpt-neo-2.7b.yaml \
        --gpus 64,128,256,512,1024 --set cluster.rank_classes=off --repeat 3

--three-d runs scenarios/large/llama2-70b-tp8-pp4-2048x8-h100.yaml as it is (its model, steps and
parallelism; only the node count set from --gpus), each algorithm of --algorithms in turn;
--straggler GPU adds a 1.5x straggler on that GPU to every run.

--full-sweep runs the H100 frontier scenario with cluster.rank_classes=off (every GPU simulated:
what jitter, per-GPU lengths or WAN sites fall back to) at 64, 128, ..., 4,096 GPUs unless --gpus
says otherwise.

--statistical runs each size, algorithm (default ddp,acco,diloco,fsdp) and source of per-GPU
difference (lognormal jitter sigma 0.05 on every op; sequence lengths drawn per GPU, lognormal
median 1024 sigma 0.5 of 2048; a random slowdown of 1 to 1.05 on every GPU, seeded) twice: with
cluster.rank_classes=statistical and =off (training.micro_batch=1, so that DDP fits and no
fit-advice probe runs), and prints both iteration times, the error of the
statistical fold, both wall times and both CPU times (user + system, the child's included:
what a loaded machine's wall time hides) (--variations picks some of jitter,lengths,stragglers).

With two sizes or more it fits wall = a x GPUs^b to the runs (least squares in log-log, on each
size's fastest run) and prints b: the cost's growth in GPUs (1: linear). --compare runs each size both ways and
prints the largest relative difference of the summary's main fields (issue 29.2: within 0.1%).
"""

import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "scenarios" / "ddp-4x8-a100-gpt-neo-125m.yaml"
THREE_D = ROOT / "scenarios" / "large" / "llama2-70b-tp8-pp4-2048x8-h100.yaml"
GPUS_PER_NODE = 8


def find_simulation_field(summary: Path) -> str:
    """The `simulation` value anywhere in summary.json, or '-' when absent."""
    try:
        data = json.loads(summary.read_text())
    except (OSError, ValueError):
        return "-"
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if isinstance(item.get("simulation"), str):
                return item["simulation"]
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return "-"


COMPARED = ["iteration_time_s", "throughput_samples_s", "comm_bytes_per_step", "peak_memory_bytes",
            "idle_fraction_mean", "exposed_comm_s", "compute_s_per_step", "comm_s_per_step"]


def run_one(binary: str, gpus: int, extra: list[str], timeout: float, force: bool,
            keep: dict | None = None, scenario: Path = SCENARIO,
            measured: list | None = None, algorithm: str = "ddp", as_is: bool = False) -> str:
    nodes = gpus // GPUS_PER_NODE
    with tempfile.TemporaryDirectory() as out:
        args = [binary, "run", str(scenario), "--no-plots", "--no-progress", "--out", out,
                "--algorithms", algorithm, "--set", "output.traces=false",
                "--set", f"cluster.nodes={nodes}", "--set", f"cluster.gpus_per_node={GPUS_PER_NODE}"]
        if not as_is:
            args += ["--set", "training.steps=10", "--set", "model.preset=gpt-neo-2.7b"]
        if force:
            args.append("--force")
        for pair in extra:
            args += ["--set", pair]
        start = time.monotonic()
        child = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        status = None
        while status is None:
            pid, code, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                status = (code, usage)
            elif time.monotonic() - start > timeout:
                child.kill()
                child.wait()
                return f"{gpus:>7} {nodes:>6}x{GPUS_PER_NODE}  timed out after {timeout:.0f} s"
            else:
                time.sleep(0.05)
        wall = time.monotonic() - start
        code, usage = status
        # Popen still owns the handle; reading stderr after the child was reaped is fine.
        err = child.stderr.read().decode(errors="replace") if child.stderr else ""
        child.returncode = os.waitstatus_to_exitcode(code)
        if child.returncode != 0:
            return f"{gpus:>7} {nodes:>6}x{GPUS_PER_NODE}  FAILED ({child.returncode}): {err[-300:]}"
        rss_mb = usage.ru_maxrss / 1024  # kilobytes on Linux
        cpu = usage.ru_utime + usage.ru_stime
        sim = find_simulation_field(Path(out) / "summary.json")
        if measured is not None:
            measured.append((wall, rss_mb, cpu))
        if keep is not None:
            keep.update(json.loads((Path(out) / "summary.json").read_text())["results"][0])
        return (f"{gpus:>7} {nodes:>6}x{GPUS_PER_NODE} {wall:>9.2f} s {cpu:>9.2f} s "
                f"{rss_mb:>9.1f} MB  "
                f"{algorithm:<8} {sim}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", default="1024,4096,16384",
                        help="comma-separated GPU counts (multiples of 8); add 65536,131072")
    parser.add_argument("--bin", default=str(ROOT / "build" / "overlapsim"))
    parser.add_argument("--set", action="append", default=[], dest="extra",
                        help="KEY=VALUE passed to every run")
    parser.add_argument("--force", action="store_true",
                        help="pass --force (past the work budget; needed at 64k+ GPUs)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per run")
    parser.add_argument("--compare", action="store_true",
                        help="run each size with rank classes and with cluster.rank_classes=off")
    parser.add_argument("--scenario", type=Path, default=SCENARIO,
                        help="base scenario (default: the A100 DDP one)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs per size (the fit takes each size's fastest)")
    parser.add_argument("--three-d", action="store_true",
                        help="the 3D-parallel Llama-2 70B scenario as it is (default 16384 GPUs)")
    parser.add_argument("--algorithms", default="ddp",
                        help="comma-separated algorithm labels of the scenario (default ddp)")
    parser.add_argument("--straggler", type=int, default=-1,
                        help="a 1.5x straggler on this GPU in every run")
    parser.add_argument("--full-sweep", action="store_true",
                        help="H100 frontier scenario, rank classes off, 64..4096 GPUs")
    parser.add_argument("--statistical", action="store_true",
                        help="rank_classes: statistical against the full simulation (issue 64.2)")
    parser.add_argument("--variations", default="jitter,lengths,stragglers",
                        help="with --statistical: which per-GPU differences to run")
    args = parser.parse_args()
    if args.statistical:
        if args.three_d and args.scenario == SCENARIO:
            args.scenario = THREE_D
        if args.algorithms == parser.get_default("algorithms"):
            args.algorithms = "ddp,zero1,diloco" if args.three_d else "ddp,acco,diloco,fsdp"
        if args.gpus == parser.get_default("gpus"):
            args.gpus = "256"
        if not os.access(args.bin, os.X_OK):
            print(f"build first: cmake --build build -j2 --target overlapsim ({args.bin})",
                  file=sys.stderr)
            return 1
        return statistical_table(args)
    if args.full_sweep:
        if args.scenario == SCENARIO:
            args.scenario = ROOT / "scenarios" / "frontier-131072-h100-gpt-neo-2.7b.yaml"
        if args.gpus == parser.get_default("gpus"):
            args.gpus = "64,128,256,512,1024,2048,4096"
        args.extra.append("cluster.rank_classes=off")
    if args.three_d:
        if args.scenario == SCENARIO:
            args.scenario = THREE_D
        if args.gpus == parser.get_default("gpus"):
            args.gpus = "16384"
    if args.straggler >= 0:
        args.extra.append(f"cluster.stragglers=[{{gpu: {args.straggler}, slowdown: 1.5}}]")
    if not os.access(args.bin, os.X_OK):
        print(f"build first: cmake --build build -j2 --target overlapsim ({args.bin})",
              file=sys.stderr)
        return 1
    what = "as the scenario says" if args.three_d else "x gpt-neo-2.7b x 10 steps"
    print(f"# overlapsim scale bench: {args.algorithms} {what}, {os.cpu_count()} cores, "
          f"{args.scenario.name}")
    print("#    GPUs  nodes       wall         CPU      peak RSS  algorithm simulation")
    algorithms = [a for a in args.algorithms.split(",") if a]
    fastest = {}  # GPUs -> (wall s, peak RSS MB) of the fastest run
    for gpus, algorithm in ((int(g), a) for g in args.gpus.split(",") if g for a in algorithms):
        common = dict(scenario=args.scenario, algorithm=algorithm, as_is=args.three_d)
        if not args.compare:
            for _ in range(max(1, args.repeat)):
                measured = []
                print(run_one(args.bin, gpus, args.extra, args.timeout, args.force,
                              measured=measured, **common), flush=True)
                if measured and (gpus not in fastest or measured[0][0] < fastest[gpus][0]):
                    fastest[gpus] = measured[0]
            continue
        classes, full = {}, {}
        print(run_one(args.bin, gpus, args.extra, args.timeout, args.force, classes, **common),
              flush=True)
        print(run_one(args.bin, gpus, args.extra + ["cluster.rank_classes=off"], args.timeout,
                      args.force, full, **common), flush=True)
        diffs = [(abs(classes[k] - full[k]) / abs(full[k]), k) for k in COMPARED
                 if k in classes and k in full and full[k]]
        if diffs:
            worst, field = max(diffs)
            print(f"{gpus:>7}  {algorithm:<8} classes vs full: worst relative difference "
                  f"{worst:.2e} ({field})", flush=True)
    if len(fastest) >= 2:
        for label, index in (("wall", 0), ("CPU", 2), ("peak RSS", 1)):
            b = fit_exponent([(g, v[index]) for g, v in sorted(fastest.items())])
            print(f"# {label} ~ GPUs^{b:.2f} over {min(fastest)}..{max(fastest)} GPUs "
                  "(least squares in log-log, fastest run per size)")
    return 0


def variation_settings(name: str, gpus: int) -> list[str]:
    """The --set pairs that make every GPU draw or run differently (issue 64's rows)."""
    if name == "jitter":
        return ["cluster.jitter={distribution: lognormal, sigma: 0.05}"]
    if name == "lengths":
        return ["training.seq_len_distribution={lognormal: {median: 1024, sigma: 0.5}}"]
    if name == "stragglers":
        draw = random.Random(64)  # a fixed seed: the same slowdowns every run
        listed = ", ".join(f"{{gpu: {g}, slowdown: {1 + 0.05 * draw.random():.4f}}}"
                           for g in range(gpus))
        return [f"cluster.stragglers=[{listed}]"]
    raise ValueError(f"unknown variation {name!r} (jitter, lengths, stragglers)")


def statistical_table(args) -> int:
    """rank_classes: statistical against the full simulation, one line per case (issue 64.2)."""
    what = "as the scenario says" if args.three_d else "x gpt-neo-2.7b x 10 steps"
    print(f"# overlapsim statistical rank classes vs full: {what}, "
          f"{os.cpu_count()} cores, {args.scenario.name}")
    print("#    GPUs algorithm variation   full iteration  statistical  error     full wall  "
          "stat. wall  full CPU  stat. CPU  simulation")
    for gpus in (int(g) for g in args.gpus.split(",") if g):
        for algorithm in (a for a in args.algorithms.split(",") if a):
            for variation in (v for v in args.variations.split(",") if v):
                # One sample per micro-batch: DDP x 2.7B fits then, and no fit-advice probes run.
                # --three-d: the scenario's own micro-batch (one sequence).
                extra = ([] if args.three_d else ["training.micro_batch=1"]) + args.extra + \
                    variation_settings(variation, gpus)
                runs = {}
                for mode in ("statistical", "off"):
                    keep, measured = {}, []
                    line = run_one(args.bin, gpus, extra + [f"cluster.rank_classes={mode}"],
                                   args.timeout, args.force, keep, scenario=args.scenario,
                                   measured=measured, algorithm=algorithm,
                                   as_is=args.three_d)
                    if not keep:
                        print(f"# {line}", flush=True)
                    runs[mode] = (keep.get("iteration_time_s"),
                                  measured[0][0] if measured else float("nan"),
                                  measured[0][2] if measured else float("nan"),
                                  keep.get("simulation", "-"))
                (stat_t, stat_wall, stat_cpu, sim), (full_t, full_wall, full_cpu, _) = (
                    runs["statistical"], runs["off"])
                error = (f"{100 * (stat_t - full_t) / full_t:+7.3f}%" if stat_t and full_t
                         else "      -")
                print(f"{gpus:>8} {algorithm:<9} {variation:<11} {full_t or float('nan'):>12.4f} s "
                      f"{stat_t or float('nan'):>10.4f} s {error} {full_wall:>9.2f} s "
                      f"{stat_wall:>9.2f} s {full_cpu:>8.2f} s {stat_cpu:>8.2f} s  {sim[:60]}",
                      flush=True)
    return 0


def fit_exponent(points: list[tuple[int, float]]) -> float:
    """b of y = a x^b fitted to (x, y) by least squares on (log x, log y)."""
    xs = [math.log(x) for x, _ in points]
    ys = [math.log(max(y, 1e-9)) for _, y in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else float("nan")


if __name__ == "__main__":
    sys.exit(main())
