#!/usr/bin/env python3
"""How close `overlapsim validate` predicts real runs on this machine: the calibrate -> predict ->
measure loop, repeated, on models the loop was not tuned to (issue 30.5), on loopback and (as root)
on an emulated link. Prints, per model, link and algorithm, the predicted and measured iteration
time (median over repeats), the error of the medians, the repeat spread (max - min over median,
measured), the error of forward + backward per step (`compute`: the same in every algorithm is the
machine's speed changing between the profile and the runs, not the model), the worst per-op median
error (forward, backward, optimizer, each collective counted
from its last member's start, copies, DiLoCo's outer step; ops run less than once in ten steps
are left out) and, per model
and link, the median |error| over the algorithms. With two repeats or more it also prints the floor
under the per-op target: how far each op's measured median moved from one validate to the next
(same build, scenario and link; (max - min) / median), per algorithm its median and widest, per
model and link the share of ops within 10% and how many ops' repeats were more than 11/9 apart
(no single price is within 10% of both), and over all rows the most ops that any model could put
within 10%. No price can come closer to a run than two runs of the same thing come to each other. Per model and link, with any number of repeats, the same floor
inside one run: each op's typical time over the first half of the measured steps against the
second half (comparison.json's `halves_spread`), the share within 10%, and how many ops' errors
are within 10% or within that noise. Issue 30's targets: every algorithm within 10%,
the median within 5%, per-op medians within 10%. Where the run's samples per step differ from
the prediction's (ACCO and DPU fit as many micro-batches as their communication leaves room
for), the row adds both and the throughput's error. Per model and link it also prints each repeat's
profiled interference shares (comm_interference, compute_interference, comm_stream_share, and
the reduce-scatter's and all-gather's measured apart), what a message paid against a moving
one (links' send_recv reverse_busy_s, where messages are sent) and how much the workers slowed
each other's memory-bound ops (the whole step and a copy's byte, at once over alone) and how far
apart their compute drifts (compute_jitter_sigma_1s, which the prediction draws its jitter with)
and how far apart the largest profiled all-reduce's members ended (end_spread_s).
Load-dependent: no pass/fail, numbers only.

    python3 bench/validate_accuracy.py [--repeats 3] [--workers 2] [--links loopback,100Mbit/s]
        [--models gpt-tiny,gpt-wide,mlp | --scenario FILE] [--algorithms a,b,...]
        [--cpu-bind cores|none] [--profile-time S] [--binary build/overlapsim] [--keep DIR]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ALGORITHMS = "ddp,acco,zero1,dpu,cdp-v2,diloco,fsdp"

# Models of other shapes than the shipped validate scenarios (which the loop was developed on):
# issue 30's gpt-tiny, a wider and shallower one with another vocabulary, and a deeper mlp.
CLUSTER = ("cluster: {nodes: 2, gpus_per_node: 1, gpu: {name: cpu, peak_tflops: 0.05, "
           "memory: 16GB, hbm_bandwidth: 10GB/s}, inter_node: ethernet-1g}\n")
TRAINING = ("training: {{micro_batch: {mb}, seq_len: {seq}, steps: 8, warmup_steps: 2, "
            "optimizer: adamw, learning_rate: 0.001}}\n")
MODELS = {
    "gpt-tiny": ("model: {preset: gpt-tiny, d_model: 192, n_layers: 4, n_heads: 4, vocab: 3000, "
                 "dtype: fp32}\n", TRAINING.format(mb=8, seq=128)),
    "gpt-wide": ("model: {preset: gpt-tiny, d_model: 320, n_layers: 2, n_heads: 5, vocab: 5000, "
                 "dtype: fp32}\n", TRAINING.format(mb=4, seq=96)),
    "mlp": ("model: {preset: mlp, width: 384, depth: 6, dtype: fp32}\n",
            TRAINING.format(mb=48, seq=1)),
}


# Periodic algorithms sync every H steps: H = 4 fits 2 periods in the 8 measured steps.
PERIODIC = {"diloco", "local-sgd", "streaming-diloco", "dreamddp", "plsgd-enp"}


def scenario_text(name, algorithms):
    model, training = MODELS[name]
    entries = [f"{{name: {a}, H: 4}}" if a in PERIODIC else a for a in algorithms.split(",")]
    return (f"name: bench-{name}\nseed: 1\n{CLUSTER}{model}{training}"
            f"algorithms: [{', '.join(entries)}]\n")


BINARY = os.path.join(ROOT, "build", "overlapsim")


def run(scenario, algorithms, workers, link, cpu_bind, profile_time, out):
    cmd = [BINARY, "validate", scenario, "--workers",
           str(workers), "--algorithms", algorithms, "--cpu-bind", cpu_bind, "--no-plots",
           "--no-progress", "--out", out]
    if profile_time is not None:
        cmd += ["--profile-time", str(profile_time)]
    if link != "loopback":
        cmd += ["--emulate-link", link]
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit(f"validate failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr[-2000:]}")
    with open(os.path.join(out, "comparison.json")) as f:
        doc = json.load(f)
    times = {r["algorithm"]: (r["predicted"], r["measured"]) for r in doc["rows"]
             if r["metric"] == "iteration_time_s"}
    # Forward + backward per step, predicted against measured: the same error in every algorithm
    # is the machine's speed changing between the profile and the runs, not the model.
    compute = {r["algorithm"]: r["relative_error"] for r in doc["rows"]
               if r["metric"] == "forward_backward_s" and r["relative_error"] is not None}
    # ACCO and DPU run as many micro-batches as fit beside their communication: where the run
    # fits more than predicted, its step is longer and its throughput what counts.
    samples = {r["algorithm"]: (r["predicted"], r["measured"]) for r in doc["rows"]
               if r["metric"] == "samples_per_step"}
    ops = {}
    kinds = {}  # (algorithm, op) -> the streams that run it: CDP steps optimizers on both
    for o in doc.get("ops", []):
        kinds.setdefault((o["algorithm"], o["op"]), set()).add(o["stream"])
    for o in doc.get("ops", []):
        p, m = o["predicted"], o["measured"]
        # Ops of every tenth step or more often: DiLoCo's outer step (H <= 10) counts, and so do
        # a forward and backward that the window's edge gave 15 of 16 steps; a warm-up's
        # leftover once in the window does not.
        if p and m and m["count_per_step"] >= 0.1 and m["median_s"] > 0:
            name = o["op"]
            if len(kinds[(o["algorithm"], name)]) > 1:
                name += f" ({o['stream']})"
            # The run's own noise on the op: its typical op over the window's first half of
            # steps against the second half's (None for a validate before it was written).
            ops.setdefault(o["algorithm"], []).append(
                (name, (p["median_s"] - m["median_s"]) / m["median_s"], m["median_s"],
                 m.get("halves_spread")))
    # The profile's interference shares, both ways (docs/MODEL.md).
    with open(os.path.join(out, "profile.json")) as f:
        profile = json.load(f)
    model = profile.get("model", {})
    by_op = model.get("interference_by_op", {})
    links = profile.get("links", {})
    # What a message paid when the other direction carried one (CDP's only; None elsewhere).
    reverse_busy = next((f.get("reverse_busy_s", 0.0) for key in ("inter_node_ops", "intra_node_ops")
                         for f in links.get(key, []) if f.get("op") == "send_recv"), None)
    interference = (model.get("comm_interference"), model.get("compute_interference"),
                    model.get("comm_stream_share"),
                    by_op.get("reduce_scatter", {}).get("comm_interference"),
                    by_op.get("reduce_scatter", {}).get("compute_interference"),
                    by_op.get("all_gather", {}).get("compute_interference"),
                    None if reverse_busy is None else 1e3 * reverse_busy)
    # Workers sharing the host's memory (docs/MODEL.md): the whole model's step and a copy's cost
    # per byte with every worker at once over one worker alone; None where not measured.
    together, alone = model.get("optimizer_points", []), model.get("optimizer_alone_points", [])
    copy = model.get("memory_ops", {}).get("copy", {})
    contention = (together[-1][1] / alone[-1][1] if together and alone and
                  together[-1][0] == alone[-1][0] else None,
                  copy["per_byte_s"] / copy["alone_per_byte_s"]
                  if copy.get("alone_per_byte_s") else None)
    # How far apart the workers' compute drifts (a one-second op's sigma; docs/MODEL.md, Jitter),
    # and how far apart the largest all-reduce's members ended (end_spread_s, ms; None before it
    # was measured): what desynchronises DDP's workers' steps after their bucket.
    link_points = (links.get("inter_node") or links.get("intra_node") or {}).get("points", [])
    largest = max(link_points, key=lambda q: q.get("bytes", 0), default={})
    spread = (model.get("compute_jitter_sigma_1s"),
              1e3 * largest["end_spread_s"] if "end_spread_s" in largest else None)
    return times, ops, compute, interference + contention + spread, samples


def main():
    global BINARY
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--links", default="loopback,100Mbit/s")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--scenario", help="a scenario file instead of the built-in models")
    ap.add_argument("--algorithms", default=ALGORITHMS)
    ap.add_argument("--cpu-bind", default="cores", choices=["cores", "none"])
    ap.add_argument("--profile-time", type=float, default=None,
                    help="validate's --profile-time (its default when left out)")
    ap.add_argument("--binary", default=BINARY,
                    help="the overlapsim to run (another build, e.g. the GPU machine's build-gpu)")
    ap.add_argument("--keep", help="keep every validate's outputs (traces, profile, comparison) "
                    "under DIR/<model>/<link>-<repeat> instead of a temporary folder")
    a = ap.parse_args()
    BINARY = os.path.abspath(a.binary)
    links = [l for l in a.links.split(",") if l == "loopback" or os.geteuid() == 0]
    models = [a.scenario] if a.scenario else a.models.split(",")
    load = os.getloadavg()[0]
    print(f"# validate accuracy: {a.workers} workers, {os.cpu_count()} cores, load {load:.2f}, "
          f"{a.repeats} repeats, cpu-bind {a.cpu_bind}, profile-time "
          f"{'default' if a.profile_time is None else a.profile_time}")
    print(f"{'model':<10} {'link':<11} {'algorithm':<9} {'predicted':>10} {'measured':>10} "
          f"{'error':>8} {'spread':>7} {'compute':>8}  worst op (typical)")
    # Over every model and link: per-op errors within 10% (each op's median over repeats), and
    # the ops whose measured medians were more than 11/9 apart between repeats of the same build
    # and scenario: no price is within 10% of both (|p - m| <= 0.1 m for m = lo and m = hi needs
    # 0.9 hi <= 1.1 lo), so the per-op target cannot be met on them by any model.
    total_ops = total_within = total_unreachable = 0
    for model in models:
        with tempfile.TemporaryDirectory() as scratch:
            tmp = os.path.join(a.keep, model.replace("/", "_")) if a.keep else scratch
            os.makedirs(tmp, exist_ok=True)
            if a.scenario:
                scenario, label = a.scenario, os.path.basename(a.scenario)[:10]
            else:
                scenario, label = os.path.join(tmp, f"{model}.yaml"), model
                with open(scenario, "w") as f:
                    f.write(scenario_text(model, a.algorithms))
            for link in links:
                runs = [run(scenario, a.algorithms, a.workers, link, a.cpu_bind, a.profile_time,
                            os.path.join(tmp, f"{link.replace('/', '_')}-{i}"))
                        for i in range(a.repeats)]
                errors, floors, op_errors_all = [], [], []
                unreachable = 0  # ops no single price can put within 10% of every repeat
                noisy_all = []  # (|error|, the run's own noise on the op), per op and repeat
                for algo in a.algorithms.split(","):
                    if any(algo not in times for times, *_ in runs):
                        print(f"{label:<10} {link:<11} {algo:<9} (no row)")
                        continue
                    pred = statistics.median(times[algo][0] for times, *_ in runs)
                    meas = [times[algo][1] for times, *_ in runs]
                    comp = [c[algo] for _, _, c, *_ in runs if algo in c]
                    comp_text = f"{100 * statistics.median(comp):+7.1f}%" if comp else "       -"
                    med = statistics.median(meas)
                    err = (pred - med) / med
                    errors.append(abs(err))
                    spread = (max(meas) - min(meas)) / med
                    per_op, op_measured = {}, {}
                    for _, ops, *_ in runs:
                        for op, e, m, noise in ops.get(algo, []):
                            per_op.setdefault(op, []).append(e)
                            op_measured.setdefault(op, []).append(m)
                            if noise is not None:
                                noisy_all.append((abs(e), noise))
                    worst = max(((abs(statistics.median(es)), op, statistics.median(es))
                                 for op, es in per_op.items()), default=None)
                    worst_text = f"{worst[1]} {100 * worst[2]:+.1f}%" if worst else "-"
                    op_errors = [statistics.median(es) for es in per_op.values()]
                    op_errors_all.extend(op_errors)
                    if op_errors:
                        worst_text += (f" ({sum(abs(e) <= 0.1 for e in op_errors)} of "
                                       f"{len(op_errors)} ops within 10%)")
                    # The floor under the per-op target: how far one op's measured median moves
                    # from one validate to the next (same build, same scenario) bounds how close
                    # any price can come.
                    op_spreads = [((max(ms) - min(ms)) / statistics.median(ms), op)
                                  for op, ms in op_measured.items() if len(ms) > 1]
                    if op_spreads:
                        widest = max(op_spreads)
                        worst_text += (f"; per-op repeat spread: median "
                                       f"{100 * statistics.median(s for s, _ in op_spreads):.1f}%"
                                       f", widest {widest[1]} {100 * widest[0]:.1f}%")
                        floors.extend(s for s, _ in op_spreads)
                    unreachable += sum(1 for ms in op_measured.values()
                                       if len(ms) > 1 and 0.9 * max(ms) > 1.1 * min(ms))
                    sampled = [r[4][algo] for r in runs if algo in r[4]]
                    if sampled and any(p != m for p, m in sampled):
                        p_med = statistics.median(p for p, _ in sampled)
                        m_med = statistics.median(m for _, m in sampled)
                        worst_text += (f"; samples/step {p_med:g}/{m_med:g}, throughput "
                                       f"{100 * ((p_med / pred) / (m_med / med) - 1):+.1f}%")
                    print(f"{label:<10} {link:<11} {algo:<9} {pred:10.4f} {med:10.4f} "
                          f"{100 * err:+7.1f}% {100 * spread:6.1f}% {comp_text}  {worst_text}")
                if errors:
                    print(f"{label:<10} {link:<11} median |error| "
                          f"{100 * statistics.median(errors):.1f}%")
                total_ops += len(op_errors_all)
                total_within += sum(abs(e) <= 0.1 for e in op_errors_all)
                total_unreachable += unreachable
                if op_errors_all:
                    print(f"{label:<10} {link:<11} per-op medians within 10%: "
                          f"{sum(abs(e) <= 0.1 for e in op_errors_all)} of {len(op_errors_all)} "
                          f"ops, median |error| "
                          f"{100 * statistics.median(abs(e) for e in op_errors_all):.1f}%")
                if noisy_all:
                    # Within one run: an op whose typical time moved more than 10% between the
                    # halves of its own window cannot be priced within 10% of that window.
                    print(f"{label:<10} {link:<11} per-op measured medians, half to half of a "
                          f"run: {100 * sum(n <= 0.1 for _, n in noisy_all) / len(noisy_all):.0f}%"
                          f" of {len(noisy_all)} ops within 10%, median "
                          f"{100 * statistics.median(n for _, n in noisy_all):.1f}%; ops within "
                          f"10% or within their run's own noise: "
                          f"{sum(e <= max(0.1, n) for e, n in noisy_all)} of {len(noisy_all)}")
                if floors:
                    print(f"{label:<10} {link:<11} per-op measured medians, repeat to repeat: "
                          f"{100 * sum(s <= 0.1 for s in floors) / len(floors):.0f}% of "
                          f"{len(floors)} ops within 10%, median spread "
                          f"{100 * statistics.median(floors):.1f}%; more than 11/9 apart (no "
                          f"price within 10% of every repeat): {unreachable} of "
                          f"{len(op_errors_all)} ops")

                def shares(k):
                    return "/".join("-" if r[3][k] is None else f"{r[3][k]:.2f}" for r in runs)
                print(f"{label:<10} {link:<11} profiled interference per repeat: compute slowed "
                      f"beside comm {shares(0)}, comm slowed beside compute {shares(1)}, "
                      f"comm stream's share {shares(2)}; reduce-scatters and all-gathers "
                      f"(measured apart): compute slowed {shares(3)}, reduce-scatter slowed "
                      f"{shares(4)}, all-gather slowed {shares(5)}; a message against a moving "
                      f"one +{shares(6)} ms; at once over alone: the whole step {shares(7)}, a "
                      f"copy's byte {shares(8)}; the workers' spread (sigma_1s) "
                      f"{'/'.join('-' if r[3][9] is None else f'{r[3][9]:.4f}' for r in runs)}"
                      f"; the largest all-reduce's ends apart {shares(10)} ms")
    if total_ops:
        print(f"# all rows: per-op medians within 10%: {total_within} of {total_ops} ops"
              + (f"; ops whose repeats were more than 11/9 apart, which no price can meet: "
                 f"{total_unreachable}, so at most {total_ops - total_unreachable} of {total_ops} "
                 f"could be within 10%" if a.repeats > 1 else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
