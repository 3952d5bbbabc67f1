#!/usr/bin/env python3
"""Checks the driver tier of a trace of the mock job (its VFIO ioctls on stand-in files, traced
through the syscall tracepoints; tests/e2e/driver.bats) against the job's ioctl counts:

  spans TRACE COUNTS [--setup]   a driver span per ioctl the job made, by name (with --setup the
      setup and shutdown ioctls for 2 devices too, docs/mock.md), some MAP_DMA; the path
      "tracepoint", spyreStats.driverSpans them all, none dropped; each failing as the
      stand-ins do (ENOTTY) on an fd; MAP_DMA inside aiuMalloc, whole pages at IOVA = the
      buffer's address, its size the allocation's in pages; UNMAP_DMA inside spyreFree, of a
      mapping made before; the setup inside aiuInitializeRuntime on the main thread
  devices TRACE DIR   the job alive while traced: every driver span's device DIR/vfio
  exited TRACE_NULL TRACE_FILES DIR   records read after the job exited: on /dev/null stand-ins
      every span's device /dev/null; on stand-in files each command on the stand-in of its kind
      (the container "vfio", the groups "0" and "1", the devices "vfio-device-0"/"-1"), the full
      path while /proc had it, else its base name; each seen
  skipped TRACE COUNTS [--pair]   every 5th return skipped (SPYRE_TEST_SKIP_SYS_EXIT=5): each costs
      its span and is counted unpaired (a fifth of them, give or take), no span made over two
      calls (each inside its aiuMalloc or spyreFree); with --pair (the next entry skipped too)
      a tenth of them unpaired at least, half the spans kept

Exit 0 when all holds, else 1 with the first promise broken and its data.
"""
import argparse
import collections
import os

from checklib import load, need, spans as spans_of

DRIVER = "privateuse1_driver"
# docs/mock.md: per container, per device (2 here), at shutdown per device
SETUP = {"VFIO_GET_API_VERSION": 1, "VFIO_CHECK_EXTENSION": 1, "VFIO_SET_IOMMU": 1,
         "VFIO_GROUP_GET_STATUS": 2, "VFIO_GROUP_SET_CONTAINER": 2,
         "VFIO_GROUP_GET_DEVICE_FD": 2, "VFIO_DEVICE_GET_INFO": 2,
         "VFIO_DEVICE_GET_REGION_INFO": 4, "VFIO_DEVICE_GET_IRQ_INFO": 2,
         "VFIO_DEVICE_SET_IRQS": 2, "VFIO_DEVICE_RESET": 2}


def driver_spans(d):
    return [e for e in spans_of(d) if e.get("cat") == DRIVER]


def spans(a):
    d, c = load(a.trace), load(a.counts)
    want = collections.Counter({k: v for k, v in c["ioctls"].items() if v})
    if a.setup:
        want.update(SETUP)
    X = spans_of(d)
    drv = driver_spans(d)
    got = collections.Counter(e["name"] for e in drv)
    need(got == want, "driver spans by name, want the job's ioctls", dict(got), dict(want))
    need(want["VFIO_IOMMU_MAP_DMA"] > 0, "no MAP_DMA")
    st = d["spyreStats"]
    need(st["driverPath"] == "tracepoint", "driverPath", st)
    need(st["driverSpans"] == len(drv) and st["driverDrops"] == 0, "driverSpans or drops", st)

    def parent(e, names):
        """The innermost runtime span around e on its thread."""
        best = None
        for p in X:
            if (p["pid"], p["tid"]) != (e["pid"], e["tid"]) or p.get("cat") == DRIVER:
                continue
            if p["ts"] <= e["ts"] and e["ts"] + e["dur"] <= p["ts"] + p["dur"]:
                if best is None or p["dur"] < best["dur"]:
                    best = p
        need(best is not None and best["name"] in names,
             "%s not inside %s" % (e["name"], " or ".join(sorted(names))), e, best)
        return best

    mapped = {}    # iova -> size, MAP_DMA not unmapped yet
    for e in sorted(drv, key=lambda e: e["ts"]):
        x = e["args"]
        need(x.get("ret") == -25 and x.get("error") == "ENOTTY",
             "a stand-in's ioctl that did not fail with ENOTTY", e)
        need(isinstance(x.get("fd"), int) and x["fd"] >= 0, "a driver span's fd", e)
        if e["name"] == "VFIO_IOMMU_MAP_DMA":
            p = parent(e, {"aiuMalloc"})
            # the mock maps whole pages at IOVA = the buffer's address (flex returns the buffer
            # inside a CompositeAddress: no argument of the allocator holds it)
            need(x["iova"] == x["vaddr"] and int(str(x["iova"]), 0) % 4096 == 0,
                 "MAP_DMA's iova, want the buffer's page", e, p)
            need(x["size"] == (p["args"]["bytes"] + 4095) // 4096 * 4096,
                 "MAP_DMA's size, want the allocation's pages", e, p)
            mapped[x["iova"]] = x["size"]
        elif e["name"] == "VFIO_IOMMU_UNMAP_DMA":
            # freed when torch-spyre deletes the owner context
            p = parent(e, {"spyreFree"})
            need(mapped.pop(x["iova"], None) == x["size"], "UNMAP_DMA of no mapping", e, p)
        elif e["name"] != "VFIO_DEVICE_RESET":
            # setup: inside initializeRuntime, on the main thread
            parent(e, {"aiuInitializeRuntime"})
            need(e["tid"] == e["pid"], "a setup ioctl off the main thread", e)
    print("driver spans:", dict(got))


