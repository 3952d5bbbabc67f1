#!/usr/bin/env python3
"""Checks a trace of the mock job's process group (c10d::SpyreCCLBackend over libspyre_comms;
tests/e2e/collectives.bats) against each rank's counts file, and the rank the trace names:

  rank TRACE COUNTS PCI ITERS   the rank's collective spans (backend and comms op) equal its calls,
      some made; each comms op carries what run_collective passed it (8 INT64 words, SUM, the
      last rank as root, the next rank as peer to send to and the previous to receive from, the
      iteration as tag); distributedInfo names the rank and world, PCI its bus id ("" none)
  merged MERGED COUNTS0 COUNTS1   two ranks' traces merged: each rank's collectives by its pid,
      spyreDistributedInfo each rank's by pid, distributedInfo rank 0's (the second input's)
  report REPORT COUNTS0 COUNTS1   report --json of the merged trace (both ranks, by pid) and of
      rank 1's (its distributedInfo): each rank's collectives by op, a call count and 64 bytes a
      call (a barrier none), a time
  dist TRACE [RANK SIZE] [--pci ID] [--none]   distributedInfo is spyre_ccl, RANK of SIZE (with
      --pci, that bus id), or there is none

Exit 0 when all holds, else 1 with the first promise broken and its data.
"""
import argparse
import collections

from checklib import load, need, spans

OPS = ("allgather", "allreduce", "barrier", "broadcast", "gather", "reduce", "send", "recv")


def rank(a):
    d, c, pci, iters = load(a.trace), load(a.counts), a.pci, a.iters
    x = [e for e in spans(d) if e["pid"] == c["pid"]]
    n = collections.Counter(e["name"] for e in x)
    for op in OPS:
        for sym in ("c10d::SpyreCCLBackend::" + op, "spyre_comms::Context::" + op):
            need(n[sym] == c["calls"][sym], sym + ": spans, want the rank's calls", n[sym],
                 c["calls"][sym])
    need(n["c10d::SpyreCCLWork::wait"] == c["calls"]["c10d::SpyreCCLWork::wait"],
         "SpyreCCLWork::wait spans", n["c10d::SpyreCCLWork::wait"])
    need(sum(n["c10d::SpyreCCLBackend::" + op] for op in OPS) > 0, "no collective", dict(n))
    # What run_collective passes: 8 INT64 words (dtype 3), the reduction SUM (0), the last rank
    # as root (1 of 2: not the op's 0), send to the next rank and receive from the previous
    # one, the iteration as tag. allgather and gather take the outputs' vector first: their
    # bytes come from the input in arg4, which a table reading arg3 (the vector) gets wrong.
    r, ws = c["rank"], c["world_size"]
    tensor = {"bytes": 64, "dtype": 3}
    want = {"allgather": tensor, "allreduce": dict(tensor, op=0), "barrier": {},
            "broadcast": dict(tensor, root=ws - 1), "gather": dict(tensor, root=ws - 1),
            "reduce": dict(tensor, op=0, root=ws - 1),
            "send": dict(tensor, peer=(r + 1) % ws), "recv": dict(tensor, peer=(r - 1) % ws)}
    tags = [i for i in range(iters) if ws > 1 and i % 7 == 6]
    for op in OPS:
        ev = [e for e in x if e["name"] == "spyre_comms::Context::" + op]
        got = [{k: e["args"].get(k) for k in want[op]} for e in ev]
        need(got == [want[op]] * c["calls"]["spyre_comms::Context::" + op],
             op + ": arguments, want %s" % want[op], got[:3])
        if op in ("send", "recv"):
            need(sorted(e["args"].get("tag") for e in ev) == tags, op + ": tags", ev[:3])
    di = d["distributedInfo"]
    need(di["backend"] == "spyre_ccl" and di["rank"] == r and di["world_size"] == ws,
         "distributedInfo, want rank %d of %d" % (r, ws), di)
    need(di.get("pci_bus_id", "") == pci, "distributedInfo's bus id, want %r" % pci, di)


