#!/usr/bin/env python3
"""A malformed-input campaign against `overlapsim run` (issue 15's "Done when").

Mutates the shipped scenarios line by line (nasty values, deleted, duplicated and junk lines,
truncation, re-indentation, unknown keys), runs each mutant with a time budget, then runs a fixed
set of targeted cases (issue 26): YAML alias cycles and deep nesting, special files (/dev/zero,
/dev/urandom, a FIFO, a directory, as the scenario and as the files it names), huge sizes and
counts (bucket_cap: 1e7PB, a billion layers or steps) under an address-space limit, fractional
counts, values of 10 MB, and work past the time, op or memory budget (issue 63: ACCO at 1 kB/s,
ring steps on 4,096 nodes, a million-point sweep, `collective` on a million GPUs). It counts what a user must never see:
  signal      the process died of a signal (or exit status >= 128)
  abort       stderr shows an abort inside the simulation (SimGrid CRITICAL, terminate, bad_alloc)
              or a sanitizer finding (AddressSanitizer, UBSan's "runtime error")
  hang        no exit within the budget
  partial     a failed run left files in its output directory
  unclear     a failed run's error names neither the scenario file with a line nor a key
  bad-output  a successful run's summary.json is missing, unparsable or holds non-finite times
  flood       stderr over 64 KiB (an error echoing a whole 10 MB value)
  accepted    a targeted case that must be refused ran instead
  lost        a user's file in --out was changed or deleted (look-alike outputs, issue 26.1), or
              beside it (directories named like a dead run's staging directory, issue 63.1)
  exposed     a 0700 output directory lost its mode (issue 63.2)
  exit-code   a refused targeted command exited with a status other than 1 (issue 63.8)
Targeted commands besides `run` (issue 63): merge of a 200,000-deep shard and of '', command-line
errors, a calibration profile with 1e30 ranks or 1e308 B/s, a layer table's bp_s 1e308, --set with
an empty key, a gzip bomb given to profile --import-torch-profiler.
Prints one line per problem (up to --show), then the counts. Exit status 0 (a benchmark), or with
--strict 1 when there was any problem (scripts/sanitize.sh, in CI, on the sanitizer build).

  python3 bench/fuzz_scenarios.py [--cases 500] [--seed 1] [--timeout 20] [--jobs 2]
      [--binary build/overlapsim] [--memory-limit 4096] [--no-targeted] [--strict]
"""
import argparse
import concurrent.futures
import gzip
import json
import math
import os
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

NASTY_VALUES = [
    '""', "''", "-1", "0", "1e308", "-1e308", "1e-300", ".nan", ".inf", "-.inf", "nan", "1e308TB/s",
    "1e308h", "1e-300B/s", "100", "5", "abc", "[]", "{}", "[1, 2]", "{a: 1}", "null", "~", "true",
    "9999999999999999999999", "1048577", "2147483648", "0x10", "1_000", "10 Gb/s", "10Gb/s/s",
    "-10GB", "1e30", "\u00e9\u00e8", "'\\xff'", "*missing", "&anchor 3", "!!binary aGk=",
    "../../escaped", "/", "' '", "1e200", "0.0000001", "12us", "3 ms", "1KiB", "1.5",
]
JUNK_LINES = ["foo: bar", "  - {", "]:", "key", "- - -", "\t\tx: 1", "---", "...", "? complex",
              "a: b: c", "&a x: *a", "<<: *nope", "%YAML 1.2", "nodes: 4", "cluster: {}"]


def mutate(lines, rng):
    lines = list(lines)
    kind = rng.choice(["value", "value", "value", "delete", "duplicate", "junk", "truncate",
                       "indent", "unknown-key"])
    candidates = [i for i, l in enumerate(lines) if l.strip() and not l.lstrip().startswith("#")]
    if not candidates:
        return lines, "empty"
    i = rng.choice(candidates)
    if kind == "value":
        m = re.match(r"^(\s*-?\s*[A-Za-z_][\w.]*\s*:\s*)(.+)$", lines[i])
        if m and not m.group(2).startswith(("{", "[")):
            lines[i] = m.group(1) + rng.choice(NASTY_VALUES)
        else:  # inside a flow map: replace one value
            parts = re.split(r"(:\s*)([^,}\]]+)", lines[i], maxsplit=1)
            if len(parts) >= 4:
                lines[i] = parts[0] + parts[1] + rng.choice(NASTY_VALUES) + "".join(parts[3:])
            else:
                lines[i] = lines[i] + " " + rng.choice(NASTY_VALUES)
    elif kind == "delete":
        del lines[i]
    elif kind == "duplicate":
        lines.insert(i, lines[i])
    elif kind == "junk":
        lines.insert(i, rng.choice(JUNK_LINES))
    elif kind == "truncate":
        lines = lines[:i] + [lines[i][: rng.randrange(len(lines[i]) + 1)]]
    elif kind == "indent":
        lines[i] = " " * rng.choice([0, 1, 3, 5]) + lines[i].lstrip()
    elif kind == "unknown-key":
        indent = re.match(r"^\s*", lines[i]).group(0)
        lines.insert(i, indent + "surprise_key: 1")
    return lines, kind


