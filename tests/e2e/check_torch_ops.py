#!/usr/bin/python3
"""Check a trace of tests/e2e/torch_train.py taken with the built-in torch table (--probes torch)
against what the model implies, iteration by iteration. Exit 1 with a list of problems.

    check_torch_ops.py TRACE COUNTS [--summary TRACER_STDOUT]

COUNTS is the job's output (torch_train.py): its iteration boundaries are CLOCK_MONOTONIC ns,
the trace's ts are µs from spyreTracer.monotonicBaseNs, so each op event is given to the
iteration it lies in. Iteration 0 is left out (no gradients yet: zero_grad and the gradient
accumulation do less); every later one must have the same ops, and for L nn.Linear layers, R
ReLUs and P parameter tensors (torch 1.13, CPU, as dispatched through at::_ops::*::call):
    aten::linear, aten::addmm: L (Linear with bias on 2-D input is addmm)
    aten::mm: 2L-1 (weight gradients, and input gradients but for the first layer's)
    aten::relu, aten::threshold_backward: R; aten::mse_loss, aten::mse_loss_backward: 1
    aten::add__Tensor: 2P (SGD's step, and accumulating into .grad)
    autograd::engine::execute: 1; evaluate_function: 1 + 2L + R + P (MseLossBackward0,
        AddmmBackward0 and TBackward0 per layer, ReluBackward0, AccumulateGrad per parameter)
    c10::alloc_cpu = c10::free_cpu (> 0): nothing piles up from one iteration to the next
"""
import argparse
import collections
import json
import re
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("counts")
    ap.add_argument("--summary", help="the tracer's stdout: its summary rows are checked too")
    a = ap.parse_args()
    d = json.load(open(a.trace))
    job = json.load(open(a.counts))
    problems = []

    # names: one per function, the op's own for the op layer (not "call", the bug of issue 15)
    probes = d["spyreProbes"]
    names = collections.Counter(p["name"] for p in probes)
    problems += [f"{n}: the name of {c} probes" for n, c in names.items() if c > 1]
    ops = [p for p in probes if re.fullmatch(r"at::_ops::[^:]+::call", p["symbol"])]
    if len(ops) < 2000:
        problems.append(f"{len(ops)} at::_ops::*::call probes: the op layer is ~3,000")
    for p in ops:
        want = "aten::" + p["symbol"].split("::")[2]
        if p["name"] != want:
            problems.append(f"{p['symbol']}: named {p['name']}, not {want}")

    base = d["spyreTracer"]["monotonicBaseNs"]
    ev = [e for e in d["traceEvents"] if e.get("ph") in ("X", "i") and
          e.get("cat") in ("cpu_op", "cpu_memory")]
    for e in ev:
        if e["cat"] == "cpu_op" and not e["name"].startswith(("aten::", "autograd::engine::")):
            problems.append(f"cpu_op event named {e['name']}")
            break
    per = []
    for t0, t1 in job["iterations"][1:]:
        lo, hi = (t0 - base) / 1e3, (t1 - base) / 1e3
        per.append(collections.Counter(e["name"] for e in ev
                                       if e["ts"] >= lo and e["ts"] + e.get("dur", 0) <= hi))
    if not per:
        problems.append("no iterations after the first")
    else:
        first = per[0]
        for k, c in enumerate(per[1:], 2):
            if c != first:
                problems.append(f"iteration {k}: {dict(c - first)} more, {dict(first - c)} "
                                "fewer than iteration 1")
                break
        L, R, P = job["layers"], job["relus"], job["params"]
        want = {
            "aten::linear": L, "aten::addmm": L, "aten::mm": 2 * L - 1,
            "aten::relu": R, "aten::threshold_backward": R,
            "aten::mse_loss": 1, "aten::mse_loss_backward": 1,
            "aten::add__Tensor": 2 * P,
            "autograd::engine::execute": 1,
            "autograd::engine::evaluate_function": 1 + 2 * L + R + P,
        }
        for n, w in want.items():
            if first[n] != w:
                problems.append(f"{n}: {first[n]} per iteration, the model implies {w}")
        if not first["c10::alloc_cpu"] or first["c10::alloc_cpu"] != first["c10::free_cpu"]:
            problems.append(f"c10::alloc_cpu {first['c10::alloc_cpu']}, c10::free_cpu "
                            f"{first['c10::free_cpu']} per iteration")
        print(f"per iteration: {sum(first.values())} events, " +
              ", ".join(f"{n} {first[n]}" for n in want))

    if a.summary:
        # the summary's rows: one per function, names as in the trace
        rows = []
        table = False
        for line in open(a.summary, encoding="utf-8"):
            if line.rstrip("\n").endswith("p99 µs  function"):
                table = True
                continue
            if table:
                # count, total ms, mean, p50, p99 µs, then the name (report's columns)
                m = re.match(r" +[0-9,]+ +(?:[0-9.]+|-) +(?:[0-9.]+|-) +(?:[0-9.]+|-) +"
                             r"(?:[0-9.]+|-)  (.+)$", line.rstrip("\n"))
                if not m:
                    break
                rows.append(m.group(1))
        dup = [n for n, c in collections.Counter(rows).items() if c > 1]
        if dup:
            problems.append(f"summary rows with the same name: {dup}")
        if "aten::addmm" not in rows:
            problems.append(f"no aten::addmm row in the summary ({len(rows)} rows)")

    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
