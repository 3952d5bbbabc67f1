"""Small hand-made traces and job files for the checkers' self-tests (selftest.py): the shapes
spyre-bpftrace writes (Chrome trace events, spyreProbes, spyreStats), only the fields the
checkers read. Each case builds a good input and breaks one promise of it."""
import copy

RUNTIME = "privateuse1_runtime"
LOSSES = ("dropsRingFull", "dropsTooDeep", "dropsNoStack", "sampledOut", "dropsRateCap",
          "noReturn", "unwound", "unmatchedReturns", "tailExits")


def x(name, ts, dur=1.0, pid=100, tid=None, cat=RUNTIME, args=None, **more):
    """A span ('X'): its args those of args (an arg called "name" say), then of more."""
    args = dict(args or {}, **more)
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": pid if tid is None else tid,
            "ts": ts, "dur": dur, "args": args}


def instant(name, ts, pid=100, tid=None, **args):
    return {"ph": "i", "s": "t", "cat": RUNTIME, "name": name, "pid": pid,
            "tid": pid if tid is None else tid, "ts": ts, "args": args}


def meta(what, name, pid=100, tid=0, ts=0):
    """A process_name or thread_name record."""
    return {"ph": "M", "name": what, "pid": pid, "tid": tid, "ts": ts, "args": {"name": name}}


def probe(name, symbol=None, **counts):
    """A spyreProbes entry: every loss counter 0 but those given."""
    p = {"name": name, "symbol": symbol or name, "hits": 0, "events": 0}
    p.update({k: 0 for k in LOSSES})
    p.update(counts)
    return p


def trace(evs, probes=(), **stats):
    s = {"events": sum(e["ph"] == "X" for e in evs), "drops": 0, "unwound": 0,
         "targetSignal": 0}
    s.update(stats)
    return {"traceEvents": list(evs), "spyreProbes": list(probes), "spyreStats": s}


def broken(d, fn):
    """A deep copy of d that fn changed."""
    d = copy.deepcopy(d)
    fn(d)
    return d


def by_name(d, name):
    return next(p for p in d["spyreProbes"] if p["name"] == name)


def named(d, name):
    return [e for e in d["traceEvents"] if e.get("name") == name]
