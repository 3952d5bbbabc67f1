#!/usr/bin/env python3
"""Shows that the trace checkers of tests/e2e (check_*.py) fail on a wrong trace: for each,
tests/checkers/cases_*.py hand it small made-up inputs, a good one that must pass and, for each
family of its promises, one broken on purpose that must fail (exit 1) with that promise's
message. Without this, a checker whose test can no longer fail (an assertion made vacuous by a
renamed field, an early return) would go on passing the e2e suites unnoticed.

    selftest.py [-v] [CASES_MODULE ...]   (default: every cases_*.py here)

Needs no root and no build: `make check-checkers` runs it within `make test`.
"""
import contextlib
import glob
import importlib
import io
import json
import os
import sys
import tempfile
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
E2E = os.path.join(HERE, "..", "e2e")


CODE = {}


def invoke(path, args):
    """Run a checker as `python3 PATH ARGS` would, in this process (a process each took ~90 ms
    on a loaded 2-core machine, ~100 cases a suite), its code compiled once: its exit status
    and its output."""
    if path not in CODE:
        with open(path) as f:
            CODE[path] = compile(f.read(), path, "exec")
    out = io.StringIO()
    argv = sys.argv
    sys.argv = [path] + args
    rc = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            exec(CODE[path], {"__name__": "__main__", "__file__": path})
    except SystemExit as e:
        if isinstance(e.code, str):
            out.write(e.code + "\n")
            rc = 1
        else:
            rc = e.code or 0
    except Exception:
        out.write(traceback.format_exc())
        rc = 1
    finally:
        sys.argv = argv
    return rc, out.getvalue()


def run(checker, case, tmp):
    name, argv, files, fail = case
    d = tempfile.mkdtemp(dir=tmp)
    paths = {}
    for key, obj in files.items():
        paths[key] = os.path.join(d, key)
        # a key "dir/name" makes the folder too, and "@dir" names it (a checker that reads a
        # folder of files)
        parts = key.split("/")[:-1]
        for i in range(len(parts)):
            paths["/".join(parts[:i + 1])] = os.path.join(d, *parts[:i + 1])
        os.makedirs(os.path.dirname(paths[key]), exist_ok=True)
        with open(paths[key], "w") as f:
            if isinstance(obj, str):
                f.write(obj)
            else:
                json.dump(obj, f)
        if isinstance(obj, str) and obj.startswith("#!"):
            os.chmod(paths[key], 0o755)     # a stand-in for a program the checker runs
    missing = [a for a in argv if a.startswith("@") and a[1:] not in paths]
    if missing:
        return "%s %s" % (checker, name), False, "the case names no file %s" % missing
    args = [paths[a[1:]] if a.startswith("@") else a for a in argv]
    rc, out = invoke(os.path.join(E2E, checker), args)
    if fail is None:
        ok = rc == 0
        why = "" if ok else "the good input failed (exit %d): %s" % (rc, out[-600:])
    else:
        ok = rc == 1 and fail in out
        why = "" if ok else "want exit 1 saying %r, got exit %d: %s" % (fail, rc, out[-600:])
    return "%s %s" % (checker, name), ok, why


def main():
    verbose = "-v" in sys.argv
    mods = [a for a in sys.argv[1:] if a != "-v"] or sorted(
        os.path.basename(p)[:-3] for p in glob.glob(os.path.join(HERE, "cases_*.py")))
    sys.path[:0] = [HERE, E2E]
    jobs = []
    for m in mods:
        mod = importlib.import_module(m)
        jobs += [(mod.CHECKER, c) for c in mod.cases()]
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, ok, why in (run(c, case, tmp) for c, case in jobs):
            if not ok:
                bad += 1
                print("FAIL", name, why)
            elif verbose:
                print("ok  ", name)
    print("checker self-tests: %d cases, %d failed" % (len(jobs), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
