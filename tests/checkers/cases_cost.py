"""check_cost.py (cost.bats, budget.bats): measure_cost.py and cost_job.py outputs, good, then
one break per promise."""
from craft import broken

CHECKER = "check_cost.py"


def cases():
    r = {"untraced": [10.0, 10.5], "traced": 12.0, "measuredPct": 16.0, "estimatedPct": 18.0,
         "stats": {"maxOverheadPct": 20, "estOverheadPct": 22.0,
                   "budget": {"tracedSec": 3.0, "runSec": 11.0}}}
    argv = ["budgeted", "@r", "20"]
    yield "budgeted", argv, {"r": r}, None
    yield "budgeted: a noisy attempt", argv, {"r": broken(
        r, lambda d: d.update(untraced=[10.0, 12.0]))}, "no quiet attempt"
    yield "budgeted: another budget", argv, {"r": broken(
        r, lambda d: d["stats"].update(maxOverheadPct=10))}, "maxOverheadPct"
    yield "budgeted: the figure over it", argv, {"r": broken(
        r, lambda d: d["stats"].update(estOverheadPct=25.1))}, "estOverheadPct"
    yield "budgeted: the figure unknown", argv, {"r": broken(
        r, lambda d: d["stats"].update(estOverheadPct=None))}, "estOverheadPct"
    yield "budgeted: measured far over", argv, {"r": broken(
        r, lambda d: d.update(measuredPct=50.0))}, "measuredPct"
    yield "budgeted: traced most of the run", argv, {"r": broken(
        r, lambda d: d["stats"]["budget"].update(tracedSec=6.0))}, "traced half the run"

    m = {"untraced": [2.0, 2.2], "traced": 5.1, "measuredPct": 142.0, "estimatedPct": 150.0,
         "stats": {"estProbeNs": 3.5e9, "hitCostNs": {"calibrated": True}}}
    argv = ["probe-time", "@r"]
    yield "probe-time", argv, {"r": m}, None
    yield "probe-time: nothing measurable", argv, {"r": broken(
        m, lambda d: d.update(measuredPct=15.0))}, "measuredPct"
    yield "probe-time: the estimate 3x", argv, {"r": broken(
        m, lambda d: d["stats"].update(estProbeNs=9e9))}, "within 2x"
    yield "probe-time: the estimate a third", argv, {"r": broken(
        m, lambda d: d["stats"].update(estProbeNs=1e9))}, "within 2x"
    yield "probe-time: uncalibrated", argv, {"r": broken(
        m, lambda d: d["stats"]["hitCostNs"].update(calibrated=False))}, "not calibrated"

    h = {"spyreStats": {"estOverheadPct": None, "estProbeCpuPct": 97}}
    yield "too-hot", ["too-hot", "@t"], {"t": h}, None
    yield "too-hot: a capped number", ["too-hot", "@t"], {"t": broken(
        h, lambda d: d["spyreStats"].update(estOverheadPct=10000))}, "want null"
    yield "too-hot: the share low", ["too-hot", "@t"], {"t": broken(
        h, lambda d: d["spyreStats"].update(estProbeCpuPct=50))}, "estProbeCpuPct"

    # 1 s added over 5 s of the job's CPU: +25 % true; the estimate 1.1 s of 5.05 s: 27.8 %
    o = {"cpu": 5.0, "probed": 3.0, "twin": 2.0}
    p, c = 1.1, 5.05
    t = {"spyreStats": {"estProbeNs": p * 1e9, "jobCpuNs": c * 1e9,
                        "estOverheadPct": 100 * p / (c - p)}}
    argv = ["twin", "@o", "@t"]
    yield "twin", argv, {"o": o, "t": t}, None
    yield "twin: the figure not its definition", argv, {"o": o, "t": broken(
        t, lambda d: d["spyreStats"].update(estOverheadPct=30.0))}, "estProbeNs over jobCpuNs"
    yield "twin: the job's clock off", argv, {"o": dict(o, cpu=7.0), "t": t}, "jobCpuNs"
    yield "twin: 0.1 s added", argv, {"o": dict(o, probed=2.1), "t": t}, "over 2 % and 0.15 s"

    def est(d, pp):
        d["spyreStats"].update(estProbeNs=pp * 1e9, estOverheadPct=100 * pp / (c - pp))
    yield "twin: the estimate over 1.7x", argv, {"o": o, "t": broken(t, lambda d: est(d, 1.8))}, \
        "0.6-1.7x"
    yield "twin: the estimate under 0.6x", argv, {"o": o, "t": broken(
        t, lambda d: est(d, 0.55))}, "0.6-1.7x"
