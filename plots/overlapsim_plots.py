#!/usr/bin/env python3
"""Draw the plots of an overlapsim output directory.

    /usr/bin/python3 plots/overlapsim_plots.py DIR [--only timeline,speedup,...]

Reads DIR/summary.json and DIR/trace-*.json and writes PNGs into DIR, each atomically. Every plot is
drawn on its own: one that fails says so in one line and the others are still drawn. Exit status: 0
when every plot was drawn, 1 when one failed (a full disk, an unwritable directory) or summary.json is
missing, unreadable or malformed (one line naming the file, the key and what was expected, never a
traceback). Null metrics are NaN (overlapsim writes NaN so): no bar or point is drawn for them. A
damaged trace is a warning and its timeline is skipped. SIGINT and SIGTERM stop it at once,
silently: the overlapsim command that runs it reports the interruption.
"""
import argparse
import glob
import gzip
import json
import math
import os
import re
import signal
import sys
import tempfile

# Interrupted, die of the signal without Python's traceback (issue 26.7): the caller sees it.
signal.signal(signal.SIGINT, signal.SIG_DFL)
signal.signal(signal.SIGTERM, signal.SIG_DFL)

import matplotlib

matplotlib.use("Agg")
import matplotlib.lines  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

DPI = 110
CATEGORY_COLOURS = {
    "forward": "#4C72B0",
    "backward": "#55A868",
    "optimizer": "#C44E52",
    "comm": "#DD8452",
    "compress": "#8172B3",
    "idle": "#DDDDDD",
    "copy": "#937860",
    # Not a trace category: the part of a comm event before its last peer arrived (`waiting_us`).
    "waiting": "#E377C2",
}
CATEGORY_LABELS = {"waiting": "waiting for peers"}
# Every algorithm's colour comes from its descriptor (algorithms/<name>.cpp), through the summary
# rows' "colour" (issue 28.1: one place); labels without one (ddp-paper, a second entry of an
# algorithm, a summary written before colours) take the spare colours below in order of first
# use, none of them an algorithm's (plots_selftest checks against `overlapsim algorithms`), so
# nothing is drawn in DDP's colour (issue 27.9).
SUMMARY_COLOURS = {}
# Every pair of these and the algorithms' colours is at least CIEDE2000 12 apart (issue 62.9:
# local-sgd and flexdemo were 4.7 apart; test_plots.py checks it).
PALETTE = ["#E7298A", "#003F5C", "#A65628", "#BBBBFF", "#AA00CC", "#00DDCC", "#664400",
           "#FF00FF", "#990011", "#005500", "#998800"]
MEMORY_PARTS = ["params", "grads", "optimizer_state", "buffers", "activations"]
MEMORY_COLOURS = ["#4C72B0", "#55A868", "#C44E52", "#DD8452", "#8172B3"]
MAX_TIMELINE_GPUS = 64


def algorithm_colour(name, _extra={}):
    """The row's own colour; other labels get the next spare colour, deterministically."""
    if name in SUMMARY_COLOURS:
        return SUMMARY_COLOURS[name]
    if name not in _extra:
        _extra[name] = PALETTE[len(_extra) % len(PALETTE)]
    return _extra[name]


class PlotError(Exception):
    """A plot that could not be written: one line, naming the file and the cause."""


def save(fig, path):
    """Writes the figure to a temporary file beside `path`, then renames it into place."""
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".", suffix=".png.tmp")
        os.close(fd)
        fig.savefig(tmp, dpi=DPI, format="png")
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError as e:
        raise PlotError(f"{path}: cannot write: {e.strerror or e}") from None
    finally:
        plt.close(fig)
        if tmp and os.path.exists(tmp):
            os.remove(tmp)


def load_trace(path):
    """Per trace: events by (pid, row), row 0 compute and 1 comm; process names, step ends, memory
    counters. A stream's ops that overlap sit on tracks of their own ("comm 2", ...; see
    docs/SCENARIO.md): each joins its stream's row, found by the thread's name (tid 0 compute and
    1 comm without one)."""
    # output.trace_gzip writes trace-*.json.gz
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        doc = json.load(f)
    t = {"events": {}, "names": {}, "steps": [], "memory": {}, "title": "", "micro_batches": {}}
    t["title"] = doc.get("otherData", {}).get("title", "")
    t["measured"] = bool(doc.get("otherData", {}).get("measured", False))
    tracks, thread_names = {}, {}
    for e in doc["traceEvents"]:
        ph = e.get("ph")
        if ph == "X":
            # (start, duration, category, time waiting for peers from the start), in ms
            dur = e["dur"] / 1000.0
            wait = min(dur, e.get("args", {}).get("waiting_us", 0) / 1000.0)
            tracks.setdefault((e["pid"], e.get("tid", 0)), []).append(
                (e["ts"] / 1000.0, dur, e.get("cat", ""), wait))
            # A compute op's micro-batch, written on its bar (pipeline schedules, issue 65.7).
            mb = e.get("args", {}).get("micro_batch", -1)
            if mb >= 0 and e.get("cat") in ("forward", "backward"):
                t["micro_batches"].setdefault(e["pid"], []).append((e["ts"] / 1000.0, dur, mb))
        elif ph == "M" and e.get("name") == "process_name":
            t["names"][e["pid"]] = e["args"]["name"]
        elif ph == "M" and e.get("name") == "thread_name":
            thread_names[(e["pid"], e.get("tid", 0))] = str(e["args"]["name"])
        elif ph == "i" and e.get("name") == "step_end":
            t["steps"].append((e["ts"] / 1000.0, e["pid"], e["args"].get("step", 0)))
        elif ph == "C" and e.get("name") == "memory":
            t["memory"].setdefault(e["pid"], []).append((e["ts"] / 1000.0, e["args"]["bytes"]))
    for (pid, tid), events in sorted(tracks.items()):
        name = thread_names.get((pid, tid), "")
        row = 0 if name.startswith("compute") else 1 if name.startswith("comm") else tid
        t["events"].setdefault((pid, row), []).extend(events)
    return t


