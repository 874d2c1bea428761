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

    def test_sweep_axes_go_logarithmic_over_decades(self):
        # Issue 15.18: speedups from 0.5x to 60.9x on a linear axis.
        sys.path.insert(0, HERE)
        import overlapsim_plots
        self.assertTrue(overlapsim_plots.spans_decades([0.5, 1.0, 60.9]))
        self.assertFalse(overlapsim_plots.spans_decades([0.5, 1.0, 15.85]))
        self.assertFalse(overlapsim_plots.spans_decades([None, float("nan"), 0, 2.0]))

    def test_missing_summary_is_an_error(self):
        with tempfile.TemporaryDirectory() as d:
            r = self.run_plots(d)
            self.assertEqual(r.returncode, 2)
            self.assertIn("summary.json", r.stderr)


if __name__ == "__main__":
    unittest.main()
