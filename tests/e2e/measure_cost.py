#!/usr/bin/env python3
"""The job's CPU time untraced and traced, side by side, and what the tracer estimated.

Runs the mock job held before its phase (--wait-go), attaches spyre-bpftrace to it when traced,
lets it run its phase to the end, and takes its CPU time (user + system) from wait4: the probes'
kernel time is charged to the traced threads, so the slowdown in CPU time is what they cost. An
untraced run before and one after each traced run, the average of the two as the baseline.

    measure_cost.py TOOL MOCK TMPDIR ITERS [TOOL OPTIONS...] [-- MOCK OPTIONS...]

Prints one JSON object: {"untraced": [s, s], "traced": s, "measuredPct": %, "estimatedPct": %,
"stats": the trace's spyreStats}.
"""
import json
import os
import signal
import subprocess
import sys
import time


def wait_file(path, proc=None, timeout=60):
    end = time.time() + timeout
    while not os.path.exists(path):
        if proc is not None and proc.poll() is not None:
            raise SystemExit(f"{proc.args[0]} ended ({proc.returncode}) before writing {path}")
        if time.time() > end:
            raise SystemExit(f"timed out waiting for {path}")
        time.sleep(0.01)


def run(tool, mock, tmp, iters, tool_opts, mock_opts, traced):
    for f in ("job.ready", "tracer.ready"):
        try:
            os.unlink(os.path.join(tmp, f))
        except FileNotFoundError:
            pass
    job = subprocess.Popen([mock, "--wait-go", "--quiet", "--ready-file", f"{tmp}/job.ready",
                            "--iters", iters] + mock_opts)
    wait_file(f"{tmp}/job.ready", job)
    tracer = None
    if traced:
        with open(f"{tmp}/tracer.err", "w") as err:
            tracer = subprocess.Popen([tool, "-p", str(job.pid), "--ready-file",
                                       f"{tmp}/tracer.ready", "-o", f"{tmp}/t.json", "--force", "-q",
                                       "--no-status"] + tool_opts, stderr=err)
        wait_file(f"{tmp}/tracer.ready", tracer)
    os.kill(job.pid, signal.SIGUSR1)
    _, status, ru = os.wait4(job.pid, 0)
    assert status == 0, f"job status {status}"
    cpu = ru.ru_utime + ru.ru_stime
    if tracer is None:
        return cpu, None
    assert tracer.wait(60) == 0, open(f"{tmp}/tracer.err").read()
    return cpu, json.load(open(f"{tmp}/t.json"))["spyreStats"]


def main():
    tool, mock, tmp, iters = sys.argv[1:5]
    rest = sys.argv[5:]
    cut = rest.index("--") if "--" in rest else len(rest)
    tool_opts, mock_opts = rest[:cut], rest[cut + 1:]
    u1, _ = run(tool, mock, tmp, iters, tool_opts, mock_opts, False)
    t, stats = run(tool, mock, tmp, iters, tool_opts, mock_opts, True)
    u2, _ = run(tool, mock, tmp, iters, tool_opts, mock_opts, False)
    base = (u1 + u2) / 2
    print(json.dumps({"untraced": [u1, u2], "traced": t, "measuredPct": 100 * (t - base) / base,
                      "estimatedPct": stats["estOverheadPct"], "stats": stats}))


if __name__ == "__main__":
    main()
