#!/usr/bin/env python3
"""Checks the native stacks (args.ustack, --ustack or stack=1) of a trace (tests/e2e/
ustack.bats): each frame "FUNCTION+0xOFFSET (FILE)", against what the job is known to call.

  chains TRACE COUNTS LOG --caller-added exact|at-least   tests/progs/stackjob.c, ROUNDS rounds
      and LEAKS leaks (its COUNTS): each span's stack up to main is a known chain (leaf_mix <-
      compute <- run_round <- main ROUNDS times, layer_leaky's LEAKS, dev_alloc's from layer_ok
      and layer_leaky), the traced function at +0x0 in its own file, its callers at offsets in
      stackjob; nativeStacks counts them all, none unread; the frameless leaf's caller added
      from its return address ROUNDS times (exact: 6.13+ kernels walk the others' from
      themselves), the tool's LOG saying both figures
  prefixes TRACE ROUNDS LEAKS   the stacks' first three functions: leaf_mix's and dev_alloc's
      chains, as many as the job's rounds and leaks
  leaks TRACE COUNTS   stack=1 on an allocator: the live blocks are the job's leaked ones, each
      (and each group) allocated by dev_alloc from layer_leaky, none from layer_ok; every
      allocation's [memory] event carries its stack (its caller as leaked or not), a free none
  mock TRACE COUNTS   the -O2 mock, no frame pointers: each allocate's stack the allocator at +0x0
      (+0x4 after endbr64) and its caller (the outer overload from run_iteration's two sites,
      the inner from the outer); every span's stack either in the trace or counted lost
      (ustackLost, nativeStacksUnread), under 3 %
  torch TRACE   Debian's python3-torch: aten::mm's 40 calls from libtorch_python, the CPU
      allocator's stacks, one from at::detail::empty_cpu
  fleet TRACE PID   -a: the job's spyreStreamLaunch spans carry the launch and its caller in the
      job, those without one counted lost
  first-frames TRACE FRAME [--pid PID]   (hostile.bats) every getpid event's stack (of PID) starts
      at FRAME, some of them: named from the file that holds it, not one that forged its name
      and build id
  swap TRACE   (hostile.bats) a library unloaded and another loaded at its address: getpid's
      callers from both, swap_b's last 1,000 calls named from libswapb.so (the mappings read
      again), none of swap_a's after swap_b's first

Exit 0 when all holds, else 1 with the first promise broken and its data.
"""
import argparse
import collections
import re

from checklib import load, need, probes, spans

FRAME = re.compile(r"(\S+)\+0x([0-9a-f]+) \((\S+)\)")


def frame(f):
    m = FRAME.fullmatch(f)
    need(m, "a frame not FUNCTION+0xOFFSET (FILE)", f)
    return m.group(1), int(m.group(2), 16), m.group(3)