def steady_window(row, trace, steps_shown=3):
    """A window of a few steady-state steps, in ms."""
    ss = row.get("steady_state") if row else None
    if ss and ss.get("steps"):
        start = ss["start_s"] * 1000.0
        step = (ss["end_s"] - ss["start_s"]) * 1000.0 / ss["steps"]
        return start, start + step * min(steps_shown, ss["steps"])
    ends = [e[0] + e[1] for evs in trace["events"].values() for e in evs]
    end = max(ends) if ends else 1.0
    return end * 2 / 3, end


def timeline_window(row, trace):
    """The timeline's window, in ms: a few steady-state steps or, where the longest communication
    op that starts in the steady state ends after them (DiLoCo's 31.85 s outer sync against 5.2 s
    of steps), from the same start to that op's end and 5% of it more: the steps up to the sync
    and the sync whole (issue 62.9: it was cut)."""
    lo, hi = steady_window(row, trace)
    ops = [(start, dur) for (_, tid), evs in trace["events"].items() if tid == 1
           for start, dur, cat, _ in evs if cat == "comm" and start >= lo]
    if not ops:
        return lo, hi
    start, dur = max(ops, key=lambda op: (op[1], -op[0]))
    if start + dur <= hi:
        return lo, hi
    return lo, start + 1.05 * dur


def universe_of(trace, row):
    """The job's GPUs, by index: all of the row's workers where the trace holds some of them only
    (rank classes, output.trace_gpus), else the trace's."""
    total = (row or {}).get("workers") or 0
    return range(total) if total > len(trace["names"]) else sorted(trace["names"])


def stage_of(name):
    """The pipeline stage in a GPU's name ("node 0 gpu 3 (stage 1, tp 0, dp 0)"), or None."""
    m = re.search(r"\(stage (\d+)\b", name or "")
    return int(m.group(1)) if m else None


