#!/usr/bin/env python3
"""Self-test of overlapsim_plots.py on a synthetic output directory (stdlib unittest)."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "overlapsim_plots.py")


def srgb_to_lab(colour):
    """CIELAB (D65) of an sRGB colour "#RRGGBB"."""
    rgb = [int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    r, g, b = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    xyz = ((0.4124564 * r + 0.3575761 * g + 0.1804375 * b) / 0.95047,
           0.2126729 * r + 0.7151522 * g + 0.0721750 * b,
           (0.0193339 * r + 0.1191920 * g + 0.9503041 * b) / 1.08883)
    fx, fy, fz = [t ** (1 / 3) if t > 216 / 24389 else (24389 / 27 * t + 16) / 116 for t in xyz]
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


def ciede2000(lab1, lab2):
    """The CIEDE2000 colour difference (Sharma, Wu and Dalal 2005) of two CIELAB colours."""
    import math
    (l1, a1, b1), (l2, a2, b2) = lab1, lab2
    c_mean = (math.hypot(a1, b1) + math.hypot(a2, b2)) / 2
    g = 0.5 * (1 - math.sqrt(c_mean ** 7 / (c_mean ** 7 + 25 ** 7)))
    a1p, a2p = (1 + g) * a1, (1 + g) * a2
    c1p, c2p = math.hypot(a1p, b1), math.hypot(a2p, b2)
    h1p = math.degrees(math.atan2(b1, a1p)) % 360 if c1p else 0.0
    h2p = math.degrees(math.atan2(b2, a2p)) % 360 if c2p else 0.0
    dh = 0.0
    if c1p * c2p:
        dh = h2p - h1p
        dh = dh - 360 if dh > 180 else dh + 360 if dh < -180 else dh
    d_l, d_c = l2 - l1, c2p - c1p
    d_h = 2 * math.sqrt(c1p * c2p) * math.sin(math.radians(dh / 2))
    l_mean, cp_mean = (l1 + l2) / 2, (c1p + c2p) / 2
    if not c1p * c2p:
        h_mean = h1p + h2p
    elif abs(h1p - h2p) <= 180:
        h_mean = (h1p + h2p) / 2
    else:
        h_mean = (h1p + h2p + 360) / 2 if h1p + h2p < 360 else (h1p + h2p - 360) / 2
    t = (1 - 0.17 * math.cos(math.radians(h_mean - 30)) + 0.24 * math.cos(math.radians(2 * h_mean))
         + 0.32 * math.cos(math.radians(3 * h_mean + 6))
         - 0.20 * math.cos(math.radians(4 * h_mean - 63)))
    d_theta = 30 * math.exp(-((h_mean - 275) / 25) ** 2)
    r_c = 2 * math.sqrt(cp_mean ** 7 / (cp_mean ** 7 + 25 ** 7))
    s_l = 1 + 0.015 * (l_mean - 50) ** 2 / math.sqrt(20 + (l_mean - 50) ** 2)
    s_c, s_h = 1 + 0.045 * cp_mean, 1 + 0.015 * cp_mean * t
    r_t = -math.sin(math.radians(2 * d_theta)) * r_c
    return math.sqrt((d_l / s_l) ** 2 + (d_c / s_c) ** 2 + (d_h / s_h) ** 2
                     + r_t * (d_c / s_c) * (d_h / s_h))


MIN_COLOUR_DISTANCE = 12  # CIEDE2000 between any two algorithm or spare colours (issue 62.9)


def make_output_dir(path, algorithms=("ddp", "acco", "cdp-v2"), gpus=4, steps=4):
    """Writes a small but complete summary.json and one trace per algorithm into `path`."""
    results = []
    for k, alg in enumerate(algorithms):
        step = 0.1 * (1 + 0.2 * k)
        results.append({
            "algorithm": alg, "workers": gpus, "iteration_time_s": step,
            "throughput_samples_s": gpus / step, "throughput_tokens_s": 1024 * gpus / step,
            "speedup_vs_ddp": 1.0 / (1 + 0.2 * k), "idle_fraction_mean": 0.1 * k,
            "idle_fraction_max": 0.15 * k, "exposed_comm_s": 0.01 * k,
            "comm_bytes_per_step": 1e8, "peak_memory_bytes": 3e10, "simulated_time_s": steps * step,
            "measured": False, "gpu_memory_bytes": 8e10,
            "memory_breakdown": {"params": 2e9, "grads": 2e9, "optimizer_state": 1.2e10,
                                 "buffers": 0, "activations": 1.4e10},
            "steady_state": {"start_s": step, "end_s": steps * step, "steps": steps - 1}})
        events = []
        for g in range(gpus):
            events.append({"ph": "M", "pid": g, "name": "process_name",
                           "args": {"name": f"node 0 gpu {g}"}})
            for tid, name in ((0, "compute"), (1, "comm")):
                events.append({"ph": "M", "pid": g, "tid": tid, "name": "thread_name",
                               "args": {"name": name}})
            for s in range(steps):
                t0 = s * step * 1e6
                events.append({"ph": "X", "pid": g, "tid": 0, "ts": t0, "dur": 0.3 * step * 1e6,
                               "name": "fwd", "cat": "forward", "args": {"step": s}})
                events.append({"ph": "X", "pid": g, "tid": 0, "ts": t0 + 0.3 * step * 1e6,
                               "dur": 0.5 * step * 1e6, "name": "bwd", "cat": "backward",
                               "args": {"step": s}})
                events.append({"ph": "X", "pid": g, "tid": 1, "ts": t0 + 0.5 * step * 1e6,
                               "dur": 0.4 * step * 1e6, "name": "all-reduce", "cat": "comm",
                               "args": {"step": s, "bytes": 1e8}})
                events.append({"ph": "C", "pid": g, "ts": t0, "name": "memory",
                               "args": {"bytes": 1.6e10}})
                events.append({"ph": "C", "pid": g, "ts": t0 + 0.3 * step * 1e6, "name": "memory",
                               "args": {"bytes": 3e10}})
                events.append({"ph": "i", "s": "p", "pid": g, "tid": 0, "ts": (s + 1) * step * 1e6,
                               "name": "step_end", "args": {"step": s}})
        with open(os.path.join(path, f"trace-{alg}.json"), "w") as f:
            json.dump({"traceEvents": events}, f)
    with open(os.path.join(path, "summary.json"), "w") as f:
        json.dump({"scenario": {"name": "synthetic"}, "results": results}, f)


def make_straggler_dir(path, gpus=256, per_node=4, straggler=137, steps=4, measured=False):
    """A DDP-like run at 256 GPUs where one GPU computes twice as long: steps of 200 ms, the others
    compute 80 ms and enter the all-reduce at 80 ms, wait for the straggler until 160 ms
    (waiting_us 80000) and move data until 180 ms with it. With `measured`, the same trace is also
    validate's measured run of ddp."""
    events = []
    for g in range(gpus):
        events.append({"ph": "M", "pid": g, "name": "process_name",
                       "args": {"name": f"node {g // per_node} gpu {g % per_node}"}})
        compute = 160e3 if g == straggler else 80e3
        for s in range(steps):
            t0 = s * 200e3
            events.append({"ph": "X", "pid": g, "tid": 0, "ts": t0, "dur": compute, "name": "fwd",
                           "cat": "forward", "args": {"step": s}})
            args = {"step": s, "bytes": 1e8}
            if g != straggler:
                args["waiting_us"] = 160e3 - compute
            events.append({"ph": "X", "pid": g, "tid": 1, "ts": t0 + compute,
                           "dur": 180e3 - compute, "name": "all-reduce", "cat": "comm",
                           "args": args})
    row = {"algorithm": "ddp", "workers": gpus, "iteration_time_s": 0.2, "speedup_vs_ddp": 1.0,
           "measured": False, "steady_state": {"start_s": 0.2, "end_s": 0.2 * steps,
                                               "steps": steps - 1}}
    results = [dict(row, measured=True)] if measured else []
    results.append(row)
    for name, real in [("ddp", False)] + ([("ddp-measured", True)] if measured else []):
        with open(os.path.join(path, f"trace-{name}.json"), "w") as f:
            json.dump({"otherData": {"title": name, "measured": real}, "traceEvents": events}, f)
    with open(os.path.join(path, "summary.json"), "w") as f:
        json.dump({"scenario": {"name": "straggler"}, "results": results}, f)


