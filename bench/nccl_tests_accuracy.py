#!/usr/bin/env python3
"""Simulated vs published nccl-tests bus bandwidth: all_reduce_perf, then every other collective.

For every all_reduce_perf table in tests/data/nccl-tests (each file's header says where it comes
from), runs `overlapsim collective` on a scenario of the same hardware (below) over the table's
sizes and prints published busbw, simulated busbw, their ratio and the algorithm/protocol chosen;
then the worst ratio in [1 MiB, 8 GiB] (target: within 20%) and below 1 MiB (target: within 2x).
The 1 MiB-8 GiB target is judged on steady rows: not dips (busbw below the next smaller size's) and
not rows whose out-of-place and in-place runs are more than 20% apart; the worst over every row is
printed too.

Then the other collectives the algorithms use (issue 66.3): all_gather_perf, reduce_scatter_perf,
alltoall_perf and sendrecv_perf tables (COLLECTIVE_TABLES), each against `overlapsim collective
--op OP`, with per table the median |busbw error| at 1 MiB and above and the share of those rows
within +-20%. None of their numbers was used to fit a constant; they are printed, not held to a
target (the exit status is the all-reduce targets'); CAUSES names why the large misses miss.

    python3 bench/nccl_tests_accuracy.py [--overlapsim build/overlapsim] [--only all_reduce|others]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data", "nccl-tests")

# The hardware of each table as a scenario's cluster, and whether issue 25's targets hold for it.
# EFA is no preset: its bandwidth is the instance's per-port line rate (the tree model takes 92% of
# it); its latency (tens of microseconds through libfabric) is what the tables' 8 B rows show.
TARGET = "target"  # DGX-A100/H100-class nodes, InfiniBand/RoCE jobs: within 1.2x / 2x
REFERENCE = "reference"  # printed, not held to the targets (why: EFA_NOTE)
# Unseen (issue 66): published tables of systems the presets were written for from hardware
# documents, before these tables were read; no constant was derived from them. Their rows at
# 1 MiB and above give the median |busbw error| and the share within +-20% (issue 66's targets:
# <= 10%, >= 85%), printed, not held: they measure the model, they do not gate it.
UNSEEN = "unseen"
HGX_H100_IB = ("{{nodes: {nodes}, gpus_per_node: 8, gpu: h100-sxm, intra_node: nvlink4, "
               "inter_node: {{bandwidth: 400Gb/s, latency: 3us}}, nics_per_node: 8}}")
# The 10-node H100 cluster of xxrjun/nccl-tests-cluster (h100-10x*-*.log) with g GPUs a node: the
# NICs a run uses are the GPUs' own, one 400 Gb/s NIC each (its 1-GPU all_gather/all_reduce rings
# peak at 48.7-48.9 GB/s busbw, one NIC's rate; 2 GPUs 98.3, 4 GPUs 196.7).
H100_10XG = ("{{nodes: 10, gpus_per_node: {g}, gpu: h100-sxm, intra_node: nvlink4, "
             "inter_node: {{bandwidth: 400Gb/s, latency: 3us}}, nics_per_node: {g}}}")
# Unseen as well, but added after issue 66's unseen set was first measured (2026-11-29, issue
# 66.3): summed apart so that set's summary stays comparable, then together with it.
UNSEEN_10X = "unseen-10x"
TABLES = {
    "oci-a100-sxm4-1x8.log": (
        TARGET, "{nodes: 1, gpus_per_node: 8, gpu: a100-40gb, intra_node: nvlink3}"),
    "azure-h200-1x8.log": (
        TARGET, "{nodes: 1, gpus_per_node: 8, gpu: h100-sxm, intra_node: nvlink4}"),
    "oci-h100-2x8-roce.log": (
        TARGET, "{nodes: 2, gpus_per_node: 8, gpu: h100-sxm, intra_node: nvlink4, "
        "inter_node: {bandwidth: 23GB/s, latency: 3us}, nics_per_node: 16}"),
    # HGX H100 with 8 x 400 Gb/s InfiniBand (ConnectX-7) per node, NCCL 2.26 (nccl-tests issue #309).
    "dell-xe9680-h100-2x8-ib.log": (TARGET, HGX_H100_IB.format(nodes=2)),
    "h100-4x8-ib-vms.log": (TARGET, HGX_H100_IB.format(nodes=4)),
    "h100-4x8-ib.log": (TARGET, HGX_H100_IB.format(nodes=4)),
    "h100-8x8-ib.log": (TARGET, HGX_H100_IB.format(nodes=8)),
    # Both with the latency aws-ofi-nccl reports to NCCL on p4d/p4de/p5 (src/platform-aws.cpp:
    # 75 us, which NCCL's tuner adds to each network hop, twice under Simple; docs/MODEL.md,
    # "Plugin latency"), as the efa-100g preset carries it, and the NCCL_BUFFSIZE of 8 MiB the
    # same file's platform_data_map sets on p4d, p4de and p5 (a Simple tree's chunk: 1 MiB).
    "aws-p5-h100-2x8-efa.log": (
        REFERENCE, "{nodes: 2, gpus_per_node: 8, gpu: h100-sxm, intra_node: nvlink4, "
        "inter_node: {bandwidth: 12.5GB/s, latency: 30us, plugin_latency: 75us, "
        "nccl_buffsize: 8MiB}, nics_per_node: 32}"),
    # aws-ofi-nccl sets NCCL_PROTO=simple on p4d/p4de (src/platform-aws.c, force_proto_simple):
    # EFA's SRD delivers out of order, which LL and LL128 cannot take.
    "aws-p4de-a100-2x8-efa.log": (
        REFERENCE, "{nodes: 2, gpus_per_node: 8, gpu: a100-80gb, intra_node: nvlink3, "
        "inter_node: {bandwidth: 12.5GB/s, latency: 74us, plugin_latency: 75us, "
        "nccl_buffsize: 8MiB}, nics_per_node: 4, nccl_protocol: Simple}"),
    # Presets only (hw/system_presets.cpp): what a user picks, nothing taken from the table, plus
    # what the run itself was configured with. The table is GCP's A3 High (a3-highgpu-8g, 4 x
    # 200 Gb/s GPUDirect-TCPX NICs), not A3 Mega: GoogleCloudPlatform/ai-infra-cluster-provisioning
    # published it on 2023-12-11 (461d3cb) in its TCPX README for "an A3 nodepool"; the A3 Mega
    # README of pull request #376 carried a copy until a129af9 removed it (the file's header). Its
    # values.yaml ran NCCL_ALGO=Ring and NCCL_PROTO=Simple (the preset's), so the ring.
    "gcp-a3-high-h100-2x8-tcpx.log": (
        UNSEEN, "{preset: gcp-a3-high, nodes: 2, collective_algorithm: ring}"),
    # GCP A3 Mega (a3-megagpu-8g, 8 x 200 Gb/s GPUDirect-TCPXO NICs) run with GCP's NCCL profile
    # and tuner plugin, whose config (a3plus_tuner_config.textproto) pins a 2-node all-reduce of 8
    # ranks a node to the tree under Simple at every size (the file's header): the tree.
    "gcp-a3-mega-h100-2x8-tcpxo.log": (
        UNSEEN, "{preset: gcp-a3-mega, nodes: 2, collective_algorithm: tree}"),
    "coreweave-gb200-nvl72-1x72.log": (UNSEEN, "{preset: gb200-nvl72, nodes: 1}"),
    "hpe-mi300x-1x8.log": (UNSEEN, "{preset: mi300x-8, nodes: 1}"),
    # 3 x 8 A100 40GB with 4 x 200 Gb/s HDR: the 2-node tree fix's kind of node (issue 66).
    "a100-3x8-4hdr.log": (
        UNSEEN, "{nodes: 3, gpus_per_node: 8, gpu: a100-40gb, intra_node: nvlink3, "
        "inter_node: ib-hdr, nics_per_node: 4}"),
    # The 10-node cluster's all_reduce_perf with 1, 2, 4 and 8 GPUs a node (one run, 2026-01-29).
    "h100-10x1-all_reduce.log": (UNSEEN_10X, H100_10XG.format(g=1)),
    "h100-10x2-all_reduce.log": (UNSEEN_10X, H100_10XG.format(g=2)),
    "h100-10x4-all_reduce.log": (UNSEEN_10X, H100_10XG.format(g=4)),
    "h100-10x8-all_reduce.log": (UNSEEN_10X, HGX_H100_IB.format(nodes=10)),
}

EFA_NOTE = """EFA tables are references, not targets: issue 25's targets name InfiniBand/RoCE. EFA runs
NCCL through the aws-ofi-nccl plugin over libfabric's SRD (out-of-order delivery, a plugin-side
rendezvous and copy per message), whose per-message costs NCCL's tuning model does not describe;
the latencies above are fits, each a whole network hop (NCCL's InfiniBand hop replaced): p5's
30 us is read off its 8 B row; p4de's 74 us straddles its small and mid sizes (its 8 B row alone
gives 27 us under Simple, which leaves 1 MiB-16 MiB up to 1.7x too fast). The bandwidths are the instances' line rates. Both carry
the 75 us aws-ofi-nccl reports to NCCL, which NCCL's tuner adds to each network hop (twice under
Simple) and picks by: on p5 the ring and tree under LL/LL128 rather than NVLSTree from 128 KiB to
32 MiB. p4de's Simple tree runs as its chunk pipeline with the platform's 8 MiB NCCL_BUFFSIZE
(1 MiB chunks): 0.65-0.94x at 4-32 MiB and 1.00-1.08x above, where it was 1.1-1.4x too fast;
its 74 us latency was fitted before that fill was modelled (its 1-2 MiB rows are now 0.82x).
p5's 16-256 MiB stay 1.2-1.33x; the plugin's source shows no per-message cost in series with the
data (its RDMA rendezvous overlaps NCCL's posted receives: docs/MODEL.md)."""

MIB = 1 << 20

# The other collectives (issue 66.3): file, nccl-tests op, `overlapsim collective --op`, cluster.
# Every table's header names its source; none of them is a fit's input.
H100_1X8 = "{nodes: 1, gpus_per_node: 8, gpu: h100-sxm, intra_node: nvlink4}"
A100_1X8 = "{nodes: 1, gpus_per_node: 8, gpu: a100-80gb, intra_node: nvlink3}"
COLLECTIVE_TABLES = [
    ("h100-1x8-all_gather.log", "all_gather", "all-gather", H100_1X8),
    ("h100-1x8-reduce_scatter.log", "reduce_scatter", "reduce-scatter", H100_1X8),
    ("h100-1x8-alltoall.log", "alltoall", "all-to-all", H100_1X8),
    ("h100-1x8-sendrecv.log", "sendrecv", "sendrecv", H100_1X8),
    ("a100-1x8-sendrecv.log", "sendrecv", "sendrecv", A100_1X8),
    # 10 x 8 H100: the network is assumed (the file's header says why): 8 x 400 Gb/s IB a node.
    ("h100-10x8-all_gather.log", "all_gather", "all-gather", HGX_H100_IB.format(nodes=10)),
    ("h100-10x8-reduce_scatter.log", "reduce_scatter", "reduce-scatter",
     HGX_H100_IB.format(nodes=10)),
    ("h100-10x8-alltoall.log", "alltoall", "all-to-all", HGX_H100_IB.format(nodes=10)),
    ("h100-10x8-sendrecv.log", "sendrecv", "sendrecv", HGX_H100_IB.format(nodes=10)),
]
# The 10 x 8 H100 cluster's later run with 1, 2 and 4 GPUs a node (H100_10XG): each table's header.
for _g in (1, 2, 4):
    for _op, _cli in (("all_gather", "all-gather"), ("reduce_scatter", "reduce-scatter"),
                      ("alltoall", "all-to-all"), ("sendrecv", "sendrecv")):
        COLLECTIVE_TABLES.append((f"h100-10x{_g}-{_op}.log", _op, _cli, H100_10XG.format(g=_g)))
# The same cluster's pairwise sweep (2 of its nodes, 1 and 8 GPUs a node; each file the median
# of the 45 node pairs): sendrecv with 2 and 16 ranks, where NCCL halves no peer's channels.
COLLECTIVE_TABLES.append(("h100-2x1-sendrecv.log", "sendrecv", "sendrecv",
                          H100_10XG.format(g=1).replace("nodes: 10", "nodes: 2")))
COLLECTIVE_TABLES.append(("h100-2x8-sendrecv.log", "sendrecv", "sendrecv",
                          HGX_H100_IB.format(nodes=2)))
# No broadcast_perf table of an H100/A100 system with a traceable source was found (issue 66.3;
# searched again 2026-11-29, twice: xxrjun/nccl-tests-cluster, whose tables are above, ran no
# broadcast_perf; the ones found are a 12 x V100-SXM3 run on a private NCCL build whose
# repository could not be traced, 2 x V100-PCIe over TCP sockets (nccl-tests issue #82), 2 x V100
# SXM2 at one size, and 2 x RTX 5090 over sockets, none a preset's hardware; scripts that would
# write H100/H200/B200 broadcast logs commit none): broadcast stays pinned by its busbw
# convention only (tests/collective_price_test.cpp).

CAUSES = """Why the large misses miss (the simulator is not tuned to these tables):
- sendrecv across 10 nodes (10 x 1, 2, 4: 1.07-1.12x; 10 x 8: 0.92x): a communicator's p2p
  channels are its collective channels rounded up to a power of two (paths.cc,
  ncclTopoComputeP2pChannels), 4, 8, 16 and 16 here (the ring search's one channel a NIC the
  node's GPUs use, doubled twice: search.cc, connect.cc), and a peer across nodes keeps
  max(1 NIC, ceil(50 / 14)) = 4 of them only while 4 x ceil(ranks / 8) fits: 10, 20, 40 ranks
  halve it to 2, 80 ranks to 1 (comm/nccl_p2p.h). So 28, 28, 28, 14 GB/s at NCCL's 14 GB/s a
  channel, against 24.9, 25.2, 26.3, 15.2 published: a channel moves 12.5-15.2 GB/s there. The
  same nodes two at a time (h100-2x{1,8}) halve nothing: 4 channels, the NIC's 50 GB/s against
  39.6 and 43.0 (1.16-1.26x: the NIC's rate is its line rate; nccl-tests reaches 92-98% of it).
- sendrecv on 8 x A100: 128 MiB 1.4x (8 channels of one NVLink's 20 GB/s each against 111 GB/s
  measured; the table's NCCL version is not stated); 256 MiB-1 GiB 1.2x: the nvlink3 preset's
  bandwidth is NCCL's collective rate (234 GB/s), NCCL's p2p reaches 195 GB/s.
- all-to-all (8 x H100 1.24x at 32 MiB down to 1.03x; 10 x 8 1.53x at 32 MiB, 1.08-1.13x from
  128 MiB): NCCL's grouped sends (comm/nccl_alltoall.h) are link-bound at these sizes (one node:
  7 peers x 4 channels of 20.6 GB/s above the NVLink's 360; across nodes: the GPU's one NIC), so
  what the tables add at mid sizes (~40 us on one node, ~350 us across 10 nodes) is no cost of
  NCCL's p2p model; across nodes the plateau is 46 GB/s a NIC (92% of 400 Gb/s).
- all-gather and reduce-scatter across 10 nodes: 32-512 MiB 1.3x-2.3x too fast: their 80-rank
  rings take ~7 us a step in the table (667 us at 32 MiB over 79 steps) where NCCL's tuner
  latencies for a multi-node ring count 1.9 us an NVLink step (LL128); the one-node fit (5 us)
  would bring them to 1.30x but the unseen 3 x 8 A100 all-reduce to 0.67x (docs/MODEL.md);
  1-16 GiB 1.1x, where the table tops at 324 GB/s and the model at the NVLink's 360 less
  NCCL's protocol cost. The same nodes with 1, 2 and 4 GPUs (10 x 1/2/4 tables) are within
  1.6-3.5%: the 8-GPU run's ~5 us a step more is no cost every multi-node ring pays (on
  10 x 4, 40 ranks, it would give 0.78x at 32 MiB)."""


def published(path):
    rows = []
    with open(path) as f:
        for line in f:
            w = line.split()
            if not w or w[0].startswith("#"):
                continue
            # size, busbw (GB/s): the better of nccl-tests' two runs of the size (out-of-place and
            # in-place move the same bytes; a one-off stall in either shows as a dip), and the
            # ratio of the two runs' times
            out_place, in_place = float(w[7]), float(w[11])
            spread = max(out_place, in_place) / min(out_place, in_place) if min(
                out_place, in_place) > 0 else 1.0
            rows.append((float(w[0]), max(out_place, in_place), spread))
    return rows


def simulate(binary, cluster, lo, hi, op="all-reduce", sizes=()):
    """Rows by size: the doubling range lo:hi, plus each of `sizes` off it (a table in linear
    steps) run on its own."""
    rows = simulate_range(binary, cluster, f"{int(lo)}:{int(hi)}", op)
    for size in sizes:
        if size not in rows:
            rows.update(simulate_range(binary, cluster, f"{int(size)}", op))
    return rows


def simulate_range(binary, cluster, size_arg, op="all-reduce"):
    scenario = (f"name: nccl-tests-bench\ncluster: {cluster}\nmodel: {{preset: gpt-neo-125m}}\n"
                "training: {micro_batch: 1, seq_len: 128, steps: 1}\nalgorithms: [ddp]\n")
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(scenario)
    try:
        out = subprocess.run([binary, "collective", f.name, "--op", op, "--size",
                              size_arg, "--json"], check=True,
                             capture_output=True, text=True).stdout
    finally:
        os.unlink(f.name)
    rows = json.loads(out)
    return {row["size_bytes"]: row for row in (rows if isinstance(rows, list) else [rows])}


def nearest(sim, size):
    """The simulated row of `size`: nccl-tests rounds a size to a multiple of the ranks (80 ranks:
    134216960 B where the doubling from 33553920 B gives 134215680 B), busbw does not notice."""
    best = min(sim, key=lambda s: abs(s - size))
    if abs(best - size) > 1e-3 * size:
        raise SystemExit(f"no simulated size near {size:.0f} B")
    return sim[best]


def median(values):
    v = sorted(values)
    n = len(v)
    return (v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2) if n else float("nan")


def other_collectives(binary):
    """Prints every COLLECTIVE_TABLES row against the simulator and a summary per table."""
    summary = []
    for name, op, cli_op, cluster in COLLECTIVE_TABLES:
        rows = [r for r in published(os.path.join(DATA, name)) if r[1] > 0]
        sim = simulate(binary, cluster, rows[0][0], rows[-1][0] * 1.001, cli_op)
        print(f"== {name} ({op}_perf vs --op {cli_op})\n{'size':>12} {'published':>10} "
              f"{'simulated':>10} {'ratio':>6}  chosen")
        errors = []
        for size, busbw, spread in rows:
            t = nearest(sim, size)
            ratio = t["busbw_Bps"] / 1e9 / busbw
            if size >= MIB:
                errors.append(abs(ratio - 1))
            print(f"{size:12.0f} {busbw:10.2f} {t['busbw_Bps'] / 1e9:10.2f} {ratio:6.2f}  "
                  f"{t['algorithm']}"
                  f"{'  (unsteady: runs %.2fx apart)' % spread if spread > 1.2 else ''}")
        within = sum(e <= 0.2 for e in errors)
        summary.append((name, op, median(errors), within, len(errors)))
    print("\nper table, rows at 1 MiB and above (error = simulated / published busbw - 1):")
    print(f"{'table':30} {'op':15} {'median |error|':>15} {'within +-20%':>14}")
    for name, op, med, within, n in summary:
        print(f"{name:30} {op:15} {100 * med:14.1f}% {within:>6} of {n:<3} "
              f"({100 * within / max(n, 1):.0f}%)")
    print(f"median over the tables' medians: {100 * median([m for _, _, m, _, _ in summary]):.1f}%")
    print("\n" + CAUSES)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--overlapsim", default=os.path.join(ROOT, "build", "overlapsim"))
    ap.add_argument("--only", choices=["all_reduce", "others"],
                    help="run only the all-reduce tables or only the other collectives")
    args = ap.parse_args()
    if args.only == "others":
        other_collectives(args.overlapsim)
        return 0
    summary = []
    unseen_big, unseen_small = [], []  # |ratio - 1| at >= 1 MiB; ratio below 1 MiB
    seen_big = []  # |ratio - 1| at >= 1 MiB of the tables the constants were written against
    unseen_10x_big = []  # the same, of the 10-node cluster's all-reduce tables
    for name, (kind, cluster) in TABLES.items():
        rows = [r for r in published(os.path.join(DATA, name)) if r[1] > 0]
        unsteady_rows = 0
        sim = simulate(args.overlapsim, cluster, rows[0][0], rows[-1][0],
                       sizes=[r[0] for r in rows])
        print(f"== {name} ({kind})\n{'size':>12} {'published':>10} {'simulated':>10} {'ratio':>6}"
              "  chosen")
        big, small, smooth = (1.0, "-"), (1.0, "-"), (1.0, "-")
        for i, (size, busbw, spread) in enumerate(rows):
            t = sim[size]
            ratio = t["busbw_Bps"] / 1e9 / busbw
            off = max(ratio, 1 / ratio)
            # A dip: busbw below the next smaller size's in both of nccl-tests' runs (a bigger
            # message never moves slower on a quiet fabric; the table caught a disturbance).
            dip = i > 0 and busbw < rows[i - 1][1]
            # Unsteady: the table's own two runs of the size differ by more than the target's 20%
            # (the first sizes of a run that starts at 1 MiB: 317 against 93 us on 4 x 8).
            unsteady = spread > 1.2
            if kind not in (UNSEEN, UNSEEN_10X) and size >= MIB:
                seen_big.append(abs(ratio - 1))
            if kind == UNSEEN_10X and size >= MIB:
                unseen_10x_big.append(abs(ratio - 1))
            if kind == UNSEEN:
                if size >= MIB:
                    unseen_big.append(abs(ratio - 1))
                elif busbw >= 0.05:
                    unseen_small.append(off)
            if MIB <= size <= 8 * 1024 * MIB:
                big = max(big, (off, f"{size:.0f} B"))
                unsteady_rows += unsteady
                if not dip and not unsteady:
                    smooth = max(smooth, (off, f"{size:.0f} B"))
            elif size < MIB and busbw >= 0.05:  # two printed digits at least
                small = max(small, (off, f"{size:.0f} B"))
            print(f"{size:12.0f} {busbw:10.2f} {t['busbw_Bps'] / 1e9:10.2f} {ratio:6.2f}  "
                  f"{t['algorithm']}{'  (dip)' if dip else ''}"
                  f"{'  (unsteady: runs %.2fx apart)' % spread if unsteady else ''}")
        summary.append((name, kind, big, small, smooth))
    print("\nworst ratio (simulated vs published busbw, either way) per table:")
    print(f"{'table':28} {'kind':9} {'1 MiB-8 GiB (<=1.2)':>26} {'below 1 MiB (<=2)':>24}  met"
          f"  {'1 MiB-8 GiB, steady rows':>26}")
    ok = True
    for name, kind, big, small, smooth in summary:
        # Judged on the steady rows: a row whose own two runs are more than 20% apart cannot
        # hold a model to 20% (the strict column stays printed).
        met = smooth[0] <= 1.2 and small[0] <= 2
        if kind == TARGET:
            ok = ok and met
        print(f"{name:28} {kind:9} {'x%.2f at %s' % big:>26} {'x%.2f at %s' % small:>24}  "
              f"{'yes' if met else 'no ':3}  {'x%.2f at %s' % smooth:>26}")
    if seen_big:
        within = sum(e <= 0.2 for e in seen_big)
        print(f"\nseen tables (target and reference), rows >= 1 MiB: median |busbw error| "
              f"{median(seen_big) * 100:.1f}%, {within} of {len(seen_big)} within +-20%")
    if unseen_big:
        errors = sorted(unseen_big)
        within = sum(e <= 0.2 for e in errors)
        print(f"\nunseen tables, rows >= 1 MiB: median |busbw error| {median(errors) * 100:.1f}% "
              "(target "
              f"<= 10%), {within} of {len(errors)} within +-20% ({within / len(errors) * 100:.0f}%, "
              "target >= 85%)")
        if unseen_small:
            print(f"unseen tables, rows < 1 MiB: {sum(o <= 2 for o in unseen_small)} of "
                  f"{len(unseen_small)} within 2x")
    for label, errors in (("10-node H100 cluster (unseen-10x)", unseen_10x_big),
                          ("unseen and unseen-10x together", unseen_big + unseen_10x_big)):
        if errors:
            within = sum(e <= 0.2 for e in errors)
            print(f"{label}, rows >= 1 MiB: median |busbw error| {median(errors) * 100:.1f}%, "
                  f"{within} of {len(errors)} within +-20% ({within / len(errors) * 100:.0f}%)")
    print("\n" + EFA_NOTE)
    print(f"\ntargets: {'all met' if ok else 'NOT all met'}")
    if args.only is None:
        print()
        other_collectives(args.overlapsim)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
