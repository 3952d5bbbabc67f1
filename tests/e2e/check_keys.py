#!/usr/bin/env python3
"""Checks a trace of tests/progs/keysjob.cpp (tests/e2e/keys.bats) against what the job
computed, for the probe-table keys that read user memory and the device evidence of void
launches:

  values TRACE   the keys' table (keys.bats' trace_keys): make_result's returned class (a 3i,
      b 0x1234, read through the hidden result pointer); set_kernel's std::string names, the
      long one its last 60 chars after "..."; the launches' keys 100..102 and kernel names; the
      three device spans named by their kernels, keyless, the first two ended by the
      synchronize after them, the last by the query that said true (done 0 then 1) at its
      return, their correlations the launches', inside their synchronize; 6 arrow events;
      distributedInfo from the environment (rank 1 of 2, its PCI bus id); 3 device spans, no
      memory read faulted
  (the rank from getRank/getSize alone: check_collectives.py dist)
  sync-ends TRACE MODE   sync_forward tail-jumps to sync_stream: MODE followed (the jump
      followed: 4 device spans all ended by a synchronize, none in flight), cut
      (SPYRE_NO_TAIL_FOLLOW: the span ends at the jump, no evidence, 4 in flight) or real
      (cut, but sync_stream probed too: 4 spans ended by a synchronize)
  deref-fault TRACE   an unreadable address: the 3 sync_stream instants read 0, the probe
      counts 3 faulted reads

Exit 0 when all holds, else 1 with the first promise broken and its data.
"""
import argparse

from checklib import load, need, probes, spans


def values(a):
    d = load(a.trace)
    ev = spans(d)
    host = lambda n: [e for e in ev if e["name"] == n and e["pid"] != 0]
    # a class returned by value: its first words, read through the hidden result pointer
    need([e["args"] for e in host("make_result")] == [{"a": 3 * i, "b": "0x1234"}
                                                      for i in range(3)],
         "make_result's values", host("make_result"))
    # a longer std::string keeps its last 60 chars after "...": the "#<step>" join key survives
    long = "/var/tmp/sdsc_" + "k" * 70 + "/inner/bundle.mlir#2"
    names = ["fused_add#0", "fused_add#1", "..." + long[-60:]]
    need([e["args"].get("name") for e in host("set_kernel")] == names, "set_kernel's names",
         [e["args"] for e in host("set_kernel")])
    launches = host("launch")
    need([e["args"].get("key") for e in launches] == [100, 101, 102], "the launches' keys",
         [e["args"] for e in launches])
    need([e["args"].get("kernel") for e in launches] == names, "the launches' kernel names",
         [e["args"] for e in launches])
    dev = sorted((e for e in ev if e["pid"] == 0), key=lambda e: e["ts"])
    # void launches without a key, named by their kernels: the first two ended by the
    # synchronize after them, the last by the query that said true (the false one is no
    # evidence)
    need([e["name"] for e in dev] == names, "device spans' names", dev)
    need([e["args"].get("end") for e in dev] == ["synchronize", "synchronize", "query"],
         "device spans' ends", dev)
    queries = host("query_stream")
    need([q["args"].get("done") for q in queries] == [0, 1], "the queries' results", queries)
    # at the true query's return (both ends rounded to ns in the file)
    need(abs(dev[2]["ts"] + dev[2]["dur"] - queries[1]["ts"] - queries[1]["dur"]) < 0.0025,
         "the last device span not ended at the true query's return", dev[2], queries[1])
    need([e["args"].get("correlation") for e in dev] ==
         [e["args"].get("correlation") for e in launches], "device spans' correlations",
         dev, launches)
    syncs = host("sync_stream")
    for dv, s in zip(dev[:2], syncs):
        need(dv["ts"] + dv["dur"] <= s["ts"] + s["dur"] + 0.002,
             "a device span past its synchronize", dv, s)
    flows = [e for e in d["traceEvents"] if e["ph"] in "sf"]
    need(len(flows) == 6, "arrow events, want 6", flows)
    # the environment wins over getRank()/getSize()
    need(d.get("distributedInfo") == {"backend": "spyre_ccl", "rank": 1, "world_size": 2,
                                      "pci_bus_id": "0000:1b:00.0"},
         "distributedInfo, want the environment's", d.get("distributedInfo"))
    need(d["spyreStats"]["deviceSpans"] == 3, "deviceSpans, want 3", d["spyreStats"])
    need(not any(p.get("derefFaults") for p in d["spyreProbes"]), "a memory read faulted",
         [p for p in d["spyreProbes"] if p.get("derefFaults")])


def sync_ends(a):
    d = load(a.trace)
    st = d["spyreStats"]
    dev = [e for e in spans(d) if e["pid"] == 0]
    if a.mode != "real":
        p = probes(d)["sync_forward"]
        if a.mode == "followed":
            need(p["tailExits"] == 0 and p.get("tailJumpsFollowed") == 1,
                 "sync_forward, want its jump followed", p)
        else:
            need(p["tailExits"] == 1, "sync_forward, want its span ended at the jump", p)
    if a.mode == "cut":
        need(st["deviceSpans"] == 0, "deviceSpans, want none", st)
        need(st["launchesInFlight"] == 4, "launchesInFlight, want 4", st)
        return
    need(st["deviceSpans"] == 4, "deviceSpans, want 4", st)
    need(st["launchesInFlight"] == 0, "launchesInFlight, want 0", st)
    need(all(e["args"].get("end") == "synchronize" for e in dev),
         "device spans, want all ended by a synchronize", dev)


def deref_fault(a):
    d = load(a.trace)
    ev = [e for e in d["traceEvents"] if e["ph"] == "i" and e["name"] == "sync_stream"]
    need(len(ev) == 3 and all(e["args"].get("far") == 0 for e in ev),
         "sync_stream instants, want 3 reading 0", ev)
    p = probes(d)["sync_stream"]
    need(p.get("derefFaults") == 3, "derefFaults, want 3", p)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("values")
    c.add_argument("trace")
    c.set_defaults(fn=values)
    c = sub.add_parser("sync-ends")
    c.add_argument("trace")
    c.add_argument("mode", choices=("followed", "cut", "real"))
    c.set_defaults(fn=sync_ends)
    c = sub.add_parser("deref-fault")
    c.add_argument("trace")
    c.set_defaults(fn=deref_fault)
    a = ap.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
