"""check_longrun.py (longrun.bats): good, then one break per promise."""
from craft import broken, x

CHECKER = "check_longrun.py"


def cases():
    draw = "spyre-bpftrace: 0:0%d, 1200 events, 400 ev/s, 80 KiB\x1b[K"
    raw = "".join("\r" + draw % i for i in range(4))
    yield "status-draws", ["status-draws", "@r"], {"r": raw}, None
    yield "status-draws: two only", ["status-draws", "@r"], {
        "r": "".join("\r" + draw % i for i in range(2))}, "want 3 at least"
    yield "status-draws: a line of 80", ["status-draws", "@r"], {
        "r": raw + "\r" + "x" * 75 + " ev/s\x1b[K"}, "wider than 79"
    yield "status-draws: not cleared", ["status-draws", "@r"], {
        "r": raw + "\r" + (draw % 9).replace("\x1b[K", "")}, "does not clear"
    yield "status-draws: a line broken", ["status-draws", "@r"], {
        "r": raw + "\rspyre-bpftrace: 0:09,\n 7 ev/s\x1b[K"}, "breaking the line"

    t = {"spyreFile": {"flightRecorderUs": 1e6, "startUs": 5e6, "endUs": 6.2e6, "events": 9},
         "traceEvents": [x("k", 5.1e6, pid=0, cat="kernel"), x("aiuMalloc", 5.2e6)]}
    yield "flight", ["flight", "@t"], {"t": t}, None
    yield "flight: another length", ["flight", "@t"], {"t": broken(
        t, lambda d: d["spyreFile"].update(flightRecorderUs=2e6))}, "flightRecorderUs"
    yield "flight: reaching back 2 s", ["flight", "@t"], {"t": broken(
        t, lambda d: d["spyreFile"].update(startUs=4.2e6))}, "reaches back"
    yield "flight: empty", ["flight", "@t"], {"t": broken(
        t, lambda d: d["spyreFile"].update(events=0))}, "no event"
    yield "flight: no kernel", ["flight", "@t"], {"t": broken(
        t, lambda d: d["traceEvents"].pop(0))}, "no kernel span"
