#!/usr/bin/env python3
"""A malformed-input campaign against `overlapsim run` (issue 15's "Done when").

Mutates the shipped scenarios line by line (nasty values, deleted, duplicated and junk lines,
truncation, re-indentation, unknown keys), runs each mutant with a time budget, and counts what a
user must never see:
  signal      the process died of a signal (or exit status >= 128)
  abort       stderr shows an abort inside the simulation (SimGrid CRITICAL, terminate, bad_alloc)
              or a sanitizer finding (AddressSanitizer, UBSan's "runtime error")
  hang        no exit within the budget
  partial     a failed run left files in its output directory
  unclear     a failed run's error names neither the scenario file with a line nor a key
  bad-output  a successful run's summary.json is missing, unparsable or holds non-finite times
Prints one line per problem (up to --show), then the counts. Exit status 0 (a benchmark), or with
--strict 1 when there was any problem (scripts/sanitize.sh, in CI, on the sanitizer build).

  python3 bench/fuzz_scenarios.py [--cases 500] [--seed 1] [--timeout 20] [--jobs 2]
      [--binary build/overlapsim] [--strict]
"""
import argparse
import concurrent.futures
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

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


def run_case(args, case, text, workdir):
    scenario = os.path.join(workdir, f"case{case}.yaml")
    out = os.path.join(workdir, f"out{case}")
    with open(scenario, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write(text)
    try:
        p = subprocess.run([args.binary, "run", scenario, "--out", out, "--no-plots",
                            "--no-progress"], capture_output=True, timeout=args.timeout)
        rc, err = p.returncode, p.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        return "hang", f"case{case}.yaml", ""
    problems = []
    if rc < 0 or rc >= 128:
        problems.append("signal")
    if re.search(r"CRITICAL|terminate called|bad_alloc|Aborted|core dumped|AddressSanitizer|runtime error:", err):
        problems.append("abort")
    if rc != 0:
        if os.path.isdir(out) and os.listdir(out):
            problems.append("partial")
        named = re.search(re.escape(os.path.basename(scenario)) + r":\d+", err) or \
            re.search(r"key '", err)
        if not named:
            problems.append("unclear")
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
    os.remove(scenario)
    first_line = err.strip().splitlines()[0] if err.strip() else f"exit {rc}"
    return ",".join(problems) or ("ok" if rc == 0 else "rejected"), f"case{case}.yaml", first_line


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=500)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=20)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--show", type=int, default=20)
    ap.add_argument("--binary", default="build/overlapsim")
    ap.add_argument("--strict", action="store_true", help="exit 1 when any mutant shows a problem")
    args = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.chdir(root)
    if not os.access(args.binary, os.X_OK):
        sys.exit(f"build first: {args.binary} is missing")
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
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {pool.submit(run_case, args, c, text, workdir): kind for c, text, kind in cases}
        for fut in concurrent.futures.as_completed(futures):
            verdict, name, message = fut.result()
            for v in verdict.split(","):
                counts[v] = counts.get(v, 0) + 1
            if verdict not in ("ok", "rejected") and shown < args.show:
                shown += 1
                print(f"{verdict:12} {futures[fut]:28} {name}: {message[:150]}")
    shutil.rmtree(workdir, ignore_errors=True)
    print(f"# {args.cases} mutants of {len(seeds)} scenarios, seed {args.seed}, "
          f"budget {args.timeout:g} s")
    problems = ["signal", "abort", "hang", "partial", "unclear", "bad-output"]
    for key in ["ok", "rejected"] + problems:
        print(f"{key:12} {counts.get(key, 0)}")
    if args.strict and any(counts.get(key, 0) for key in problems):
        sys.exit("fuzz_scenarios: problems found (listed above)")


if __name__ == "__main__":
    main()
