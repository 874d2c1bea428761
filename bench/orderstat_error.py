#!/usr/bin/env python3
"""The error of a statistical fold's order-statistic clocks (sim/slowest_of.h, issue 64.4) against
its path-by-path clocks, on the same scenario and seed.

    bench/orderstat_error.py [--gpus 1024,4096,16384] [--algorithms ddp,acco,diloco,fsdp]
                             [--seeds 1,2,3] [--per-clock 128] [--steps 4] [--salts 0]

Runs scenarios/large/frontier-16384-h100-realistic.yaml (jitter lognormal 0.05, sequence lengths
lognormal median 1,024 of 2,048, a 1.5x straggler per 64 nodes, rank_classes: statistical) at each
size with bench/scale.py's 2:1 rail-optimised fat tree, twice per algorithm and seed: with every
GPU's own clock (OVERLAPSIM_STATISTICAL_CLOCKS past the GPUs) and with GPUs / --per-clock clocks
(128 GPUs a clock is what the default 1,024 clocks give at 131,072 GPUs). Prints both iteration
times, the relative error, both CPU times (user + system) and, per size and algorithm, the mean
error over the seeds. Numbers only; no pass/fail (issue 64.2's target: within 1%).

--salts 0,1,2,3 runs each seed again with other jitter (OVERLAPSIM_JITTER_SALT: the same seed and
sequence lengths, another realisation of the jitter; 0 the seed's own) and prints, per seed, how
far the path-by-path clocks alone move with the jitter's realisation (their spread, max / min - 1)
and the error of the mean over the salts: what an order statistic, which cannot draw the
path-by-path clocks' jitter draw for draw, can be held to where the run is that sensitive.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale  # noqa: E402  (realistic_scenario)


def run(binary: str, scenario: Path, algorithm: str, seed: int, steps: int, clocks: int,
        extra: list[str], salt: int = 0) -> dict:
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, OVERLAPSIM_STATISTICAL_CLOCKS=str(clocks),
                   OVERLAPSIM_JITTER_SALT=str(salt))
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        proc = subprocess.run(
            [binary, "run", str(scenario), "--no-plots", "--no-progress", "--out", out,
             "--algorithms", algorithm, "--set", "output.traces=false", "--set", f"seed={seed}",
             "--set", f"training.steps={steps}", "--max-time", "30min"] +
            [a for pair in extra for a in ("--set", pair)],
            env=env, capture_output=True, text=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        if proc.returncode != 0:
            return {"error": proc.stderr.strip()[-200:], "cpu": cpu}
        row = json.loads((Path(out) / "summary.json").read_text())["results"][0]
        return {"time": row["iteration_time_s"], "cpu": cpu}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", default=str(scale.ROOT / "build" / "overlapsim"))
    parser.add_argument("--gpus", default="1024,4096,16384")
    parser.add_argument("--algorithms", default="ddp,acco,diloco,fsdp")
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--per-clock", type=int, default=128,
                        help="GPUs per order-statistic clock (GPUs / this many clocks)")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--salts", default="0",
                        help="jitter realisations per seed (OVERLAPSIM_JITTER_SALT), 0 first")
    parser.add_argument("--set", dest="extra", action="append", default=[],
                        metavar="KEY=VALUE", help="passed to every run")
    args = parser.parse_args()
    print(f"# order-statistic clocks vs path by path: {scale.REALISTIC.name}, 2:1 rail fat tree, "
          f"{args.steps} steps; {args.per_clock} GPUs a clock; CPU = user + system, s")
    print(f"{'GPUs':>6} {'algorithm':<9} {'seed':>4} {'clocks':>6} {'path by path':>13} "
          f"{'order stat.':>13} {'error':>9} {'CPU path':>9} {'CPU order':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        for gpus in [int(g) for g in args.gpus.split(",") if g]:
            scenario = Path(tmp) / f"{gpus}.yaml"
            scenario.write_text(scale.realistic_scenario(gpus, "fat tree rail"))
            clocks = max(1, gpus // args.per_clock)
            for algorithm in [a for a in args.algorithms.split(",") if a]:
                errors = []
                salts = [int(x) for x in args.salts.split(",") if x]
                for seed in [int(s) for s in args.seeds.split(",") if s]:
                    exacts, drawns = [], []
                    for salt in salts:
                        exact = run(args.bin, scenario, algorithm, seed, args.steps, 1 << 30,
                                    args.extra, salt)
                        drawn = run(args.bin, scenario, algorithm, seed, args.steps, clocks,
                                    args.extra, salt)
                        if "time" not in exact or "time" not in drawn:
                            print(f"{gpus:>6} {algorithm:<9} {seed:>4} failed: "
                                  f"{exact.get('error', '')} {drawn.get('error', '')}", flush=True)
                            continue
                        e = drawn["time"] / exact["time"] - 1
                        if salt == salts[0]:
                            errors.append(e)
                        exacts.append(exact["time"])
                        drawns.append(drawn["time"])
                        tag = f"{seed}" if len(salts) == 1 else f"{seed}/{salt}"
                        print(f"{gpus:>6} {algorithm:<9} {tag:>4} {clocks:>6} "
                              f"{exact['time']:>13.6f} {drawn['time']:>13.6f} {100 * e:>+8.3f}% "
                              f"{exact['cpu']:>9.2f} {drawn['cpu']:>9.2f}", flush=True)
                    if len(exacts) > 1:
                        spread = max(exacts) / min(exacts) - 1
                        mean_e = (sum(drawns) / len(drawns)) / (sum(exacts) / len(exacts)) - 1
                        print(f"{gpus:>6} {algorithm:<9} seed {seed}: path by path over "
                              f"{len(exacts)} jitter realisations {min(exacts):.6f}-"
                              f"{max(exacts):.6f} (spread {100 * spread:.2f}%), error of the "
                              f"means {100 * mean_e:+.3f}%", flush=True)
                if errors:
                    mean = sum(errors) / len(errors)
                    print(f"{gpus:>6} {algorithm:<9} mean {100 * mean:+.3f}%, largest "
                          f"{100 * max(errors, key=abs):+.3f}% over {len(errors)} seed(s)",
                          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
