#!/usr/bin/env python3
"""Where CDP-v2's idle comes from on 1 x 8 GPUs, and whether the paper's algorithm needs it
(issue 66.5, docs/MODEL.md "Cyclic Data Parallelism").

    bench/cdp_v2_link_schedule.py                       # by hand: bytes, burst load, schedules
    bench/cdp_v2_link_schedule.py --trace out/trace-cdp-v2.json [--first-step 2]

Without --trace: the case of docs/MODEL.md (8 workers, 8 stages of 25M bf16 parameters = 50 MB a
stage sum, forward 5 ms and backward 10 ms a stage, one split-duplex link per GPU as
sim/platform.cpp builds a node) at 10, 12, 14 and 20 GB/s:
  - bytes each worker sends per step (lap one's partial sums, lap two's relays, algorithms/cdp.cpp);
  - the load of a ring link while lap two's relays pass it: the last worker completes a stage's
    sum a backward (B) apart and each is relayed as it arrives, a hop (h) a link, so at every
    worker they arrive B - h apart while lap one sends one partial a backward: h / (B - h) + h / B;
  - the late transfers of a fixed, idle-free compute timeline (stagger g between workers) when
    every link carries one transfer at a time (no sharing), taken in deadline order (edf) or in
    the order they became ready (fifo): 0 late means a schedule of the same messages without idle.
With --trace: every idle gap of each GPU's compute stream in the steps after --first-step, the
communication that ended when it did, the matching send (when, how long on the wire) and the
other transfers that shared the sender's egress or the receiver's ingress.
Prints numbers; exit status 0 (a benchmark, not a test).
"""

import argparse
import collections
import heapq
import json

N, F, B = 8, 5.0, 10.0  # workers = stages, forward and backward ms a stage
STAGE_BYTES = 25e6 * 2
COPY = 0.25  # ms: copy + accumulate of a 50 MB sum at 1 TB/s (the trace's 0.10 + 0.15)
UPDATE = 0.3  # ms: SGD update of a stage at 1 TB/s (the trace's optimizer step)


def route(j):
    """Lap two's chain for stage j: the last worker, then CDP-v2's boundary N-1-j, ring order."""
    start = (N - 1 - j) % (N - 1)
    return [N - 1] + [(start + k) % (N - 1) for k in range(N - 1)]


def bytes_per_step():
    sent = [0] * N
    for j in range(N):
        for i in range(N - 1):
            sent[i] += 1  # lap one: i -> i+1
        chain = route(j)
        for a in chain[:-1]:
            sent[a] += 1
    return [s * STAGE_BYTES for s in sent]


def late_transfers(h, g, policy, steps=6):
    """Transfers of steps 1..steps-2 that end after they are needed (ms late, count)."""
    P = N * (F + B)
    t0 = [g * i for i in range(N)]

    def fwd_start(i, s, j):
        return t0[i] + s * P + F * j

    def bwd_end(i, s, j):
        return t0[i] + s * P + N * F + B * (N - j)

    waiting, pending, arrive = [], [], {}
    for s in range(steps):
        for j in range(N):
            for i in range(N - 1):
                waiting.append(dict(src=i, dst=i + 1, base=bwd_end(i, s, j), delta=COPY,
                                    deps=[('p', s, j, i - 1)] if i else [],
                                    due=bwd_end(i + 1, s, j), key=('p', s, j, i)))
            chain = route(j)
            for k in range(len(chain) - 1):
                a, b = chain[k], chain[k + 1]
                fresh = j >= N - 1 - b
                waiting.append(dict(src=a, dst=b, base=0, delta=COPY if k == 0 else 0,
                                    deps=[('p', s, j, N - 2)] if k == 0 else [('c', s, j, chain[k - 1])],
                                    due=fwd_start(b, s + (1 if fresh else 2), j) - UPDATE,
                                    key=('c', s, j, a)))

    def release():
        for m in list(waiting):
            deps = [arrive.get(d) for d in m['deps']]
            if all(x is not None for x in deps):
                m['release'] = max([m['base']] + deps) + m['delta']
                waiting.remove(m)
                pending.append(m)

    out_free, in_free = [0.0] * N, [0.0] * N
    now, running, late = 0.0, [], []
    release()
    while pending or running or waiting:
        ready = [m for m in pending if m['release'] <= now + 1e-9 and out_free[m['src']] <= now + 1e-9
                 and in_free[m['dst']] <= now + 1e-9]
        if ready:
            m = min(ready, key=lambda m: m['due'] if policy == 'edf' else m['release'])
            pending.remove(m)
            out_free[m['src']] = in_free[m['dst']] = now + h
            heapq.heappush(running, (now + h, id(m), m))
            continue
        later = [x for x in [m['release'] for m in pending] + out_free + in_free if x > now + 1e-9]
        if running:
            later.append(running[0][0])
        if not later:
            break
        now = min(later)
        while running and running[0][0] <= now + 1e-9:
            end, _, m = heapq.heappop(running)
            arrive[m['key']] = end
            if end > m['due'] + 1e-6 and 1 <= m['key'][1] < steps - 1:
                late.append(end - m['due'])
        release()
    return len(late), max(late, default=0.0)


