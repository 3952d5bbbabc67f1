"""check_collectives.py (collectives.bats, keys.bats): two made-up ranks, good, then one break per
promise."""
from craft import broken, x

CHECKER = "check_collectives.py"
OPS = ("allgather", "allreduce", "barrier", "broadcast", "gather", "reduce", "send", "recv")
ITERS = 14


def rank_files(r, pid, ws=2):
    """rank r's counts and trace: ITERS iterations, each one op in turn (op i % 8... as the mock,
    here: every op once a round of 7, send and recv on the 7th)"""
    calls = {}
    ev = []
    tensor = {"bytes": 64, "dtype": 3}
    args = {"allgather": tensor, "allreduce": dict(tensor, op=0), "barrier": {},
            "broadcast": dict(tensor, root=ws - 1), "gather": dict(tensor, root=ws - 1),
            "reduce": dict(tensor, op=0, root=ws - 1),
            "send": dict(tensor, peer=(r + 1) % ws), "recv": dict(tensor, peer=(r - 1) % ws)}
    for i in range(ITERS):
        ops = ("send", "recv") if i % 7 == 6 else (OPS[i % 7 if i % 7 < 6 else 0],)
        for op in ops:
            a = dict(args[op], **({"tag": i} if op in ("send", "recv") else {}))
            ev += [x("c10d::SpyreCCLBackend::" + op, i * 10.0, 5.0, pid=pid),
                   x("spyre_comms::Context::" + op, i * 10.0 + 1, 3.0, pid=pid, args=a),
                   x("c10d::SpyreCCLWork::wait", i * 10.0 + 6, 1.0, pid=pid)]
            for sym in ("c10d::SpyreCCLBackend::" + op, "spyre_comms::Context::" + op,
                        "c10d::SpyreCCLWork::wait"):
                calls[sym] = calls.get(sym, 0) + 1
    for op in OPS:
        for sym in ("c10d::SpyreCCLBackend::" + op, "spyre_comms::Context::" + op):
            calls.setdefault(sym, 0)
    c = {"pid": pid, "rank": r, "world_size": ws, "calls": calls}
    t = {"traceEvents": ev, "distributedInfo": {"backend": "spyre_ccl", "rank": r,
                                                "world_size": ws, "pci_bus_id": "0000:1a:00.0"}}
    return c, t


def comm(d, op, k=0):
    return [e for e in d["traceEvents"] if e["name"] == "spyre_comms::Context::" + op][k]


def cases():
    c0, t0 = rank_files(0, 100)
    c1, t1 = rank_files(1, 200)
    argv = ["rank", "@t", "@c", "0000:1a:00.0", str(ITERS)]
    f = lambda t: {"t": t, "c": c0}
    yield "rank", argv, f(t0), None
    yield "rank: a collective lost", argv, f(broken(
        t0, lambda d: d["traceEvents"].remove(comm(d, "gather")))), "spyre_comms::Context::gather"
    yield "rank: a wait lost", argv, f(broken(t0, lambda d: d["traceEvents"].pop())), \
        "SpyreCCLWork::wait"
    yield "rank: allgather's bytes from the outputs' vector", argv, f(broken(
        t0, lambda d: comm(d, "allgather")["args"].update(bytes=24))), "allgather: arguments"
    yield "rank: the op's root, not the last rank", argv, f(broken(
        t0, lambda d: comm(d, "broadcast")["args"].update(root=0))), "broadcast: arguments"
    yield "rank: a send's tag", argv, f(broken(
        t0, lambda d: comm(d, "send")["args"].update(tag=5))), "send: tags"
    yield "rank: another rank named", argv, f(broken(
        t0, lambda d: d["distributedInfo"].update(rank=1))), "distributedInfo, want rank 0"
    yield "rank: the bus id", ["rank", "@t", "@c", "", str(ITERS)], f(t0), "bus id"

    m = {"traceEvents": t0["traceEvents"] + t1["traceEvents"],
         "spyreDistributedInfo": [dict(t0["distributedInfo"], pid=100),
                                  dict(t1["distributedInfo"], pid=200,
                                       pci_bus_id="0000:1b:00.0")],
         "distributedInfo": t0["distributedInfo"]}
    argv = ["merged", "@m", "@c0", "@c1"]
    f = lambda mm: {"m": mm, "c0": c0, "c1": c1}
    yield "merged", argv, f(m), None
    yield "merged: a rank's collective on the other's pid", argv, f(broken(
        m, lambda d: comm(d, "reduce").update(pid=200))), "rank 0's spyre_comms::Context::reduce"
    yield "merged: one rank's info", argv, f(broken(
        m, lambda d: d["spyreDistributedInfo"].pop())), "want both ranks"
    yield "merged: a rank's bus id", argv, f(broken(
        m, lambda d: d["spyreDistributedInfo"][1].update(pci_bus_id="0000:1a:00.0"))), \
        "rank 1's spyreDistributedInfo"
    yield "merged: rank 1's as the file's", argv, f(broken(
        m, lambda d: d.update(distributedInfo=d["spyreDistributedInfo"][1]))), \
        "want rank 0's"

    def rows(cs):
        return [{"rank": c["rank"], "pid": c["pid"], "op": op,
                 "count": c["calls"]["spyre_comms::Context::" + op],
                 "bytes": 0 if op == "barrier" else 64 * c["calls"]["spyre_comms::Context::" + op],
                 "totalNs": 1000} for c in cs for op in OPS
                if c["calls"]["spyre_comms::Context::" + op]]
    r = {"files": [{"collectives": rows([c0, c1])}, {"collectives": rows([c1])}]}
    argv = ["report", "@r", "@c0", "@c1"]
    f = lambda rr: {"r": rr, "c0": c0, "c1": c1}
    yield "report", argv, f(r), None
    yield "report: a rank's op missing", argv, f(broken(
        r, lambda d: d["files"][0]["collectives"].pop(3))), "the merged trace: collectives' rows"
    yield "report: a barrier moving bytes", argv, f(broken(
        r, lambda d: [x_.update(bytes=64) for x_ in d["files"][1]["collectives"]
                      if x_["op"] == "barrier"])), "rank 1's trace: count or bytes"
    yield "report: no time", argv, f(broken(
        r, lambda d: d["files"][0]["collectives"][0].update(totalNs=0))), "no time"

    d = {"traceEvents": [], "distributedInfo": {"backend": "spyre_ccl", "rank": 5,
                                                "world_size": 8}}
    yield "dist", ["dist", "@t", "5", "8"], {"t": d}, None
    yield "dist: another rank", ["dist", "@t", "4", "8"], {"t": d}, "want rank 4 of 8"
    yield "dist --pci: none given", ["dist", "@t", "5", "8", "--pci", "0000:1b:00.0"], \
        {"t": d}, "want rank 5 of 8"
    yield "dist --pci", ["dist", "@t", "5", "8", "--pci", "0000:1b:00.0"], {"t": broken(
        d, lambda dd: dd["distributedInfo"].update(pci_bus_id="0000:1b:00.0"))}, None
    yield "dist --none", ["dist", "@t", "--none"], {"t": {"traceEvents": []}}, None
    yield "dist --none: one made up", ["dist", "@t", "--none"], {"t": d}, "want none"
