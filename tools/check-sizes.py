#!/usr/bin/env python3
"""Reports C/C++ source files and functions that are too long.

Scans the C/C++ sources (.c .cc .cpp .cu .cuh .h .hpp) under compiler/,
runtime/, dialects/, codegen/, tools/ and test/ of the repository, skipping
folders named build* and third-party folders, and files whose first lines say
they are generated. Prints every file over --max-file-lines lines and every
function over --max-function-lines lines, then a summary line. Exits 1 when
anything is over a limit, 0 otherwise, 2 on a usage error.

How a file is measured: its number of lines (as `wc -l`, plus a last line
without a newline).

How a function is measured: from its signature line (the first line of the
declaration that the body belongs to, template header and return type
included, comments before it excluded) to the line of its closing brace,
both counted. Braces are matched after removing comments, string literals,
character literals, raw strings and preprocessor lines, so a brace in any of
those does not count. Lambdas, local classes and nested blocks count toward
the enclosing function. Namespace, extern "C" and class/struct/union/enum
bodies are not functions, but the member functions defined inside a class
body are, each measured on its own. Brace initializers (`= {...}`, a
constructor's `: member{...}`) are not functions; a lambda assigned to a
variable outside any function is measured as a function named after that
variable. gtest's TEST(Suite, Name) { ... } is a function named TEST(Suite, Name).
"""

import argparse
import os
import re
import sys

SOURCE_DIRS = ["compiler", "runtime", "dialects", "codegen", "tools", "test"]
EXTENSIONS = (".c", ".cc", ".cpp", ".cu", ".cuh", ".h", ".hpp")
VENDORED_DIRS = {"third_party", "third-party", "thirdparty", "vendor",
                 "vendored", "external", "extern"}
GENERATED_MARK = re.compile(r"@generated|do not edit|automatically generated",
                            re.IGNORECASE)


