#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""torch_report.py OUT_DIR: the summary of `make vm-next-torch` (tests/vm/torch-guest.sh) from
OUT_DIR/phases.txt and OUT_DIR/env.txt; runs in the guest (its output is results.txt) and on
the host on a run's out/ directory.

Per kind, medians over the rounds that have it and untraced: the calling thread's CPU time per
torch.mm call, the time added over the round's untraced phase, and what the phase's counters
(before/after it, tests/vm/torch-guest.sh's snap) say per call: the job thread's context
switches, the tracer's CPU time and wakeups, the run time of the tracer's BPF programs
(kernel.bpf_stats_enabled) and how many ran. Then the ratios (the median of each round's
ratio, and the ratio of the medians) and the split of our default's added cost:
  mechanism           lim_emu - untraced (empty programs, returns done by BPF)
  our programs' work  ours_stop - lim_emu (with the kernel's own measure of the programs)
  the consumer        ours - ours_stop (the tracer's user space on the job's one CPU)
Absolute ns are TCG's."""
import statistics
import sys

KINDS = ["untraced", "empty", "empty_stop", "lim_pe", "lim_uret", "lim_emu", "ours",
         "ours_stop", "ours_alt", "ours_batch", "alt_batch", "uret", "sstep", "bpftrace"]
LABEL = {
    "untraced": "untraced",
    "empty": "bpftrace, empty uprobe+uretprobe pair",
    "empty_stop": "  the same, bpftrace stopped (SIGSTOP)",
    "lim_pe": "emptyprobe uprobe+uretprobe (perf links)",
    "lim_uret": "emptyprobe uprobe+uretprobe (multi links)",
    "lim_emu": "emptyprobe entry + ret done by BPF (multi)",
    "ours": "spyre-bpftrace (default: returns done by BPF)",
    "ours_stop": "  the same, spyre-bpftrace stopped (SIGSTOP)",
    "ours_alt": "  the same, a variant build (spyre-bpftrace.alt)",
    "ours_batch": "  the same, under SCHED_BATCH",
    "alt_batch": "  the variant build under SCHED_BATCH",
    "uret": "spyre-bpftrace --uretprobes",
    "sstep": "spyre-bpftrace, SPYRE_NO_EMULATED_RETURNS=1",
    "bpftrace": "bpftrace, entry time + printf at uretprobe",
}
COUNTERS = ["job_nvcs", "job_vcs", "job_minflt", "tr_ns", "tr_vcs", "bpf_ns", "bpf_cnt",
            "intr"]


def main(out):
    rows = []
    for line in open(out + "/phases.txt"):
        rows.append(dict(kv.split("=", 1) for kv in line.split() if "=" in kv))
    print(open(out + "/env.txt").read().strip())
    by = {}
    for d in rows:
        by.setdefault(int(d["round"]), {})[d["kind"]] = d
    rounds = sorted(r for r in by if "untraced" in by[r])
    kinds = [k for k in KINDS if any(k in by[r] for r in rounds)]
    if not rounds or len(kinds) < 2:
        sys.exit("no round with untraced and a tracer")
    print("rounds with untraced: %d" % len(rounds))

    def ns(r, k):
        return float(by[r][k]["cpu_median_ns"])

    def per_call(r, k, c):
        d = by[r][k]
        if "a_" + c not in d or "b_" + c not in d:
            return None
        return (float(d["a_" + c]) - float(d["b_" + c])) / float(d["calls"])

    def rk(k):
        return [r for r in rounds if k in by[r]]

    add = {k: {r: ns(r, k) - ns(r, "untraced") for r in rk(k)} for k in kinds}

    def med(xs):
        xs = [x for x in xs if x is not None]
        return statistics.median(xs) if xs else float("nan")

    print("%-46s %8s %8s %6s | %6s %6s %7s %7s %8s %6s %6s" % (
        "per torch.mm call (medians over rounds)", "cpu ns", "added", "rounds", "nvcs%",
        "vcs%", "tr_us", "wake%", "bpf_ns", "runs", "intr%"))
    for k in kinds:
        c = {x: med(per_call(r, k, x) for r in rk(k)) for x in COUNTERS}
        print("%-46s %8.0f %8s %6d | %6.2f %6.2f %7.2f %7.2f %8.0f %6.2f %6.2f" % (
            LABEL[k], med(ns(r, k) for r in rk(k)),
            "-" if k == "untraced" else "%.0f" % med(add[k].values()), len(rk(k)),
            100 * c["job_nvcs"], 100 * c["job_vcs"], c["tr_ns"] / 1000, 100 * c["tr_vcs"],
            c["bpf_ns"], c["bpf_cnt"], 100 * c["intr"]))
    print("  nvcs%, vcs%: the job thread's involuntary, voluntary context switches per 100 "
          "calls; tr_us: the tracer's CPU us per call; wake%: its wakeups per 100 calls; "
          "bpf_ns: its BPF programs' run time per call (kernel.bpf_stats_enabled), runs: "
          "programs run per call; intr%: interrupts per 100 calls")

    def ratio(a, b):
        rs = [r for r in rounds if a in by[r] and b in by[r]]
        per = [add[a][r] / add[b][r] for r in rs if add[b][r] > 0]
        if not rs or not per:
            return None
        return "%.2f (median of %d rounds' ratios), %.2f (ratio of medians)" % (
            statistics.median(per), len(per),
            med(add[a][r] for r in rs) / med(add[b][r] for r in rs))
    for a, b in [("ours", "empty"), ("ours_alt", "empty"), ("ours_alt", "ours"),
                 ("ours_batch", "empty"), ("alt_batch", "empty"),
                 ("ours", "lim_uret"), ("ours", "lim_emu"),
                 ("ours_stop", "empty_stop"), ("ours_stop", "lim_emu"), ("bpftrace", "ours"),
                 ("sstep", "ours"), ("uret", "ours"), ("uret", "empty"),
                 ("lim_uret", "empty"), ("lim_pe", "empty"), ("bpftrace", "empty")]:
        if a in kinds and b in kinds:
            r = ratio(a, b)
            if r:
                print("added cost %s/%s: %s" % (a, b, r))

    # the split of the default's added cost, per round, then medians
    def diff(a, b):
        rs = [r for r in rounds if a in by[r] and (b == "untraced" or b in by[r])]
        return med(ns(r, a) - ns(r, b) for r in rs) if rs else float("nan")
    if all(k in kinds for k in ("ours", "ours_stop", "lim_emu")):
        bpf = lambda k: med(per_call(r, k, "bpf_ns") for r in rk(k))
        print("split of ours' added %.0f ns a call (medians of per-round differences):" %
              med(add["ours"].values()))
        print("  mechanism (lim_emu - untraced):        %8.0f ns" % diff("lim_emu", "untraced"))
        print("  our programs (ours_stop - lim_emu):    %8.0f ns (their run time: %.0f ns "
              "a call, the empty programs' %.0f)" % (diff("ours_stop", "lim_emu"),
                                                     bpf("ours_stop"), bpf("lim_emu")))
        print("  the consumer (ours - ours_stop):       %8.0f ns" % diff("ours", "ours_stop"))
    if all(k in kinds for k in ("empty", "empty_stop")):
        print("  bpftrace's consumer (empty - empty_stop): %5.0f ns" %
              diff("empty", "empty_stop"))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