# A small valid scenario that the targeted cases change in one place.
BASE = """name: fuzz-base
cluster:
  nodes: 2
  gpus_per_node: 1
  gpu: a100-80gb
  inter_node: {bandwidth: 10Gb/s, latency: 5us}
model:
  layers:
    - {name: block, params: 2M, fwd_flops_per_sample: 20G, repeat: 4}
training: {micro_batch: 2, seq_len: 128, steps: 2}
algorithms: [ddp]
"""
TEN_MB = "a" * (10 * 1024 * 1024)


def targeted_cases(workdir):
    """(class, text or None, path to run or None, memory-limited, must fail) for issue 26."""
    def base(old, new):
        assert old in BASE, old
        return BASE.replace(old, new)
    fifo = os.path.join(workdir, "fifo.yaml")
    os.mkfifo(fifo)
    fifo_tsv = os.path.join(workdir, "fifo.tsv")
    os.mkfifo(fifo_tsv)
    laughs = "".join(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]\n" for i in range(1, 10))
    cases = [
        ("alias-cycle", BASE + "a: &a [*a]\n", None, False, True),
        ("alias-cycle", BASE + "a: &a {k: *a}\n", None, False, True),
        ("alias-cycle", base("  gpus_per_node: 1\n", "  gpus_per_node: 1\n  stragglers: &s [*s]\n"),
         None, False, True),
        ("alias-cycle", base("algorithms: [ddp]", "algorithms: &g [ddp, *g]"), None, False, True),
        ("deep-nesting", BASE + "x: " + "[" * 1000 + "]" * 1000 + "\n", None, False, True),
        ("deep-nesting", BASE + "x: " + "[" * 100000 + "\n", None, False, True),
        ("alias-bomb", BASE + "l0: &l0 [x]\n" + laughs, None, False, True),
        ("special-file", None, "/dev/zero", False, True),
        ("special-file", None, "/dev/urandom", False, True),
        ("special-file", None, "/dev/null", False, True),
        ("special-file", None, fifo, False, True),
        ("special-file", None, workdir, False, True),
        ("special-file", base("model:\n  layers:", "model:\n  profile: /dev/zero\n  layers:"),
         None, False, True),
        ("special-file", base("  layers:\n    - {name: block, params: 2M, fwd_flops_per_sample: 20G, "
                              "repeat: 4}", f"  profile: {fifo_tsv}"), None, False, True),
        ("special-file", base("steps: 2}", f"steps: 2, loss_curve: {fifo}}}"), None, False, True),
        ("special-file", base("  gpu: a100-80gb\n", "  gpu: a100-80gb\n  calibration: /dev/urandom\n"),
         None, False, True),
    ]
    huge = [
        ("algorithms: [ddp]", "algorithms: [{name: ddp, bucket_cap: 1e7PB}]"),
        ("algorithms: [ddp]", "algorithms: [{name: zero1, bucket_cap: 1e7PB}]"),
        ("algorithms: [ddp]", "algorithms: [{name: fsdp, wrap: 1e7PB}]"),
        ("algorithms: [ddp]", "algorithms: [{name: local-sgd, H: 1000000000}]"),
        ("algorithms: [ddp]", "algorithms: [{name: streaming-diloco, fragments: 1000000000}]"),
        ("algorithms: [ddp]", "algorithms: [{name: ddp, bucket_cap: 1e300B}]"),
        ("repeat: 4", "repeat: 1000000000"),
        ("params: 2M", "params: 1e30"),
        ("nodes: 2", "nodes: 1000000000"),
        ("nodes: 2\n  gpus_per_node: 1", "nodes: 1048576\n  gpus_per_node: 1024"),
        ("micro_batch: 2", "micro_batch: 1000000000"),
        ("seq_len: 128", "seq_len: 1000000000"),
        ("steps: 2", "steps: 1000000000"),
        ("steps: 2", "steps: 2, grad_accum: 1000000000"),
        ("  gpu: a100-80gb", "  gpu: {preset: a100-80gb, memory: 1e7PB}"),
        ("model:\n  layers:\n    - {name: block, params: 2M, fwd_flops_per_sample: 20G, repeat: 4}",
         "model: {preset: transformer, vocab: 1e12, d_model: 64, n_layers: 1000000000, n_heads: 1}"),
        ("model:\n  layers:\n    - {name: block, params: 2M, fwd_flops_per_sample: 20G, repeat: 4}",
         "model: {preset: mlp, width: 1e9, depth: 1000000000}"),
    ]
    cases += [("huge", base(old, new), None, True, True) for old, new in huge]
    fractions = [
        ("model:\n  layers:\n    - {name: block, params: 2M, fwd_flops_per_sample: 20G, repeat: 4}",
         "model: {preset: transformer, vocab: 1000, d_model: 64, n_layers: 2, n_heads: 1, d_ff: 1.5}"),
        ("model:\n  layers:\n    - {name: block, params: 2M, fwd_flops_per_sample: 20G, repeat: 4}",
         "model: {preset: transformer, vocab: 1000.5, d_model: 64, n_layers: 2, n_heads: 1}"),
        ("params: 2M", "params: 1.5"),
        ("nodes: 2", "nodes: 2.5"),
    ]
    cases += [("fraction", base(old, new), None, False, True) for old, new in fractions]
    long_values = [
        ("gpu: a100-80gb", f"gpu: {TEN_MB}"),
        ("bandwidth: 10Gb/s", f"bandwidth: {TEN_MB}"),
        ("algorithms: [ddp]", f"algorithms: [{{name: ddp, bucket_cap: {TEN_MB}}}]"),
        ("algorithms: [ddp]", f"algorithms: [{{name: {TEN_MB}, label: x}}]"),
        ("algorithms: [ddp]", f"algorithms: [{TEN_MB}]"),
        ("training:", f"? {TEN_MB}\n: 1\ntraining:"),  # a key (YAML's plain keys stop at 1024)
        ("steps: 2}", f"steps: 2, loss_curve: {TEN_MB}}}"),
    ]
    cases += [("long-value", base(old, new), None, False, True) for old, new in long_values]
    # Issue 63.5-6: work that ran for minutes or out of memory before an up-front estimate counted
    # it; each must be refused at once (the estimate of time, ops or memory, exit 1).
    budget = [
        # ACCO accumulates micro-batches for as long as a round communicates: millions a round.
        (base("bandwidth: 10Gb/s", "bandwidth: 1kB/s").replace("[ddp]", "[acco]"), ()),
        (base("latency: 5us", "latency: 1h").replace("[ddp]", "[acco]"), ()),
        # Ring steps on 4,096 nodes: 100M messages, and 110 B per GPU pair.
        (base("nodes: 2", "nodes: 4096\n  collectives: steps"), ()),
        # 19M ops (inside the op budget), but 800k collectives a step of 34 us each on 8 GPUs.
        (base("params: 2M", "params: 100M").replace("gpus_per_node: 1", "gpus_per_node: 8")
         .replace("[ddp]", "[{name: ddp, bucket_cap: 1KB}]")
         .replace("  gpu: a100-80gb\n", "  gpu: a100-80gb\n  intra_node: nvlink3\n"), ()),
        # A million-point sweep, before any point is loaded.
        (BASE, ("sweep", "--vary", "seed=" + ",".join(map(str, range(1, 1001))),
                "--vary", "training.micro_batch=" + ",".join(map(str, range(1, 1001))))),
        # A broadcast has a root: `collective` cannot fold it, and runs all 1,048,576 GPUs.
        (base("nodes: 2\n  gpus_per_node: 1", "nodes: 131072\n  gpus_per_node: 8\n"
              "  intra_node: nvlink3"),
         ("collective", "--op", "broadcast", "--size", "1K:1G")),
    ]
    cases += [("budget", text, None, True, True, command) for text, command in budget]
    return cases