def blank_out(text):
    """Returns |text| with comments, string/char literals (raw strings too)
    and preprocessor lines replaced by spaces; newlines are kept, so offsets
    and line numbers stay the same. A string keeps its quotes ("   ")."""
    out = list(text)
    n = len(text)
    i = 0
    line_start = True  # only whitespace since the last newline

    def blank(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if c == "\n":
            line_start = True
            i += 1
            continue
        if c in " \t\r\f\v":
            i += 1
            continue
        if line_start and c == "#":
            # Preprocessor line with backslash continuations; comments inside
            # it are blanked with it.
            j = i
            while j < n:
                if text[j] == "\n" and (j == 0 or text[j - 1] != "\\"):
                    break
                if text.startswith("/*", j):
                    end = text.find("*/", j + 2)
                    j = n if end < 0 else end + 2
                    continue
                j += 1
            blank(i, j)
            i = j
            continue
        line_start = False
        if text.startswith("//", i):
            j = i
            while j < n and not (text[j] == "\n" and text[j - 1] != "\\"):
                j += 1
            blank(i, j)
            i = j
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            j = n if end < 0 else end + 2
            blank(i, j)
            i = j
            continue
        if c == '"':
            # Raw string: R"delim( ... )delim" with prefix R, u8R, uR, UR, LR.
            k = i
            while k > 0 and (text[k - 1].isalnum() or text[k - 1] == "_"):
                k -= 1
            if text[k:i] in ("R", "u8R", "uR", "UR", "LR"):
                open_paren = text.find("(", i + 1)
                delim = text[i + 1:open_paren]
                close = text.find(")" + delim + '"', open_paren + 1)
                j = n if close < 0 else close + len(delim) + 2
                blank(i + 1, j - 1)
                i = j
                continue
            j = i + 1
            while j < n and text[j] != '"' and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            blank(i + 1, min(j, n))
            i = j + 1
            continue
        if c == "'":
            # A digit separator (1'000'000) is not a character literal.
            k = i
            while k > 0 and (text[k - 1].isalnum() or text[k - 1] in "_."):
                k -= 1
            if k < i and text[k].isdigit():
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != "'" and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            blank(i + 1, min(j, n))
            i = j + 1
            continue
        i += 1
    return "".join(out)


def strip_templates(head):
    """Removes `template <...>` headers (angle brackets matched)."""
    while True:
        m = re.search(r"\btemplate\s*<", head)
        if not m:
            return head
        depth = 0
        j = m.end() - 1
        while j < len(head):
            if head[j] == "<":
                depth += 1
            elif head[j] == ">":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        head = head[:m.start()] + " " * (j + 1 - m.start()) + head[j + 1:]


def paren_depth(s):
    depth = 0
    for ch in s:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
    return depth


def top_level(s):
    """|s| with everything inside (), [] and {} replaced by spaces."""
    out = []
    depth = 0
    for ch in s:
        if ch in "([{":
            depth += 1
            out.append(ch if depth == 1 else " ")
        elif ch in ")]}":
            depth -= 1
            out.append(ch if depth == 0 else " ")
        else:
            out.append(ch if depth == 0 else " ")
    return "".join(out)


ACCESS = re.compile(r"^\s*(?:(?:public|private|protected|signals|slots)\s*:(?!:)\s*)+")
NAME_BEFORE_PAREN = re.compile(
    r"((?:[\w~]+(?:\s*<[^()]*?>)?\s*::\s*)*"
    r"(?:operator\s*(?:\(\s*\)|\[\s*\]|[^\w\s(]+|\w[\w\s:*&<>]*?)|~?\w+))\s*$")


def function_name(head, in_class):
    """The (qualified) name of the function whose signature is |head|;
    |in_class| says whether it is defined inside a class body."""
    head = strip_templates(head)
    flat = top_level(head)
    # The parameter list is the first top-level "(" that is not part of
    # `operator()` or of a sizeof/decltype in the return type.
    pos = 0
    while True:
        p = flat.find("(", pos)
        if p < 0:
            return head.strip().split("\n")[0][:60]
        before = head[:p]
        if re.search(r"\boperator\s*$", before) and flat[p + 1:p + 2] == ")":
            pos = p + 2
            continue
        if re.search(r"\b(?:sizeof|decltype|alignof|alignas|noexcept)\s*(?:\.\.\.)?\s*$",
                     before):
            pos = p + 1
            continue
        m = NAME_BEFORE_PAREN.search(before)
        if not m:
            return head.strip().split("\n")[0][:60]
        name = re.sub(r"\s+", " ", m.group(1)).strip()
        if not in_class and re.fullmatch(r"[A-Z][A-Z0-9_]*", name):
            # A macro such as TEST(Suite, Name): keep its arguments.
            close = flat.find(")", p)
            args = re.sub(r"\s+", " ", head[p:close + 1])
            return name + args
        return name


def classify(head):
    """What a `{` opens at namespace or class scope, given the text |head|
    since the previous `;`, `{` or `}` there: 'namespace', 'class', 'function',
    'lambda' (a lambda assigned to a variable), 'expr' (a brace that belongs
    to the statement, which goes on after it) or 'block' (anything else,
    scanned like a namespace)."""
    body = ACCESS.sub("", head)
    if paren_depth(body) > 0:
        return "expr"  # inside a parenthesized default argument etc.
    plain = strip_templates(body)
    flat = top_level(plain)
    if re.search(r"\bnamespace\b", flat) or re.fullmatch(r"\s*extern\s*\"\s*\"\s*",
                                                          flat):
        return "namespace"
    eq = re.search(r"(?<![=!<>+\-*/%&|^])=(?!=)", flat)
    if eq and not re.search(r"\boperator\s*$", flat[:eq.start()]):
        if re.match(r"\s*\[", flat[eq.end():]):
            return "lambda"
        return "expr"
    paren = flat.find("(")
    m = re.search(r"\b(class|struct|union|enum)\b", flat)
    if m and (paren < 0 or m.start() < paren):
        return "class"
    if paren < 0:
        if flat.strip() == "":
            return "block"
        # `int x{0}` member initializer, `Base{...}` in an init list.
        return "expr"
    # Constructor init list: `Foo() : a(1), b` followed by `{` is an
    # initializer brace; `Foo() : a(1), b{2}` followed by `{` is the body.
    init = re.search(r"\)\s*(?:const\s*|noexcept\s*|override\s*|final\s*)*:(?!:)",
                     flat)
    if init and re.search(r"[\w>]\s*$", flat) and not re.search(
            r"\b(?:const|noexcept|override|final|try)\s*$", flat):
        return "expr"
    return "function"


def lambda_name(head):
    flat = top_level(strip_templates(ACCESS.sub("", head)))
    eq = re.search(r"(?<![=!<>+\-*/%&|^])=(?!=)", flat)
    m = re.search(r"(\w+)\s*(?:\[\s*\])?\s*$", flat[:eq.start()])
    return (m.group(1) if m else "lambda") + " (lambda)"


def measure(text):
    """Returns [(name, first_line, length)] for each function in |text|."""
    code = blank_out(text)
    line_of = []
    line = 1
    for ch in code:
        line_of.append(line)
        if ch == "\n":
            line += 1
    functions = []
    stack = []  # the namespace, class and block scopes we are in
    head_start = 0  # where the current declaration began, at non-function scope
    i = 0
    n = len(code)
    while i < n:
        ch = code[i]
        if ch == ";":
            head_start = i + 1
        elif ch == "}":
            if stack:
                stack.pop()
            head_start = i + 1
        elif ch == "{":
            head_start = skip_macro_calls(code, head_start, i)
            head = code[head_start:i]
            kind = classify(head)
            if kind in ("function", "lambda"):
                end = match_brace(code, i)
                body = ACCESS.sub(lambda m: " " * len(m.group(0)), head)
                first = head_start + (len(body) - len(body.lstrip()))
                name = (function_name(body, "class" in stack) if kind == "function"
                        else lambda_name(body))
                functions.append((name, line_of[min(first, n - 1)],
                                  line_of[min(end, n - 1)] - line_of[min(first, n - 1)] + 1))
                i = end + 1
                head_start = i
                continue
            if kind == "expr":
                # An initializer: skip it; the declaration goes on after it.
                i = match_brace(code, i) + 1
                continue
            stack.append(kind)
            head_start = i + 1
        i += 1
    return functions


MACRO_CALL = re.compile(r"\s*[A-Z][A-Z0-9_]*\s*\((?:[^()]|\([^()]*\))*\)")


def skip_macro_calls(code, start, end):
    """Moves |start| past macro invocations without a semicolon that come
    before a declaration (`DLC_DEFINE(X)` lines), as long as a signature
    follows them."""
    while True:
        m = MACRO_CALL.match(code, start, end)
        if not m or "(" not in code[m.end():end]:
            return start
        start = m.end()


def match_brace(code, i):
    """Index of the `}` that closes the `{` at |i| (or the last index)."""
    depth = 0
    for j in range(i, len(code)):
        if code[j] == "{":
            depth += 1
        elif code[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(code) - 1


def count_lines(text):
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)


def source_files(root, tops=SOURCE_DIRS):
    """The C/C++ sources under the folders |tops| of |root|."""
    for top in tops:
        base = os.path.join(root, top)
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames
                                 if not d.startswith("build") and
                                 d.lower() not in VENDORED_DIRS and
                                 not d.startswith("."))
            for f in sorted(filenames):
                if f.endswith(EXTENSIONS):
                    yield os.path.join(dirpath, f)


