#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""perf_report.py OUT_DIR: the figures of the guest's `perf` step (tests/vm/init.sh), from
callbench's own result files /out/perf.N.LABEL, computed as bench/run.sh does on the host
(section 1): per repetition, the cost our tracer adds to its function over the cost the empty
probes add to the other one (each over that function's untraced median of the round); the
median over the repetitions of a phase; the geometric mean of the two placements (ours on
bench_call, then on bench_ref); the median over rounds. Absolute ns are TCG's: context only.
Fails when a file is missing or the comparison does not match the mechanism the tool chose."""
import math
import os
import re
import statistics
import sys

NAMES = {
    "ours": "spyre-bpftrace (default)",
    "ours_uret": "spyre-bpftrace --uretprobes",
    "ours_sstep": "spyre-bpftrace, returns single-stepped (SPYRE_NO_EMULATED_RETURNS=1)",
    "lim_entry": "empty entry uprobe",
    "lim_sites": "empty entry uprobe + return-site uprobes",
    "lim_emu": "empty entry uprobe + return-site uprobes doing the return",
    "lim_uret": "empty uprobe + uretprobe",
}


def kv(path):
    with open(path) as f:
        return dict(x.split("=", 1) for x in f.read().split() if "=" in x)


def floats(s):
    return [float(x) for x in s.split(",")]


def main(out):
    meta = kv(os.path.join(out, "perf.meta"))
    files = sorted((int(m.group(1)), m.group(2)) for m in
                   (re.match(r"perf\.(\d+)\.(.+)$", f) for f in os.listdir(out)) if m)
    pairs = [p.split("/") for p in meta["pairs"].split(",")]
    # rounds: each begins with its untraced phase
    rounds, cur = [], None
    for k, label in files:
        r = kv(os.path.join(out, "perf.%d.%s" % (k, label)))
        if label == "untraced":
            cur = {"u": {"call": float(r["cpu_median_ns"]), "ref": float(r["ref_cpu_median_ns"])}}
            rounds.append(cur)
            continue
        a, b, fa = label.split(".")
        fb = "ref" if fa == "call" else "call"
        key = {"call": "", "ref": "ref_"}
        x = floats(r[key[fa] + "rep_cpu_ns"])
        y = floats(r[key[fb] + "rep_cpu_ns"])
        ua, ub = cur["u"][fa], cur["u"][fb]
        ratios = [(xi - ua) / (yi - ub) for xi, yi in zip(x, y) if yi - ub > 0]
        cur[(a, b, fa)] = (statistics.median(ratios), float(r[key[fa] + "cpu_median_ns"]),
                           float(r[key[fb] + "cpu_median_ns"]))
    want = int(meta["rounds"])
    if len(rounds) != want or any(len(r) != 1 + 2 * len(pairs) for r in rounds):
        sys.exit("perf: %d complete rounds of %d" % (
            sum(len(r) == 1 + 2 * len(pairs) for r in rounds), want))

    # the comparison must be the mechanism the tool chose for bench_call by default
    listing = open(os.path.join(out, "perf.list.call")).read()
    ret = re.search(r"returns: (.*)", listing)
    ret = ret.group(1) if ret else "?"
    sites = "return instruction" in ret
    for a, b in pairs:
        # ours and ours_sstep against the empty programs of their own mechanism, or against
        # the empty uretprobe pair (the goal's yardstick); never entries-only against sites
        if a not in ("ours", "ours_sstep") or b == "lim_uret":
            continue
        if (b in ("lim_sites", "lim_emu")) != sites or \
                (b == "lim_entry") != ret.startswith("NOT SEEN"):
            sys.exit("perf: %s compared with %s, but the tool's default for bench_call is "
                     "'returns: %s'" % (a, b, ret))
    # who did the returns, as the tracer says at start (-v): BPF unless told not to
    done_by = {}
    for kind in sorted({a for a, _ in pairs} & {"ours", "ours_sstep"}):
        err = open(os.path.join(out, "perf.%s.err" % kind)).read()
        done_by[kind] = "bpf" if "done by BPF, no single step" in err else "kernel"
    for a, b in pairs:
        if b == "lim_emu" and done_by.get(a) != "bpf":
            sys.exit("perf: %s compared with empty programs doing the return, but the tracer's "
                     "returns were single-stepped" % a)
        if a == "ours_sstep" and done_by.get(a) != "kernel":
            sys.exit("perf: ours_sstep's returns were not single-stepped")
    # the tracer attached and traced (its -v stderr of the last phase with each option set)
    for kind in sorted({a for a, _ in pairs}):
        err = open(os.path.join(out, "perf.%s.err" % kind)).read()
        n = re.search(r"\((\d+) events\)", err)
        if "1 probes attached" not in err or not n or int(n.group(1)) == 0:
            sys.exit("perf: %s traced nothing:\n%s" % (kind, err))
    kernel = open(os.path.join(out, "kernel")).read().strip()
    u = statistics.median(r["u"]["call"] for r in rounds)
    print("perf: kernel %s (TCG), %d rounds; bench_call at +%s, returns: %s%s" % (
        kernel, want, meta["off_call"], ret, "".join(
            "; %s: returns done by %s" % (k, "BPF" if v == "bpf" else "the kernel's single step")
            for k, v in sorted(done_by.items()))))
    print("perf: untraced %.1f ns per call (TCG)" % u)
    for a, b in pairs:
        per_round = [math.sqrt(r[(a, b, "call")][0] * r[(a, b, "ref")][0]) for r in rounds]
        ours = statistics.median(r[(a, b, f)][1] for r in rounds for f in ("call", "ref"))
        lim = statistics.median(r[(a, b, f)][2] for r in rounds for f in ("call", "ref"))
        place = [statistics.median(r[(a, b, f)][0] for r in rounds) for f in ("call", "ref")]
        print("perf: %s / %s: added per call %.2fx (rounds %s; ours on bench_call %.2f, on "
              "bench_ref %.2f); TCG: %.0f / %.0f ns per call"
              % (NAMES[a], NAMES[b], statistics.median(per_round),
                 " ".join("%.2f" % x for x in per_round), place[0], place[1], ours, lim))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