def by_hand():
    sent = bytes_per_step()
    print(f"bytes sent per step: " + ", ".join(f"gpu{i} {b / 1e6:.0f} MB" for i, b in enumerate(sent)))
    print(f"compute per step: {N * (F + B):.0f} ms; 2N time steps: {N} x {F:g} ms + {N} x {B:g} ms")
    staggers = [5.5, 6, 6.5, 7, 7.5, 8, 8.5, 9, 9.4]
    for gbs in (10, 12, 14, 20):
        h = STAGE_BYTES / (gbs * 1e9) * 1e3 + 0.02  # ms a hop (+ the trace's start cost)
        busiest = max(sent) / (gbs * 1e9) * 1e3
        burst = h / (B - h) + h / B if h < B else float('inf')
        print(f"\n{gbs} GB/s: a hop {h:.2f} ms; busiest link {busiest:.0f} ms of {N * (F + B):.0f} "
              f"a step ({busiest / (N * (F + B)):.0%}); load while lap two's sums pass: "
              f"{h:.2f}/{B - h:.2f} + {h:.2f}/{B:g} = {burst:.2f}")
        for policy in ('edf', 'fifo'):
            cells = []
            for g in staggers:
                n, worst = late_transfers(h, g, policy)
                cells.append(f"g={g:g}: {n}" + (f" (<= {worst:.2f} ms)" if n else ""))
            print(f"  late transfers, one per link, {policy}: " + "; ".join(cells))


def trace_gaps(path, first_step):
    d = json.load(open(path))
    ev = d['traceEvents'] if isinstance(d, dict) else d
    xs = [e for e in ev if e.get('ph') == 'X']
    ends = collections.defaultdict(dict)
    for e in ev:
        if e.get('ph') == 'i' and e['name'] == 'step_end':
            ends[e['pid']][e['args']['step']] = e['ts']
    comp, comm = collections.defaultdict(list), collections.defaultdict(list)
    for e in xs:
        (comp if e['tid'] == 0 else comm)[e['pid']].append(e)
    sends = {g: [e for e in comm[g] if e['name'].startswith('send')] for g in ends}
    last = max(max(s) for s in ends.values())

    def span(e):
        return f"[{e['ts'] / 1e3:.2f}, {(e['ts'] + e['dur']) / 1e3:.2f}]"

    for g in sorted(ends):
        lo, hi = ends[g][first_step - 1], ends[g][last]
        ops = sorted((e for e in comp[g] if lo - 1 <= e['ts'] < hi), key=lambda e: e['ts'])
        idle = 0.0
        for a, b in zip(ops, ops[1:]):
            gap = b['ts'] - (a['ts'] + a['dur'])
            if gap < 50:
                continue
            idle += gap
            print(f"gpu{g} idle {gap / 1e3:6.2f} ms before '{b['name']}' step {b['args'].get('step')} "
                  f"at {b['ts'] / 1e3:.2f} ms")
            for e in comm[g]:
                if abs(e['ts'] + e['dur'] - b['ts']) > 2:
                    continue
                print(f"    ended: '{e['name']}' step {e['args'].get('step')} {span(e)}")
                if not e['name'].startswith('recv'):
                    continue
                src = e['args']['peer']
                match = [s for s in sends.get(src, []) if s['name'] == 'send' + e['name'][4:]
                         and s['args']['step'] == e['args']['step'] and s['args']['peer'] == g]
                for s in match[:1]:
                    t0, t1 = s['ts'], s['ts'] + s['dur']
                    print(f"      sent by gpu{src} {span(s)}: {s['dur'] / 1e3:.2f} ms on the wire")
                    for o in sends[src]:
                        if o is not s and o['ts'] < t1 and o['ts'] + o['dur'] > t0:
                            print(f"        beside gpu{src}'s '{o['name']}' to gpu{o['args']['peer']} {span(o)}")
                    for h, lst in sends.items():
                        for o in lst:
                            if o is not s and o['args'].get('peer') == g and o['ts'] < t1 and o['ts'] + o['dur'] > t0:
                                print(f"        into gpu{g} beside '{o['name']}' from gpu{h} {span(o)}")
        print(f"gpu{g}: idle {idle / 1e3:.2f} ms in steps {first_step}..{last} ({idle / (hi - lo):.1%})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--trace', help='a trace-cdp-v2.json written by `overlapsim run --out`')
    ap.add_argument('--first-step', type=int, default=2)
    args = ap.parse_args()
    if args.trace:
        trace_gaps(args.trace, args.first_step)
    else:
        by_hand()


if __name__ == '__main__':
    main()
