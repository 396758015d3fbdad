#!/usr/bin/env python3
"""check-layers.py - checks that every #include "..." points down the layers.

Reads each C/C++ source under compiler/, codegen/, dialects/, runtime/ and
tools/ and fails (exit 1, one line per include: file:line, the include and the
rule) when an include points up:

  - the runtime (runtime/**) never includes compiler/, codegen/ or dialects/;
  - dialects/ never includes compiler/ or codegen/;
  - codegen/ never includes compiler/;
  - within the runtime the layers are, bottom up: schema and include (the
    C API) < device < cuda, data < comm < src; a layer includes only its
    own folder and the layers below it, with root-relative paths.

Usage: tools/check-layers.py [REPO_ROOT]   (default: the script's repository)
       tools/check-layers.py --self-test     (plants upward includes in a
                                              scratch tree; each must fail)
"""

import os
import re
import sys
import tempfile

SCANNED = ("compiler", "codegen", "dialects", "runtime", "tools")
SUFFIXES = (".h", ".hpp", ".c", ".cc", ".cpp", ".cu", ".def", ".inc")

# Runtime layers, bottom up; folders of one rank do not include each other.
RUNTIME_RANK = {
    "schema": 0,
    "include": 0,
    "device": 1,
    "cuda": 2,
    "data": 2,
    "comm": 3,
    "src": 4,
}

