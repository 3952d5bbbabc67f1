"""check_budget.py (budget.bats, fleet.bats): a budgeted trace, good, then one break per
promise."""
from craft import broken, probe, x

CHECKER = "check_budget.py"


def budgeted():
    wins = [[0, 2_500_000], [4_000_000, 5_000_000]]
    ev = [x("k", 100.0, 50.0, pid=0, tid=1, cat="kernel"),
          x("Memcpy (HtoD)", 4_100_000.0, 10.0, pid=0, tid=2, cat="gpu_memcpy")]
    return {"traceEvents": ev, "spyreProbes": [probe("spyreLaunchJobPlan", hits=9, events=9)],
            "spyreMemory": {"sampled": True, "pauses": 2},
            "spyreStats": {"maxOverheadPct": 10, "estOverheadPct": 9.5, "jobCpuNs": 3e9,
                           "budget": {"windows": 2, "windowsUs": wins, "tracedSec": 3.5,
                                      "runSec": 6.0, "launchesCutAtPause": 0,
                                      "switchChargedSec": 0.2}}}


def cases():
    t = budgeted()
    yield "defaults", ["@t"], {"t": t}, None
    argv = ["--min-windows", "2", "--device", "--paused", "--max-pct", "12", "@t"]
    yield "windows, device, paused, max-pct", argv, {"t": t}, None
    yield "a window missing", ["--min-windows", "3", "@t"], {"t": t}, "3 wanted"

    def overlap(d):
        d["spyreStats"]["budget"]["windowsUs"][1][0] = 2_000_000
    yield "windows overlapping", ["@t"], {"t": broken(t, overlap)}, "overlapping"
    yield "never paused", ["--paused", "@t"], {"t": broken(
        t, lambda d: d["spyreStats"]["budget"].update(tracedSec=6.0))}, "never paused"
    yield "over the figure wanted", ["--max-pct", "9", "@t"], {"t": t}, "overhead 9.5 over 9"
    yield "no device span", ["--device", "@t"], {"t": broken(
        t, lambda d: d.update(traceEvents=[]))}, "no device span"

    def over_pause(d):
        d["traceEvents"][0].update(ts=3_000_000.0)
    yield "a device span over a pause", ["@t"], {"t": broken(t, over_pause)}, \
        "device spans over a pause"

    def ioctl_in_pause(d):
        d["traceEvents"].append(x("VFIO_IOMMU_MAP_DMA", 3_000_000.0, 2.0, pid=7, tid=7,
                                  cat="privateuse1_driver"))
    yield "a driver span in a window, ending past it", ["@t"], {"t": broken(
        t, lambda d: d["traceEvents"].append(x("VFIO_IOMMU_MAP_DMA", 2_499_999.0, 5000.0,
                                               pid=7, tid=7, cat="privateuse1_driver")))}, None
    yield "a driver span begun in a pause", ["@t"], {"t": broken(t, ioctl_in_pause)}, \
        "driver spans begun in a pause"
    yield "the ledger not sampled", ["@t"], {"t": broken(
        t, lambda d: d["spyreMemory"].update(sampled=False))}, "memory ledger"
    yield "a pause uncounted", ["@t"], {"t": broken(
        t, lambda d: d["spyreMemory"].update(pauses=0))}, "memory ledger"
    yield "no budget", ["@t"], {"t": broken(
        t, lambda d: d["spyreStats"].pop("budget"))}, "the run had no budget"

    yield "--pct", ["--pct", "10", "--paused", "@t"], {"t": t}, None
    yield "--pct: another", ["--pct", "35", "@t"], {"t": t}, "maxOverheadPct 10, 35.0 wanted"
    none = {"traceEvents": [], "spyreStats": {"events": 3}}
    yield "--none", ["--none", "@t"], {"t": none}, None
    yield "--none: a budget", ["--none", "@t"], {"t": t}, "a budget"
    yield "--none: a budget's figure left", ["--none", "@t"], {"t": broken(
        none, lambda d: d["spyreStats"].update(maxOverheadPct=10))}, "a budget"

    argv = ["--first-window-sec", "2", "--traced", "spyreLaunchJobPlan", "--switch-within-cpu",
            "@t"]
    yield "idle at attach", argv, {"t": t}, None
    yield "idle at attach: the first window short", argv, {"t": broken(
        t, lambda d: d["spyreStats"]["budget"]["windowsUs"][0].__setitem__(1, 1_900_000))}, \
        "first window"
    yield "idle at attach: the calls untraced", argv, {"t": broken(
        t, lambda d: d["spyreProbes"][0].update(events=0))}, "no call traced"
    yield "idle at attach: the switch charge over the job's CPU", argv, {"t": broken(
        t, lambda d: d["spyreStats"]["budget"].update(switchChargedSec=3.1))}, "switch charge"
