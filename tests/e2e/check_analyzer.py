#!/usr/bin/env python3
"""Checks what IBM's aiu-trace-analyzer (acelyzer) made of our traces (tests/e2e/analyzer.bats):
nothing dropped or moved on the way (it drops the digits of device events' names, keeping the
name in args.orig_name).

  kept IN OUT   OUT has every X event of IN (kind, original name, pid, tid), and IN's ac2g
      arrows (more, never fewer: v1.2 adds its own for a kernel whose correlation equals an 's'
      id, which ours never do); some kernels; one deviceProperties entry
  merged OUT   ours merged with Kineto's samples, through the analyzer: Kineto's python ops and
      our runtime and device spans (the sample's kernel "Spyre compute"), one deviceProperties
  arrows IN OUT [N [PID:K ...]]   OUT has every X event of IN of non-zero length (v1.2.0 skips
      zero-length ones) and IN's arrows, each id still one start and one finish at the same
      places, none of its own; with N, IN has N arrows, K of them from PID

Exit 0 when all holds, else 1 with the first promise broken and its data.
"""
import argparse
import collections

from checklib import load, need


def name(e):
    return e.get("args", {}).get("orig_name", e["name"])


def count(d, ph):
    return collections.Counter((e["ph"], e.get("cat"), name(e), e["pid"], e["tid"])
                               for e in d["traceEvents"] if e["ph"] in ph)


def kept(a):
    i, o = load(a.inp), load(a.out)
    ci, co = count(i, "X"), count(o, "X")
    need(ci == co, "X events changed", {k: (ci[k], co[k]) for k in set(ci) | set(co)
                                        if ci[k] != co[k]})
    fi, fo = count(i, "sf"), count(o, "sf")
    need(all(fo[k] >= v for k, v in fi.items()), "arrows lost",
         {k: (v, fo[k]) for k, v in fi.items() if fo[k] < v})
    need(sum(v for k, v in co.items() if k[1] == "kernel") > 0, "no kernel")
    need(len(o.get("deviceProperties", [])) == 1, "deviceProperties", o.get("deviceProperties"))


def merged(a):
    d = load(a.out)
    names = {e["name"] for e in d["traceEvents"]}
    # both sides made it through: Kineto's python ops and our runtime and device spans (the
    # fixture's kernel is "Spyre compute": no digits for the analyzer to drop)
    need({"aten::linear", "aiuLaunchComputeStream", "Spyre compute"} <= names,
         "ops of one side lost", sorted(names)[:20])
    need(len(d.get("deviceProperties", [])) == 1, "deviceProperties", d.get("deviceProperties"))


def arrows(a):
    i, o = load(a.inp), load(a.out)
    xs = lambda d: collections.Counter((e.get("cat"), name(e), e["pid"], e["tid"])
                                       for e in d["traceEvents"] if e["ph"] == "X" and e["dur"])
    xi, xo = xs(i), xs(o)
    need(xi == xo, "X events changed", {k: (xi[k], xo[k]) for k in set(xi) | set(xo)
                                        if xi[k] != xo[k]})

    def flows(d):
        m = collections.defaultdict(list)
        for e in d["traceEvents"]:
            if e["ph"] in ("s", "f"):
                m[e.get("cat"), e.get("name"), e["id"]].append(
                    (e["ph"], e["pid"], e["tid"], round(e["ts"] * 1000)))
        return {k: sorted(v) for k, v in m.items()}

    fi, fo = flows(i), flows(o)
    per_pid = collections.Counter(next((p[1] for p in v if p[0] == "s"), None)
                                  for v in fi.values())
    print(f"{len(fi)} arrows in, {len(fo)} out, from {dict(per_pid)}")
    need(all([p[0] for p in v] == ["f", "s"] for v in fi.values()),
         "an input arrow not one start and one finish")
    need(fi == fo, "arrows changed", [(k, fi.get(k), fo.get(k)) for k in set(fi) | set(fo)
                                      if fi.get(k) != fo.get(k)][:5])
    if a.n is not None:
        need(len(fi) == a.n, "arrows, want %d" % a.n, len(fi))
        want = {int(p): int(k) for p, k in (x.split(":") for x in a.per_pid)}
        need({p: per_pid[p] for p in want} == want, "arrows per pid", dict(per_pid), want)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("kept")
    c.add_argument("inp")
    c.add_argument("out")
    c.set_defaults(fn=kept)
    c = sub.add_parser("merged")
    c.add_argument("out")
    c.set_defaults(fn=merged)
    c = sub.add_parser("arrows")
    c.add_argument("inp")
    c.add_argument("out")
    c.add_argument("n", type=int, nargs="?")
    c.add_argument("per_pid", nargs="*", metavar="PID:K")
    c.set_defaults(fn=arrows)
    a = ap.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
