#!/usr/bin/env python3
"""Check the device side of a spyre-bpftrace trace of the mock job: every launch has its one
device span (same correlation, right kind, bytes, bandwidth, a kernel's name from its
createComputeParams, how its end was known), the device tracks are named and never overlap,
spans sit between their launch and the synchronize that waited for them, and the ac2g arrows
join each launch to its span. With --counts, the numbers must match what the job did. Exit 1
with a list of problems."""
import argparse
import gzip
import json
import sys
from collections import Counter, defaultdict

import verify_flows

LAUNCH_KIND = {
    "aiuDataTransferHtoD": ("gpu_memcpy", "Memcpy (HtoD)"),
    "aiuDataTransferDtoH": ("gpu_memcpy", "Memcpy (DtoH)"),
    "aiuLaunchComputeStream": ("kernel", None),
}
SYNC = "aiuScheduleWait"
# The submission the host sees inside a launch, when a table has a dev=submit line (the default
# one has none: torch-spyre's sources show no doorbell call; a span then starts no earlier than
# its launch's return).
SUBMIT = "aiuSubmit"
# How a device span's end was known (args.end)
ENDS = ("callback", "query", "synchronize")
DEVICE_PID = 0
# The mock's simulated link (tests/progs/mock-spyre/flex.cpp): 8 bytes per ns = 8 GB/s.
LINK_BYTES_PER_NS = 8
# The mock skips sleeping for the last µs of an operation; a span may be that much shorter.
SLACK_NS = 1000


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def ns(us):
    """µs with three decimals as written by the tracer -> integer ns."""
    return round(us * 1000)