# Top-level folders a folder may not include (the compiler is above all).
FORBIDDEN = {
    "runtime": ("compiler", "codegen", "dialects"),
    "dialects": ("compiler", "codegen"),
    "codegen": ("compiler",),
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def target_of(path, including, root):
    """The repository-relative file an include names, or None (a system or
    generated header outside the tree)."""
    if path.startswith("dlrt/"):  # the public C API, -I runtime/include
        return "runtime/include/" + path
    if path.startswith("dlc_schema/"):  # flatc's header of runtime/schema
        return "runtime/schema/" + path
    if os.path.exists(os.path.join(root, path)):
        return path
    local = os.path.normpath(os.path.join(os.path.dirname(including), path))
    if os.path.exists(os.path.join(root, local)):
        return local
    return None


def check_include(src, line_no, path, root):
    """The rule |src|'s include of |path| breaks, or None."""
    top = src.split("/", 1)[0]
    dst = target_of(path, src, root)
    if dst is None and top == "runtime":
        # A bare name found through an include directory of some layer.
        for layer in RUNTIME_RANK:
            if os.path.exists(os.path.join(root, "runtime", layer, path)):
                return "runtime includes are root-relative (runtime/%s/%s)" % (
                    layer, path)
    if dst is None:
        return None
    dst_top = dst.split("/", 1)[0]
    if dst_top in FORBIDDEN.get(top, ()):
        return "%s/ never includes %s/" % (top, dst_top)
    if top != "runtime":
        return None
    if dst_top != "runtime":
        return None
    src_layer = src.split("/")[1]
    dst_layer = dst.split("/")[1]
    if not path.startswith(("runtime/", "dlrt/", "dlc_schema/")):
        return "runtime includes are root-relative (runtime/<layer>/...)"
    if src_layer == dst_layer:
        return None
    if src_layer not in RUNTIME_RANK or dst_layer not in RUNTIME_RANK:
        return "runtime/%s is not a known layer" % (
            src_layer if src_layer not in RUNTIME_RANK else dst_layer)
    if RUNTIME_RANK[dst_layer] >= RUNTIME_RANK[src_layer]:
        return ("runtime layers: include, schema < device < cuda, "
                "data < comm < src; runtime/%s may not include runtime/%s" %
                (src_layer, dst_layer))
    return None


def check_tree(root):
    """(errors, number of includes checked) over |root|."""
    errors = []
    checked = 0
    for top in SCANNED:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames.sort()
            for name in sorted(filenames):
                if not name.endswith(SUFFIXES):
                    continue
                full = os.path.join(dirpath, name)
                src = os.path.relpath(full, root).replace(os.sep, "/")
                with open(full, encoding="utf-8", errors="replace") as f:
                    for line_no, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        checked += 1
                        rule = check_include(src, line_no, m.group(1), root)
                        if rule:
                            errors.append('%s:%d: #include "%s": %s' %
                                          (src, line_no, m.group(1), rule))
    return errors, checked


# A scratch tree: a clean file per layer, then one upward include at a time.
SELF_TEST_TREE = {
    "runtime/include/dlrt/dlrt.h": "",
    "runtime/schema/LibraryCalls.h": "",
    "runtime/device/Device.h":
        '#include "runtime/schema/LibraryCalls.h"\n#include "dlrt/dlrt.h"\n',
    "runtime/cuda/CudaApi.h": '#include "runtime/device/Device.h"\n',
    "runtime/data/Array.h": '#include "runtime/device/Device.h"\n',
    "runtime/comm/Communicator.h": '#include "runtime/cuda/CudaApi.h"\n',
    "runtime/src/Session.h": '#include "runtime/comm/Communicator.h"\n',
    "dialects/Exec/ExecOps.h": '#include "runtime/schema/LibraryCalls.h"\n',
    "codegen/Emit.h": '#include "dialects/Exec/ExecOps.h"\n',
    "compiler/Pass.h": '#include "codegen/Emit.h"\n',
}
SELF_TEST_PLANTS = [
    ("runtime/device/Device.h", "runtime/src/Session.h"),
    ("runtime/device/Device.h", "runtime/cuda/CudaApi.h"),
    ("runtime/cuda/CudaApi.h", "runtime/data/Array.h"),
    ("runtime/comm/Communicator.h", "runtime/src/Session.h"),
    ("runtime/schema/LibraryCalls.h", "runtime/device/Device.h"),
    ("runtime/src/Session.h", "dialects/Exec/ExecOps.h"),
    ("runtime/src/Session.h", "Communicator.h"),
    ("runtime/comm/Communicator.h", "../cuda/CudaApi.h"),
    ("dialects/Exec/ExecOps.h", "compiler/Pass.h"),
    ("dialects/Exec/ExecOps.h", "codegen/Emit.h"),
    ("codegen/Emit.h", "compiler/Pass.h"),
]


def self_test():
    """Checks that the clean scratch tree passes and that each planted upward
    include fails; returns the exit status."""
    failures = 0
    with tempfile.TemporaryDirectory() as root:
        for path, text in SELF_TEST_TREE.items():
            os.makedirs(os.path.dirname(os.path.join(root, path)),
                        exist_ok=True)
            with open(os.path.join(root, path), "w") as f:
                f.write(text)
        errors, _ = check_tree(root)
        if errors:
            print("self-test: the clean tree fails:", *errors, sep="\n  ")
            failures += 1
        for path, include in SELF_TEST_PLANTS:
            full = os.path.join(root, path)
            with open(full) as f:
                text = f.read()
            with open(full, "w") as f:
                f.write(text + '#include "%s"\n' % include)
            errors, _ = check_tree(root)
            with open(full, "w") as f:
                f.write(text)
            if len(errors) != 1:
                print('self-test: %s including "%s": %d error(s), expected 1'
                      % (path, include, len(errors)))
                failures += 1
            else:
                print("self-test: planted, caught: " + errors[0])
    print("check-layers self-test: %s" % ("FAILED" if failures else "ok"))
    return 1 if failures else 0


def main(argv):
    if len(argv) > 1 and argv[1] == "--self-test":
        return self_test()
    root = argv[1] if len(argv) > 1 else os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))
    errors, checked = check_tree(root)
    for e in errors:
        print(e)
    if errors:
        print("check-layers: %d upward include(s) of %d" %
              (len(errors), checked))
        return 1
    print("check-layers: %d includes, all point down" % checked)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
