#!/usr/bin/env python3
"""Checks every module's #includes against the table "Modules and what they may include" of
docs/ARCHITECTURE.md, so that the doc is the one statement of the rule.

    python3 scripts/check-layering.py [ROOT]    # default: this script's repository
    python3 scripts/check-layering.py --self-test

The table's first column names the modules (`hw/`, `scenario/`, ...); the second says what each
may include, as items separated by commas or semicolons (docs/ARCHITECTURE.md, "Rules that run"):

- a module name (`scenario`, `sim/`) or `everything` (every module): the module may include it;
  `NAME (`a.h`, `b.h` only)` limits that to those headers of the module;
- a library name (LIBRARIES below); `LIB (only here)` makes the library restricted;
- `never A or B`: A and B (modules or libraries) are forbidden, and such libraries restricted;
- `A and B only under `#ifdef MACRO``: A and B may be included only inside `#ifdef MACRO` (or
  `#if defined(MACRO)`), and such libraries are restricted;
- any other parenthesis is a comment.

A restricted library may be included only by the modules whose row names it; other libraries in
the table describe what a module uses and are not checked. Every .h/.hpp/.cpp/.cc file under a
module folder is read; an include whose first path component is a module is a module include.
Prints FILE:LINE: what is wrong, naming the table row, and exits 1 on any violation or on a table
it cannot read (naming the doc's line); prints a summary and exits 0 otherwise.
"""
import os
import re
import sys
import tempfile

DOC = os.path.join("docs", "ARCHITECTURE.md")
HEADING = "## Modules and what they may include"
# Library names the table may use, and the include prefixes that belong to each.
LIBRARIES = {
    "std": (),  # the standard library: never restricted, nothing to match
    "fmt": ("fmt/",),
    "nlohmann-json": ("nlohmann/",),
    "yaml-cpp": ("yaml-cpp/",),
    "Boost.Graph": ("boost/graph/",),
    "SimGrid": ("simgrid/", "xbt/", "smpi/"),
    "LibTorch": ("torch/", "c10/", "ATen/", "caffe2/"),
    "zlib": ("zlib.h",),
    "CLI11": ("CLI/",),
}
SOURCE_EXTENSIONS = (".h", ".hpp", ".cpp", ".cc")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
DIRECTIVE = re.compile(r"^\s*#\s*(\w+)\s*(.*)$")


class TableError(Exception):
    pass


class Rule:
    """What one module may include."""

    def __init__(self, module, line):
        self.module = module
        self.line = line  # of the doc
        self.modules = set()  # granted modules
        self.headers = {}  # module -> the only headers of it allowed
        self.libraries = set()  # granted libraries
        self.banned = set()  # modules and libraries
        self.conditions = {}  # module or library -> macro it must sit under
        self.text = ""


def split_items(cell):
    """Splits at commas and semicolons outside parentheses."""
    items, depth, cur = [], 0, ""
    for ch in cell:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch in ",;" and depth == 0:
            items.append(cur.strip())
            cur = ""
        else:
            cur += ch
    items.append(cur.strip())
    return [i for i in items if i]


def name_of(word, modules):
    """A module ("sim", "sim/") or a library name as the table spells it, or None."""
    w = word.strip().strip("`").strip()
    if w.rstrip("/") in modules:
        return w.rstrip("/")
    for lib in LIBRARIES:
        if w.lower() == lib.lower():
            return lib
    return None


def names_in(text, modules, where):
    out = []
    for word in re.split(r"\s+(?:or|and)\s+|,", text):
        if not word.strip():
            continue
        n = name_of(word, modules)
        if n is None:
            raise TableError(f"{where}: '{word.strip()}' is neither a module of the table nor a "
                             f"known library ({', '.join(LIBRARIES)})")
        out.append(n)
    return out


