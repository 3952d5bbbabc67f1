#!/usr/bin/env python3
"""Check the VFIO driver tier in a trace made in the QEMU guest (tests/vm/run-vm-test.sh):
the tracer used the requested path, driver spans exist, are decoded (VFIO command names, fd
kinds, return values, DMA iova/size) and each lies inside a runtime span of the same thread.
Exit 1 with a list of problems."""
import argparse
import json
import sys
from collections import Counter, defaultdict

DRIVER_CAT = "privateuse1_driver"


def find_key(d, key):
    """A key of the trace's top level or of one of its top-level objects."""
    if key in d:
        return d[key]
    for v in d.values():
        if isinstance(v, dict) and key in v:
            return v[key]
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--path", required=True, help="fentry, kprobe or tracepoint")
    ap.add_argument("--counts", help="the mock job's counts of the traced phase")
    ap.add_argument("--min-spans", type=int, default=1)
    ap.add_argument("--require", action="append", default=[], metavar="NAME",
                    help="a VFIO command that must appear, and succeed")
    ap.add_argument("--group", help="the IOMMU group the job used: each span's device is then "
                    "exactly the node of its fd's kind")
    ap.add_argument("--unprobed", action="append", default=[], metavar="NAME",
                    help="a VFIO command issued from a runtime function no probe covers")
    a = ap.parse_args()
    with open(a.trace) as f:
        d = json.load(f)
    problems = []

    path = find_key(d, "driverPath")
    if path != a.path:
        problems.append(f"driverPath is {path!r}, wanted {a.path!r}")
    drops = find_key(d, "driverDrops")
    if drops:
        problems.append(f"{drops} driver records dropped")

    xs = [e for e in d["traceEvents"] if e.get("ph") == "X"]
    drv = [e for e in xs if e.get("cat") == DRIVER_CAT]
    spans = find_key(d, "driverSpans")
    if spans is not None and spans != len(drv):
        problems.append(f"driverSpans says {spans}, trace has {len(drv)} driver spans")
    if len(drv) < a.min_spans:
        problems.append(f"{len(drv)} driver spans, wanted at least {a.min_spans}")

    # Decoding: VFIO command names, no raw numbers; DMA commands carry iova and size.
    names = Counter(e["name"] for e in drv)
    for e in drv:
        args = e.get("args", {})
        if not e["name"].startswith("VFIO_"):
            problems.append(f"driver span not decoded: {e['name']!r} {args}")
        if "ret" not in args:
            problems.append(f"{e['name']}: no ret in {args}")
        elif not isinstance(args["ret"], int):
            problems.append(f"{e['name']}: ret {args['ret']!r} is not a number")
        elif args["ret"] < 0 and "error" not in args:
            problems.append(f"{e['name']}: ret {args['ret']} without an error name")
        if e["name"] in ("VFIO_IOMMU_MAP_DMA", "VFIO_IOMMU_UNMAP_DMA"):
            for k in ("iova", "size"):
                if k not in args:
                    problems.append(f"{e['name']}: no {k} in {args}")

    for name in a.require:
        ok = [e for e in drv if e["name"] == name and e.get("args", {}).get("ret", -1) >= 0]
        if not ok:
            problems.append(f"no successful {name} span")
    # the fd kind decides a command's name: check the file behind it too. A short job (launch
    # mode) has exited before its records are read: the names must not come from its /proc
    # alone (they were "char 246:0", "char 10:196" there)
    container = ("VFIO_GET_API_VERSION", "VFIO_CHECK_EXTENSION", "VFIO_SET_IOMMU")
    for e in drv:
        dev = e.get("args", {}).get("device", "")
        if e["name"].startswith("VFIO_GROUP_"):
            want = f"/dev/vfio/{a.group}" if a.group else None
        elif e["name"].startswith("VFIO_IOMMU_") or (a.group and e["name"] in container):
            want = "/dev/vfio/vfio"
        elif e["name"].startswith("VFIO_DEVICE_") and a.group:
            want = "anon_inode:[vfio-device]"
        else:
            want = None
        if want and dev != want:
            problems.append(f"{e['name']} on {dev!r}, not {want!r}")
        elif e["name"].startswith("VFIO_GROUP_") and not dev.startswith("/dev/vfio/"):
            problems.append(f"{e['name']} on {dev!r}, not a group node")
        if e["name"] == "VFIO_IOMMU_MAP_DMA" and e["args"].get("iova") != e["args"].get("vaddr"):
            problems.append(f"MAP_DMA iova {e['args'].get('iova')} != vaddr "
                            f"{e['args'].get('vaddr')} (the mock maps IOVA == VA)")

    # Nesting: each driver span inside a runtime (uprobe) span of the same thread.
    runtime = defaultdict(list)
    for e in xs:
        if e.get("cat") not in (DRIVER_CAT, "kernel", "gpu_memcpy"):
            runtime[(e["pid"], e["tid"])].append(e)
    outside = 0
    parents = Counter()
    for e in drv:
        ts, end = e["ts"], e["ts"] + e["dur"]
        inside = [r for r in runtime[(e["pid"], e["tid"])]
                  if r["ts"] <= ts and end <= r["ts"] + r["dur"]]
        if not inside:
            outside += e["name"] not in a.unprobed
        else:
            parents[min(inside, key=lambda r: r["dur"])["name"]] += 1
    if outside:
        problems.append(f"{outside} of {len(drv)} driver spans lie in no runtime span")

    if a.counts:
        # the job counts its VFIO ioctls per phase, failed ones too, as the tracer sees them
        with open(a.counts) as f:
            ioctls = json.load(f).get("ioctls")
        if not ioctls:
            problems.append(f"{a.counts} has no ioctl counts")
        else:
            for name in sorted(set(ioctls) | set(names)):
                if ioctls.get(name, 0) != names.get(name, 0):
                    problems.append(f"{name}: job made {ioctls.get(name, 0)}, "
                                    f"trace has {names.get(name, 0)}")

    for p in problems:
        print("verify_driver:", p)
    print(f"verify_driver: {a.trace}: path {path}, {len(drv)} driver spans {dict(names)}, "
          f"innermost parents {dict(parents)}, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