def pick_gpus(trace, limit):
    """All GPUs up to `limit`; beyond, the first and last few and the compute outliers. A pipeline
    of more GPUs than `limit` whose stages fit: one GPU per stage, the first of each (issue 65.7:
    a row per stage)."""
    pids = sorted(trace["names"]) or sorted({p for p, _ in trace["events"]})
    if len(pids) <= limit:
        return pids, False
    firsts = {}
    for p in pids:
        stage = stage_of(trace["names"].get(p))
        if stage is not None:
            firsts.setdefault(stage, p)
    if 1 < len(firsts) <= limit:
        return sorted(firsts.values()), True
    busy = {p: sum(e[1] for e in trace["events"].get((p, 0), [])) for p in pids}
    mean = sum(busy.values()) / len(busy)
    chosen = []
    for p in sorted(pids, key=lambda q: -abs(busy[q] - mean))[:max(1, limit // 4)]:
        chosen.append(p)  # the GPUs whose compute time stands out (stragglers) first
    for p in pids[:limit] + pids[::-1]:  # then the first ones and the last ones
        if len(chosen) >= limit:
            break
        if p not in chosen and (len(chosen) < limit // 2 + limit // 4 or p in pids[-limit:]):
            chosen.append(p)
    return sorted(chosen[:limit]), True


MAX_MICRO_BATCH_LABELS = 600  # per figure: beyond, the numbers are too small to read anyway


def label_micro_batches(ax, spans, y, window, budget):
    """Writes each compute op's micro-batch number on its bar where the bar is wide enough (1.2% of
    the window); returns how many it wrote."""
    lo, hi = window
    wide = 0.012 * (hi - lo)
    written = 0
    for start, dur, mb in spans:
        if written >= budget:
            break
        if dur >= wide and start >= lo and start + dur <= hi:
            ax.text(start - lo + dur / 2, y, str(mb), ha="center", va="center", fontsize=6,
                    color="white", clip_on=True)
            written += 1
    return written


def bars(events):
    """(start, duration, category) bars of events: a comm event that waited for its peers becomes a
    "waiting" bar then a comm bar, so a straggler does not read as a slow network."""
    for start, dur, cat, wait in events:
        if wait > 0:
            yield start, wait, "waiting"
        if dur > wait or wait <= 0:
            yield start + wait, dur - wait, cat


def hidden_between(shown, universe):
    """The gaps around the shown GPUs (sorted), before the first, between two, after the last: for
    each, its place (the index in `shown` of the GPU after it) and how many of `universe` it
    hides."""
    bounds = [None] + list(shown) + [None]
    gaps = []
    for k in range(len(bounds) - 1):
        lo, hi = bounds[k], bounds[k + 1]
        n = sum(1 for p in universe if (lo is None or p > lo) and (hi is None or p < hi))
        if n:
            gaps.append((k, n))
    return gaps


GAP_ROWS = 1.0  # height of a "GPUs not shown" marker, in rows


def draw_gantt(ax, trace, gpus, window, universe=None, fontsize=8):
    """Two rows per GPU, compute above comm, the pair labelled once with the GPU's name; a dashed
    line and "... k GPUs not shown" where `universe` (default: the trace's GPUs) has GPUs between
    or around the shown ones. Returns the categories drawn."""
    lo, hi = window
    gaps = dict(hidden_between(gpus, sorted(trace["names"]) if universe is None else universe))
    ticks, labels, drawn = [], [], set()
    budget = MAX_MICRO_BATCH_LABELS
    y = 0.0
    for k, pid in enumerate(list(gpus) + [None]):
        if k in gaps:
            mid = y - 0.5 + GAP_ROWS / 2
            ax.axhline(mid, color="#888888", linestyle=(0, (4, 3)), linewidth=0.9)
            ticks.append(mid)
            labels.append(f"\u2026 {gaps[k]} GPU{'s' if gaps[k] > 1 else ''} not shown")
            y += GAP_ROWS
        if pid is None:
            break
        for tid in (0, 1):  # compute, comm
            spans = {}
            for start, dur, cat in bars(trace["events"].get((pid, tid), [])):
                if start + dur >= lo and start <= hi:
                    spans.setdefault(cat, []).append((start - lo, dur))
            for cat, cat_spans in spans.items():
                # Edges in the bar's own colour: white edges between back-to-back ops (FSDP's
                # per-layer gathers) read as pale bands that no legend entry explained (issue
                # 62.9), and on small ops (DDP's buckets) they were all that showed (27.9).
                colour = CATEGORY_COLOURS.get(cat, "#999999")
                ax.broken_barh(cat_spans, (y + tid - 0.4, 0.8), facecolors=colour,
                               edgecolor=colour, linewidth=0.4, antialiased=False, label=cat)
            drawn |= set(spans)
        budget -= label_micro_batches(ax, trace.get("micro_batches", {}).get(pid, []), y, window,
                                      budget)
        ticks.append(y + 0.5)  # centred on the GPU's compute and comm rows
        labels.append(str(trace["names"].get(pid, f"gpu {pid}")))
        y += 2
    ax.set_xlim(0, hi - lo)
    ax.set_ylim(-0.6, y - 0.4)
    ax.invert_yaxis()
    ax.set_yticks(ticks)
    ax.set_yticklabels(labels, fontsize=fontsize)
    for tick in ax.get_yticklabels():
        if tick.get_text().startswith("\u2026"):
            tick.set_color("#666666")
            tick.set_fontstyle("italic")
    ax.grid(axis="x", color="#EEEEEE")
    ax.set_axisbelow(True)  # grid lines over the bars read as pale bands (issue 62.9)
    return drawn


LEGEND_PAD = 22  # points between the axes and their title, where category_legend() goes


def category_legend(ax, categories):
    """One row just above the axes, under a title set with pad=LEGEND_PAD: a legend inside the axes
    covered bars."""
    handles = [Patch(color=CATEGORY_COLOURS[c], label=CATEGORY_LABELS.get(c, c))
               for c in CATEGORY_COLOURS if c in categories]
    ax.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, 1.0), fontsize=8,
              ncol=max(1, len(handles)), frameon=False, borderaxespad=0.3)


def source_of(trace, row=None, name=""):
    """"measured" for validate's real runs, "predicted" for simulations."""
    measured = trace.get("measured") or (row or {}).get("measured") or name.endswith("-measured")
    return "measured" if measured else "predicted"


def sources(measured):
    """What a plot of runs shows, from whether each was measured: "predicted", "measured" or
    both."""
    return " and ".join(sorted({"measured" if m else "predicted" for m in measured},
                               reverse=True)) or "predicted"


def sources_of(rows):
    return sources(r.get("measured") for r in rows)


def bar_names(results):
    """The algorithm of each row; where validate's summary mixes measured and predicted rows of one
    algorithm, each says which it is (one name twice put both bars on one spot)."""
    if " and " not in sources_of(results):
        return [r["algorithm"] for r in results]
    return [f"{r['algorithm']}\n({'measured' if r.get('measured') else 'predicted'})"
            for r in results]


def plot_timeline(out, name, row, trace, scenario):
    gpus, _ = pick_gpus(trace, MAX_TIMELINE_GPUS)
    # A trace of output.trace_gpus holds some GPUs only: the row says how many there were.
    universe = universe_of(trace, row)
    gaps = hidden_between(gpus, universe)
    window = timeline_window(row, trace)
    # Rows of about 11 pt even at 64 GPUs, so that every GPU's label stays legible.
    rows = 2 * len(gpus) + GAP_ROWS * len(gaps)
    fig, ax = plt.subplots(figsize=(13, min(26, max(3.5, 1.8 + 0.16 * rows))))
    drawn = draw_gantt(ax, trace, gpus, window, universe, fontsize=7 if len(gpus) > 16 else 8)
    category_legend(ax, drawn)
    note = f" ({len(gpus)} of {len(universe)} GPUs shown)" if gaps else ""
    algorithm = name[:-len("-measured")] if name.endswith("-measured") else name
    ax.set_title(f"{scenario}: {algorithm} timeline, {source_of(trace, row, name)}, steady state"
                 f"{note}", pad=LEGEND_PAD)
    ax.set_xlabel(f"time since {window[0]:.1f} ms (ms)")
    ax.set_ylabel("GPU\ncompute stream (upper row), comm (lower)", fontsize=9)
    fig.tight_layout()
    save(fig, os.path.join(out, f"timeline-{name}.png"))


def plot_timeline_compare(out, rows, traces, scenario):
    # In the scenario's order (the summary's rows), not the trace files' alphabetical one.
    names = [n for n in rows if n in traces] + [n for n in traces if n not in rows]
    if not names:
        return
    # Each panel shows its own steady-state steps on its own time axis: one slow algorithm no
    # longer squashes the others into a sliver (issue 27.9); the axis labels say each one's scale.
    fig, axes = plt.subplots(len(names), 1, figsize=(13, 1.6 + 2.6 * len(names)), squeeze=False)
    cats = set()
    for ax, n in zip(axes[:, 0], names):
        gpus, _ = pick_gpus(traces[n], 4)
        lo, hi = timeline_window(rows.get(n), traces[n])
        # The job's GPUs, not only the traced ones: 4 of 8 traced GPUs of a 32-GPU job hide 28
        # (issue 62.9: "4 GPUs not shown").
        cats |= draw_gantt(ax, traces[n], gpus, (lo, hi), universe_of(traces[n], rows.get(n)),
                           fontsize=7)
        ax.set_ylabel(n, rotation=0, ha="right", va="center", fontsize=10, color=algorithm_colour(n))
        ax.set_xlabel(f"{n}: ms since its steady-state window opened "
                      f"({format_time((hi - lo) / 1000)} shown)",
                      fontsize=8)
    category_legend(axes[0, 0], cats)
    source = sources(source_of(traces[n], rows.get(n), n) == "measured" for n in names)
    axes[0, 0].set_title(f"{scenario}: {source} timelines, each over its own steady-state steps "
                         f"(time axes differ)\n(up to 4 GPUs each: compute stream in the upper row, "
                         f"comm in the lower)", pad=LEGEND_PAD)
    fig.tight_layout()
    save(fig, os.path.join(out, "timeline-compare.png"))


def format_time(seconds):
    """A duration as hw::format_time writes it: three digits in the unit they round into
    ("1 s", not "1e+03 ms"), minutes, hours and days past a minute ("5.89 h", not "2.12e+04 s")."""
    units = [(1e-9, "ns", 1000), (1e-6, "us", 1000), (1e-3, "ms", 1000), (1, "s", 60),
             (60, "min", 60), (3600, "h", 24), (86400, "days", None)]
    if seconds == 0 or not math.isfinite(seconds):
        return f"{seconds:g} s"
    i = 0
    while i + 1 < len(units) and abs(seconds) >= units[i + 1][0]:
        i += 1
    while True:
        scale, name, nxt = units[i]
        v = seconds / scale
        text = f"{v:.0f}" if nxt is None and abs(v) >= 1000 else f"{v:.3g}"
        if nxt is None or abs(float(text)) < nxt:
            return f"{text} {name}"
        i += 1


def spans_decades(values):
    """Whether positive finite values span a factor of 100 or more (then a log axis reads best)."""
    finite = [v for v in values if isinstance(v, (int, float)) and v > 0 and math.isfinite(v)]
    return bool(finite) and max(finite) / min(finite) >= 100


UNFIT_COLOUR = "#C8C8C8"


def plot_speedup(out, results, scenario):
    names = bar_names(results)
    values = [float(r.get("speedup_vs_ddp", 0)) for r in results]
    fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(names) + 3), 4.5))
    # An algorithm that does not fit in its GPU's memory (fits: false, issue 62.1) is greyed and
    # labelled: its speedup is what it would do with enough memory, not a candidate.
    unfit = [r.get("fits") is False for r in results]
    bars = ax.bar(names, [v if math.isfinite(v) else 0 for v in values],
                  color=[UNFIT_COLOUR if u else algorithm_colour(r["algorithm"])
                         for r, u in zip(results, unfit)])
    # Steps that are not DDP's (issue 27.2): local updates between synchronisations, or delayed
    # ones from a varying number of micro-batches. Their bars are hatched and the note says why.
    caveat = [r for r in results if r.get("update") in ("local", "delayed")]
    for bar, r in zip(bars, results):
        if r in caveat:
            bar.set_hatch("//")
            bar.set_edgecolor("white")
    if caveat:
        ax.annotate("hatched: local or delayed updates, whose steps are not DDP's; compare time to "
                    "a target loss (training.target_loss) before reading these as wins",
                    (0.5, -0.32), xycoords="axes fraction", ha="center", fontsize=7,
                    color="#444444")
    labels = []
    for bar, r, value in zip(bars, results, values):
        # Without a DDP reference (it failed) the speedup is NaN: no bar, and the label says why.
        known = math.isfinite(value)
        text = (f"{value:.2f}x\n{r.get('samples_per_step', 0):.4g} samples/step\n"
                f"idle {100 * r.get('idle_fraction_mean', 0):.1f}%" if known
                else "no DDP\nreference")
        # Model FLOPs utilisation (decoder transformers; null otherwise): the number papers report.
        mfu = r.get("mfu")
        if isinstance(mfu, (int, float)) and math.isfinite(mfu):
            text += f"\nMFU {100 * mfu:.1f}%"
        if r.get("fits") is False:
            text = (f"does not fit\n{r.get('peak_memory_bytes', 0) / 1e9:.3g} GB > "
                    f"{r.get('memory_available_bytes', 0) / 1e9:.3g} GB\n" + text)
        labels.append(ax.annotate(text, (bar.get_x() + bar.get_width() / 2, value if known else 0),
                                  ha="center", va="bottom", fontsize=8, xytext=(0, 2),
                                  textcoords="offset points"))
    ax.axhline(1.0, color="#555555", linestyle="--", linewidth=1, label="DDP")
    ax.set_ylim(0, max([v for v in values if math.isfinite(v)] + [1.0]) * 1.25)
    ax.set_ylabel("throughput speedup vs DDP (x)")
    ax.set_xlabel("algorithm")
    ax.set_title(f"{scenario}, {sources_of(results)}\nthroughput relative to DDP (samples per "
                 "optimizer step on each bar)", fontsize=11)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    clear_of_line(fig, ax, labels, 1.0)
    save(fig, os.path.join(out, "speedup.png"))