def is_png(path):
    with open(path, "rb") as f:
        return f.read(8) == b"\x89PNG\r\n\x1a\n"


class PlotsTest(unittest.TestCase):
    def run_plots(self, path):
        return subprocess.run([sys.executable, SCRIPT, path], capture_output=True, text=True)

    def test_every_plot_is_a_sane_png(self):
        with tempfile.TemporaryDirectory() as d:
            make_output_dir(d)
            r = self.run_plots(d)
            self.assertEqual(r.returncode, 0, r.stderr)
            for name in ["timeline-ddp.png", "timeline-acco.png", "timeline-cdp-v2.png",
                         "timeline-compare.png", "speedup.png", "idle.png", "memory.png"]:
                p = os.path.join(d, name)
                self.assertTrue(os.path.exists(p), name)
                self.assertTrue(is_png(p), name)
                self.assertGreater(os.path.getsize(p), 10_000, name)
                self.assertLess(os.path.getsize(p), 5_000_000, name)

    def test_overlapping_comm_tracks_join_the_comm_row(self):
        sys.path.insert(0, HERE)
        import overlapsim_plots
        # overlapsim writes a stream's overlapping ops on tracks of their own: "comm 2" on tid 2
        # here, after a "compute 2" track that took tid 3 ("compute 2" joins the compute row).
        names = {0: "compute", 1: "comm", 2: "comm 2", 3: "compute 2"}
        events = [{"ph": "M", "pid": 0, "tid": tid, "name": "thread_name", "args": {"name": n}}
                  for tid, n in names.items()]
        for tid, ts in ((0, 0), (1, 1000), (2, 1500), (3, 500)):
            events.append({"ph": "X", "pid": 0, "tid": tid, "ts": ts, "dur": 1000,
                           "name": names[tid], "cat": "comm" if tid in (1, 2) else "forward"})
        # A trace without thread names (older outputs): tid 0 compute, 1 comm.
        events.append({"ph": "X", "pid": 1, "tid": 1, "ts": 0, "dur": 1000, "name": "x",
                       "cat": "comm"})
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "trace-cdp-v2.json")
            with open(path, "w") as f:
                json.dump({"traceEvents": events}, f)
            t = overlapsim_plots.load_trace(path)
        self.assertEqual(t["events"], {
            (0, 0): [(0.0, 1.0, "forward", 0), (0.5, 1.0, "forward", 0)],
            (0, 1): [(1.0, 1.0, "comm", 0), (1.5, 1.0, "comm", 0)],
            (1, 1): [(0.0, 1.0, "comm", 0)]})

    def test_corrupt_trace_warns_and_keeps_other_plots(self):
        with tempfile.TemporaryDirectory() as d:
            make_output_dir(d)
            with open(os.path.join(d, "trace-acco.json"), "w") as f:
                f.write("{not json")
            r = self.run_plots(d)
            self.assertEqual(r.returncode, 0)
            self.assertIn("trace-acco.json", r.stderr)
            self.assertFalse(os.path.exists(os.path.join(d, "timeline-acco.png")))
            self.assertTrue(is_png(os.path.join(d, "timeline-ddp.png")))
            self.assertTrue(is_png(os.path.join(d, "speedup.png")))

    def test_sweep_and_comparison(self):
        with tempfile.TemporaryDirectory() as d:
            rows = [{"algorithm": a, "cluster.inter_node.bandwidth": bw, "speedup_vs_ddp": s,
                     "iteration_time_s": 1 / s}
                    for a, s0 in (("ddp", 1.0), ("acco", 1.5))
                    for bw, s in (("10Mb/s", s0 * 1.0), ("1Gb/s", s0 * 1.1), ("100Gb/s", s0 * 1.2))]
            with open(os.path.join(d, "summary.json"), "w") as f:
                json.dump({"scenario": {"name": "sweep"}, "results": rows,
                           "sweep": {"vary": ["cluster.inter_node.bandwidth"]}}, f)
            with open(os.path.join(d, "comparison.json"), "w") as f:
                json.dump({"rows": [{"algorithm": "ddp", "metric": "iteration_time_s",
                                     "predicted": 1.0, "measured": 1.1, "relative_error": -0.09}]}, f)
            r = self.run_plots(d)
            self.assertEqual(r.returncode, 0, r.stderr)
            for name in ["sweep-speedup.png", "sweep-iteration-time.png", "predicted-vs-measured.png"]:
                self.assertTrue(is_png(os.path.join(d, name)), name)

    def test_sweep_marks_points_that_do_not_fit_and_keeps_equal_lines_visible(self):
        # Issue 62.3/62.9: a point that does not fit in GPU memory is hollow and the legend says
        # so; zero1 equal to ddp is dashed over it, not hiding it; the title stays in the figure.
        from matplotlib.colors import to_rgba
        with tempfile.TemporaryDirectory() as d:
            bws = ("10Mb/s", "1Gb/s", "100Gb/s")
            rows = []
            for p, bw in enumerate(bws):
                for a, s in (("ddp", 1.0), ("zero1", 1.0), ("acco", 3.0 - p), ("cdp-v2", 0.5 + p)):
                    rows.append({"algorithm": a, "cluster.inter_node.bandwidth": bw, "point": p,
                                 "speedup_vs_ddp": s, "iteration_time_s": 1 / s,
                                 "peak_memory_bytes": 3e10, "gpu_memory_bytes": 8e10})
            rows[2]["peak_memory_bytes"] = 9e10  # acco at 10Mb/s: 90 GB of 80
            rows[7]["fits"] = False  # cdp-v2 at 1Gb/s: the field wins over 30 GB < 80 GB
            rows[11]["fits"] = True  # cdp-v2 at 100Gb/s
            with open(os.path.join(d, "summary.json"), "w") as f:
                json.dump({"scenario": {"name": "a-scenario-with-a-rather-long-name-for-its-title"},
                           "results": rows, "sweep": {"vary": ["cluster.inter_node.bandwidth"]}}, f)
            figures = self.draw(d, "sweep")
            for name in ("sweep-speedup.png", "sweep-iteration-time.png"):
                fig = figures[name]
                ax = fig.axes[0]
                labels = [t.get_text() for t in ax.get_legend().get_texts()]
                self.assertEqual(labels, ["ddp", "zero1 (same as ddp)", "acco", "cdp-v2",
                                          "hollow: does not fit in GPU memory"], name)
                metric = (lambda s: s) if name == "sweep-speedup.png" else (lambda s: 1 / s)
                hollow = sorted((round(x, 9), round(y, 9)) for ln in ax.get_lines()
                                if ln.get_markerfacecolor() in ("white", "w", to_rgba("white"))
                                for x, y in zip(ln.get_xdata(), ln.get_ydata()))
                self.assertEqual(hollow, sorted([(1e7, round(metric(3.0), 9)),
                                                 (1e9, round(metric(1.5), 9))]), name)
                lines = {ln.get_label(): ln for ln in ax.get_lines()}
                ddp, zero1 = lines["ddp"], lines["zero1 (same as ddp)"]
                self.assertEqual(ddp.get_linestyle(), "-")
                self.assertEqual(zero1.get_linestyle(), "--")
                self.assertLess(zero1.get_markersize(), ddp.get_markersize())
                self.assertLess(zero1.get_linewidth(), ddp.get_linewidth())
                self.assertEqual(len({ln.get_marker() for ln in lines.values()
                                      if not ln.get_label().startswith("_")}), 4)
                title = ax.title.get_window_extent()
                self.assertGreaterEqual(title.x0, fig.bbox.x0, name)
                self.assertLessEqual(title.x1, fig.bbox.x1, name)

    def test_null_comparison_errors_are_na_not_a_failure(self):
        # CDP-v2 validated alone (2026-11-27): its measured exposed communication and a speedup
        # without a measured DDP read 0, their relative errors null; `100 * None` failed the plot
        # and validate published nothing.
        with tempfile.TemporaryDirectory() as d:
            make_straggler_dir(d, gpus=2, per_node=2, straggler=1, measured=True)
            rows = [{"algorithm": "ddp", "metric": "iteration_time_s", "predicted": 1.0,
                     "measured": 1.1, "relative_error": -0.09},
                    {"algorithm": "ddp", "metric": "exposed_comm_s", "predicted": 0.2,
                     "measured": 0.0, "relative_error": None},
                    {"algorithm": "ddp", "metric": "forward_backward_s", "predicted": None,
                     "measured": 0.3, "relative_error": None}]
            ops = [{"algorithm": "ddp", "op": "forward", "stream": "compute",
                    "predicted": {"count_per_step": 1, "median_s": 0.04, "per_step_s": 0.04},
                    "measured": {"count_per_step": 1, "median_s": 0.05, "per_step_s": 0.05,
                                 "halves_spread": 0.031},
                    "median_error": -0.2, "per_step_error": -0.2},
                   {"algorithm": "ddp", "op": "optimizer step", "stream": "compute",
                    "predicted": {"count_per_step": 1, "median_s": 0.01, "per_step_s": 0.01},
                    "measured": {"count_per_step": 1, "median_s": 0.0, "per_step_s": 0.0},
                    "median_error": None, "per_step_error": None},
                   {"algorithm": "ddp", "op": "optimizer step", "stream": "comm",
                    "predicted": None,
                    "measured": {"count_per_step": 1, "median_s": 0.002, "per_step_s": 0.002},
                    "median_error": None, "per_step_error": None}]
            with open(os.path.join(d, "comparison.json"), "w") as f:
                json.dump({"rows": rows, "ops": ops}, f)
            figures = self.draw(d, "predicted-vs-measured,ops-predicted-vs-measured")
            notes = [t.get_text() for ax in figures["predicted-vs-measured.png"].axes
                     for t in ax.texts]
            self.assertIn("ddp n/a", notes)
            self.assertIn("ddp -9.0%", notes)
            self.assertEqual(len(figures["predicted-vs-measured.png"].axes), 2)  # no null point
            ops_ax = figures["ops-predicted-vs-measured.png"].axes[0]
            self.assertEqual(ops_ax.get_title(), "ddp")
            # Largest time per step on top; a kind both streams run is named by its stream.
            self.assertEqual([t.get_text() for t in ops_ax.get_yticklabels()],
                             ["forward", "optimizer step (compute)", "optimizer step (comm)"])
            op_notes = [t.get_text() for t in ops_ax.texts]
            self.assertIn("typical op -20.0% (run's noise 3.1%), per step -20.0%", op_notes)
            self.assertIn("typical op n/a, per step n/a", op_notes)
            self.assertIn("only measured", op_notes)
            # Predicted 40 ms, measured 50 ms a step: the bars' lengths.
            widths = sorted(round(b.get_width(), 6) for b in ops_ax.patches)
            self.assertEqual(widths, [0.0, 0.0, 2.0, 10.0, 40.0, 50.0])

    def test_sweep_axes_go_logarithmic_over_decades(self):
        # Issue 15.18: speedups from 0.5x to 60.9x on a linear axis.
        sys.path.insert(0, HERE)
        import overlapsim_plots
        self.assertTrue(overlapsim_plots.spans_decades([0.5, 1.0, 60.9]))
        self.assertFalse(overlapsim_plots.spans_decades([0.5, 1.0, 15.85]))
        self.assertFalse(overlapsim_plots.spans_decades([None, float("nan"), 0, 2.0]))

    def draw(self, path, only):
        """Runs the plot driver on `path` and returns its figures by file name, drawn, unsaved."""
        sys.path.insert(0, HERE)
        import overlapsim_plots
        figures = {}

        def keep(fig, out):
            fig.canvas.draw()
            figures[os.path.basename(out)] = fig

        saved = overlapsim_plots.save
        overlapsim_plots.save = keep
        try:
            self.assertEqual(overlapsim_plots.main([path, "--only", only]), 0)
        finally:
            overlapsim_plots.save = saved
        for fig in figures.values():
            self.addCleanup(overlapsim_plots.plt.close, fig)
        return figures

    def test_timeline_of_256_gpus_marks_gaps_labels_every_gpu_and_keeps_the_legend_off_data(self):
        # Issue 15.18: at 256 GPUs the subset showed no gap marker, labelled every other row (the
        # straggler sat on an unlabelled one) and the legend covered bars.
        with tempfile.TemporaryDirectory() as d:
            make_straggler_dir(d)
            fig = self.draw(d, "timeline")["timeline-ddp.png"]
            ax = fig.axes[0]
            labels = [t.get_text() for t in ax.get_yticklabels()]
            # The shown GPUs: the straggler (137), 0-46 and 240-255 (pick_gpus); each labelled
            # once, the straggler too.
            shown = list(range(47)) + [137] + list(range(240, 256))
            self.assertEqual([x for x in labels if x.startswith("node")],
                             [f"node {g // 4} gpu {g % 4}" for g in shown])
            self.assertIn("node 34 gpu 1", labels)
            # A marker for each run of hidden GPUs: 47-136 and 138-239, in order between them.
            gaps = [x for x in labels if "not shown" in x]
            self.assertEqual(gaps, ["\u2026 90 GPUs not shown", "\u2026 102 GPUs not shown"])
            self.assertEqual(labels.index(gaps[0]), 47)
            self.assertEqual(labels.index(gaps[1]), 49)
            dashed = [ln for ln in ax.get_lines() if ln.get_linestyle() not in ("-", "None")]
            ticks = ax.get_yticks()
            self.assertEqual(sorted(ln.get_ydata()[0] for ln in dashed),
                             sorted([ticks[47], ticks[49]]))
            # Each label sits between its GPU's compute and comm rows.
            rows = {round(y, 6) for c in ax.collections for y in
                    [p.get_extents().y0 + 0.4 for p in c.get_paths()]}
            self.assertIn(round(ticks[48] - 0.5, 6), rows)  # the straggler's compute row
            self.assertIn(round(ticks[48] + 0.5, 6), rows)  # and its comm row
            # The legend lies above the axes and under the title: it covers no bar.
            legend = ax.get_legend().get_window_extent()
            frame = ax.get_window_extent()
            self.assertGreaterEqual(legend.y0, frame.y1)
            self.assertLessEqual(legend.y1, ax.title.get_window_extent().y0)
            self.assertLessEqual(legend.y1, fig.bbox.y1)
            self.assertIn("predicted", ax.get_title())
            self.assertIn("64 of 256 GPUs shown", ax.get_title())

    def test_pipeline_timeline_has_a_row_per_stage_with_micro_batch_numbers(self):
        # Issue 65.7: 128 GPUs of 4 stages (32 each, beyond the 64 shown): one GPU per stage, its
        # ops numbered by micro-batch, its tensor-parallel collectives (comm on the compute
        # stream) drawn on the compute row.
        sys.path.insert(0, HERE)
        import overlapsim_plots
        from matplotlib.colors import to_rgba
        with tempfile.TemporaryDirectory() as d:
            events = []
            for g in range(128):
                stage = g // 32
                events.append({"ph": "M", "pid": g, "name": "process_name",
                               "args": {"name": f"node {g // 8} gpu {g % 8} "
                                                f"(stage {stage}, tp {g % 8}, dp {g % 32 // 8})"}})
                for s in range(4):
                    for mb in range(4):
                        t0 = s * 100e3 + (stage + mb) * 10e3
                        events.append({"ph": "X", "pid": g, "tid": 0, "ts": t0, "dur": 8e3,
                                       "name": "fwd", "cat": "forward",
                                       "args": {"step": s, "micro_batch": mb}})
                        events.append({"ph": "X", "pid": g, "tid": 0, "ts": t0 + 8e3,
                                       "dur": 1e3, "name": "tensor-parallel forward x2 (fwd)",
                                       "cat": "comm", "args": {"step": s}})
            row = {"algorithm": "ddp", "workers": 128, "iteration_time_s": 0.1,
                   "speedup_vs_ddp": 1.0, "measured": False,
                   "steady_state": {"start_s": 0.1, "end_s": 0.4, "steps": 3}}
            with open(os.path.join(d, "trace-ddp.json"), "w") as f:
                json.dump({"traceEvents": events}, f)
            with open(os.path.join(d, "summary.json"), "w") as f:
                json.dump({"scenario": {"name": "pp"}, "results": [row]}, f)
            ax = self.draw(d, "timeline")["timeline-ddp.png"].axes[0]
            labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text().startswith("node")]
            self.assertEqual(labels, [f"node {g // 8} gpu 0 (stage {g // 32}, tp 0, dp 0)"
                                      for g in (0, 32, 64, 96)])
            # Three steps shown, 4 micro-batches each on each of the 4 stages: 0 1 2 3 in order.
            numbers = [t.get_text() for t in ax.texts]
            self.assertEqual(len(numbers), 3 * 4 * 4)
            self.assertEqual(numbers[:4], ["0", "1", "2", "3"])
            comm = to_rgba(overlapsim_plots.CATEGORY_COLOURS["comm"])
            compute_row_comm = [p for c in ax.collections if tuple(c.get_facecolor()[0]) == comm
                                for p in c.get_paths() if abs(p.get_extents().y0 + 0.4) < 1e-6]
            self.assertEqual(len(compute_row_comm), 3 * 4)  # stage 0's, first row

    def test_waiting_for_peers_has_its_own_colour(self):
        sys.path.insert(0, HERE)
        import overlapsim_plots
        from matplotlib.colors import to_rgba
        with tempfile.TemporaryDirectory() as d:
            make_straggler_dir(d, gpus=4, per_node=4, straggler=3)
            figures = self.draw(d, "timeline,timeline-compare")
            ax = figures["timeline-ddp.png"].axes[0]
            waiting = to_rgba(overlapsim_plots.CATEGORY_COLOURS["waiting"])
            comm = to_rgba(overlapsim_plots.CATEGORY_COLOURS["comm"])
            self.assertNotEqual(waiting, comm)

            def spans(colour, row):
                """(start, width) in ms of the bars of `colour` on `row` (2 per GPU)."""
                out = []
                for c in ax.collections:
                    if tuple(c.get_facecolor()[0]) == colour:
                        for p in c.get_paths():
                            e = p.get_extents()
                            if abs(e.y0 + 0.4 - row) < 1e-6:
                                out.append((round(e.x0, 6), round(e.width, 6)))
                return sorted(out)

            # The window opens at 200 ms and shows three steps. GPU 0 waits 80 ms from 80 ms of
            # each step, then moves data for 20 ms; the straggler (GPU 3) never waits.
            self.assertEqual(spans(waiting, 1), [(80.0, 80.0), (280.0, 80.0), (480.0, 80.0)])
            self.assertEqual(spans(comm, 1), [(160.0, 20.0), (360.0, 20.0), (560.0, 20.0)])
            self.assertEqual(spans(waiting, 7), [])
            self.assertEqual(spans(comm, 7), [(160.0, 20.0), (360.0, 20.0), (560.0, 20.0)])
            for name, fig in figures.items():
                legend = fig.axes[0].get_legend()
                self.assertIn("waiting for peers", [t.get_text() for t in legend.get_texts()], name)
                for axes in fig.axes:  # the comparison's legend covers none of its panels
                    self.assertFalse(legend.get_window_extent().overlaps(axes.get_window_extent()),
                                     name)

    def test_titles_say_predicted_or_measured(self):
        with tempfile.TemporaryDirectory() as d:
            make_straggler_dir(d, gpus=4, per_node=4, straggler=3, measured=True)
            figures = self.draw(d, "timeline,timeline-compare,speedup")
            title = {name: fig.axes[0].get_title() for name, fig in figures.items()}
            self.assertIn("ddp timeline, measured", title["timeline-ddp-measured.png"])
            self.assertNotIn("predicted", title["timeline-ddp-measured.png"])
            self.assertIn("ddp timeline, predicted", title["timeline-ddp.png"])
            self.assertIn("predicted timelines", title["timeline-compare.png"])
            # validate's summary holds both: the bars say which is which.
            self.assertIn("predicted and measured", title["speedup.png"])
            speedup = figures["speedup.png"].axes[0]
            self.assertEqual([t.get_text() for t in speedup.get_xticklabels()],
                             ["ddp\n(measured)", "ddp\n(predicted)"])

    def test_what_does_not_fit_is_greyed_and_labelled(self):
        # Issue 62.1: acco needs 79.8 GB of the 75 GB an 80 GB GPU has (less its reserve): its
        # speedup bar is grey and says so, and so does its memory bar.
        with tempfile.TemporaryDirectory() as d:
            make_output_dir(d)
            path = os.path.join(d, "summary.json")
            with open(path) as f:
                summary = json.load(f)
            for r in summary["results"]:
                r["memory_available_bytes"] = 7.5e10
                r["fits"] = r["algorithm"] != "acco"
            summary["results"][1]["peak_memory_bytes"] = 7.98e10
            summary["results"][1]["memory_breakdown"]["activations"] = 6.38e10
            with open(path, "w") as f:
                json.dump(summary, f)
            figures = self.draw(d, "speedup,memory")
            import matplotlib.colors
            speedup = figures["speedup.png"].axes[0]
            greys = [matplotlib.colors.to_hex(b.get_facecolor()) for b in speedup.patches]
            self.assertEqual(greys[1], "#c8c8c8")
            self.assertNotEqual(greys[0], "#c8c8c8")
            labels = [t.get_text() for t in speedup.texts]
            self.assertTrue(labels[1].startswith("does not fit\n79.8 GB > 75 GB\n"), labels)
            self.assertFalse(any("does not fit" in t for i, t in enumerate(labels) if i != 1))
            memory = [t.get_text() for t in figures["memory.png"].axes[0].texts]
            self.assertEqual(memory, ["does not fit\n79.8 GB > 75 GB"])

    def test_missing_summary_is_an_error(self):
        with tempfile.TemporaryDirectory() as d:
            r = self.run_plots(d)
            self.assertEqual(r.returncode, 1)
            self.assertIn("summary.json", r.stderr)

    def test_malformed_summaries_are_one_line_errors(self):
        # Issue 26.11: null, [] and {"results": null} ended in a traceback; so did rows of the
        # wrong shape and metrics of the wrong type.
        row = {"algorithm": "ddp", "iteration_time_s": 0.1}
        cases = {
            "null": "expected a JSON object with 'results', got null",
            "[]": "expected a JSON object with 'results', got a list",
            '"text"': "expected a JSON object with 'results', got a string",
            "{}": "key 'results': expected a list of rows, got null",
            '{"results": null}': "key 'results': expected a list of rows, got null",
            '{"results": {"ddp": 1}}': "key 'results': expected a list of rows, got {\"ddp\": 1}",
            '{"results": [3]}': "key 'results.0': expected a row (an object), got 3",
            '{"results": [{"workers": 2}]}': "key 'results.0.algorithm': expected a name, got null",
            '{"results": [{"algorithm": "ddp", "iteration_time_s": "fast"}]}':
                "key 'results.0.iteration_time_s': expected a number, got \"fast\"",
            '{"results": [{"algorithm": "ddp", "samples_per_step": true}]}':
                "key 'results.0.samples_per_step': expected a number, got true",
            '{"results": [{"algorithm": "ddp", "memory_breakdown": "big"}]}':
                "key 'results.0.memory_breakdown': expected an object or list of numbers, got "
                "\"big\"",
            '{"results": [{"algorithm": "ddp", "memory_breakdown": {"params": [1]}}]}':
                "key 'results.0.memory_breakdown.params': expected a number, got [1]",
            '{"results": [{"algorithm": "ddp", "steady_state": {"steps": "3"}}]}':
                "key 'results.0.steady_state.steps': expected a number, got \"3\"",
            '{"scenario": "s", "results": []}': "key 'scenario': expected an object, got \"s\"",
            '{"sweep": 5, "results": []}':
                "key 'sweep': expected an object whose 'vary' lists the varied keys, got 5",
            '{"sweep": {"vary": [1]}, "results": []}':
                "key 'sweep': expected an object whose 'vary' lists the varied keys, got "
                "{\"vary\": [1]}",
        }
        cases[json.dumps({"results": [row, [row]]})] = \
            "key 'results.1': expected a row (an object), got [{\"algorithm\": \"ddp\", " \
            "\"iteration_time_s\": 0.1}]"
        for text, message in cases.items():
            with tempfile.TemporaryDirectory() as d:
                with open(os.path.join(d, "summary.json"), "w") as f:
                    f.write(text)
                r = self.run_plots(d)
                self.assertEqual(r.returncode, 1, text)
                self.assertNotIn("Traceback", r.stderr, text)
                self.assertEqual(r.stderr.strip(),
                                 f"overlapsim plot: {d}/summary.json: {message}", text)
                self.assertEqual(os.listdir(d), ["summary.json"], text)  # no plot drawn

    def test_unreadable_or_invalid_summaries_are_one_line_errors(self):
        with tempfile.TemporaryDirectory() as d:
            os.mkdir(os.path.join(d, "summary.json"))  # unreadable (also as root)
            r = self.run_plots(d)
            self.assertEqual(r.returncode, 1)
            self.assertEqual(r.stderr.strip(),
                             f"overlapsim plot: {d}/summary.json: cannot read: Is a directory")
        with tempfile.TemporaryDirectory() as d:
            r = self.run_plots(os.path.join(d, "nowhere"))
            self.assertEqual(r.returncode, 1)
            self.assertEqual(r.stderr.strip(), f"overlapsim plot: {d}/nowhere/summary.json: "
                             "cannot read: No such file or directory")
        # Invalid JSON, and JSON nested too deep for Python's parser (a RecursionError).
        for text in ('{"results": [', "[" * 100000 + "]" * 100000, "\xff\xfe"):
            with tempfile.TemporaryDirectory() as d:
                with open(os.path.join(d, "summary.json"), "w", encoding="latin-1") as f:
                    f.write(text)
                r = self.run_plots(d)
                self.assertEqual(r.returncode, 1, text[:20])
                self.assertNotIn("Traceback", r.stderr, text[:20])
                self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
                self.assertTrue(r.stderr.startswith(
                    f"overlapsim plot: {d}/summary.json: expected a JSON summary, got invalid JSON"),
                    r.stderr)

    def test_null_metrics_are_nan_not_a_failure(self):
        # NaN is written as null: without a DDP reference (DDP failed) every speedup is null, and
        # the speedup plot failed on None, which fails the whole command.
        with tempfile.TemporaryDirectory() as d:
            make_output_dir(d, algorithms=("ddp", "acco"), gpus=2, steps=3)
            with open(os.path.join(d, "summary.json")) as f:
                summary = json.load(f)
            summary["results"][0] = {"algorithm": "ddp", "workers": 2, "error": "it failed"}
            summary["results"][1]["speedup_vs_ddp"] = None
            summary["results"][1]["memory_breakdown"]["buffers"] = None
            with open(os.path.join(d, "summary.json"), "w") as f:
                json.dump(summary, f)
            r = self.run_plots(d)
            self.assertEqual(r.returncode, 0, r.stderr)
            for name in ("speedup.png", "idle.png", "memory.png", "timeline-acco.png"):
                self.assertTrue(is_png(os.path.join(d, name)), name)
            speedup = self.draw(d, "speedup")["speedup.png"].axes[0]
            self.assertEqual([p.get_height() for p in speedup.patches], [0])  # no bar
            self.assertIn("no DDP\nreference", [t.get_text() for t in speedup.texts])
            self.assertEqual(speedup.get_ylim(), (0, 1.25))

    def test_damaged_traces_are_warnings_not_tracebacks(self):
        for doc in ([1, 2], {"traceEvents": None}, {"traceEvents": [1]},
                    {"traceEvents": [{"ph": "X", "dur": "long"}]}):
            with tempfile.TemporaryDirectory() as d:
                make_output_dir(d, algorithms=("ddp", "acco"), gpus=2, steps=3)
                with open(os.path.join(d, "trace-acco.json"), "w") as f:
                    json.dump(doc, f)
                r = self.run_plots(d)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertNotIn("Traceback", r.stderr)
                self.assertIn("trace-acco.json: not a readable trace", r.stderr)
                self.assertFalse(os.path.exists(os.path.join(d, "timeline-acco.png")))
                self.assertTrue(is_png(os.path.join(d, "timeline-ddp.png")))

    def test_an_unwritable_directory_fails_with_one_line(self):
        # Issue 26.8: a failed plot exited 0.
        if os.geteuid() == 0:
            self.skipTest("root writes into read-only directories")
        with tempfile.TemporaryDirectory() as d:
            make_output_dir(d, algorithms=("ddp",), gpus=2, steps=3)
            os.chmod(d, 0o555)
            try:
                r = self.run_plots(d)
            finally:
                os.chmod(d, 0o755)
            self.assertEqual(r.returncode, 1)
            self.assertIn("cannot write", r.stderr)
            self.assertNotIn("Traceback", r.stderr)

    def test_a_failed_save_fails_the_run(self):
        # The same as root: saving into a path that is a directory fails with the OS error.
        with tempfile.TemporaryDirectory() as d:
            make_output_dir(d, algorithms=("ddp",), gpus=2, steps=3)
            os.mkdir(os.path.join(d, "speedup.png"))
            r = self.run_plots(d)
            self.assertEqual(r.returncode, 1)
            self.assertIn("speedup.png: cannot write", r.stderr)
            self.assertNotIn("Traceback", r.stderr)
            self.assertTrue(os.path.exists(os.path.join(d, "idle.png")))  # the others are drawn

    def test_signals_stop_it_without_a_traceback(self):
        # Issue 26.7: Ctrl-C printed Python's traceback; the script now dies of the signal.
        sys.path.insert(0, HERE)
        import overlapsim_plots  # noqa: F401 (installs the dispositions)
        import signal
        self.assertEqual(signal.getsignal(signal.SIGINT), signal.SIG_DFL)
        self.assertEqual(signal.getsignal(signal.SIGTERM), signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)

    def test_every_algorithm_and_label_has_a_colour_of_its_own(self):
        # Issue 27.9: fsdp, ddp-paper and custom labels wrapped onto DDP's colour. Issue 28.1:
        # the algorithms' colours come from their descriptors, through the summary.
        binary = os.environ.get("OVERLAPSIM_BINARY")
        if not binary:
            self.skipTest("OVERLAPSIM_BINARY not set (ctest sets it)")
        sys.path.insert(0, HERE)
        import overlapsim_plots as p
        registry = json.loads(subprocess.run([binary, "algorithms", "--json"], check=True,
                                             capture_output=True, text=True).stdout)
        p.SUMMARY_COLOURS.clear()
        p.SUMMARY_COLOURS.update({a["name"]: a["colour"] for a in registry})
        names = [a["name"] for a in registry] + ["ddp-paper", "mine", "hsdp-adamw",
                                                 "flexdemo-random"]
        colours = [p.algorithm_colour(n) for n in names]
        self.assertEqual(len(set(colours)), len(names))
        p.SUMMARY_COLOURS.clear()

    def test_ciede2000_matches_sharmas_test_data(self):
        # Sharma, Wu and Dalal (2005), Table 1: pairs 1, 7, 17, 25 and 34.
        for lab1, lab2, want in (((50, 2.6772, -79.7751), (50, 0, -82.7485), 2.0425),
                                 ((50, 0, 0), (50, -1, 2), 2.3669),
                                 ((50, 2.5, 0), (73, 25, -18), 27.1492),
                                 ((60.2574, -34.0099, 36.2677), (60.4626, -34.1751, 39.4387),
                                  1.2644),
                                 ((2.0776, 0.0795, -1.135), (0.9033, -0.0636, -0.5514), 0.9082)):
            self.assertAlmostEqual(ciede2000(lab1, lab2), want, places=4)
        self.assertAlmostEqual(ciede2000(srgb_to_lab("#FFFFFF"), (100, 0, 0)), 0, places=2)

    def test_every_two_colours_are_at_least_ciede2000_12_apart(self):
        # Issue 62.9: local-sgd #8C8C8C and flexdemo #7F7F7F were 4.7 apart, dpu and a spare 5.0,
        # zero1 and streaming-diloco 6.4, cdp-v2 and dreamddp 7.2, cdp-v1 and plsgd-enp 9.1, acco
        # and asc-wfbp 9.1. The algorithms' colours (`overlapsim algorithms --json`) and the spare
        # ones other labels take, every pair.
        binary = os.environ.get("OVERLAPSIM_BINARY")
        if not binary:
            self.skipTest("OVERLAPSIM_BINARY not set (ctest sets it)")
        sys.path.insert(0, HERE)
        import overlapsim_plots as p
        registry = json.loads(subprocess.run([binary, "algorithms", "--json"], check=True,
                                             capture_output=True, text=True).stdout)
        colours = [(a["name"], a["colour"]) for a in registry]
        colours += [(f"spare {k}", c) for k, c in enumerate(p.PALETTE)]
        close = []
        for i, (n1, c1) in enumerate(colours):
            for n2, c2 in colours[i + 1:]:
                d = ciede2000(srgb_to_lab(c1), srgb_to_lab(c2))
                if d < MIN_COLOUR_DISTANCE:
                    close.append(f"{n1} {c1} / {n2} {c2}: {d:.1f}")
        self.assertEqual(close, [])

    def write_trace(self, d, name, gpus, ops, row):
        """A trace of `gpus` (pids) with `ops` (pid, tid, start ms, duration ms, category) and a
        summary with `row` for algorithm `name`."""
        events = [{"ph": "M", "pid": g, "name": "process_name",
                   "args": {"name": f"node {g // 8} gpu {g % 8}"}} for g in gpus]
        events += [{"ph": "X", "pid": g, "tid": tid, "ts": t * 1e3, "dur": dur * 1e3, "name": cat,
                    "cat": cat} for g, tid, t, dur, cat in ops]
        with open(os.path.join(d, f"trace-{name}.json"), "w") as f:
            json.dump({"traceEvents": events}, f)
        with open(os.path.join(d, "summary.json"), "w") as f:
            json.dump({"scenario": {"name": "t"}, "results": [dict(row, algorithm=name)]}, f)

    def test_comparison_counts_the_jobs_gpus_not_the_traced_ones(self):
        # Issue 62.9: rank classes trace GPUs 8-15 of a 32-GPU job; the comparison shows 4 of
        # them and said "4 GPUs not shown" (of the 8 traced) instead of 8 before, 4 between
        # and 16 after.
        with tempfile.TemporaryDirectory() as d:
            gpus = range(8, 16)
            ops = [(g, 0, s * 100.0, 80.0, "forward") for g in gpus for s in range(4)]
            self.write_trace(d, "ddp", gpus, ops, {"workers": 32, "steady_state": {
                "start_s": 0.1, "end_s": 0.4, "steps": 3}})
            ax = self.draw(d, "timeline-compare")["timeline-compare.png"].axes[0]
            labels = [t.get_text() for t in ax.get_yticklabels()]
            self.assertEqual(labels, ["\u2026 8 GPUs not shown", "node 1 gpu 0", "node 1 gpu 1",
                                      "node 1 gpu 2", "\u2026 4 GPUs not shown", "node 1 gpu 7",
                                      "\u2026 16 GPUs not shown"])

    def test_timeline_shows_the_longest_sync_whole_and_no_unexplained_bands(self):
        # Issue 62.9: a DiLoCo-like 30 s sync starting in a 3 s steady-state window was cut at the
        # window's end; now the window runs from the same start to the sync's end and 5% of it
        # more. FSDP's comm rows showed pale bands (white edges, grid lines over the bars) that no
        # legend entry explained.
        with tempfile.TemporaryDirectory() as d:
            ops = [(g, 0, s * 1000.0, 900.0, "forward") for g in (0, 1) for s in range(40)]
            ops += [(g, 1, 2000.0 + k * 10.0, 10.0, "comm") for g in (0, 1) for k in range(50)]
            ops += [(g, 1, 3000.0, 30000.0, "comm") for g in (0, 1)]
            self.write_trace(d, "diloco", (0, 1), ops, {"workers": 2, "steady_state": {
                "start_s": 1.0, "end_s": 4.0, "steps": 3}})
            fig = self.draw(d, "timeline")["timeline-diloco.png"]
            ax = fig.axes[0]
            self.assertEqual(ax.get_xlim(), (0.0, 33500.0))  # 1 s to 3 s + 1.05 x 30 s
            self.assertIn("time since 1000.0 ms", ax.get_xlabel())
            sync = [p.get_extents() for c in ax.collections for p in c.get_paths()
                    if p.get_extents().width > 20000]
            self.assertEqual([(e.x0, e.width) for e in sync], [(2000.0, 30000.0)] * 2)
            # Back-to-back ops (the 50 10-ms gathers) are edged in their own colour, and the grid
            # lies under the bars: nothing pale is drawn that the legend does not name.
            for c in ax.collections:
                self.assertEqual(c.get_edgecolor().tolist(), c.get_facecolor().tolist())
            self.assertTrue(ax.get_axisbelow())

    def test_speedup_labels_clear_the_ddp_line_and_the_memory_legend_covers_no_label(self):
        # Issue 62.9: a label of a bar just under 1x was struck through by the DDP line, and the
        # memory legend (upper right) covered the last bar's "does not fit" label.
        with tempfile.TemporaryDirectory() as d:
            make_output_dir(d, algorithms=("ddp", "zero1", "fsdp", "acco", "cdp-v2"))
            path = os.path.join(d, "summary.json")
            with open(path) as f:
                summary = json.load(f)
            for r, speedup in zip(summary["results"], (1.0, 0.89, 0.5, 1.14, 0.97)):
                r["speedup_vs_ddp"] = speedup
            last = summary["results"][-1]
            last["peak_memory_bytes"], last["exceeds_gpu_memory"] = 9.5e10, True
            last["memory_breakdown"]["activations"] = 7.9e10
            with open(path, "w") as f:
                json.dump(summary, f)
            figures = self.draw(d, "speedup,memory")
            fig = figures["speedup.png"]
            ax = fig.axes[0]
            line = ax.transData.transform((0, 1.0))[1]
            texts = [t for t in ax.texts if "samples/step" in t.get_text()]
            self.assertEqual(len(texts), 5)
            for t in texts:
                box = t.get_window_extent()
                self.assertFalse(box.y0 < line < box.y1, t.get_text())
                self.assertLessEqual(box.y1, ax.bbox.y1, t.get_text())
            # The 0.5x label stays on its bar; the 0.89x and 0.97x ones sit on the line.
            self.assertEqual(sorted(round(t.xy[1], 6) for t in texts), [0.5, 1.0, 1.0, 1.0, 1.14])
            fig = figures["memory.png"]
            ax = fig.axes[0]
            legend = ax.get_legend().get_window_extent()
            notes = [t for t in ax.texts if "does not fit" in t.get_text()]
            self.assertEqual(len(notes), 1)
            self.assertFalse(legend.overlaps(notes[0].get_window_extent()))
            self.assertFalse(legend.overlaps(ax.bbox))
            self.assertLessEqual(legend.y1, ax.bbox.y0)
            self.assertGreaterEqual(legend.y0, fig.bbox.y0)

    def test_loss_vs_time_goes_logarithmic_when_times_span_over_100x(self):
        # Issue 62.9: one algorithm 200x slower squeezed the others against the left edge.
        for slow_rate, scale in ((5.0, "log"), (500.0, "linear")):
            with tempfile.TemporaryDirectory() as d:
                rows = [{"algorithm": "ddp", "throughput_samples_s": 1000.0},
                        {"algorithm": "acco", "throughput_samples_s": slow_rate}]
                with open(os.path.join(d, "summary.json"), "w") as f:
                    json.dump({"scenario": {"name": "loss", "training": {"target_loss": 2.0}},
                               "results": rows}, f)
                with open(os.path.join(d, "loss.csv"), "w") as f:
                    f.write("algorithm,samples,loss\n")
                    for a in ("ddp", "acco"):
                        for k in range(1, 11):
                            f.write(f"{a},{1000 * k},{4 - 0.2 * k}\n")
                ax = self.draw(d, "loss")["loss-vs-time.png"].axes[0]
                # ddp's times run 1 to 10 s; acco's 200 to 2000 s at 5 samples/s, 2 to 20 s at 500.
                self.assertEqual(ax.get_xscale(), scale, slow_rate)
                self.assertEqual("log scale" in ax.get_xlabel(), scale == "log")


if __name__ == "__main__":
    unittest.main()