def parse_table(root):
    """Returns (rules by module, restricted libraries) from the doc's table."""
    path = os.path.join(root, DOC)
    with open(path) as f:
        lines = f.read().splitlines()
    try:
        start = lines.index(HEADING)
    except ValueError:
        raise TableError(f"{DOC}: no heading '{HEADING}'")
    rows = []
    for n in range(start + 1, len(lines)):
        line = lines[n]
        if line.startswith("## "):
            break
        if not line.startswith("|"):
            if rows:
                break
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 2:
            raise TableError(f"{DOC}:{n + 1}: a row needs 2 cells (module | may include), "
                             f"got {len(cells)}")
        if cells[0] == "module" or set(cells[0]) <= set("- :"):
            continue
        rows.append((n + 1, cells))
    if not rows:
        raise TableError(f"{DOC}:{start + 1}: no table under '{HEADING}'")
    modules = set()
    for n, (module, _) in rows:
        m = module.strip("`").rstrip("/")
        if not re.fullmatch(r"[a-z0-9_]+", m):
            raise TableError(f"{DOC}:{n}: '{module}' is not a module folder like `sim/`")
        modules.add(m)

    rules, restricted = {}, set()
    for n, (module, cell) in rows:
        where = f"{DOC}:{n} (row {module})"
        rule = Rule(module.strip("`").rstrip("/"), n)
        rule.text = cell
        for item in split_items(cell):
            m = re.fullmatch(r"never\s+(.+)", item)
            if m:
                for name in names_in(m.group(1), modules, where):
                    rule.banned.add(name)
                    if name in LIBRARIES:
                        restricted.add(name)
                continue
            m = re.fullmatch(r"(.+?)\s+only under\s+`#ifdef\s+(\w+)`(\s*\(.*\))?", item)
            if m:
                for name in names_in(m.group(1), modules, where):
                    rule.conditions[name] = m.group(2)
                    if name in LIBRARIES:
                        rule.libraries.add(name)
                        restricted.add(name)
                    else:
                        rule.modules.add(name)
                continue
            m = re.fullmatch(r"([^()]+?)\s*(?:\((.*)\))?", item)
            if not m:
                raise TableError(f"{where}: cannot read '{item}'")
            head, paren = m.group(1).strip(), (m.group(2) or "").strip()
            if head == "everything":
                rule.modules |= modules
                continue
            name = name_of(head, modules)
            if name is None:
                raise TableError(f"{where}: '{head}' is neither a module of the table nor a "
                                 f"known library ({', '.join(LIBRARIES)})")
            if name in LIBRARIES:
                rule.libraries.add(name)
                if paren == "only here":
                    restricted.add(name)
            else:
                rule.modules.add(name)
                hm = re.fullmatch(r"(.+?)\s+only", paren)
                if hm:
                    rule.headers[name] = {h.strip().strip("`") for h in hm.group(1).split(",")}
        rules[rule.module] = rule
    return rules, restricted


def library_of(include):
    for lib, prefixes in LIBRARIES.items():
        if any(include.startswith(p) for p in prefixes):
            return lib
    return None


