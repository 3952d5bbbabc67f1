#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""The overhead the tool reports against the slowdown measured, on the same work, in one run.

Jobs of fixed work, each run untraced and traced in turn, the jobs interleaved round by round
(they see the same drift of the machine): the mock job with the default options, its stress
and light workloads, a plain Python job (tests/e2e/cost_job.py) and real PyTorch
(tests/e2e/torch_job.py, `--probes torch`). The measured slowdown is the job's CPU time of the
work traced over untraced, minus 1 (the tool's definition of overhead: docs/performance.md);
the CPU time is from wait4 minus /proc/PID/stat at the go, so start-up (imports) is not in it.
The reported figure is the trace's spyreStats.estOverheadPct of the same run (null: unknown).
Per job: medians over the rounds of both, and the verdict: within +-25 % relative or +-3 points,
whichever is larger (issue 42).

    overhead.py TOOL MOCK WORKDIR [ROUNDS] [--budget PCT] [JOB...]

JOB: default, stress, light, python, torch (all by default; torch needs /usr/bin/python3 with
python3-torch, else skipped). Prints one line per job; exit 0.

With --budget PCT the jobs are traced with --max-overhead PCT and run ~10-15 s untraced (the
first window, paid before any rate is known, is ~0.2 s of probes): the measured slowdown
against PCT + 2 points (HOLDS or OVER, issue 42), the tool's figure and the share traced.
"""
import json
import os
import signal
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TORCH_PY = "/usr/bin/python3"
HZ = os.sysconf("SC_CLK_TCK")


def wait_file(path, proc, timeout=120):
    end = time.monotonic() + timeout
    while not os.path.exists(path):
        if proc.poll() is not None:
            raise SystemExit(f"bench: {proc.args[0]} ended ({proc.returncode}) before {path}")
        if time.monotonic() > end:
            raise SystemExit(f"bench: timed out waiting for {path}")
        time.sleep(0.005)


def stat_cpu(pid):
    """utime + stime of every thread of @pid, seconds (clock ticks)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / HZ


def rm(*paths):
    for p in paths:
        try:
            os.unlink(p)
        except FileNotFoundError:
            pass


class Job:
    def __init__(self, name, tool_opts, mock_opts=None, py=None):
        self.name, self.tool_opts, self.mock_opts, self.py = name, tool_opts, mock_opts, py

    def start(self, mock, work):
        """The job, ready and waiting for its go: (proc, go function)."""
        ready = f"{work}/{self.name}.ready"
        go = f"{work}/{self.name}.go"
        rm(ready, go)
        if self.mock_opts is not None:
            p = subprocess.Popen([mock, "--wait-go", "--quiet", "--ready-file", ready]
                                 + self.mock_opts)
            wait_file(ready, p)
            return p, lambda: os.kill(p.pid, signal.SIGUSR1)
        interp, script, args = self.py
        p = subprocess.Popen([interp, f"{ROOT}/tests/e2e/{script}", "--ready", ready, "--go", go,
                              "--out", f"{work}/{self.name}.out"] + args,
                             stdout=subprocess.DEVNULL)
        wait_file(ready, p)
        return p, lambda: open(go, "w").close()

    def run(self, tool, mock, work, traced):
        """CPU seconds of the work, and the reported overhead (traced) or None."""
        p, go = self.start(mock, work)
        tracer = None
        out = f"{work}/{self.name}.json"
        if traced:
            rm(f"{work}/tracer.ready", out)
            with open(f"{work}/{self.name}.err", "w") as err:
                tracer = subprocess.Popen([tool, "-p", str(p.pid), "--ready-file",
                                           f"{work}/tracer.ready", "-o", out, "--force", "-q",
                                           "--no-status"] + self.tool_opts, stderr=err)
            wait_file(f"{work}/tracer.ready", tracer)
        c0 = stat_cpu(p.pid)
        go()
        _, status, ru = os.wait4(p.pid, 0)
        if status:
            raise SystemExit(f"bench: {self.name} exited with status {status}")
        cpu = ru.ru_utime + ru.ru_stime - c0
        if tracer is None:
            return cpu, None
        if tracer.wait(120):
            raise SystemExit(f"bench: the tracer of {self.name} failed: "
                             + open(f"{work}/{self.name}.err").read())
        return cpu, json.load(open(out))["spyreStats"]


def budget_jobs(pct):
    b = ["--max-overhead", pct]
    return {
        "default": Job("default", b, mock_opts=["--iters", "18000"]),
        "stress": Job("stress", b, mock_opts=["--compute-us", "0", "--bytes", "64",
                                              "--iters", "30000"]),
        "light": Job("light", b, mock_opts=["--threads", "1", "--streams", "1",
                                            "--compute-us", "1000", "--iters", "6000"]),
        "python": Job("python", ["--no-default", "--driver", "off", "--probe",
                                 "libc.so.6:labs"] + b,
                      py=(sys.executable, "cost_job.py", ["--calls", "120000", "--work", "2000"])),
        "torch": Job("torch", ["--no-default", "--probes", "torch", "--driver", "off"] + b,
                     py=(TORCH_PY, "torch_job.py", ["--iters", "50000", "--no-errors"])),
    }


def jobs():
    labs = ["--no-default", "--driver", "off", "--probe", "libc.so.6:labs"]
    return {
        # the realistic default of make bench's section 2, and its stress workload
        "default": Job("default", [], mock_opts=["--iters", "1500"]),
        "stress": Job("stress", [], mock_opts=["--compute-us", "0", "--bytes", "64",
                                               "--iters", "4000"]),
        # one thread, one stream, 1 ms launches: few calls a second
        "light": Job("light", [], mock_opts=["--threads", "1", "--streams", "1",
                                             "--compute-us", "1000", "--iters", "400"]),
        "python": Job("python", labs, py=(sys.executable, "cost_job.py",
                                          ["--calls", "20000", "--work", "2000"])),
        "torch": Job("torch", ["--no-default", "--probes", "torch", "--driver", "off"],
                     py=(TORCH_PY, "torch_job.py", ["--iters", "300", "--no-errors"])),
    }


def verdict(told, measured):
    if told is None:
        return "unknown"
    ok = abs(told - measured) <= max(0.25 * abs(measured), 3)
    return "PASS" if ok else "MISS"


def main():
    tool, mock, work = sys.argv[1:4]
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    rest = sys.argv[5:]
    budget = None
    if rest[:1] == ["--budget"]:
        budget, rest = rest[1], rest[2:]
    allj = budget_jobs(budget) if budget else jobs()
    names = rest or list(allj)
    if "torch" in names and subprocess.run([TORCH_PY, "-c", "import torch"],
                                           capture_output=True).returncode:
        print("   torch: skipped (no python3-torch for /usr/bin/python3)")
        names.remove("torch")
    res = {n: {"u": [], "t": [], "told": []} for n in names}
    for r in range(rounds):
        for n in names:
            # untraced first in even rounds, traced first in odd: no order favoured
            for traced in ((False, True) if r % 2 == 0 else (True, False)):
                cpu, stats = allj[n].run(tool, mock, work, traced)
                res[n]["t" if traced else "u"].append(cpu)
                if traced:
                    res[n]["told"].append(stats["estOverheadPct"])
                    b = stats.get("budget")
                    res[n].setdefault("share", []).append(
                        100 * b["tracedSec"] / b["runSec"] if b else 100)
    for n in names:
        x = res[n]
        # per round: the slowdown of that round's pair, then the median over the rounds
        meas = [100 * (t / u - 1) for t, u in zip(x["t"], x["u"])]
        known = [v for v in x["told"] if v is not None]
        m = statistics.median(meas)
        told = statistics.median(known) if len(known) * 2 > len(x["told"]) else None
        rep = "unknown" if told is None else f"{told:.0f}%"
        if budget:
            print(f"   {n:8s} untraced {statistics.median(x['u']):6.2f} s CPU, traced "
                  f"{statistics.median(x['t']):6.2f} s with --max-overhead {budget}: measured "
                  f"{m:+.1f}% (rounds: {', '.join(f'{v:+.1f}' for v in meas)}), reported {rep}, "
                  f"traced {statistics.median(x['share']):.0f}% of the time: "
                  f"{'HOLDS' if m <= float(budget) + 2 else 'OVER'}")
            sys.stdout.flush()
            continue
        print(f"   {n:8s} untraced {statistics.median(x['u']):6.2f} s CPU, traced "
              f"{statistics.median(x['t']):6.2f} s: measured {m:+.0f}% (rounds: "
              f"{', '.join(f'{v:+.0f}' for v in meas)}), reported {rep} (rounds: "
              f"{', '.join('unknown' if v is None else f'{v:.0f}' for v in x['told'])}): "
              f"{verdict(told, m)}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