def chains(a):
    t, c = load(a.trace), load(a.counts)
    log = open(a.log).read()
    R, L = c["rounds"], len(c["leaked"])
    got_chains = collections.Counter()
    for e in spans(t):
        us = e["args"].get("ustack", [])
        fns = [f.split("+")[0] for f in us]
        need("main" in fns, "a stack not reaching main", e["name"], us)
        # up to main: what comes after is libc's (no frame pointers, no symbols)
        named = [frame(f) for f in us[:fns.index("main") + 1]]
        # the traced function itself, at its first instruction, in its own file
        lib = "libstackrt.so" if e["name"] == "dev_alloc" else "stackjob"
        need(named[0] == (e["name"], 0, lib), "the first frame, want the function at +0x0", us)
        need(all(o > 0 and f == "stackjob" for _, o, f in named[1:]),
             "a caller not in stackjob or at +0x0", us)
        got_chains[tuple(n for n, _, _ in named)] += 1
    want = {("leaf_mix", "compute", "run_round", "main"): R,
            ("layer_leaky", "run_round", "main"): L,
            ("dev_alloc", "layer_ok", "run_round", "main"): R,
            ("dev_alloc", "layer_leaky", "run_round", "main"): L}
    got = collections.Counter()
    for k, n in got_chains.items():
        w = next((w for w in want if k[:len(w)] == w), None)
        need(w, "a chain no call of the job makes", k)
        got[w] += n
    need(dict(got) == want, "chains, want the job's calls", dict(got_chains), want)
    s = t["spyreStats"]
    need(s["nativeStacks"] == 2 * R + 2 * L and s["nativeStacksUnread"] == 0,
         "nativeStacks, want %d, none unread" % (2 * R + 2 * L), s)
    # leaf_mix's caller is in no frame the kernel walks: taken from its return address, once
    # per call; the others' entries are at `push %rbp`, which 6.13+ kernels walk themselves
    added = s["nativeStacksCallerAdded"]
    need(added == R if a.caller_added == "exact" else added >= R,
         "nativeStacksCallerAdded, want %s %d" % (a.caller_added, R), added)
    m = re.search(r"native stacks: (\d+) calls carried one \((\d+) with their caller", log)
    need(m and int(m.group(1)) == 2 * R + 2 * L and int(m.group(2)) == added,
         "the log's native stacks line", m and m.group(0))


def prefixes(a):
    t = load(a.trace)
    n = collections.Counter(tuple(f.split("+")[0] for f in e["args"].get("ustack", [])[:3])
                            for e in spans(t))
    want = {("leaf_mix", "compute", "run_round"): a.rounds,
            ("dev_alloc", "layer_ok", "run_round"): a.rounds,
            ("dev_alloc", "layer_leaky", "run_round"): a.leaks}
    need(dict(n) == want, "stacks' first functions", dict(n))


def leaks(a):
    t, c = load(a.trace), load(a.counts)
    p = t["spyreMemory"]["processes"][0]
    want = sorted((int(b["addr"], 16), b["bytes"]) for b in c["leaked"])
    got = sorted((int(b["addr"], 16), b["bytes"]) for b in p["liveBlocks"])
    need(len(want) == 5 and got == want, "live blocks, want the job's 5 leaks", got, want)
    for b in p["liveBlocks"] + p["liveGroups"]:
        us = b.get("ustack", [])
        need(len(us) > 2 and us[0].startswith("dev_alloc+0x0 (libstackrt.so)") and
             us[1].startswith("layer_leaky+0x") and us[2].startswith("run_round+0x"),
             "a live block or group not from dev_alloc <- layer_leaky <- run_round", b)
    # the blocks freed were allocated from layer_ok: none of those is live
    need(not any("layer_ok" in f for b in p["liveBlocks"] for f in b["ustack"]),
         "a live block from layer_ok")
    # each allocation's [memory] event carries its stack (the leaked ones: layer_leaky's), a
    # free none
    mem = [e for e in t["traceEvents"] if e["name"] == "[memory]"]
    leak = {addr for addr, _ in want}
    allocs = [e for e in mem if e["args"]["Bytes"] > 0]
    need(len(allocs) == c["rounds"] + 5, "allocation events, want rounds + 5", len(allocs))
    for e in allocs:
        us = e["args"].get("ustack", [])
        caller = us[1].split("+")[0] if len(us) > 1 else None
        need(caller == ("layer_leaky" if e["args"]["Addr"] in leak else "layer_ok"),
             "an allocation event's caller", e)
    need(all("ustack" not in e["args"] for e in mem if e["args"]["Bytes"] < 0),
         "a free's event with a stack")