def clear_of_line(fig, ax, labels, y):
    """Moves each bar label that the horizontal line at `y` crosses to sit just above the line
    (issue 62.9: a 0.89x bar's label was struck through by the DDP line), then raises the axes'
    top until every label lies inside them."""
    fig.canvas.draw()
    line = ax.transData.transform((0, y))[1]
    for label in labels:
        box = label.get_window_extent()
        if box.y0 < line < box.y1:
            label.xy = (label.xy[0], y)
    fig.canvas.draw()
    top = max([label.get_window_extent().y1 for label in labels] + [0])
    if top > ax.bbox.y1:
        data_top = ax.transData.inverted().transform((0, top))[1]
        lo, _ = ax.get_ylim()
        ax.set_ylim(lo, lo + (data_top - lo) * 1.05)
        fig.canvas.draw()


def idle_shares(row):
    """compute, exposed communication, waiting (straggler/barrier), other idle: fractions of time."""
    b = row.get("idle_breakdown")
    if b:
        return [b.get("compute", 0), b.get("exposed_comm", 0), b.get("waiting", 0),
                b.get("idle_other", 0)]
    idle = row.get("idle_fraction_mean", 0)
    it = row.get("iteration_time_s") or 1
    exposed = min(idle, row.get("exposed_comm_s", 0) / it)
    spread = max(0.0, min(idle - exposed, row.get("idle_fraction_max", idle) - idle))
    return [1 - idle, exposed, spread, max(0.0, idle - exposed - spread)]


def plot_idle(out, results, scenario):
    names = bar_names(results)
    parts = ["computing", "exposed communication", "straggler/barrier waiting", "idle otherwise"]
    # Communication and waiting in the timelines' colours.
    colours = ["#55A868", CATEGORY_COLOURS["comm"], CATEGORY_COLOURS["waiting"], "#CCCCCC"]
    shares = [idle_shares(r) for r in results]
    fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(names) + 3), 4.5))
    bottom = [0.0] * len(names)
    for k, (part, colour) in enumerate(zip(parts, colours)):
        vals = [100 * s[k] for s in shares]
        ax.bar(names, vals, bottom=bottom, color=colour, label=part)
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_ylim(0, 105)
    ax.set_ylabel("share of wall-clock time, mean over GPUs (%)")
    ax.set_xlabel("algorithm")
    ax.set_title(f"{scenario}, {sources_of(results)}\nwhere the compute stream's time goes",
                 fontsize=11)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=2, fontsize=8)  # 4 overflowed
    fig.tight_layout()
    save(fig, os.path.join(out, "idle.png"))