def run_case(args, case, text, workdir, path=None, memory_limited=False, must_fail=False,
             command=()):
    scenario = path or os.path.join(workdir, f"case{case}.yaml")
    out = os.path.join(workdir, f"out{case}")
    if path is None:
        with open(scenario, "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(text)
    limit = args.memory_limit * 1024 * 1024

    def preexec():  # in the child: its address space (and its children's) stays under the limit
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    env, limited = None, memory_limited
    if memory_limited and args.asan:
        # ASan reserves terabytes of address space for its shadow: RLIMIT_AS would stop it before
        # main. Its own resident-memory limit ends the process with a report instead.
        env = dict(os.environ)
        env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS"),
                                                     f"hard_rss_limit_mb={args.memory_limit}"]))
        limited = False
    # `command`: ("sweep", its arguments...) or ("collective", ...) instead of `run`.
    verb, extra = (command[0], list(command[1:])) if command else ("run", [])
    argv = [args.binary, verb, scenario] + extra
    if verb != "collective":
        argv += ["--out", out, "--no-plots", "--no-progress"]
    try:
        p = subprocess.run(argv, capture_output=True, timeout=args.timeout,
                           stdin=subprocess.DEVNULL, env=env,
                           preexec_fn=preexec if limited else None)
        rc, err = p.returncode, p.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        shutil.rmtree(out, ignore_errors=True)
        return "hang", os.path.basename(scenario), ""
    problems = []
    if rc < 0 or rc >= 128:
        problems.append("signal")
    if re.search(r"CRITICAL|terminate called|bad_alloc|Aborted|core dumped|AddressSanitizer|runtime error:", err):
        problems.append("abort")
    if len(err) > 64 * 1024:
        problems.append("flood")
    if rc != 0:
        if os.path.isdir(out) and os.listdir(out):
            problems.append("partial")
        # A scenario that cannot be read at all is named by its path; one that can, by file:line.
        # A budget's refusal (issue 63.5) names the file: the whole scenario is the cause.
        named = re.search(re.escape(os.path.basename(scenario)) + r":\d+", err) or \
            re.search(re.escape(os.path.basename(scenario)) +
                      r": the (run|command|simulation) would", err) or \
            re.search(r"key '", err) or (path is not None and path in err)
        if not named:
            problems.append("unclear")
    elif must_fail:
        problems.append("accepted")
    else:
        try:
            with open(os.path.join(out, "summary.json")) as f:
                rows = json.load(f)["results"]
            if not rows or any(not (isinstance(r.get("iteration_time_s"), (int, float))
                                    and math.isfinite(r["iteration_time_s"])) for r in rows):
                problems.append("bad-output")
        except (OSError, ValueError, KeyError, TypeError):
            problems.append("bad-output")
    shutil.rmtree(out, ignore_errors=True)
    if path is None:
        os.remove(scenario)
    first_line = err.strip().splitlines()[0] if err.strip() else f"exit {rc}"
    return ",".join(problems) or ("ok" if rc == 0 else "rejected"), os.path.basename(scenario), \
        first_line


