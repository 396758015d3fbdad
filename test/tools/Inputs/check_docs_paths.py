"""Checks that the guides name only what exists (test/tools/docs-paths.test).

usage: check_docs_paths.py SRC_ROOT DOC.md...

Outside fenced code blocks, in each `inline code` span of the pages:
  paths        a token whose first folder is a top-level entry of SRC_ROOT
               (compiler/Driver/Driver.h, test/runtime) must exist; a bare
               file name with a source extension (Pipeline.h) or a folder
               name ending in / (Remat/) must exist somewhere in the tree.
               <placeholders> match any name (compiler/Import/<family>.cpp);
               build/ outputs are not checked.
  flags        in a span that starts with a flag or with dlc, dlc-opt or
               dlrt, every --flag must be one that `dlc --help`,
               `dlc-opt --help` or `dlrt --help-all` lists (spans of other
               commands, such as ctest or cmake, are skipped).
  identifiers  a mixed-case C++ name (buildPhase, dlc::nonDifferentiableOps,
               populateLowerToExec<Family>) must occur as a word in a source
               file of the tree.
Also every relative markdown link target must exist.
Prints one line per kind and exits 1 when anything is missing; with
DOCS_PATHS_VERBOSE=1 in the environment, also every item it checked.
"""
import fnmatch
import glob
import os
import re
import subprocess
import sys

root, *docs = sys.argv[1:]

SOURCE_EXT = ("cpp", "h", "hpp", "c", "td", "def", "inc", "md", "txt", "test",
              "mlir", "py", "sh", "fbs", "cmake", "json")
SKIP_DIRS = {".git", "__pycache__"}
IDENT_EXT = (".cpp", ".h", ".hpp", ".c", ".td", ".def", ".inc", ".cmake", ".py",
             ".txt")

top_level = {e for e in os.listdir(root)
             if not e.startswith(("build", ".git"))}


def walk_tree():
    """Every file and folder of the source tree (relative), build dirs aside."""
    files, dirs = [], []
    for d, subdirs, names in os.walk(root):
        rel = os.path.relpath(d, root)
        if rel == ".":
            subdirs[:] = [s for s in subdirs if s in top_level]
        subdirs[:] = [s for s in subdirs if s not in SKIP_DIRS]
        for s in subdirs:
            dirs.append(os.path.normpath(os.path.join(rel, s)))
        for n in names:
            files.append(os.path.normpath(os.path.join(rel, n)))
    return files, dirs


files, dirs = walk_tree()
file_names = {os.path.basename(f) for f in files}
dir_names = {os.path.basename(d) for d in dirs}


def to_glob(text):
    """<placeholder> -> *, {a,b} -> one pattern each."""
    text = re.sub(r"<[^<>/]*>", "*", text)
    m = re.search(r"\{([^{}]*)\}", text)
    if not m:
        return [text]
    return [p for alt in m.group(1).split(",")
            for p in to_glob(text[:m.start()] + alt + text[m.end():])]


def path_exists(token):
    for pattern in to_glob(token.rstrip("/")):
        if glob.glob(os.path.join(root, pattern)):
            return True
    return False


def name_exists(token, names):
    for pattern in to_glob(token.rstrip("/")):
        if pattern in names or ("*" in pattern and any(
                fnmatch.fnmatchcase(n, pattern) for n in names)):
            return True
    return False


def help_flags():
    flags = set()
    for cmd in (["dlc", "--help"], ["dlc-opt", "--help"],
                ["dlrt", "--help-all"]):
        out = subprocess.run(cmd, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True).stdout
        # Options start a line (LLVM's layout, CLI11's "-h,--help").
        flags |= set(re.findall(r"^\s*(?:-\w,)?(--[a-z][a-z0-9-]*)", out, re.M))
    return flags


def source_text():
    chunks = []
    for f in files:
        if f.endswith(IDENT_EXT) and not f.startswith(("docs", "test/fuzz")):
            try:
                with open(os.path.join(root, f), errors="replace") as fh:
                    chunks.append(fh.read())
            except OSError:
                pass
    return "\n".join(chunks)


