"""Checks that every flag a tool's --help lists is documented in its docs
page, and every flag the page documents exists in --help."""
import re
import subprocess
import sys

doc_arg, *cmd = sys.argv[1:]
doc_path, _, section = doc_arg.partition("#")
help_text = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True).stdout
doc = open(doc_path).read()
if section:  # only the part of the page under "## `<section>`"
    start = doc.index(f"## `{section}`")
    end = doc.find("\n## ", start + 1)
    doc = doc[start:end if end >= 0 else len(doc)]
ignore = {"--help", "--help-all", "--help-list", "--help-hidden", "--help-list-hidden", "--version"}
# Options are the flags that start a line of --help (LLVM and CLI11 layouts).
in_help = set(re.findall(r"^\s+(?:-\w,)?(--[a-z][a-z0-9-]*)", help_text, re.M)) - ignore
in_doc = {f for f in re.findall(r"`(--[a-z][a-z0-9-]*)", doc)} - ignore
# dlc-opt's passes and pipelines (--dlgraph-*, --dlexec-*, --dlc-*) and MLIR's
# own flags are documented beside the tool's flags but are not its flags.
in_doc = {f for f in in_doc if not f.startswith(("--mlir", "--dlgraph", "--dlexec", "--dlc-"))}
missing_doc = sorted(in_help - in_doc)
missing_help = sorted(in_doc - in_help)
print("undocumented:", " ".join(missing_doc) or "none")
print("documented but not in --help:", " ".join(missing_help) or "none")
sys.exit(1 if missing_doc or missing_help else 0)
