#!/usr/bin/env python3
"""Fails when a tracked text file refers to a path outside the repository.

A fresh clone must build, test and read on its own: no doc, comment, test, script or code may point
at the development machine's shared folder beside the checkout or at an absolute path of that
machine. Data the tests and benches use lives in the repository (tests/data/, scenarios/data/,
third_party/); papers are cited by title and arXiv id.

    python3 scripts/check-self-contained.py [ROOT]    # default: this script's repository
    python3 scripts/check-self-contained.py --self-test

Prints FILE:LINE: the offending text for each hit and exits 1; prints a count and exits 0 if none.
Files are those `git ls-files` lists (every file under ROOT but .git/ and build folders where ROOT
is not a git checkout); binary files (a NUL byte in their first 8 KiB) are skipped.
"""
import os
import re
import subprocess
import sys
import tempfile

# Built from pieces so that this file does not match itself.
_SHARED = re.escape(".." + "/shared")
_SHARED_JOIN = r"""["']\.\.["']\s*,\s*["']""" + "shared" + """["']"""  # os.path.join(ROOT, ..)
_MACHINE = re.escape("/" + "work/")
PATTERN = re.compile("|".join([_SHARED, _SHARED_JOIN, _MACHINE]))
SKIP_DIRS = {".git", "out", "__pycache__"}


def tracked_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], check=True,
                             capture_output=True).stdout
        return [p for p in out.decode().split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if x not in SKIP_DIRS and not x.startswith("build")]
            files += [os.path.relpath(os.path.join(d, n), root) for n in names]
        return sorted(files)


def find_outside_refs(root):
    hits = []
    for rel in tracked_files(root):
        path = os.path.join(root, rel)
        if not os.path.isfile(path) or os.path.islink(path):
            continue
        with open(path, "rb") as f:
            data = f.read()
        if b"\0" in data[:8192]:
            continue
        for n, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            if PATTERN.search(line):
                hits.append(f"{rel}:{n}: {line.strip()}")
    return hits


def self_test():
    with tempfile.TemporaryDirectory() as root:
        files = {
            "ok.md": "tests/data/h100/README.md and ../README.md are fine\n",
            "bad.md": "line one\nsee " + ".." + "/shared/data/h100\n",
            "bad.py": 'x = os.path.join(ROOT, "..", "sha' + 'red", "data")\n',
            "sub/bad.h": "// /" + "work/shared/papers/x.txt\n",
            "blob.gz": "\0" + ".." + "/shared",
            "build/gen.txt": ".." + "/shared",
        }
        for rel, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w") as f:
                f.write(text)
        hits = sorted(h.split(": ")[0] for h in find_outside_refs(root))
        want = ["bad.md:2", "bad.py:1", "sub/bad.h:1"]
        if hits != want:
            print(f"check-self-contained self-test FAILED: got {hits}, want {want}")
            return 1
    print("check-self-contained self-test: OK (3 of 3 planted references found, 3 files clean)")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    root = argv[1] if len(argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    hits = find_outside_refs(root)
    for h in hits:
        print(h)
    if hits:
        print(f"check-self-contained: {len(hits)} reference(s) to paths outside the repository; "
              "move the data into the repository or cite the source instead")
        return 1
    print(f"check-self-contained: OK ({len(tracked_files(root))} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