def devices(a):
    devs = {e["args"].get("device") for e in driver_spans(load(a.trace))}
    need(devs == {a.dir + "/vfio"}, "driver spans' devices, want %s/vfio" % a.dir, devs)


def exited(a):
    devs = collections.Counter(e["args"].get("device") for e in driver_spans(load(a.null)))
    need(set(devs) == {"/dev/null"}, "on /dev/null stand-ins, devices", dict(devs))
    # each command on the stand-in of its kind: the full path while /proc had it, else the base
    want = {"VFIO_GET_API_VERSION": "vfio", "VFIO_CHECK_EXTENSION": "vfio",
            "VFIO_SET_IOMMU": "vfio", "VFIO_IOMMU_MAP_DMA": "vfio", "VFIO_IOMMU_UNMAP_DMA": "vfio"}
    seen = set()
    for e in driver_spans(load(a.files)):
        dev = e["args"].get("device", "")
        base = os.path.basename(dev)
        need(dev in (base, os.path.join(a.dir, base)), "a device neither path nor base name", e)
        if e["name"].startswith("VFIO_GROUP_"):
            need(base in ("0", "1"), "a group ioctl not on a group", e)
        elif e["name"].startswith("VFIO_DEVICE_"):
            need(base in ("vfio-device-0", "vfio-device-1"), "a device ioctl not on a device", e)
        else:
            need(base == want.get(e["name"]), "a container ioctl not on the container", e)
        seen.add(base)
    need(seen == {"vfio", "0", "1", "vfio-device-0", "vfio-device-1"}, "stand-ins seen", seen)
    print("devices:", dict(devs), sorted(seen))


def skipped(a):
    d, c = load(a.trace), load(a.counts)
    X = spans_of(d)
    drv = driver_spans(d)
    st = d["spyreStats"]
    want = c["ioctls"]["VFIO_IOMMU_MAP_DMA"] + c["ioctls"]["VFIO_IOMMU_UNMAP_DMA"]
    if a.pair:
        # a skipped pair loses two spans, the stale record counted (the other entry is not
        # seen at all, and the shared counter of returns makes some skips chain)
        need(st["driverUnpaired"] >= want // 10 and len(drv) >= want // 2,
             "unpaired, want a tenth at least; spans, half at least", len(drv), st, want)
    else:
        # about a fifth of the returns were skipped: each costs its span, the next ioctl
        # counts it
        need(want // 8 <= st["driverUnpaired"] <= want // 3, "unpaired, want about a fifth",
             st, want)
        need(want - 2 <= len(drv) + st["driverUnpaired"] <= want,
             "spans + unpaired, want every call", len(drv), st, want)
    for e in drv:
        runtime = "aiuMalloc" if e["name"] == "VFIO_IOMMU_MAP_DMA" else "spyreFree"
        need(any(p["name"] == runtime and (p["pid"], p["tid"]) == (e["pid"], e["tid"]) and
                 p["ts"] <= e["ts"] and e["ts"] + e["dur"] <= p["ts"] + p["dur"] for p in X),
             "a driver span not inside its " + runtime, e)
    print("spans", len(drv), "unpaired", st["driverUnpaired"], "of", want)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("spans")
    c.add_argument("trace")
    c.add_argument("counts")
    c.add_argument("--setup", action="store_true")
    c.set_defaults(fn=spans)
    c = sub.add_parser("devices")
    c.add_argument("trace")
    c.add_argument("dir")
    c.set_defaults(fn=devices)
    c = sub.add_parser("exited")
    c.add_argument("null")
    c.add_argument("files")
    c.add_argument("dir")
    c.set_defaults(fn=exited)
    c = sub.add_parser("skipped")
    c.add_argument("trace")
    c.add_argument("counts")
    c.add_argument("--pair", action="store_true")
    c.set_defaults(fn=skipped)
    a = ap.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