def plot_memory(out, results, traces, scenario):
    names = bar_names(results)
    with_counters = {n: t for n, t in traces.items() if t["memory"]}
    ncols = 2 if with_counters else 1
    fig, axes = plt.subplots(1, ncols, figsize=(7 * ncols, 4.8), squeeze=False)
    ax = axes[0, 0]
    bottom = [0.0] * len(names)
    for part, colour in zip(MEMORY_PARTS, MEMORY_COLOURS):
        vals = [r.get("memory_breakdown", {}).get(part, 0) / 1e9 for r in results]
        ax.bar(names, vals, bottom=bottom, color=colour, label=part.replace("_", " "))
        bottom = [b + v for b, v in zip(bottom, vals)]
    capacity = next((r.get("gpu_memory_bytes") for r in results if r.get("gpu_memory_bytes")), None)
    available = next((r.get("memory_available_bytes") for r in results
                      if r.get("memory_available_bytes")), None)
    if capacity:
        ax.axhline(capacity / 1e9, color="black", linestyle="--", linewidth=1,
                   label=f"GPU capacity ({capacity / 1e9:.0f} GB)")
        if available and available < capacity:
            ax.axhline(available / 1e9, color="#B00020", linestyle=":", linewidth=1,
                       label=f"available: capacity less the reserve ({available / 1e9:.3g} GB)")
        # An algorithm that would not fit is marked on its bar, not only on stderr. Summaries
        # from before `fits` existed say exceeds_gpu_memory.
        unfit = [r.get("fits") is False if "fits" in r else bool(r.get("exceeds_gpu_memory"))
                 for r in results]
        limit = available if available else capacity
        for x, (u, top) in enumerate(zip(unfit, bottom)):
            if u:
                ax.annotate(f"does not fit\n{top:.3g} GB > {limit / 1e9:.3g} GB", (x, top),
                            ha="center", va="bottom", fontsize=8, color="#B00020",
                            fontweight="bold", xytext=(0, 2), textcoords="offset points")
        if any(unfit):
            ax.set_ylim(0, max(bottom) * 1.2)
    ax.set_ylabel("peak memory per GPU, worst GPU (GB)")
    ax.set_xlabel("algorithm")
    ax.set_title("peak memory by kind")
    # Below the axes: inside, it covered a bar's "does not fit" label (issue 62.9).
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=3)
    if with_counters:
        ax2 = axes[0, 1]
        rows = {r["algorithm"]: r for r in results}
        for n, t in with_counters.items():
            lo, hi = steady_window(rows.get(n), t, steps_shown=2)
            pid = min(t["memory"])
            pts = sorted(p for p in t["memory"][pid] if lo <= p[0] <= hi)
            xs = [p[0] - lo for p in pts]
            ys = [p[1] / 1e9 for p in pts]
            ax2.step(xs, ys, where="post", label=n, color=algorithm_colour(n))
        ax2.set_xlabel("time since the steady-state window opened (ms)")
        ax2.set_ylabel("memory in use on GPU 0 (GB)")
        ax2.set_title("memory over two steady-state steps")
        ax2.legend(fontsize=8)
    fig.suptitle(f"{scenario}: memory per GPU, {sources_of(results)}")
    fig.tight_layout()
    save(fig, os.path.join(out, "memory.png"))