FLAG_COMMANDS = {"dlc", "dlc-opt", "dlrt"}
STRIP_LEAD = "(&*{\"'"
STRIP_TRAIL = ",;:.)}\"'"
ident_re = re.compile(r"^(?:[A-Za-z_]\w*::)*[A-Za-z_][\w<>]*$")

missing = {"paths": [], "links": [], "flags": [], "identifiers": []}
checked = {k: 0 for k in missing}
seen = {k: [] for k in missing}
known_flags = help_flags()
idents = set()

for doc in docs:
    text = open(doc).read()
    rel_doc = os.path.relpath(doc, root)
    prose = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    # Relative links: [text](target).
    for target in re.findall(r"\]\(([^)\s]+)\)", prose):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        checked["links"] += 1
        seen["links"].append(target)
        path = os.path.normpath(os.path.join(os.path.dirname(doc),
                                             target.split("#")[0]))
        if not os.path.exists(path):
            missing["links"].append(f"{rel_doc}: {target}")
    for span in re.findall(r"`([^`]+)`", prose):
        tokens = span.split()
        if not tokens:
            continue
        first = os.path.basename(tokens[0])
        check_flags = tokens[0].startswith("--") or first in FLAG_COMMANDS
        for raw in tokens:
            token = raw.lstrip(STRIP_LEAD).rstrip(STRIP_TRAIL)
            if not token:
                continue
            # Flags.
            m = re.match(r"--([a-z][a-z0-9-]*)", token)
            if m:
                if check_flags:
                    checked["flags"] += 1
                    seen["flags"].append(token)
                    if "--" + m.group(1) not in known_flags:
                        missing["flags"].append(f"{rel_doc}: --{m.group(1)}")
                continue
            if token.startswith(("-", "$", "%")) or "=" in token:
                continue
            # Paths.
            head = token.split("/")[0]
            if "/" in token.rstrip("/") and head in top_level:
                checked["paths"] += 1
                seen["paths"].append(token)
                if not path_exists(token):
                    missing["paths"].append(f"{rel_doc}: {token}")
                continue
            if "/" in token.rstrip("/"):  # build/ outputs, other paths
                continue
            if token.endswith("/") and re.match(r"^[\w<>.-]+/$", token):
                checked["paths"] += 1
                seen["paths"].append(token)
                if not name_exists(token, dir_names):
                    missing["paths"].append(f"{rel_doc}: {token}")
                continue
            if re.match(r"^[\w<>+-][\w<>.+-]*\.(%s)$" % "|".join(SOURCE_EXT),
                        token):
                checked["paths"] += 1
                seen["paths"].append(token)
                if not name_exists(token, file_names):
                    missing["paths"].append(f"{rel_doc}: {token}")
                continue
            # Identifiers: `name`, `name()`, `ns::name`, `name(args`.
            name = re.sub(r"\(.*$", "", token)
            if ident_re.match(name) and name.count("<") == name.count(">"):
                for part in name.split("::"):
                    if re.search(r"[a-z]", part) and re.search(r"[A-Z]", part):
                        idents.add((rel_doc, part))

sources = source_text()
words = set(re.findall(r"\w+", sources))
for doc, part in sorted(idents):
    checked["identifiers"] += 1
    seen["identifiers"].append(part)
    if "<" in part:  # populateLowerToExec<Family>: any word of that form
        pattern = re.sub(r"<[^<>]*>", r"\\w+", part)
        found = any(re.fullmatch(pattern, w) for w in words)
    else:
        found = part in words
    if not found:
        missing["identifiers"].append(f"{doc}: {part}")

labels = {"paths": "missing", "links": "missing", "flags": "not in --help",
          "identifiers": "not in the sources"}
for kind in ("paths", "links", "flags", "identifiers"):
    if os.environ.get("DOCS_PATHS_VERBOSE"):
        print(f"{kind} checked:", " ".join(sorted(set(seen[kind]))))
    print(f"{kind}: {checked[kind]} checked, {labels[kind]}:",
          " ".join(missing[kind]) or "none")
sys.exit(1 if any(missing.values()) else 0)