def merged(a):
    m, cs = load(a.merged), [load(p) for p in a.counts]
    n = collections.Counter((e["pid"], e["name"]) for e in spans(m))
    for c in cs:
        for op in OPS:
            for sym in ("c10d::SpyreCCLBackend::" + op, "spyre_comms::Context::" + op):
                need(n[(c["pid"], sym)] == c["calls"][sym],
                     "rank %d's %s: spans, want its calls" % (c["rank"], sym),
                     n[(c["pid"], sym)], c["calls"][sym])
    # each rank by its pid; distributedInfo is the second input's (rank 0's), as before
    by_pid = {e["pid"]: e for e in m.get("spyreDistributedInfo", [])}
    need(len(by_pid) == 2, "spyreDistributedInfo, want both ranks", m.get("spyreDistributedInfo"))
    for c, pci in zip(cs, ("0000:1a:00.0", "0000:1b:00.0")):
        e = by_pid.get(c["pid"], {})
        need((e.get("backend"), e.get("rank"), e.get("world_size"), e.get("pci_bus_id")) ==
             ("spyre_ccl", c["rank"], 2, pci), "rank %d's spyreDistributedInfo" % c["rank"], e)
    need(m["distributedInfo"]["rank"] == 0, "distributedInfo, want rank 0's",
         m["distributedInfo"])


def report(a):
    files, cs = load(a.report)["files"], [load(p) for p in a.counts]

    def check(f, ranks, which):
        got = {(x["rank"], x["pid"], x["op"]): x for x in f["collectives"]}
        want = {(c["rank"], c["pid"], op) for c in ranks for op in OPS
                if c["calls"]["spyre_comms::Context::" + op]}
        need(set(got) == want, which + ": collectives' rows, want the ranks' ops",
             set(got) ^ want)
        for c in ranks:
            for op in OPS:
                x = got.get((c["rank"], c["pid"], op))
                n = c["calls"]["spyre_comms::Context::" + op]
                if not n:
                    continue
                # 8 INT64 words a call (rank); a barrier moves none
                need(x["count"] == n and x["bytes"] == (0 if op == "barrier" else 64 * n),
                     which + ": count or bytes", x)
                need(x["totalNs"] > 0, which + ": no time", x)
    check(files[0], cs, "the merged trace")
    check(files[1], cs[1:], "rank 1's trace")


def dist(a):
    d = load(a.trace)
    if a.none:
        need("distributedInfo" not in d, "distributedInfo, want none", d.get("distributedInfo"))
        return
    want = {"backend": "spyre_ccl", "rank": a.rank, "world_size": a.size}
    if a.pci is not None:
        want["pci_bus_id"] = a.pci
    need(d.get("distributedInfo") == want, "distributedInfo, want rank %s of %s" %
         (a.rank, a.size), d.get("distributedInfo"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("rank")
    c.add_argument("trace")
    c.add_argument("counts")
    c.add_argument("pci")
    c.add_argument("iters", type=int)
    c.set_defaults(fn=rank)
    c = sub.add_parser("merged")
    c.add_argument("merged")
    c.add_argument("counts", nargs=2)
    c.set_defaults(fn=merged)
    c = sub.add_parser("report")
    c.add_argument("report")
    c.add_argument("counts", nargs=2)
    c.set_defaults(fn=report)
    c = sub.add_parser("dist")
    c.add_argument("trace")
    c.add_argument("rank", type=int, nargs="?")
    c.add_argument("size", type=int, nargs="?")
    c.add_argument("--pci")
    c.add_argument("--none", action="store_true")
    c.set_defaults(fn=dist)
    a = ap.parse_args()
    if a.cmd == "dist" and a.none == (a.rank is not None):
        ap.error("dist: RANK SIZE or --none")
    a.fn(a)


if __name__ == "__main__":
    main()
