"""check_check.py (check.bats): good, then one break per promise."""
from craft import broken, meta, x

CHECKER = "check_check.py"


def cases():
    ev = [meta("process_name", "mock-spyre-job", 100), meta("process_name", "Spyre 0", 0),
          meta("thread_name", "train-0", 100, 101), meta("thread_name", "train-1", 100, 102),
          meta("thread_name", "Stream 0", 0, 0), meta("thread_name", "Stream 1", 0, 1)]
    ev += [x("aiuMalloc", float(i), tid=101 + i % 2) for i in range(1000)]
    ev += [x("k", float(i), pid=0, tid=i % 2, cat="kernel") for i in range(10)]
    t = {"spyreRecovered": True, "traceEvents": ev}
    argv = ["recovered", "@t"]
    yield "recovered", argv, {"t": t}, None
    yield "recovered: not marked", argv, {"t": broken(
        t, lambda d: d.pop("spyreRecovered"))}, "spyreRecovered"
    yield "recovered: too little kept", argv, {"t": broken(
        t, lambda d: d.update(traceEvents=d["traceEvents"][:600]))}, "over 1000"
    yield "recovered: a thread named only at the end", argv, {"t": broken(
        t, lambda d: d["traceEvents"].pop(3))}, "tracks without a name"
    yield "recovered: the device unnamed", argv, {"t": broken(
        t, lambda d: d["traceEvents"][1]["args"].update(name="Spyre"))}, "device 0's name"
    yield "recovered: a thread misnamed", argv, {"t": broken(
        t, lambda d: d["traceEvents"][3]["args"].update(name="train-0"))}, "the job's threads"

    def no_streams(d):
        d["traceEvents"][4]["args"]["name"] = "Memcpy HtoD lane 0"
    yield "recovered: a stream's track misnamed", argv, {"t": broken(t, no_streams)}, \
        "want streams 0 and 1"
    yield "recovered: the job misnamed", argv, {"t": broken(
        t, lambda d: d["traceEvents"][0]["args"].update(name="python3"))}, \
        "the job's process name"

    d = "/d"
    r = {"files": [{"file": d + "/w1.json", "events": 20, "problems": 0, "byKind": {},
                    "lines": []},
                   {"file": d + "/w2.json.gz", "events": 11, "problems": 2,
                    "byKind": {"overlap": 2}, "lines": ["a [overlap]", "b [overlap]"]},
                   {"file": d + "/missing.json", "error": "No such file or directory"}],
         "totals": {"files": 3, "events": 31, "problems": 2, "unreadable": 1}}
    argv = ["json", "@r", d]
    yield "json", argv, {"r": r}, None
    yield "json: a clean file with a problem", argv, {"r": broken(
        r, lambda dd: dd["files"][0].update(problems=1))}, "w1.json"
    yield "json: the problems by another kind", argv, {"r": broken(
        r, lambda dd: dd["files"][1].update(byKind={"nesting": 2}))}, "w2.json.gz"
    yield "json: a problem line unmarked", argv, {"r": broken(
        r, lambda dd: dd["files"][1]["lines"].__setitem__(1, "b"))}, "problem lines"
    yield "json: the missing file unsaid", argv, {"r": broken(
        r, lambda dd: dd["files"].pop())}, "the missing file's error"
    yield "json: the totals", argv, {"r": broken(
        r, lambda dd: dd["totals"].update(unreadable=0))}, "totals"
