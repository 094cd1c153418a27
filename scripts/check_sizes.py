#!/usr/bin/env python3
"""Size limits of the product sources (docs/architecture.md, "Sizes"): no function over
120 lines and no source file over 600 lines in runtime/, loaders/, kernels/ and tools/
(tests and generated files aside). Prints each excess; exit 1 when there is one.

usage: check_sizes.py [SOURCE_DIR] [--functions N] [--files N] [--list N]
  --list N prints every function over N lines (for planning), whatever the limits.

Functions are found by brace matching on the text with comments and strings blanked:
a body is a '{' at namespace or class scope whose opening text ends like a function
head (')' then optional const/noexcept/override/trailing return or a constructor's
initialiser list). Lambdas and nested blocks count toward the function they are in.
"""
import os
import re
import sys

SOURCE_DIRS = ("runtime", "loaders", "kernels", "tools")
EXTENSIONS = (".cpp", ".h", ".cu", ".cuh")
HEAD = re.compile(r"\)\s*(const)?\s*(noexcept)?\s*(override|final)?\s*(->\s*[\w:<>,\s\*&]+)?\s*$")
INIT_LIST = re.compile(r"\)\s*:\s*.*$", re.S)
SCOPE = re.compile(r"\b(namespace|struct|class|union|enum)\b[^;()]*$")


def blank(src):
    """The text with comments, string and character literals replaced by spaces (lines kept)."""
    out, i, n = [], 0, len(src)
    while i < n:
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif src.startswith('R"(', i):
            j = src.find(')"', i + 3)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif src[i] in "\"'":
            q, j = src[i], i + 1
            while j < n and src[j] != q:
                j += 2 if src[j] == "\\" else 1
            out.append(q + " " * max(0, j - i - 1) + q)
            i = j + 1
        else:
            out.append(src[i])
            i += 1
    return "".join(out)


def functions(path):
    """(lines, first line, head text) of every function body in the file."""
    text = blank(open(path, errors="replace").read())
    found, stack, line, start = [], [], 1, 0
    for i, c in enumerate(text):
        if c == "\n":
            line += 1
        elif c == "{":
            # Whitespace runs collapsed (blanked strings are long runs of spaces): HEAD's
            # adjacent \s* would otherwise backtrack polynomially on them.
            head = re.sub(r"\s+", " ", text[start:i]).strip()
            in_function = any(kind == "fn" for kind, _, _ in stack)
            kind = "block"
            if not in_function:
                if SCOPE.search(head) or head.startswith('extern "'):
                    kind = "scope"
                elif HEAD.search(head) or INIT_LIST.search(head):
                    kind = "fn"
            stack.append((kind, line, head[-100:]))
            start = i + 1
        elif c == "}":
            if stack:
                kind, first, head = stack.pop()
                if kind == "fn":
                    found.append((line - first + 1, first, head))
            start = i + 1
        elif c == ";":
            start = i + 1
    return found


def main(argv):
    root, max_fn, max_file, listing = ".", 120, 600, 0
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--functions":
            max_fn = int(args.pop(0))
        elif a == "--files":
            max_file = int(args.pop(0))
        elif a == "--list":
            listing = int(args.pop(0))
        else:
            root = a
    excess = 0
    for d in SOURCE_DIRS:
        for dirpath, _, names in os.walk(os.path.join(root, d)):
            for name in sorted(names):
                if not name.endswith(EXTENSIONS):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                lines = sum(1 for _ in open(path, errors="replace"))
                if lines > max_file:
                    print(f"{rel}: {lines} lines (at most {max_file})")
                    excess += 1
                for n, first, head in functions(path):
                    if n > max_fn:
                        print(f"{rel}:{first}: function of {n} lines (at most {max_fn}): {head}")
                        excess += 1
                    elif listing and n > listing:
                        print(f"{rel}:{first}: {n} lines: {head}")
    return 1 if excess else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