# Output directories holding a user's files that look like overlapsim's (issue 26.1): a run must
# refuse each and leave every file byte-identical. None means "the files of a real previous run",
# written first; the other entries are then added or overwritten.
LOOKALIKE_CASES = [
    ("photos", {"holiday.png": b"x", "trace-mine.json": b"x", "loss.csv": b"x"}),
    ("draft", {"draft.tmp.docx": b"my thesis"}),
    ("summary-only", {"summary.json": b'{"results": []}', "summary.csv": b"a,b\n"}),
    ("forged-manifest", {".overlapsim-outputs.json":
                         b'{"tool": "overlapsim", "files": [{"name": "holiday.png", "bytes": 1, '
                         b'"crc32": 0}]}', "holiday.png": b"x"}),
    ("previous-run-plus-file", {None: b"", "notes.md": b"mine"}),
    ("previous-run-edited", {None: b"", "report.md": b"my edits"}),
]


def command_cases(workdir):
    """(class, arguments, what the error must say) for commands other than `run` on a scenario
    (issue 63): each must be refused with exit status 1, promptly, naming the problem."""
    def write(name, data):
        path = os.path.join(workdir, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb" if isinstance(data, bytes) else "w") as f:
            f.write(data)
        return path
    scenario = write("cmd-base.yaml", BASE)
    # Deep inside the scenario, which merge copies: the copy recursed off the stack (SIGSEGV).
    shard = os.path.dirname(write("deep-shard/summary.json",
                                  '{"sweep": {"vary": ["a"], "points": 1}, "scenario": {"x": ' +
                                  "[" * 200000 + "]" * 200000 + '}, "results": []}'))
    out = os.path.join(workdir, "cmd-out")
    link = {"op": "all_reduce", "ranks": 2, "latency_s": 1e-5, "bandwidth_Bps": 1e10}

    def calibration(name, **change):
        cal = write(name, json.dumps({"schema": "overlapsim-calibration/1",
                                      "links": {"inter_node": dict(link, **change)}}))
        return write(name + ".yaml", BASE.replace("  gpu: a100-80gb\n",
                                                  f"  gpu: a100-80gb\n  calibration: {cal}\n"))
    table = write("bp.tsv", "bp_s\tcomm_s\n0.1\t0.1\n1e308\t0.1\n")
    layers = "  layers:\n    - {name: block, params: 2M, fwd_flops_per_sample: 20G, repeat: 4}"
    bomb = write("bomb.json.gz", gzip.compress(b"\0" * (16 << 20), 1) * 8)  # 128 MiB inflated
    return [
        ("merge-deep", ["merge", out, shard], "nested more than 64 levels"),
        ("merge-empty", ["merge", "", shard], "empty"),
        ("merge-empty", ["merge", out, "", shard], "empty"),
        ("cli-exit", ["profile", "--import-nccl-tests", scenario, "--ranks", "1e20"], "--ranks"),
        ("cli-exit", ["collective", "--algorithm", "nvls"], "--algorithm"),
        ("cli-exit", ["sweep", scenario, "--vary", "training.steps=2,3", "--jobs", "abc"], "--jobs"),
        ("cli-exit", ["merge", out], "shards"),
        ("cli-exit", ["run", scenario, "--out", ""], "--out"),
        ("cli-exit", ["frobnicate"], "frobnicate"),
        ("cli-exit", ["validate", scenario, "--timeout", "-1"], "--timeout"),
        ("calibration", ["run", calibration("ranks.json", ranks=1e30)], "'ranks'"),
        ("calibration", ["run", calibration("bw.json", bandwidth_Bps=1e308)], "'bandwidth_Bps'"),
        ("layer-table", ["run", write("bp.yaml", BASE.replace(layers, f"  profile: {table}"))],
         "bp.tsv:3: column 'bp_s'"),
        ("set-key", ["run", scenario, "--set", "cluster.nodes.=1"], "is empty"),
        ("gzip-bomb", ["profile", scenario, "--import-torch-profiler", bomb], "not valid JSON"),
    ]


def run_command_case(args, name, argv, expect):
    """A targeted command (command_cases): anything but exit status 1 with `expect` in its error
    is a problem."""
    try:
        p = subprocess.run([args.binary] + argv + ["--no-plots"] * (argv[0] in ("run", "sweep")),
                           capture_output=True, timeout=args.timeout, stdin=subprocess.DEVNULL)
        rc, err = p.returncode, p.stderr.decode("utf-8", "replace") + p.stdout.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        return "hang", name, " ".join(argv)[:100]
    problems = []
    if rc < 0 or rc >= 128:
        problems.append("signal")
    if re.search(r"CRITICAL|terminate called|bad_alloc|Aborted|core dumped|AddressSanitizer|"
                 r"runtime error:|filesystem error|Deadlock", err):
        problems.append("abort")
    if rc == 0:
        problems.append("accepted")
    elif rc != 1:
        problems.append("exit-code")
    if rc != 0 and expect not in err:
        problems.append("unclear")
    first_line = err.strip().splitlines()[0] if err.strip() else f"exit {rc}"
    return ",".join(problems) or "rejected", name, first_line


def run_lookalike(args, case, name, files, workdir):
    """Runs BASE into a directory of a user's look-alike files; anything but a refusal that leaves
    every file as it was is a problem."""
    scenario = os.path.join(workdir, f"case{case}.yaml")
    out = os.path.join(workdir, f"out{case}")
    with open(scenario, "w") as f:
        f.write(BASE)
    command = [args.binary, "run", scenario, "--out", out, "--no-plots", "--no-progress"]
    if None in files:
        subprocess.run(command, capture_output=True, timeout=args.timeout, stdin=subprocess.DEVNULL)
    os.makedirs(out, exist_ok=True)
    for file, content in files.items():
        if file is not None:
            with open(os.path.join(out, file), "wb") as f:
                f.write(content)
    before = {f: open(os.path.join(out, f), "rb").read() for f in os.listdir(out)}
    try:
        p = subprocess.run(command, capture_output=True, timeout=args.timeout,
                           stdin=subprocess.DEVNULL)
        rc, err = p.returncode, p.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        rc, err = None, ""
    after = {f: open(os.path.join(out, f), "rb").read() for f in os.listdir(out)} \
        if os.path.isdir(out) else {}
    problems = []
    if rc is None:
        problems.append("hang")
    elif rc < 0 or rc >= 128:
        problems.append("signal")
    if any(after.get(f) != content for f, content in before.items()):
        problems.append("lost")
    elif rc == 0:
        problems.append("accepted")
    elif rc is not None and out not in err:
        problems.append("unclear")
    shutil.rmtree(out, ignore_errors=True)
    os.remove(scenario)
    first_line = err.strip().splitlines()[0] if err.strip() else f"exit {rc}"
    return ",".join(problems) or "rejected", name, first_line


# Issue 63.1-63.3: what a run does beside and to its output directory.
STAGING_LOOKALIKES = [".out.staging.999999", ".out.staging.0999999", ".out.staging.+999999",
                      ".out.staging. 999999", ".out.staging.999999.0123456789abcdef"]


def run_output_safety(args, case, kind, workdir):
    """One of three cases, each a problem class of its own when it fails:
    staging-lookalike  directories named like a dead process's staging directory, holding a
                       user's file, sit beside --out: the run must leave every one intact (lost);
    private-dir        --out is a 0700 directory: it must stay 0700 after two runs (exposed);
    interrupted        SIGTERM during the simulation: exit 143 with one line saying so (signal,
                       unclear), no staging directory left (partial)."""
    root = os.path.join(workdir, f"safety{case}")
    os.makedirs(root)
    scenario, out = os.path.join(root, "s.yaml"), os.path.join(root, "out")
    with open(scenario, "w") as f:
        f.write(BASE)
    command = [args.binary, "run", scenario, "--out", out, "--no-plots", "--no-progress"]
    problems, err = [], ""
    if kind == "staging-lookalike":
        for name in STAGING_LOOKALIKES:
            os.makedirs(os.path.join(root, name))
            with open(os.path.join(root, name, "thesis.tex"), "w") as f:
                f.write("chapter 1")
        p = subprocess.run(command, capture_output=True, timeout=args.timeout,
                           stdin=subprocess.DEVNULL)
        err = p.stderr.decode("utf-8", "replace")
        if p.returncode < 0 or p.returncode >= 128:
            problems.append("signal")
        for name in STAGING_LOOKALIKES:
            thesis = os.path.join(root, name, "thesis.tex")
            if not os.path.isfile(thesis) or open(thesis).read() != "chapter 1":
                problems.append("lost")
                break
    elif kind == "private-dir":
        os.makedirs(out)
        os.chmod(out, 0o700)
        for _ in range(2):
            p = subprocess.run(command, capture_output=True, timeout=args.timeout,
                               stdin=subprocess.DEVNULL)
            err = p.stderr.decode("utf-8", "replace")
            if p.returncode < 0 or p.returncode >= 128:
                problems.append("signal")
        if os.stat(out).st_mode & 0o7777 != 0o700:
            problems.append("exposed")
    else:  # interrupted: a simulation of seconds, stopped once it is under way
        slow = command + ["--force", "--set", "cluster.nodes=64", "--set",
                          "cluster.rank_classes=off", "--set", "training.steps=3000"]
        p = subprocess.Popen(slow, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             stdin=subprocess.DEVNULL)
        staging = lambda: [n for n in os.listdir(root) if n.startswith(".out.staging.")]
        for _ in range(int(args.timeout * 20)):
            if staging() or p.poll() is not None:
                break
            time.sleep(0.05)
        time.sleep(0.3)
        p.send_signal(signal.SIGTERM)
        try:
            _, raw = p.communicate(timeout=args.timeout)
            err = raw.decode("utf-8", "replace")
            if p.returncode != 128 + signal.SIGTERM:
                problems.append("signal")
            elif "interrupted by signal 15" not in err or len(err.strip().splitlines()) != 1:
                problems.append("unclear")
            if staging():
                problems.append("partial")
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            problems.append("hang")
    shutil.rmtree(root, ignore_errors=True)
    first_line = err.strip().splitlines()[0] if err.strip() else ""
    return ",".join(problems) or "ok", kind, first_line


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=500)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=20)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--show", type=int, default=20)
    ap.add_argument("--binary", default="build/overlapsim")
    ap.add_argument("--memory-limit", type=int, default=4096, metavar="MiB",
                    help="address-space limit of the huge-size cases (default 4096 MiB)")
    ap.add_argument("--no-targeted", action="store_true",
                    help="run only the mutants, not the targeted cases of issue 26")
    ap.add_argument("--strict", action="store_true", help="exit 1 when any mutant shows a problem")
    args = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.chdir(root)
    if not os.access(args.binary, os.X_OK):
        sys.exit(f"build first: {args.binary} is missing")
    with open(args.binary, "rb") as f:
        args.asan = b"__asan_init" in f.read()
    seeds = sorted(os.path.join("scenarios", f) for f in os.listdir("scenarios")
                   if f.endswith(".yaml"))
    rng = random.Random(args.seed)
    workdir = tempfile.mkdtemp(prefix="overlapsim-fuzz-")
    # Relative paths in scenarios (model.profile: data/...) resolve next to the scenario.
    if os.path.isdir("scenarios/data"):
        shutil.copytree("scenarios/data", os.path.join(workdir, "data"))
    cases = []
    for case in range(args.cases):
        with open(rng.choice(seeds)) as f:
            lines = f.read().splitlines()
        kinds = []
        for _ in range(rng.choice([1, 1, 2, 3])):
            lines, kind = mutate(lines, rng)
            kinds.append(kind)
        cases.append((case, "\n".join(lines) + "\n", "+".join(kinds)))
    counts, shown = {}, 0
    targeted = [] if args.no_targeted else targeted_cases(workdir)
    lookalikes = [] if args.no_targeted else LOOKALIKE_CASES
    safety = [] if args.no_targeted else ["staging-lookalike", "private-dir", "interrupted"]
    commands = [] if args.no_targeted else command_cases(workdir)
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {pool.submit(run_case, args, c, text, workdir): kind for c, text, kind in cases}
        for i, (kind, text, path, limited, must_fail, *command) in enumerate(targeted):
            futures[pool.submit(run_case, args, args.cases + i, text, workdir, path, limited,
                                must_fail, command[0] if command else ())] = kind
        for i, (name, files) in enumerate(lookalikes):
            futures[pool.submit(run_lookalike, args, args.cases + len(targeted) + i, name, files,
                                workdir)] = "look-alike"
        for i, kind in enumerate(safety):
            futures[pool.submit(run_output_safety, args,
                                args.cases + len(targeted) + len(lookalikes) + i, kind,
                                workdir)] = kind
        for kind, argv, expect in commands:
            futures[pool.submit(run_command_case, args, kind, argv, expect)] = kind
        for fut in concurrent.futures.as_completed(futures):
            verdict, name, message = fut.result()
            for v in verdict.split(","):
                counts[v] = counts.get(v, 0) + 1
            if verdict not in ("ok", "rejected") and shown < args.show:
                shown += 1
                print(f"{verdict:12} {futures[fut]:28} {name}: {message[:150]}")
    shutil.rmtree(workdir, ignore_errors=True)
    print(f"# {args.cases} mutants of {len(seeds)} scenarios, seed {args.seed}, and "
          f"{len(targeted) + len(lookalikes) + len(safety) + len(commands)} targeted cases; budget {args.timeout:g} s, huge sizes under "
          f"{args.memory_limit} MiB of {'resident memory (ASan)' if args.asan else 'address space'}")
    problems = ["signal", "abort", "hang", "partial", "unclear", "bad-output", "flood", "accepted",
                "lost", "exposed", "exit-code"]
    for key in ["ok", "rejected"] + problems:
        print(f"{key:12} {counts.get(key, 0)}")
    if args.strict and any(counts.get(key, 0) for key in problems):
        sys.exit("fuzz_scenarios: problems found (listed above)")


if __name__ == "__main__":
    main()
