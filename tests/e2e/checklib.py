"""What the trace checkers of tests/e2e (check_*.py) share: reading a trace or a job's file,
plain or gzip, and failing with a message that names the checker and shows the data at fault.
Each checker states one promise per need(); the first that does not hold ends it with exit 1."""
import gzip
import json
import os
import sys


def load(path):
    """A JSON file, plain or gzip (told by its magic, not its name)."""
    with open(path, "rb") as f:
        head = f.read(2)
    opener = gzip.open if head == b"\x1f\x8b" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def need(cond, what, *data):
    """Exit 1 with "CHECKER: WHAT: DATA" unless cond holds."""
    if not cond:
        prog = os.path.basename(sys.argv[0])
        sys.exit("%s: %s%s" % (prog, what, "".join(": %r" % (x,) for x in data)))


class Probes(dict):
    """spyreProbes by name; a name not there ends the check, saying so (not a KeyError)."""

    def __missing__(self, name):
        need(False, "no probe %s in spyreProbes" % name, sorted(self))


def probes(d):
    """The trace's spyreProbes by name."""
    return Probes((p["name"], p) for p in d.get("spyreProbes", []))


def spans(d):
    """The trace's complete ('X') events."""
    return [e for e in d["traceEvents"] if e.get("ph") == "X"]