def check_file(root, rel, rule, rules, restricted, top_dirs):
    errors = []
    stack = []  # [kind, macro, in_else] per open conditional
    with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
        lines = f.read().splitlines()
    for n, line in enumerate(lines, 1):
        d = DIRECTIVE.match(line)
        if d and d.group(1) != "include":
            word, arg = d.group(1), d.group(2).split("//")[0].strip()
            if word == "ifdef":
                stack.append(["def", arg, False])
            elif word == "ifndef":
                stack.append(["ndef", arg, False])
            elif word == "if":
                m = re.fullmatch(r"defined\s*\(?\s*(\w+)\s*\)?", arg)
                stack.append(["def", m.group(1), False] if m else ["other", None, False])
            elif word in ("else", "elif") and stack:
                stack[-1][2] = True
                if word == "elif":
                    stack[-1][0] = "other"
            elif word == "endif" and stack:
                stack.pop()
            continue
        m = INCLUDE.match(line)
        if not m:
            continue
        inc = m.group(2)
        first = inc.split("/")[0] if "/" in inc else None
        where = f"{rel}:{n}: includes {m.group(1)}{inc}{'>' if m.group(1) == '<' else m.group(1)}"
        row = f"(row {rule.module}/: {rule.text}; {DOC}:{rule.line})"

        def under(macro):
            return any((k == "def" and mac == macro and not e) or
                       (k == "ndef" and mac == macro and e) for k, mac, e in stack)

        if first in rules:
            target = first
            if target == rule.module:
                continue
            if target in rule.banned:
                errors.append(f"{where}: {rule.module}/ must never include {target}/ {row}")
            elif target not in rule.modules:
                errors.append(f"{where}: {rule.module}/ may not include {target}/ {row}")
            elif target in rule.headers and inc[len(target) + 1:] not in rule.headers[target]:
                only = ", ".join(sorted(rule.headers[target]))
                errors.append(f"{where}: {rule.module}/ may include only {only} of {target}/ "
                              f"{row}")
            elif target in rule.conditions and not under(rule.conditions[target]):
                errors.append(f"{where}: {rule.module}/ may include {target}/ only under "
                              f"#ifdef {rule.conditions[target]} {row}")
            continue
        if m.group(1) == '"' and first in top_dirs:
            errors.append(f"{where}: {first}/ is not a module of the table; modules include "
                          f"only modules {row}")
            continue
        lib = library_of(inc)
        if lib is None:
            continue
        if lib in rule.banned:
            errors.append(f"{where}: {rule.module}/ must never include {lib} {row}")
        elif lib in restricted and lib not in rule.libraries:
            allowed = sorted(r.module + "/" for r in rules.values() if lib in r.libraries)
            errors.append(f"{where}: {lib} is restricted to {', '.join(allowed)} {row}")
        elif lib in rule.conditions and not under(rule.conditions[lib]):
            errors.append(f"{where}: {rule.module}/ may include {lib} only under "
                          f"#ifdef {rule.conditions[lib]} {row}")
    return errors


def check(root):
    """Returns (errors, files checked, includes seen)."""
    rules, restricted = parse_table(root)
    top_dirs = {d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d))
                and not d.startswith(".") and d not in rules}
    errors, files = [], 0
    for module in sorted(rules):
        base = os.path.join(root, module)
        if not os.path.isdir(base):
            errors.append(f"{DOC}:{rules[module].line}: the table names {module}/, which does "
                          "not exist")
            continue
        for d, dirs, names in os.walk(base):
            dirs.sort()
            for name in sorted(names):
                if name.endswith(SOURCE_EXTENSIONS):
                    rel = os.path.relpath(os.path.join(d, name), root)
                    errors += check_file(root, rel, rules[module], rules, restricted, top_dirs)
                    files += 1
    return errors, files


SELF_TEST_DOC = """# test

## Modules and what they may include

| module | may include |
| --- | --- |
| `hw/` | std, fmt |
| `scenario/` | hw, yaml-cpp (only here), nlohmann-json (profiles too) |
| `algorithms/` | scenario, hw |
| `trace/` | algorithms (`runtime.h` only), fmt; never SimGrid or LibTorch |
| `sim/` | algorithms, trace, scenario, hw, SimGrid (only here) |
| `validate/` | algorithms, trace, scenario, hw, LibTorch; never sim/ |
| `cli/` | everything; validate/ and LibTorch only under `#ifdef HAVE_TORCH` (a comment) |

## Next
"""