def is_generated(text):
    return bool(GENERATED_MARK.search("\n".join(text.split("\n", 5)[:5])))


def main(argv):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))), help="repository root (default: the "
        "folder above tools/)")
    parser.add_argument("--max-file-lines", type=int, default=1200,
                        help="longest allowed file, in lines (default 1200)")
    parser.add_argument("--max-function-lines", type=int, default=200,
                        help="longest allowed function, in lines (default 200)")
    parser.add_argument("--top", type=int, default=0, metavar="N",
                        help="also list the N longest functions, over the "
                        "limit or not")
    parser.add_argument("paths", nargs="*", help="only these files or "
                        "folders (relative to --root or absolute) instead of "
                        "the whole tree")
    args = parser.parse_args(argv)

    root = os.path.abspath(args.root)
    if args.paths:
        files = []
        for p in args.paths:
            p = p if os.path.isabs(p) else os.path.join(root, p)
            if os.path.isdir(p):
                files.extend(source_files(p, ["."]))
            else:
                files.append(p)
    else:
        files = list(source_files(root))
    long_files = []
    long_functions = []
    all_functions = []
    scanned = 0
    for path in files:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        if is_generated(text):
            continue
        scanned += 1
        rel = os.path.relpath(path, root)
        lines = count_lines(text)
        if lines > args.max_file_lines:
            long_files.append((rel, lines))
        for name, first, length in measure(text):
            all_functions.append((length, rel, first, name))
            if length > args.max_function_lines:
                long_functions.append((rel, first, name, length))

    for rel, lines in long_files:
        print(f"{rel}: file has {lines} lines (max {args.max_file_lines})")
    for rel, first, name, length in long_functions:
        print(f"{rel}:{first}: function {name} has {length} lines "
              f"(max {args.max_function_lines})")
    if args.top:
        print(f"longest {args.top} functions:")
        for length, rel, first, name in sorted(
                all_functions, key=lambda t: (-t[0], t[1], t[2]))[:args.top]:
            print(f"  {length:5d}  {rel}:{first}: {name}")
    print(f"check-sizes: {len(long_files)} file(s) over {args.max_file_lines} "
          f"lines, {len(long_functions)} function(s) over "
          f"{args.max_function_lines} lines ({scanned} files, "
          f"{len(all_functions)} functions scanned)")
    return 1 if long_files or long_functions else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
