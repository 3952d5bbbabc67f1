#!/usr/bin/python3
"""Copy an aiu-trace-analyzer checkout so that Debian bookworm's Python 3.11 can import it.

    py311_fstrings.py SRC DST

aiu-trace-analyzer v1.2.0 uses one construct that needs Python >= 3.12: the same quote inside an
f-string's replacement field (f"{event["tid"]}", PEP 701). Bookworm has 3.11. Every .py file that
3.11 cannot compile gets those inner quotes swapped for the other kind; nothing else changes, and
a file that still does not compile afterwards is an error (so a new 3.12-only construct is seen,
not silently run differently). Prints the rewritten files.
"""
import pathlib
import shutil
import sys


def swap_inner_quotes(line):
    """Inside f"..." / f'...' replacement fields, turn the string's own quote into the other."""
    out, i, n = [], 0, len(line)
    while i < n:
        c = line[i]
        if c in "fF" and i + 1 < n and line[i + 1] in "\"'" and (i == 0 or not line[i - 1].isalnum()):
            q = line[i + 1]
            other = "'" if q == '"' else '"'
            out.append(line[i:i + 2])
            i += 2
            depth = 0
            while i < n:
                c = line[i]
                if depth == 0 and c == "\\" and i + 1 < n:
                    out.append(line[i:i + 2])
                    i += 2
                    continue
                if depth == 0 and line[i:i + 2] in ("{{", "}}"):
                    out.append(line[i:i + 2])
                    i += 2
                    continue
                if c == "{":
                    depth += 1
                elif c == "}" and depth > 0:
                    depth -= 1
                elif c == q:
                    if depth == 0:
                        break
                    c = other
                out.append(c)
                i += 1
            if i < n:
                out.append(line[i])
                i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def compiles(text, name):
    try:
        compile(text, name, "exec")
        return True
    except SyntaxError:
        return False


def main():
    src, dst = map(pathlib.Path, sys.argv[1:3])
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".git"))
    for path in sorted(dst.rglob("*.py")):
        text = path.read_text()
        if compiles(text, str(path)):
            continue
        fixed = "".join(swap_inner_quotes(l) for l in text.splitlines(keepends=True))
        if not compiles(fixed, str(path)):
            sys.exit(f"{path}: does not compile on Python {sys.version.split()[0]} even after "
                     "swapping quotes inside f-strings")
        path.write_text(fixed)
        print(path.relative_to(dst))


if __name__ == "__main__":
    main()