UNIT_SCALE = {"": 1, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def numeric(value):
    """A number from a swept value such as 8, '10Mb/s' or '2us', for ordering and axes."""
    if isinstance(value, (int, float)):
        return float(value)
    m = re.match(r"\s*([0-9.eE+-]+)\s*([kKMGT]?)", str(value))
    if not m:
        return float("nan")
    try:
        return float(m.group(1)) * UNIT_SCALE[m.group(2)]
    except ValueError:
        return float("nan")


def row_fits(row):
    """Whether a row fits in GPU memory: its `fits` where it has one, else its peak memory against
    the GPU's (cli/report.cpp's row_fits; a row without a known capacity fits)."""
    if isinstance(row.get("fits"), bool):
        return row["fits"]
    peak, capacity = row.get("peak_memory_bytes"), row.get("gpu_memory_bytes")
    if not finite(peak) or not finite(capacity) or capacity <= 0:
        return True
    return peak <= capacity


# A marker per line of a sweep plot, in drawing order.
SWEEP_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h", "p"]
NOT_FIT_LABEL = "hollow: does not fit in GPU memory"


def same_values(a, b):
    """Whether two lines' (x, y) points are the same (within 1e-9 relative): one hides the other."""
    return len(a) == len(b) and all(
        xa == xb and (ya == yb or (finite(ya) and finite(yb)
                                   and abs(ya - yb) <= 1e-9 * max(abs(ya), abs(yb))))
        for (xa, ya), (xb, yb) in zip(a, b))


def wrapped_title(text, width):
    """`text` wrapped at `width` characters per line, its own line breaks kept."""
    import textwrap
    return "\n".join(line for part in text.split("\n")
                     for line in (textwrap.wrap(part, width) or [""]))


def plot_sweep(out, summary, scenario):
    sweep = summary.get("sweep")
    if not sweep or not sweep.get("vary"):
        return
    key = sweep["vary"][0]
    others = sweep["vary"][1:]
    results = [r for r in summary["results"] if "error" not in r]  # failed rows have no metrics
    ddp_samples = {r.get("point"): r.get("samples_per_step") for r in results
                   if r["algorithm"] == "ddp"}
    by_alg = {}  # one line per algorithm and combination of the other varied keys
    for r in results:
        label = r["algorithm"] + "".join(f", {k.split('.')[-1]}={r.get(k)}" for k in others)
        by_alg.setdefault(label, []).append((numeric(r.get(key)), str(r.get(key)), r))
    for metric, fname, label in (("speedup_vs_ddp", "sweep-speedup.png", "throughput speedup vs DDP (x)"),
                                 ("iteration_time_s", "sweep-iteration-time.png", "iteration time (s)")):
        fig, ax = plt.subplots(figsize=(8, 5))
        xs_all = []
        any_unfit = False
        drawn = []  # (label, points) of the lines drawn so far
        for k, (alg, pts) in enumerate(by_alg.items()):
            pts.sort(key=lambda p: p[0])
            xs = [p[0] for p in pts]
            xs_all += xs
            styles = ["-", "--", ":", "-."]
            combo = sorted({lbl.split(",", 1)[1] if "," in lbl else "" for lbl in by_alg})
            style = styles[combo.index(alg.split(",", 1)[1] if "," in alg else "") % len(styles)]
            colour = algorithm_colour(pts[0][2]["algorithm"])
            marker, size, width = SWEEP_MARKERS[k % len(SWEEP_MARKERS)], 7, 2.0
            values = [(p[0], p[2].get(metric, 0)) for p in pts]
            # A line equal to one drawn before (zero1 on ddp) is drawn dashed and thinner, with
            # smaller markers, so the one beneath shows between its dashes and around its markers.
            twin = next((name for name, v in drawn if same_values(v, values)), None)
            if twin:
                size, width, style = 4.5, 1.4, (0, (4, 3))
            drawn.append((alg, values))
            ax.plot(xs, [v[1] for v in values], marker=marker, markersize=size, linewidth=width,
                    label=f"{alg} (same as {twin})" if twin else alg, linestyle=style,
                    color=colour)
            # A point that does not fit in GPU memory is drawn hollow (issue 62.3): the fastest
            # line may be one that cannot run.
            unfit = [p for p in pts if not row_fits(p[2])]
            if unfit:
                any_unfit = True
                ax.plot([p[0] for p in unfit], [p[2].get(metric, 0) for p in unfit],
                        linestyle="none", marker=marker, markersize=size, markerfacecolor="white",
                        markeredgecolor=colour, markeredgewidth=1.6, zorder=5)
            # What a step holds where it is not DDP's at that point (issue 27.4: ACCO's 6x batch
            # read as a 3.35x speedup beside a plot where it is the slowest per step).
            for x, _, row in pts:
                ddp = ddp_samples.get((row.get("point")))
                samples = row.get("samples_per_step")
                if ddp and samples and abs(samples - ddp) > 0.01 * ddp:
                    ax.annotate(f"{samples:.0f}/step", (x, row.get(metric, 0)), fontsize=6,
                                xytext=(3, 3), textcoords="offset points",
                                color=algorithm_colour(row["algorithm"]))
        finite_xs = [x for x in xs_all if x > 0 and math.isfinite(x)]
        # Rates and latencies are read by decades; other keys when they span two (issue 27.9).
        by_decades = any(w in key for w in ("bandwidth", "latency", "rate"))
        if finite_xs and max(finite_xs) / min(finite_xs) >= (4 if by_decades else 100):
            ax.set_xscale("log")
        if spans_decades([p[2].get(metric) for pts in by_alg.values() for p in pts]):
            ax.set_yscale("log")  # speedups from 0.5x to 60x: a linear axis hides the small ones
        ticks = sorted({(p[0], p[1]) for pts in by_alg.values() for p in pts})
        ax.set_xticks([t[0] for t in ticks])
        ax.set_xticklabels([t[1] for t in ticks], rotation=30, fontsize=8)
        ax.set_xlabel(key)
        ax.set_ylabel(label)
        # Wrapped: a long scenario or key name ran past the figure's right edge.
        ax.set_title(wrapped_title(f"{scenario}, {sources_of(results)}\n{label.split(' (')[0]} vs "
                                   f"{key} (samples per step noted where not DDP's)", 70),
                     fontsize=11)
        handles, labels = ax.get_legend_handles_labels()
        if any_unfit:
            handles.append(matplotlib.lines.Line2D([], [], linestyle="none", marker="o",
                                                   markersize=7, markerfacecolor="white",
                                                   markeredgecolor="#777777",
                                                   markeredgewidth=1.6))
            labels.append(NOT_FIT_LABEL)
        ax.legend(handles, labels, fontsize=8)
        ax.grid(color="#EEEEEE")
        fig.tight_layout()
        save(fig, os.path.join(out, fname))


def read_loss_curves(path):
    """{algorithm: [(samples, loss, wall_time_s or None)]} from a CSV with a header naming
    `algorithm`, `samples` and `loss` (validate's loss.csv adds `wall_time_s`)."""
    import csv
    curves = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(line for line in f if not line.startswith("#")):
            wall = row.get("wall_time_s")
            curves.setdefault(row["algorithm"], []).append(
                (float(row["samples"]), float(row["loss"]), float(wall) if wall else None))
    return curves


def plot_loss(out, summary, scenario):
    """Loss against wall-clock time per algorithm when a target loss is set (issue 27.2): measured
    time where validate measured it, else samples over the algorithm's throughput."""
    training = summary.get("scenario", {}).get("training") or {}
    target = training.get("target_loss")
    if target is None:
        return
    path = os.path.join(out, "loss.csv")
    if not os.path.exists(path):
        path = training.get("loss_curve") or ""
    if not path or not os.path.exists(path):
        return
    curves = read_loss_curves(path)
    throughput = {r["algorithm"]: r.get("throughput_samples_s") for r in summary["results"]
                  if "error" not in r and not r.get("measured")}
    fig, ax = plt.subplots(figsize=(8, 5))
    for alg, pts in curves.items():
        rate = throughput.get(alg)
        xs = [w if w is not None else (s / rate if rate else float("nan")) for s, _, w in pts]
        ax.plot(xs, [p[1] for p in pts], label=alg, color=algorithm_colour(alg))
    ax.axhline(target, color="#555555", linestyle="--", linewidth=1, label=f"target {target:g}")
    # Times over more than two decades (a slow algorithm beside a fast one): a log axis, or the
    # fast ones' curves are squeezed against the left edge (issue 62.9).
    times = [x for line in ax.get_lines()[:-1] for x in line.get_xdata()]
    log = spans_decades(times)
    if log:
        ax.set_xscale("log")
    ax.set_xlabel("wall-clock time (s, log scale)" if log else "wall-clock time (s)")
    ax.set_ylabel("loss")
    ax.set_title(f"{scenario}: loss against wall-clock time (time to target in the summary)",
                 fontsize=11)
    ax.legend(fontsize=8)
    ax.grid(color="#EEEEEE")
    fig.tight_layout()
    save(fig, os.path.join(out, "loss-vs-time.png"))


# A row's fields that hold numbers (null stands for NaN, as overlapsim writes it), and its objects
# and lists whose entries do: what the plots compute with.
NUMERIC_FIELDS = ("workers", "iteration_time_s", "throughput_samples_s", "throughput_tokens_s",
                  "speedup_vs_ddp", "idle_fraction_mean", "idle_fraction_max", "exposed_comm_s",
                  "waiting_s", "comm_bytes_per_step", "peak_memory_bytes", "simulated_time_s",
                  "samples_per_step", "tokens_per_step", "compute_s_per_step", "comm_s_per_step",
                  "gpu_memory_bytes", "memory_available_bytes", "lower_bound_s", "comm_bytes_per_step_intra_node",
                  "comm_bytes_per_step_inter_node", "comm_bytes_per_step_wan",
                  "tokens_per_s_per_gpu", "model_flops_per_token", "hardware_flops_per_token",
                  "model_tflops_per_gpu", "hardware_tflops_per_gpu", "mfu")
NUMERIC_GROUPS = ("memory_breakdown", "steady_state", "micro_batches_per_step", "idle_breakdown",
                  "idle_fraction_per_gpu")


def is_number(value):
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))


