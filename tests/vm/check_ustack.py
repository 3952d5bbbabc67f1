#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""check_ustack.py TRACE COUNTS MACHINE

The guest's step ustack (tests/vm/init.sh): tests/progs/stackjob traced with --ustack on
stackjob:leaf_mix and libstackrt.so:dev_alloc. Each call's args.ustack, "NAME+0xOFF (LIB)" per
frame, must be:

  frame 0   the traced function in its own file, at its entry: +0x0, or the instruction the
            probe is on after it (x86-64's endbr64: +0x4; ppc64le's local entry, after the TOC
            set-up: +0x8 or +0x4)
  x86_64, ppc64le (the kernel walks frame pointers, the back chain): up to main, exactly
            leaf_mix <- compute <- run_round <- main, dev_alloc <- layer_ok <- run_round <- main
            (ROUNDS times) and dev_alloc <- layer_leaky <- run_round <- main (once per leak)
  s390x     frame 0, then the caller the tracer took from r14 (compute, layer_ok | layer_leaky),
            nothing after (the tracer cuts there: Debian's code keeps no back chain).
            The kernel (6.10+) walks the back chain, which Debian's code does not keep (no
            -mbackchain): the frames it finds past the first are whatever the stack's unwritten
            back-chain slots lead to, printed, not checked.

Every call has its stack (spyreStats.nativeStacks; none unread), or its stack was lost in the
kernel and counted (spyreProbes[].ustackLost): the kernel's stack map refuses a stack whose
bucket holds another (-EEXIST), and which stacks share a bucket moves with the job's load
addresses. Seen once in the 7.3 guest: the three layer_leaky calls lost, counted, the other 40
exact; the run after, none lost. At most a tenth of the calls may be lost so. Prints the frames
seen, one line per chain, the offsets of its first call. Exit 0 when all hold, else a message."""
import collections
import json
import re
import sys

FULL = {
    ("leaf_mix", "compute", "run_round", "main"): "rounds",
    ("dev_alloc", "layer_ok", "run_round", "main"): "rounds",
    ("dev_alloc", "layer_leaky", "run_round", "main"): "leaks",
}
ENTRY = {"x86_64": {0, 4}, "ppc64le": {0, 4, 8}, "s390x": {0}}
LIB = {"leaf_mix": "stackjob", "dev_alloc": "libstackrt.so"}


def frame(f):
    m = re.fullmatch(r"(\S+)\+0x([0-9a-f]+) \((\S+)\)", f)
    return (m.group(1), int(m.group(2), 16), m.group(3)) if m else (f, None, None)


def main():
    trace, counts, machine = sys.argv[1:4]
    t, c = json.load(open(trace)), json.load(open(counts))
    R, L = c["rounds"], len(c["leaked"])
    want_n = {"rounds": R, "leaks": L}
    bad, seen, chains = [], {}, collections.Counter()
    # a probe whose returns cannot be seen records instants, without a stack: say why
    for p in t.get("spyreProbes", []):
        if p["name"] in LIB and p.get("returnProbe") == "none":
            bad.append("%s records entries only (%s): no spans, no stacks" %
                       (p["name"], p.get("entriesOnlyReason")))
    ev = [e for e in t["traceEvents"] if e.get("ph") == "X" and e["name"] in LIB]
    lost = {p["name"]: p.get("ustackLost", 0) for p in t.get("spyreProbes", [])}
    unstacked = collections.Counter()
    for e in ev:
        us = e.get("args", {}).get("ustack")
        if not us:
            unstacked[e["name"]] += 1
            continue
        fr = [frame(f) for f in us]
        name, off, lib = fr[0]
        if (name, lib) != (e["name"], LIB[e["name"]]) or off not in ENTRY[machine]:
            bad.append("%s: frame 0 is %s" % (e["name"], us[0]))
        names = [n for n, _, _ in fr]
        if machine == "s390x":
            # frame 0 and the caller (r14), nothing after: the back chain past them is stale
            key = tuple(names[:2])
            if len(us) != 2:
                bad.append("%s: %d frames, want the function and its caller: %s" %
                           (e["name"], len(us), us))
            if len(key) < 2 or key[1] not in (("compute",) if key[0] == "leaf_mix" else
                                              ("layer_ok", "layer_leaky")):
                bad.append("%s: caller is not the one that called it: %s" % (e["name"], us))
        else:
            key = tuple(names[:names.index("main") + 1]) if "main" in names else tuple(names)
            if key not in FULL:
                bad.append("%s: chain %s" % (e["name"], us))
            elif any(o is None or o == 0 or l != "stackjob" for _, o, l in fr[1:len(key)]):
                bad.append("%s: callers not return addresses in stackjob: %s" % (e["name"], us))
        chains[key] += 1
        seen.setdefault(key, us)
    if machine == "s390x":
        got = collections.Counter()
        for k, n in chains.items():
            got[k[:2]] += n
        want = {("leaf_mix", "compute"): R, ("dev_alloc", "layer_ok"): R,
                ("dev_alloc", "layer_leaky"): L}
    else:
        got = chains
        want = {k: want_n[v] for k, v in FULL.items()}
    # calls without a stack: each one counted as lost by the kernel, a tenth at most; their
    # chains are the ones short
    for name, n in unstacked.items():
        if n != lost.get(name, 0):
            bad.append("%s: %d calls without a stack, %d counted lost" %
                       (name, n, lost.get(name, 0)))
    nlost = sum(unstacked.values())
    if nlost * 10 > len(ev):
        bad.append("%d of %d calls without a stack" % (nlost, len(ev)))
    short = sum(want[k] - got.get(k, 0) for k in want if got.get(k, 0) < want[k])
    if any(got.get(k, 0) > want.get(k, 0) for k in got) or short != nlost:
        bad.append("chains %s, want %s (%d lost)" % (dict(got), want, nlost))
    s = t["spyreStats"]
    if s.get("nativeStacks") != len(ev) - nlost or s.get("nativeStacksUnread") != 0 or \
            len(ev) != 2 * R + L:
        bad.append("%d calls (want %d), nativeStacks %s, unread %s" %
                   (len(ev), 2 * R + L, s.get("nativeStacks"), s.get("nativeStacksUnread")))
    for k, us in seen.items():
        print("ustack (%s, %d calls): %s" % (machine, chains[k], " <- ".join(us)))
    print("ustack: nativeStacksCallerAdded %s of %d, %d lost (counted)" %
          (s.get("nativeStacksCallerAdded"), len(ev), nlost))
    if bad:
        sys.exit("ustack: " + "; ".join(bad[:8]) + (" (%d more)" % (len(bad) - 8)
                                                      if len(bad) > 8 else ""))


if __name__ == "__main__":
    main()