SELF_TEST_FILES = {
    "hw/ok.h": '#include <fmt/format.h>\n#include "hw/other.h"\n',
    "hw/up.cpp": '#include <vector>\n#include "scenario/scenario.h"\n',  # hw may not include up
    "algorithms/yaml.cpp": "#include <yaml-cpp/yaml.h>\n",  # yaml-cpp only in scenario/
    "trace/ok.cpp": '#include "algorithms/runtime.h"\n',
    "trace/alg.cpp": '#include "algorithms/algorithm.h"\n',  # runtime.h only
    "trace/sg.cpp": "#include <simgrid/s4u.hpp>\n",  # never SimGrid
    "validate/sim.cpp": '#include <torch/torch.h>\n#include "sim/sim_runtime.h"\n',  # never sim/
    "cli/bad.cpp": '#include "sim/a.h"\n#include "validate/real_run.h"\n',  # outside the #ifdef
    "cli/ok.cpp": ('#ifdef HAVE_TORCH\n#include "validate/real_run.h"\n#include <torch/torch.h>\n'
                   '#endif\n#ifndef HAVE_TORCH\n#else\n#include "validate/launcher.h"\n#endif\n'
                   '#if defined(HAVE_TORCH)\n#include <c10/core/Device.h>\n#endif\n'),
    "cli/else.cpp": '#ifdef HAVE_TORCH\n#else\n#include <torch/torch.h>\n#endif\n',  # else branch
    "sim/tests.cpp": '#include "tests/test_util.h"\n',  # not a module
    "scenario/ok.cpp": "#include <yaml-cpp/yaml.h>\n#include <nlohmann/json.hpp>\n",
    "tests/test_util.h": "\n",
}
SELF_TEST_WANT = [
    "algorithms/yaml.cpp:1: yaml-cpp is restricted to scenario/",
    "cli/bad.cpp:2: cli/ may include validate/ only under #ifdef HAVE_TORCH",
    "cli/else.cpp:3: cli/ may include LibTorch only under #ifdef HAVE_TORCH",
    "hw/up.cpp:2: hw/ may not include scenario/",
    "sim/tests.cpp:1: tests/ is not a module of the table; modules include only modules",
    "trace/alg.cpp:1: trace/ may include only runtime.h of algorithms/",
    "trace/sg.cpp:1: trace/ must never include SimGrid",
    "validate/sim.cpp:2: validate/ must never include sim/",
]


def self_test():
    failures = []
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "docs"))
        with open(os.path.join(root, DOC), "w") as f:
            f.write(SELF_TEST_DOC)
        for rel, text in SELF_TEST_FILES.items():
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w") as f:
                f.write(text)
        errors, _ = check(root)
        # "FILE:LINE: includes X: MESSAGE (row ...)" -> "FILE:LINE: MESSAGE"
        got = sorted(re.sub(r": includes [^:]+: ", ": ", e).split(" (row")[0] for e in errors)
        if got != SELF_TEST_WANT:
            failures.append("violations:\n  got  " + "\n       ".join(got) +
                            "\n  want " + "\n       ".join(SELF_TEST_WANT))
        # A word the table cannot place (the old name "spec") is an error naming the doc's line.
        with open(os.path.join(root, DOC), "w") as f:
            f.write(SELF_TEST_DOC.replace("| `algorithms/` | scenario, hw |",
                                          "| `algorithms/` | spec, hw |"))
        try:
            check(root)
            failures.append("a table naming 'spec' was accepted")
        except TableError as e:
            if "ARCHITECTURE.md:9" not in str(e) or "'spec'" not in str(e):
                failures.append(f"unclear table error: {e}")
    if failures:
        print("check-layering self-test FAILED:\n" + "\n".join(failures))
        return 1
    print(f"check-layering self-test: OK ({len(SELF_TEST_WANT)} planted violations found, "
          "clean files passed, a bad table rejected)")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    root = argv[1] if len(argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        errors, files = check(root)
    except (TableError, OSError) as e:
        print(f"check-layering: {e}")
        return 1
    for e in errors:
        print(e)
    if errors:
        print(f"check-layering: {len(errors)} include(s) break the table of {DOC}")
        return 1
    print(f"check-layering: OK ({files} files follow the table of {DOC})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