def shown(value):
    """A JSON value as a message quotes it: short, in JSON's words."""
    text = json.dumps(value)
    return text if len(text) <= 80 else text[:77] + "..."


def malformed(summary):
    """What is wrong with a summary.json's shape, or None (issue 26.11: null, [] or
    {"results": null} ended in a traceback). Names the key and what was expected."""
    if not isinstance(summary, dict):
        kind = {type(None): "null", list: "a list", str: "a string", bool: "a boolean"}.get(
            type(summary), "a number")
        return f"expected a JSON object with 'results', got {kind}"
    if "scenario" in summary and not isinstance(summary["scenario"], dict):
        return f"key 'scenario': expected an object, got {shown(summary['scenario'])}"
    sweep = summary.get("sweep")
    if sweep is not None:
        vary = sweep.get("vary") if isinstance(sweep, dict) else None
        if not isinstance(vary, list) or not all(isinstance(k, str) for k in vary):
            return f"key 'sweep': expected an object whose 'vary' lists the varied keys, got " \
                   f"{shown(sweep)}"
    results = summary.get("results")
    if not isinstance(results, list):
        return f"key 'results': expected a list of rows, got {shown(results)}"
    for k, row in enumerate(results):
        if not isinstance(row, dict):
            return f"key 'results.{k}': expected a row (an object), got {shown(row)}"
        if not isinstance(row.get("algorithm"), str):
            return f"key 'results.{k}.algorithm': expected a name, got {shown(row.get('algorithm'))}"
        if "error" in row:
            continue
        for key in NUMERIC_FIELDS:
            if key in row and not is_number(row[key]):
                return f"key 'results.{k}.{key}': expected a number, got {shown(row[key])}"
        for key in NUMERIC_GROUPS:
            group = row.get(key)
            if group is None:
                continue
            entries = (group.items() if isinstance(group, dict)
                       else enumerate(group) if isinstance(group, list) else None)
            if entries is None:
                return f"key 'results.{k}.{key}': expected an object or list of numbers, got " \
                       f"{shown(group)}"
            for name, value in entries:
                if not is_number(value):
                    return f"key 'results.{k}.{key}.{name}': expected a number, got {shown(value)}"
    return None


def with_nan(row):
    """The row with NaN for its null metrics (NaN is written as null): the plots draw no bar or
    point there instead of failing on None."""
    row = dict(row)
    for key in NUMERIC_FIELDS:
        if key in row and row[key] is None:
            row[key] = float("nan")
    for key in NUMERIC_GROUPS:
        group = row.get(key)
        if isinstance(group, dict):
            row[key] = {n: float("nan") if v is None else v for n, v in group.items()}
        elif isinstance(group, list):
            row[key] = [float("nan") if v is None else v for v in group]
    return row


