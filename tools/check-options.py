#!/usr/bin/env python3
"""Checks that every `dlc` flag of the compiler is declared once.

A flag is declared by `b.opt("NAME", ...)` / `b.list("NAME", ...)` in an
options struct's bindOptions (compiler/): that one line makes it the `dlc`
flag, the option of the pipelines and of every pass that reads the struct.
A pass's own option is `Option<"field", "NAME", ...>` / `ListOption<...>` in
a Passes.td; two passes may each have one of the same name (`alignment`),
but no Passes.td option may take the name of a flag (a second declaration
whose meaning can drift), and no flag may be bound by two structs. This
prints each such name with its places and exits 1. `--self-test` plants a
pass option named like a flag in a copy of the sources and expects the
check to fail.
"""
import collections
import pathlib
import re
import shutil
import sys
import tempfile

BIND = re.compile(r'\bb\.(?:opt|list)\(\s*"([a-z0-9][a-z0-9-]*)"')
TD = re.compile(r'\b(?:List)?Option<\s*"\w+"\s*,\s*"([a-z0-9][a-z0-9-]*)"')


def declarations(root):
    """{name: [(place, kind)]}, kind "flag" (bindOptions) or "pass" (.td)."""
    found = collections.defaultdict(list)
    for path in sorted((root / "compiler").rglob("*")):
        if path.suffix not in (".cpp", ".h", ".td"):
            continue
        text = path.read_text(errors="replace")
        pattern = TD if path.suffix == ".td" else BIND
        for m in pattern.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            kind = "pass" if path.suffix == ".td" else "flag"
            found[m.group(1)].append((f"{path.relative_to(root)}:{line}", kind))
    return found


def check(root):
    found = declarations(root)
    flags = {n: p for n, p in found.items() if any(k == "flag" for _, k in p)}
    twice = {n: p for n, p in flags.items() if len(p) > 1}
    for name, places in sorted(twice.items()):
        print(f"flag '{name}' declared {len(places)} times: "
              + ", ".join(f"{where} ({kind})" for where, kind in places))
    print(f"{len(flags)} flags, {len(found) - len(flags)} pass-only option "
          f"names, {len(twice)} flags declared more than once")
    return 1 if twice else 0


def self_test(root):
    with tempfile.TemporaryDirectory() as tmp:
        copy = pathlib.Path(tmp) / "src"
        shutil.copytree(root / "compiler", copy / "compiler")
        planted = copy / "compiler" / "Training" / "Passes.td"
        planted.write_text(planted.read_text().replace(
            "def RematerializationPass", 'def PlantedPass : Pass<"planted"> {\n'
            '  let options = [Option<"x", "label-smoothing", "double", "0", "">];\n'
            '}\n\ndef RematerializationPass', 1))
        if check(copy) == 0:
            print("self-test: a planted duplicate was not found")
            return 1
    print("self-test: the planted duplicate was found")
    return 0


if __name__ == "__main__":
    root = pathlib.Path(__file__).resolve().parent.parent
    if "--self-test" in sys.argv:
        sys.exit(self_test(root))
    sys.exit(check(root))
