"""check_pyline.py (pystack.bats): good, then one break per promise."""
from craft import broken, x

CHECKER = "check_pyline.py"
W = "/m.py:7 allocate"


def cases():
    t = {"traceEvents": [x("aten::add", 1.0), x("aten::mm", 2.0, python=W)]}
    yield "none", ["none", "@t", "aten::add"], {"t": t}, None
    yield "none: a line given", ["none", "@t", "aten::mm"], {"t": t}, "want none"

    opens = [x("open", i * 1.0, args={"name": "/etc/hostname"}, python="/o.py:5 <module>")
             for i in range(5)] + [x("open", 9.0, args={"name": "/etc/passwd"})]
    argv = ["calls", "@t", "open", "--arg", "name=/etc/hostname", "--site", "/o.py:5 <module>",
            "--count", "5"]
    t = {"traceEvents": opens}
    yield "calls", argv, {"t": t}, None
    yield "calls: one more", argv, {"t": broken(
        t, lambda d: d["traceEvents"].append(d["traceEvents"][0]))}, "want 5"
    yield "calls: one without its line", argv, {"t": broken(
        t, lambda d: d["traceEvents"][2]["args"].pop("python"))}, "their Python lines"
    yield "calls: another line", argv, {"t": broken(
        t, lambda d: d["traceEvents"][2]["args"].update(python="/o.py:6 <module>"))}, \
        "their Python lines"

    blocks = [{"addr": hex(0x1000 * (i + 1)), "python": W} for i in range(3)]
    mem = [{"ph": "i", "name": "[memory]", "pid": 100, "tid": 100, "ts": i * 1.0,
            "args": {"Addr": 0x1000 * (i + 1), "Bytes": 6666, "python": W, "pystack": [W]}}
           for i in range(3)]
    mem += [{"ph": "i", "name": "[memory]", "pid": 100, "tid": 100, "ts": 9.0,
             "args": {"Addr": 0x9000, "Bytes": 8, "python": "/m.py:9 f", "pystack": []}},
            {"ph": "i", "name": "[memory]", "pid": 100, "tid": 100, "ts": 10.0,
             "args": {"Addr": 0x9000, "Bytes": -8}}]
    t = {"traceEvents": mem, "spyreMemory": {"processes": [{
        "liveGroups": [{"count": 3, "bytes": 20000, "python": W}], "liveBlocks": blocks}]}}
    argv = ["memory", "@t", W, "--blocks", "3", "--bytes", "20000"]
    yield "memory", argv, {"t": t}, None
    yield "memory: the freed line's group live", argv, {"t": broken(
        t, lambda d: d["spyreMemory"]["processes"][0]["liveGroups"].append(
            {"count": 1, "bytes": 8, "python": "/m.py:9 f"}))}, "live groups"
    yield "memory: a block without its line", argv, {"t": broken(
        t, lambda d: d["spyreMemory"]["processes"][0]["liveBlocks"][1].pop("python"))}, \
        "live blocks' lines"
    yield "memory: an allocation's stack from elsewhere", argv, {"t": broken(
        t, lambda d: d["traceEvents"][1]["args"].update(pystack=["/m.py:9 f"]))}, \
        "the live blocks' allocation events"
    yield "memory: a free naming a line", argv, {"t": broken(
        t, lambda d: d["traceEvents"][-1]["args"].update(python=W))}, "a free's event"
