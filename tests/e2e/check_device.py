#!/usr/bin/env python3
"""Checks the device timeline of a trace of the mock job (tests/e2e/device.bats) for what one run
shape promises, beyond verify_device.py's launch-by-launch check:

  phase TRACE THREADS ITERS   one phase of K=3 kernels: THREADS x ITERS x 5 device spans (1 HtoD,
      3 kernels, 1 DtoH; host callbacks make none), spyreStats.deviceSpans the same, no
      completion without its launch; kernels named by createComputeParams (embedding_fwd#0,
      attention_fwd#1, mlp_fwd#2); every kind of end seen; the DtoH copies of even iterations
      (with a DMA callback) ended by it, the others by the stream's later evidence
  lanes TRACE STREAMS   overlapping copies on lanes named after their direction ("Memcpy HtoD
      lane N", "Memcpy DtoH lane N"), more than one pair, no track named for both (by any of
      its thread_name records); stream tracks 0..STREAMS-1
  tracks TRACE MIN [MAX]   device tracks named "Stream N": MIN of them, or MIN to MAX
  ends TRACE END ...   the device spans' ends (args.end) are these kinds, exactly
  forwarders DISASSEMBLY   objdump -d -C of the mock's _C.so: each of SpyreStream's six
      forwarders ends in a jmp through the PLT into the libflex function it forwards to, and
      has no ret (a call and a ret, as -O0 builds it, is no tail call)

Exit 0 when all holds, else 1 with the first promise broken and its data.
"""
import argparse
import collections
import re

from checklib import load, need, spans

KERNELS = {"embedding_fwd#0", "attention_fwd#1", "mlp_fwd#2"}


def device(d):
    return [e for e in spans(d) if e["pid"] == 0]


def names0(d):
    return {e["tid"]: e["args"]["name"] for e in d["traceEvents"]
            if e["ph"] == "M" and e["name"] == "thread_name" and e["pid"] == 0}


def phase(a):
    d = load(a.trace)
    dev = device(d)
    n = a.threads * a.iters
    need(len(dev) == n * 5, "device spans, want %d" % (n * 5), len(dev))
    st = d["spyreStats"]
    need(st["deviceSpans"] == n * 5, "deviceSpans, want %d" % (n * 5), st)
    need(st["completionsWithoutLaunch"] == 0, "completions without a launch", st)
    k = {e["name"] for e in dev if e.get("cat") == "kernel"}
    need(k == KERNELS, "kernel names, want createComputeParams'", k)
    ends = {e["args"].get("end") for e in dev}
    need(ends == {"callback", "query", "synchronize"}, "ends, want every kind", ends)
    # the DtoH copies: those with a callback end at it, the others (no callback: addressed by
    # CompositeAddress) by the stream's later evidence, the synchronize that follows them
    d2h = collections.Counter(e["args"].get("end") for e in dev if e["name"] == "Memcpy (DtoH)")
    need(d2h["callback"] == n // 2 and d2h["synchronize"] + d2h["query"] == n // 2,
         "DtoH ends, want half by callback, half by later evidence", dict(d2h))
    need(sum(d2h.values()) == n, "DtoH copies, want %d" % n, dict(d2h))


def lanes(a):
    d = load(a.trace)
    names = names0(d)
    # every thread_name record, not the last per track: a track named for both directions in
    # turn is one lane of both (the names by track alone could never show that)
    named = {(e["tid"], e["args"]["name"]) for e in d["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name" and e["pid"] == 0}
    h2d = {t for t, n in named if n.startswith("Memcpy HtoD lane ")}
    d2h = {t for t, n in named if n.startswith("Memcpy DtoH lane ")}
    need(h2d and d2h, "copy lanes of both directions", names)
    need(len(h2d) + len(d2h) > 2, "copy lanes, want some copies overlapping", names)
    need(not h2d & d2h, "a lane of both directions", sorted(named))
    streams = {t for t, n in names.items() if n.startswith("Stream ")}
    need(streams == set(range(a.streams)), "stream tracks, want 0..%d" % (a.streams - 1), names)


def tracks(a):
    n = sum(v.startswith("Stream ") for v in names0(load(a.trace)).values())
    hi = a.max if a.max is not None else a.min
    print("stream tracks:", n)
    need(a.min <= n <= hi, "stream tracks, want %d to %d" % (a.min, hi), n)


def ends(a):
    got = {e["args"].get("end") for e in device(load(a.trace))}
    need(got == set(a.end), "device spans' ends, want " + ", ".join(sorted(a.end)), got)


def forwarders(a):
    funcs, cur = {}, None
    for line in open(a.disassembly):
        m = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
        if m:
            cur = funcs.setdefault(m.group(1), [])
            continue
        m = re.match(r"^\s+[0-9a-f]+:\s+(\S.*?)\s*$", line)
        if m and cur is not None:
            cur.append(m.group(1))
    padding = re.compile(r"^(nop|data16|cs nop|xchg\s+%ax,%ax|int3)")
    fwd = {"launchH2D(flex::DmaParams*)": "launchOperationH2D(flex::DmaParams*)",
           "launchD2H(flex::DmaParams*)": "launchOperationD2H(flex::DmaParams*)",
           "launchCompute(flex::ComputeParams*)": "launchOperationCompute(flex::ComputeParams*)",
           "launchHostCallback(flex::HostCallbackParams*)":
               "launchOperationHostCallback(flex::HostCallbackParams*)",
           "synchronize()": "synchronize()", "query()": "query()"}
    for f, callee in fwd.items():
        name = "spyre::SpyreStream::%s const" % f
        need(name in funcs, "no function " + name)
        body = [i for i in funcs[name] if not padding.match(i)]
        want = r"jmp\s+[0-9a-f]+ <flex::RuntimeStream::%s@plt>" % re.escape(callee)
        need(body and re.fullmatch(want, body[-1]), f + ": want a tail jump into libflex",
             body[-3:])
        need(not any(i.startswith("ret") for i in body), f + ": a ret", body)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("phase")
    c.add_argument("trace")
    c.add_argument("threads", type=int)
    c.add_argument("iters", type=int)
    c.set_defaults(fn=phase)
    c = sub.add_parser("lanes")
    c.add_argument("trace")
    c.add_argument("streams", type=int)
    c.set_defaults(fn=lanes)
    c = sub.add_parser("tracks")
    c.add_argument("trace")
    c.add_argument("min", type=int)
    c.add_argument("max", type=int, nargs="?")
    c.set_defaults(fn=tracks)
    c = sub.add_parser("ends")
    c.add_argument("trace")
    c.add_argument("end", nargs="+")
    c.set_defaults(fn=ends)
    c = sub.add_parser("forwarders")
    c.add_argument("disassembly")
    c.set_defaults(fn=forwarders)
    a = ap.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
