#!/usr/bin/env python3
"""CPU time, peak RSS and iteration-time error of the folds of mixed GPU types (issue 64.2, 64.5).

Usage:
    bench/node_types_folds.py [--gpus 256,1024] [--full-up-to 256]
                              [--cases 3d,sites,statistical,3d-statistical]

On the H100 frontier scenario (DDP x GPT-Neo 2.7B x 10 steps), each case's scenario is run with
rank classes (folded: `auto`, or `statistical` for the jitter case) and, up to --full-up-to GPUs,
with cluster.rank_classes=off; prints wall and CPU (user + system) seconds, peak RSS and the
relative iteration-time difference. Cases:
  3d           TP2 x PP2 (tp-dp-pp), the pipelines' stage 1 on A100 80 GB nodes for half the
               replicas (two type patterns: two node groups run);
  sites        two WAN sites (halves, wan-10gbit, site by site), the second site's nodes A100s;
  statistical  the upper half of the nodes A100s, lognormal jitter 0.05 on every GPU;
  3d-statistical  3d's layout and types with lognormal jitter 0.05 on every GPU, statistical:
               one extreme replica per type pattern (four node groups run).
Prints numbers only; no pass/fail.
"""
import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale import measure, overlapsim_args, relative_error, short_simulation  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "scenarios" / "frontier-131072-h100-gpt-neo-2.7b.yaml"
GPUS_PER_NODE = 8


def nodes_list(nodes: range) -> str:
    return "[" + ", ".join(str(n) for n in nodes) + "]"


def case_sets(case: str, nodes: int) -> tuple[list[str], str]:
    """The --set pairs of `case` on `nodes` nodes, and its folded rank_classes mode."""
    half = nodes // 2
    if case in ("3d", "3d-statistical"):
        typed = nodes_list(range(half, half + nodes // 4))
        pairs = [f"cluster.node_types=[{{nodes: {typed}, gpu: a100-80gb}}]",
                 "parallelism={tensor: 2, pipeline: 2}", "training.grad_accum=4"]
        if case == "3d":
            return (pairs, "auto")
        return (pairs + ["cluster.jitter={distribution: lognormal, sigma: 0.05}"], "statistical")
    if case == "sites":
        return ([f"cluster.sites=[{{nodes: {nodes_list(range(half))}}}, "
                 f"{{nodes: {nodes_list(range(half, nodes))}}}]", "cluster.wan=wan-10gbit",
                 f"cluster.node_types=[{{nodes: {nodes_list(range(half, nodes))}, "
                 "gpu: a100-80gb}]"], "auto")
    if case == "statistical":
        return ([f"cluster.node_types=[{{nodes: {nodes_list(range(half, nodes))}, "
                 "gpu: a100-80gb}]", "cluster.jitter={distribution: lognormal, sigma: 0.05}"],
                "statistical")
    raise ValueError(case)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", default="256,1024")
    parser.add_argument("--full-up-to", type=int, default=256)
    parser.add_argument("--cases", default="3d,sites,statistical,3d-statistical")
    parser.add_argument("--bin", default=str(ROOT / "build" / "overlapsim"))
    parser.add_argument("--timeout", type=float, default=3600)
    args = parser.parse_args()
    print(f"# mixed GPU types, ddp x gpt-neo-2.7b x 10 steps on H100 (+ A100) nodes, "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; s, MB", flush=True)
    print(f"{'case':<12} {'gpus':>5} {'mode':<12} {'simulated':<16} {'wall':>8} {'cpu':>8} "
          f"{'rss':>6} {'iteration s':>12} {'vs full':>9}", flush=True)
    for case in args.cases.split(","):
        for gpus in (int(g) for g in args.gpus.split(",")):
            pairs, mode = case_sets(case, gpus // GPUS_PER_NODE)
            common = pairs + ["training.steps=10", f"cluster.nodes={gpus // GPUS_PER_NODE}",
                              f"cluster.gpus_per_node={GPUS_PER_NODE}"]
            runs = {}
            modes = [mode] + (["off"] if gpus <= args.full_up_to else [])
            for m in modes:
                cmd = overlapsim_args(args.bin, SCENARIO, "{out}", "ddp",
                                      common + [f"cluster.rank_classes={m}"])
                runs[m] = measure(cmd + ["--force"], args.timeout)
            for m, run in runs.items():
                if "row" not in run:
                    print(f"{case:<12} {gpus:>5} {m:<12} {run.get('error', '?')}", flush=True)
                    continue
                error = (f"{relative_error(run, runs['off']):>9.2e}"
                         if m != "off" and "row" in runs.get("off", {}) else "")
                print(f"{case:<12} {gpus:>5} {m:<12} {short_simulation(run['simulation']):<16} "
                      f"{run['wall']:>8.2f} {run['cpu']:>8.2f} {run['rss']:>6.0f} "
                      f"{run['row']['iteration_time_s']:>12.6f} {error}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