class Checker:
    def __init__(self, d, compute_us, copy_bytes):
        self.d = d
        self.ev = d["traceEvents"]
        self.compute_ns = None if compute_us is None else compute_us * 1000
        self.copy_bytes = copy_bytes
        self.problems = []

    def bad(self, msg):
        self.problems.append(msg)

    def collect(self):
        self.launches = {}          # correlation -> launch event
        self.devspans = defaultdict(list)  # correlation -> device spans
        self.nodev = []             # device spans without correlation
        self.syncs = defaultdict(list)  # (pid, tid, stream) -> [(ts, end)]
        self.submits = defaultdict(list)  # (pid, tid) -> [(ts, end)] of doorbell writes
        self.pnames, self.tnames = {}, {}
        for i, e in enumerate(self.ev):
            ph, name = e.get("ph"), e.get("name")
            if ph == "M" and name == "process_name":
                self.pnames[e["pid"]] = e["args"]["name"]
            elif ph == "M" and name == "thread_name":
                self.tnames[(e["pid"], e["tid"])] = e["args"]["name"]
            elif ph != "X":
                continue
            elif e.get("cat") in ("kernel", "gpu_memcpy"):
                corr = e.get("args", {}).get("correlation")
                if corr is None:
                    self.nodev.append(e)
                else:
                    self.devspans[corr].append(e)
            elif name in LAUNCH_KIND:
                corr = e.get("args", {}).get("correlation")
                if corr is None:
                    self.bad(f"launch {name} at {e['ts']} has no args.correlation")
                elif corr in self.launches:
                    self.bad(f"correlation {corr} used by two launches")
                else:
                    self.launches[corr] = e
            elif name == SUBMIT:
                self.submits[(e["pid"], e["tid"])].append((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])))
            elif name == SYNC:
                key = (e["pid"], e["tid"], e.get("args", {}).get("stream"))
                self.syncs[key].append((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])))
        for v in self.syncs.values():
            v.sort()

    def check_pairs(self):
        for e in self.nodev:
            self.bad(f"device span {e['name']} at {e['ts']} has no args.correlation")
        for corr, spans in self.devspans.items():
            if corr not in self.launches:
                self.bad(f"device span {spans[0]['name']} (correlation {corr}) has no launch")
        for corr, l in self.launches.items():
            spans = self.devspans.get(corr, [])
            if len(spans) != 1:
                self.bad(f"launch {l['name']} (correlation {corr}) has {len(spans)} device spans")
                continue
            self.check_span(l, spans[0])

    def check_span(self, l, s):
        cat, want = LAUNCH_KIND[l["name"]]
        corr = l["args"]["correlation"]
        what = f"{s['name']} (correlation {corr})"
        a = s.get("args", {})
        if s.get("cat") != cat:
            self.bad(f"{what}: cat {s.get('cat')!r}, launch {l['name']} wants {cat!r}")
        if want is None:    # a kernel: named by the createComputeParams before its launch
            want = l.get("args", {}).get("kernel")
            if not want:
                self.bad(f"launch {l['name']} (correlation {corr}) has no args.kernel")
        if want and s["name"] != want:
            self.bad(f"{what}: name is not {want!r} for {l['name']}")
        if a.get("end") not in ENDS:
            self.bad(f"{what}: args.end is {a.get('end')!r}, not one of {ENDS}")
        if s["pid"] != DEVICE_PID or a.get("device") != DEVICE_PID:
            self.bad(f"{what}: pid {s['pid']} / args.device {a.get('device')}, want "
                     f"{DEVICE_PID}")
        start, dur = ns(s["ts"]), ns(s["dur"])
        lstart, lend = ns(l["ts"]), ns(l["ts"]) + ns(l["dur"])
        # the device cannot start before the host submitted the work: the last doorbell write
        # inside the launch returned; without one, the mock's launches hand the work over in
        # the function they tail-call (`jmp launch_dma`, docs/mock.md), before they return:
        # only their entry bounds it
        rings = [e for b, e in self.submits.get((l["pid"], l["tid"]), []) if lstart <= b <= lend]
        submit = max(rings) if rings else lstart
        if start + dur < submit:
            submit = lstart     # done before the host saw it submitted: ran inside the launch
        if start < submit:
            self.bad(f"{what}: starts at {start} ns, before its submission at {submit} ns "
                     f"(launch at {lstart} ns)")
        if dur <= 0:
            self.bad(f"{what}: duration {dur} ns (analyzers drop empty spans)")
        if cat == "gpu_memcpy":
            if a.get("bytes") != l["args"].get("bytes"):
                self.bad(f"{what}: bytes {a.get('bytes')} != launch's {l['args'].get('bytes')}")
            if self.copy_bytes is not None and a.get("bytes") != self.copy_bytes:
                self.bad(f"{what}: bytes {a.get('bytes')}, the job copies {self.copy_bytes}")
            bw = a.get("memory bandwidth (GB/s)")
            if not isinstance(bw, (int, float)):
                self.bad(f"{what}: no numeric 'memory bandwidth (GB/s)' arg")
            elif dur > 0:
                want = a["bytes"] / dur
                if abs(bw - want) > 0.0015 + want * 1e-3:
                    self.bad(f"{what}: bandwidth {bw} GB/s, bytes/dur is {want:.4f}")
            # a span ended by its own callback covers the whole copy, which the mock spreads
            # at 8 GB/s (one that later evidence ended for several ops ends at the next op's
            # submission: it may be shorter than the work)
            need = a.get("bytes", 0) // LINK_BYTES_PER_NS - SLACK_NS
            if a.get("end") == "callback" and dur < need:
                self.bad(f"{what}: {dur} ns, shorter than the copy itself ({need} ns)")
        # the completion precedes the return of the synchronize() that waited for it
        syncs = self.syncs.get((l["pid"], l["tid"], l["args"].get("stream")), [])
        after = [sy for sy in syncs if sy[0] >= lend]
        if not after:
            self.bad(f"{what}: no {SYNC} of its stream after the launch")
        elif start + dur > after[0][1]:
            self.bad(f"{what}: ends at {start + dur} ns, after the {SYNC} that waited for it "
                     f"returned ({after[0][1]} ns)")
        if start + dur < lstart:
            self.bad(f"{what}: ends before its launch")

    def check_tracks(self):
        if self.devspans and self.pnames.get(DEVICE_PID) != "Spyre 0":
            self.bad(f"process_name of pid {DEVICE_PID} is {self.pnames.get(DEVICE_PID)!r}")
        lanes = defaultdict(list)
        for spans in self.devspans.values():
            for s in spans:
                lanes[s["tid"]].append(s)
        for tid, spans in sorted(lanes.items()):
            tname = self.tnames.get((DEVICE_PID, tid))
            s0 = spans[0]
            # streams from 100 on sit past the copy lanes' tids 100-107 and 200-207
            stream = tid if tid < 100 else tid - 200
            if s0["cat"] == "kernel":
                want = f"Stream {stream}"
            else:
                kind = "HtoD" if s0["name"] == "Memcpy (HtoD)" else "DtoH"
                want = f"Memcpy {kind} lane {tid % 100}"
            if tname != want:
                self.bad(f"device tid {tid}: thread_name {tname!r}, want {want!r}")
            for s in spans:
                # a stream's track holds compute only (kernels of any name), a lane one
                # direction of copies
                if s["cat"] != s0["cat"] or (s["cat"] != "kernel" and s["name"] != s0["name"]):
                    self.bad(f"device tid {tid} mixes {s0['name']} and {s['name']}")
                    break
                if s["cat"] == "kernel" and s["args"].get("stream") != stream:
                    self.bad(f"kernel on tid {tid} says args.stream {s['args'].get('stream')}")
                    break
            iv = sorted((ns(s["ts"]), ns(s["ts"]) + ns(s["dur"])) for s in spans)
            for (a0, a1), (b0, b1) in zip(iv, iv[1:]):
                if b0 < a1:
                    self.bad(f"device tid {tid}: span at {b0} ns overlaps the one ending at "
                             f"{a1} ns")
                    break

    def check_flows(self):
        joined = set()
        for l, d, s, fi in verify_flows.arrows(self.ev, self.bad):
            corr = l["args"]["correlation"]
            if self.launches.get(corr) is not l or self.devspans.get(corr) != [d]:
                self.bad(f"ac2g id {s.get('id')} does not join one launch to one device span")
            elif corr in joined:
                self.bad(f"correlation {corr} has two ac2g arrows")
            joined.add(corr)
        if len(joined) != len(self.launches):
            self.bad(f"{len(joined)} ac2g arrows for {len(self.launches)} launches")

    def check_counts(self, counts):
        calls = counts["calls"]
        nlaunch = (calls["flex::RuntimeStream::launchOperationH2D"]
                   + calls["flex::RuntimeStream::launchOperationD2H"]
                   + calls["flex::RuntimeStream::launchOperationCompute"])
        # host callbacks run in the launching thread: the stream workers complete launches only
        want = counts["completions"]
        if want != nlaunch:
            self.bad(f"the job's counts disagree: {want} completions, {nlaunch} launches")
        got = sum(len(v) for v in self.devspans.values()) + len(self.nodev)
        if got != want:
            self.bad(f"{got} device spans, the job completed {want} launched operations")
        by_name = Counter(s["name"] for v in self.devspans.values() for s in v)
        for name, sym in (("Memcpy (HtoD)", "launchOperationH2D"),
                          ("Memcpy (DtoH)", "launchOperationD2H")):
            if by_name.get(name, 0) != calls["flex::RuntimeStream::" + sym]:
                self.bad(f"{by_name.get(name, 0)} {name} spans, the job made "
                         f"{calls['flex::RuntimeStream::' + sym]} {sym} calls")
        # compute spans are named by their kernels, launched as often as the job says
        kernels = {n: by_name.get(n, 0) for n in by_name if n not in ("Memcpy (HtoD)",
                                                                     "Memcpy (DtoH)")}
        if kernels != counts["kernels"]:
            self.bad(f"compute spans by name {kernels}, the job launched {counts['kernels']}")
        # the D2H copies with a callback (addressed by a tensor's segment, as torch-spyre
        # installs them) end at it when the table probes the callback's invoker
        ends = Counter(s["args"].get("end") for v in self.devspans.values() for s in v
                       if s["name"] == "Memcpy (DtoH)")
        probed = any(p.get("name") == "aiuDmaCallback" for p in self.d.get("spyreProbes", []))
        if probed and counts["callbacks"] and not ends.get("callback"):
            self.bad(f"no DtoH span ended by its callback ({dict(ends)}), the job had "
                     f"{counts['callbacks']} callbacks")
        st = self.d.get("spyreStats", {})
        for key, val in (("deviceSpans", want), ("launchesInFlight", 0),
                         ("completionsWithoutLaunch", 0), ("deviceOverflow", 0)):
            if st.get(key) != val:
                self.bad(f"spyreStats.{key} is {st.get(key)!r}, want {val}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--counts", help="the mock job's counts file for the traced phase")
    ap.add_argument("--compute-us", type=int, help="the job's --compute-us (default 50)")
    ap.add_argument("--bytes", type=int, help="the job's --bytes (default 65536)")
    a = ap.parse_args()
    c = Checker(load(a.trace), a.compute_us, a.bytes)
    c.collect()
    if not c.launches:
        c.bad("no launches in the trace")
    c.check_pairs()
    c.check_tracks()
    c.check_flows()
    if a.counts:
        with open(a.counts) as f:
            c.check_counts(json.load(f))
    for p in c.problems[:40]:
        print("verify_device:", p)
    if len(c.problems) > 40:
        print(f"verify_device: ... and {len(c.problems) - 40} more")
    ndev = sum(len(v) for v in c.devspans.values())
    print(f"verify_device: {a.trace}: {len(c.launches)} launches, {ndev} device spans, "
          f"{len(c.problems)} problems")
    return 1 if c.problems else 0


if __name__ == "__main__":
    sys.exit(main())