def finite(value):
    """A number that is not null, NaN or infinite."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))


def percent(error):
    """A relative error as the tables print it; "n/a" where it is null (measured 0)."""
    return f"{100 * error:+.1f}%" if finite(error) else "n/a"


def load_comparison(out):
    """DIR/comparison.json, or None where validate wrote none."""
    path = os.path.join(out, "comparison.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def plot_predicted_vs_measured(out, scenario):
    comparison = load_comparison(out)
    if comparison is None:
        return
    # A null value (NaN in the run) has no point; a null error (measured 0) is labelled n/a.
    rows = [r for r in comparison["rows"] if finite(r.get("predicted"))
            and finite(r.get("measured"))]
    metrics = sorted({r["metric"] for r in rows})
    if not metrics:
        return
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.5 * len(metrics), 4.5), squeeze=False)
    for ax, metric in zip(axes[0], metrics):
        pts = [r for r in rows if r["metric"] == metric]
        for r in pts:
            ax.scatter(r["measured"], r["predicted"], color=algorithm_colour(r["algorithm"]),
                       label=r["algorithm"])
            ax.annotate(f"{r['algorithm']} {percent(r.get('relative_error'))}",
                        (r["measured"], r["predicted"]), fontsize=7, xytext=(3, 3),
                        textcoords="offset points")
        hi = max([max(r["measured"], r["predicted"]) for r in pts] + [1e-12]) * 1.1
        ax.plot([0, hi], [0, hi], color="#555555", linestyle="--", linewidth=1, label="y = x")
        ax.set_xlim(0, hi)
        ax.set_ylim(0, hi)
        ax.set_xlabel(f"measured {metric}")
        ax.set_ylabel(f"predicted {metric}")
        ax.set_title(metric)
        ax.legend(fontsize=7)
    fig.suptitle(f"{scenario}: predicted vs measured")
    fig.tight_layout()
    save(fig, os.path.join(out, "predicted-vs-measured.png"))


def op_label(op, names):
    """The op's name as validate's per-op table prints it: the stream where both run the kind."""
    both = names.count(op["op"]) > 1
    return f"{op['op']} ({op['stream']})" if both else op["op"]


def plot_ops_predicted_vs_measured(out, scenario):
    """validate's per-op table drawn (issue 30.4): per algorithm, each op's time per step per
    worker predicted and measured, labelled with the error of its typical (median) instance, so a
    reader sees which op an iteration-time error comes from, and with the run's own noise on the
    op (`halves_spread`) whether the error is more than noise."""
    comparison = load_comparison(out)
    if comparison is None or not comparison.get("ops"):
        return
    by_algorithm = {}
    for op in comparison["ops"]:
        by_algorithm.setdefault(op["algorithm"], []).append(op)

    def per_step(side):
        value = side.get("per_step_s") if isinstance(side, dict) else None
        return 1e3 * value if finite(value) else 0.0

    algorithms = list(by_algorithm)
    heights = [max(1.6, 0.32 * len(by_algorithm[a]) + 0.9) for a in algorithms]
    fig, axes = plt.subplots(len(algorithms), 1, figsize=(9, sum(heights)), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    for ax, algorithm in zip(axes[:, 0], algorithms):
        # Largest time per step on top: where the step's time goes.
        ops = sorted(by_algorithm[algorithm],
                     key=lambda o: -max(per_step(o["predicted"]), per_step(o["measured"])))
        names = [o["op"] for o in ops]
        y = list(range(len(ops)))[::-1]
        predicted = [per_step(o["predicted"]) for o in ops]
        measured = [per_step(o["measured"]) for o in ops]
        ax.barh([v + 0.2 for v in y], predicted, height=0.4, color=algorithm_colour(algorithm),
                label="predicted")
        ax.barh([v - 0.2 for v in y], measured, height=0.4, color="#777777", label="measured")
        hi = max(predicted + measured + [1e-9])
        for v, o, p, m in zip(y, ops, predicted, measured):
            # The run's own noise on the op (its halves' spread): an error inside it is noise.
            noise = (o["measured"] or {}).get("halves_spread")
            note = ("only predicted" if o["measured"] is None else
                    "only measured" if o["predicted"] is None else
                    f"typical op {percent(o.get('median_error'))}"
                    + (f" (run's noise {100 * noise:.1f}%)" if finite(noise) else "")
                    + f", per step {percent(o.get('per_step_error'))}")
            ax.annotate(note, (max(p, m), v), fontsize=7, xytext=(4, -3),
                        textcoords="offset points")
        ax.set_yticks(y)
        ax.set_yticklabels([op_label(o, names) for o in ops], fontsize=8)
        ax.set_xlim(0, hi * 1.9)  # room for the notes of the longest bars
        ax.set_xlabel("ms per step per worker")
        ax.set_title(algorithm, fontsize=10)
        ax.legend(fontsize=7, loc="lower right")
    fig.suptitle(f"{scenario}: each op, predicted vs measured")
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.45 / sum(heights)))  # the title above the first panel
    save(fig, os.path.join(out, "ops-predicted-vs-measured.png"))


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir")
    parser.add_argument("--only", default="", help="comma-separated plot names")
    args = parser.parse_args(argv)
    out = args.dir
    try:
        with open(os.path.join(out, "summary.json")) as f:
            summary = json.load(f)
    except OSError as e:
        print(f"overlapsim plot: {out}/summary.json: cannot read: {e.strerror or e}",
              file=sys.stderr)
        return 1
    except (ValueError, RecursionError) as e:  # RecursionError: nested too deep to be a summary
        print(f"overlapsim plot: {out}/summary.json: expected a JSON summary, got invalid JSON "
              f"({e})", file=sys.stderr)
        return 1
    problem = malformed(summary)
    if problem:
        print(f"overlapsim plot: {out}/summary.json: {problem}", file=sys.stderr)
        return 1
    summary["results"] = [with_nan(r) for r in summary["results"]]
    for r in summary["results"]:
        if isinstance(r.get("colour"), str) and re.fullmatch(r"#[0-9A-Fa-f]{6}", r["colour"]):
            SUMMARY_COLOURS[r["algorithm"]] = r["colour"]
    only = {s for s in args.only.split(",") if s}
    scenario = summary.get("scenario", {}).get("name", os.path.basename(os.path.normpath(out)))
    results = [r for r in summary.get("results", []) if "error" not in r]  # failed rows: no metrics
    rows = {r["algorithm"]: r for r in results if not r.get("measured")}
    measured_rows = {r["algorithm"]: r for r in results if r.get("measured")}
    traces = {}
    paths = [p for pattern in ("trace-*.json", "trace-*.json.gz")
             for p in glob.glob(os.path.join(out, pattern))]
    for path in sorted(paths):
        name = re.sub(r"\.json(\.gz)?$", "", os.path.basename(path)[len("trace-"):])
        try:
            traces[name] = load_trace(path)
        except Exception as e:  # any damage (a list where events go, ...): a warning, no traceback
            print(f"warning: {path}: not a readable trace ({type(e).__name__}: {e}); its timeline "
                  "is skipped", file=sys.stderr)

    failed = []

    def attempt(label, fn, *fn_args):
        if only and label not in only:
            return
        try:
            fn(*fn_args)
        except PlotError as e:  # one plot's failure never stops the others, but fails the run
            print(f"overlapsim plot: {e}", file=sys.stderr)
            failed.append(label)
        except Exception as e:
            print(f"overlapsim plot: plot {label} failed: {type(e).__name__}: {e}",
                  file=sys.stderr)
            failed.append(label)

    if "sweep" not in summary:
        for name, trace in traces.items():  # validate's measured runs too, titled so
            row = (measured_rows.get(name[:-len("-measured")]) if name.endswith("-measured")
                   else rows.get(name))
            attempt("timeline", plot_timeline, out, name, row, trace, scenario)
        # The comparison and the memory curves: the predicted runs (all of them for `run`).
        predicted = {n: t for n, t in traces.items() if not n.endswith("-measured")}
        attempt("timeline-compare", plot_timeline_compare, out, rows, predicted, scenario)
        attempt("speedup", plot_speedup, out, results, scenario)
        attempt("idle", plot_idle, out, results, scenario)
        attempt("memory", plot_memory, out, results, predicted, scenario)
    attempt("sweep", plot_sweep, out, summary, scenario)
    attempt("predicted-vs-measured", plot_predicted_vs_measured, out, scenario)
    attempt("ops-predicted-vs-measured", plot_ops_predicted_vs_measured, out, scenario)
    attempt("loss", plot_loss, out, summary, scenario)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