def mock(a):
    t, c = load(a.trace), load(a.counts)
    allocs = c["calls"]["spyre::SpyreAllocator::allocate"]  # the job's, via allocate(size_t)
    ev = [e for e in spans(t) if e["name"].startswith("spyreAllocate")]
    # the overloads, named by their parameters: the one allocate(size_t) calls
    inner = "spyreAllocate(unsigned long, flex::AllocationDirective const&)"
    sites = collections.Counter()
    missing = collections.Counter()
    for e in ev:
        us = e["args"].get("ustack")
        if not us:  # lost to its slot in the kernel's map: counted (ustackLost), checked below
            missing[e["name"]] += 1
            continue
        # at its first instruction, after endbr64 where the mock has one (CET builds)
        need(re.match(r"spyre::SpyreAllocator::allocate\+0x[04] \(_C\.so\)$", us[0]),
             "the first frame, want the allocator at its entry", us)
        # no frame pointers: the caller is the return address at entry, the walk beyond is
        # cut where it leaves the code; torch-spyre's allocate(size_t) calls allocate(size_t,
        # directive), which the job's run_iteration calls twice (input and output buffers)
        if e["name"] == inner:
            need(len(us) > 1 and us[1].startswith("spyre::SpyreAllocator::allocate+0x"),
                 "the inner overload's caller, want the outer", us)
        else:
            m = len(us) > 1 and re.match(r"\(anonymous namespace\)::run_iteration\+(0x[0-9a-f]+) "
                                         r"\(mock-spyre-job\)$", us[1])
            need(m, "the outer overload's caller, want run_iteration", us)
            sites[m.group(1)] += 1
    outer = [n for n in {e["name"] for e in ev} if n != inner]
    need(len(ev) == 2 * allocs and len(sites) == 2, "allocate spans, want 2 per call; call "
         "sites, want 2", len(ev), dict(sites))
    need(all(v <= allocs // 2 for v in sites.values()), "a call site over half the calls",
         dict(sites))
    need(sum(sites.values()) + sum(missing[n] for n in outer) == allocs,
         "outer calls with a site or counted lost, want the job's", dict(sites), dict(missing))
    s = t["spyreStats"]
    # every span of a probe carried one (the [memory] events repeat their allocation's;
    # instants, the driver tier's and the device's spans have none)
    withstack = sum(1 for e in t["traceEvents"]
                    if e["name"] != "[memory]" and "ustack" in e.get("args", {}))
    need(s["nativeStacks"] == withstack, "nativeStacks, want the events with one", s, withstack)
    # a stack not kept by the kernel's map (its slot held another one) is counted on its
    # probe, one not read back from it in nativeStacksUnread: none is lost uncounted
    ps = probes(t)
    nspans = sum(p["events"] for p in ps.values() if p.get("type", "span") == "span")
    lost = sum(p.get("ustackLost", 0) for p in ps.values()) + s["nativeStacksUnread"]
    # (a slot the kernel's map gave another stack: 20 of 1,628 once, in a fresh-clone make test)
    need(withstack + lost == nspans and lost < nspans * 3 / 100,
         "spans with a stack + lost, want every span, under 3 % lost", withstack, lost, nspans)
    need(sum(missing.values()) <= lost, "allocate spans without a stack, uncounted",
         dict(missing), lost)


def torch(a):
    t = load(a.trace)
    mm = [e for e in spans(t) if e["name"] == "aten::mm"]
    need(len(mm) == 40, "aten::mm spans, want 40", len(mm))
    for e in mm:
        us = e["args"].get("ustack", [])
        # called by the Python binding (THPVariable_mm, a local symbol of libtorch_python)
        need(us[:1] == ["at::_ops::mm::call+0x0 (libtorch_cpu.so.1.13.0)"],
             "aten::mm's first frame", us)
        need(len(us) > 1 and "libtorch_python.so" in us[1], "aten::mm's caller, want "
             "libtorch_python's", us)
    al = [e for e in spans(t) if e["name"] == "c10::alloc_cpu"]
    need(al and all(e["args"].get("ustack", [None])[0] == "c10::alloc_cpu+0x0 (libc10.so.1.13.0)"
                    for e in al), "c10::alloc_cpu's first frames", al[:2])
    # an empty tensor's storage: the CPU allocator called for at::detail::empty_cpu
    need(any(f.startswith("at::detail::empty_cpu+0x") for e in al for f in e["args"]["ustack"]),
         "no allocation from at::detail::empty_cpu")


def fleet(a):
    t = load(a.trace)
    launches = [e for e in spans(t) if e.get("pid") == a.pid and e["name"] == "spyreStreamLaunch"]
    ev = [e for e in launches if "ustack" in e.get("args", {})]
    need(ev and all(e["args"]["ustack"][0].startswith("spyre::SpyreStream::launch+0x") and
                    len(e["args"]["ustack"]) > 1 and
                    "(mock-spyre-job)" in e["args"]["ustack"][1] for e in ev),
         "spyreStreamLaunch stacks, want the launch and its caller in the job", ev[:2])
    # a launch without one lost it, counted: not kept by the kernel's map (on its probe), or
    # not read back from it
    lost = sum(p.get("ustackLost", 0) for p in t["spyreProbes"]
               if p["name"] == "spyreStreamLaunch")
    lost += t["spyreStats"]["nativeStacksUnread"]
    need(len(launches) - len(ev) <= lost, "launches without a stack, uncounted",
         len(launches), len(ev), lost)


def first_frames(a):
    d = load(a.trace)
    c = collections.Counter((e["args"]["ustack"] or [None])[0] for e in d["traceEvents"]
                            if e.get("name") == "getpid" and "ustack" in e.get("args", {})
                            and (a.pid is None or e["pid"] == a.pid))
    print(dict(c))
    need(set(c) == {a.frame}, "getpid's first frames, want %r alone" % a.frame, dict(c))


def swap(a):
    d = load(a.trace)
    callers = [e["args"]["ustack"][1] for e in d["traceEvents"] if e.get("name") == "getpid"
               and len(e.get("args", {}).get("ustack", [])) > 1]
    sa = [c for c in callers if c.startswith("swap_a+")]
    sb = [c for c in callers if c.startswith("swap_b+")]
    print(len(callers), "calls:", len(sa), "from swap_a,", len(sb), "from swap_b")
    need(sa and sb, "callers, want swap_a's and swap_b's", callers[-5:])
    # swap_b's last 1,000 calls (more than a second after the swap) are all named swap_b
    # (before: every one was swap_a's, its name cached by address forever)
    need(all(c.startswith("swap_b+0x") and c.endswith("(libswapb.so)") for c in callers[-1000:]),
         "the last 1,000 callers, want swap_b in libswapb.so",
         [c for c in callers[-1000:] if not c.startswith("swap_b+")][:5])
    # and the names never go back
    need(all(c.startswith("swap_b+") for c in callers[callers.index(sb[0]):]),
         "swap_a after swap_b")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("chains")
    for f in ("trace", "counts", "log"):
        c.add_argument(f)
    c.add_argument("--caller-added", choices=("exact", "at-least"), required=True)
    c.set_defaults(fn=chains)
    c = sub.add_parser("prefixes")
    c.add_argument("trace")
    c.add_argument("rounds", type=int)
    c.add_argument("leaks", type=int)
    c.set_defaults(fn=prefixes)
    for name, fn in (("leaks", leaks), ("mock", mock)):
        c = sub.add_parser(name)
        c.add_argument("trace")
        c.add_argument("counts")
        c.set_defaults(fn=fn)
    c = sub.add_parser("torch")
    c.add_argument("trace")
    c.set_defaults(fn=torch)
    c = sub.add_parser("first-frames")
    c.add_argument("trace")
    c.add_argument("frame")
    c.add_argument("--pid", type=int)
    c.set_defaults(fn=first_frames)
    c = sub.add_parser("swap")
    c.add_argument("trace")
    c.set_defaults(fn=swap)
    c = sub.add_parser("fleet")
    c.add_argument("trace")
    c.add_argument("pid", type=int)
    c.set_defaults(fn=fleet)
    a = ap.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
