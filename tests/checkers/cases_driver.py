"""check_driver.py (driver.bats): a made-up driver tier, good, then one break per promise."""
from craft import broken, x

CHECKER = "check_driver.py"
PID = 100
DRV = "privateuse1_driver"


def ioctl(name, ts, tid=PID, dev="/v/vfio", **args):
    return x(name, ts, 0.5, tid=tid, cat=DRV,
             args=dict({"ret": -25, "error": "ENOTTY", "fd": 5, "device": dev}, **args))


def driver_trace(setup=False):
    ev = []
    if setup:
        ev.append(x("aiuInitializeRuntime", 0.0, 50.0))
        names = [n for n, k in (("VFIO_GET_API_VERSION", 1), ("VFIO_CHECK_EXTENSION", 1),
                                ("VFIO_SET_IOMMU", 1), ("VFIO_GROUP_GET_STATUS", 2),
                                ("VFIO_GROUP_SET_CONTAINER", 2), ("VFIO_GROUP_GET_DEVICE_FD", 2),
                                ("VFIO_DEVICE_GET_INFO", 2), ("VFIO_DEVICE_GET_REGION_INFO", 4),
                                ("VFIO_DEVICE_GET_IRQ_INFO", 2), ("VFIO_DEVICE_SET_IRQS", 2))
                 for _ in range(k)]
        ev += [ioctl(n, 1.0 + i) for i, n in enumerate(names)]
        ev += [ioctl("VFIO_DEVICE_RESET", 900.0 + i) for i in range(2)]
    for i in range(3):
        base = 100.0 + 100 * i
        addr = 0x10000 * (i + 1)
        ev += [x("aiuMalloc", base, 10.0, tid=101, bytes=10000),
               ioctl("VFIO_IOMMU_MAP_DMA", base + 1, tid=101, iova=addr, vaddr=addr, size=12288),
               x("spyreFree", base + 50, 10.0, tid=101),
               ioctl("VFIO_IOMMU_UNMAP_DMA", base + 51, tid=101, iova=addr, size=12288)]
    drv = [e for e in ev if e["cat"] == DRV]
    c = {"ioctls": {"VFIO_IOMMU_MAP_DMA": 3, "VFIO_IOMMU_UNMAP_DMA": 3, "VFIO_DEVICE_RESET": 0}}
    return {"traceEvents": ev, "spyreStats": {"driverPath": "tracepoint",
                                              "driverSpans": len(drv), "driverDrops": 0}}, c


def io(d, name, k=0):
    return [e for e in d["traceEvents"] if e["name"] == name][k]


def cases():
    t, c = driver_trace()
    argv = ["spans", "@t", "@c"]
    f = lambda tt: {"t": tt, "c": c}
    yield "spans", argv, f(t), None
    yield "spans: an ioctl lost", argv, f(broken(
        t, lambda d: d["traceEvents"].remove(io(d, "VFIO_IOMMU_UNMAP_DMA", 2)))), \
        "driver spans by name"
    yield "spans: another path", argv, f(broken(
        t, lambda d: d["spyreStats"].update(driverPath="kprobe"))), "driverPath"
    yield "spans: a drop", argv, f(broken(
        t, lambda d: d["spyreStats"].update(driverDrops=1))), "driverSpans or drops"
    yield "spans: an ioctl that worked", argv, f(broken(
        t, lambda d: io(d, "VFIO_IOMMU_MAP_DMA")["args"].update(ret=0))), "ENOTTY"
    yield "spans: MAP_DMA outside its allocation", argv, f(broken(
        t, lambda d: io(d, "VFIO_IOMMU_MAP_DMA", 1).update(ts=185.0))), \
        "VFIO_IOMMU_MAP_DMA not inside aiuMalloc"
    yield "spans: an iova off the page", argv, f(broken(
        t, lambda d: io(d, "VFIO_IOMMU_MAP_DMA")["args"].update(iova=0x10010,
                                                                vaddr=0x10010))), "iova"
    yield "spans: a size not in pages", argv, f(broken(
        t, lambda d: io(d, "VFIO_IOMMU_MAP_DMA")["args"].update(size=10000))), \
        "MAP_DMA's size"
    yield "spans: an UNMAP of no mapping", argv, f(broken(
        t, lambda d: io(d, "VFIO_IOMMU_UNMAP_DMA", 1)["args"].update(iova=0x99000))), \
        "UNMAP_DMA of no mapping"

    ts, cs = driver_trace(setup=True)
    argv = ["spans", "@t", "@c", "--setup"]
    yield "spans --setup", argv, {"t": ts, "c": cs}, None
    yield "spans without --setup: the setup unexpected", ["spans", "@t", "@c"], \
        {"t": ts, "c": cs}, "driver spans by name"
    yield "spans --setup: a setup ioctl outside initializeRuntime", argv, {"t": broken(
        ts, lambda d: io(d, "VFIO_SET_IOMMU").update(ts=60.0)), "c": cs}, \
        "not inside aiuInitializeRuntime"

    def off_main(d):
        e = io(d, "VFIO_CHECK_EXTENSION")
        e["tid"] = 101
        d["traceEvents"].append(x("aiuInitializeRuntime", 0.0, 50.0, tid=101))
    yield "spans --setup: a setup ioctl off the main thread", argv, {"t": broken(
        ts, off_main), "c": cs}, "off the main thread"

    yield "devices", ["devices", "@t", "/v"], {"t": t}, None
    yield "devices: a fd unresolved", ["devices", "@t", "/v"], {"t": broken(
        t, lambda d: io(d, "VFIO_IOMMU_MAP_DMA")["args"].update(device="char 1:3"))}, \
        "want /v/vfio"

    null = broken(ts, lambda d: [e["args"].update(device="/dev/null")
                                 for e in d["traceEvents"] if e["cat"] == DRV])

    def stand_ins(d):
        groups = iter(["0", "1", "/v/0", "/v/1"])
        devs = iter(["vfio-device-%d" % (i % 2) for i in range(20)])
        for e in d["traceEvents"]:
            if e["cat"] != DRV:
                continue
            if e["name"].startswith("VFIO_GROUP_"):
                e["args"]["device"] = next(groups, "1")
            elif e["name"].startswith("VFIO_DEVICE_"):
                e["args"]["device"] = next(devs)
            else:
                e["args"]["device"] = "vfio"
    files = broken(ts, stand_ins)
    argv = ["exited", "@n", "@f", "/v"]
    yield "exited", argv, {"n": null, "f": files}, None
    yield "exited: a fd named by its number", argv, {"n": broken(
        null, lambda d: io(d, "VFIO_SET_IOMMU")["args"].update(device="char 1:3")),
        "f": files}, "on /dev/null stand-ins"
    yield "exited: a path elsewhere", argv, {"n": null, "f": broken(
        files, lambda d: io(d, "VFIO_SET_IOMMU")["args"].update(device="/w/vfio"))}, \
        "neither path nor base name"
    yield "exited: a group ioctl on the container", argv, {"n": null, "f": broken(
        files, lambda d: io(d, "VFIO_GROUP_GET_STATUS")["args"].update(device="vfio"))}, \
        "not on a group"
    yield "exited: a device ioctl on a group", argv, {"n": null, "f": broken(
        files, lambda d: io(d, "VFIO_DEVICE_RESET")["args"].update(device="1"))}, \
        "not on a device"
    yield "exited: MAP_DMA on a device", argv, {"n": null, "f": broken(
        files, lambda d: io(d, "VFIO_IOMMU_MAP_DMA")["args"].update(device="vfio-device-0"))}, \
        "not on the container"

    # 40 ioctls, 8 returns skipped: 32 spans, 8 unpaired
    ev = []
    for i in range(20):
        ev += [x("aiuMalloc", 100.0 * i, 10.0, tid=101),
               x("spyreFree", 100.0 * i + 50, 10.0, tid=101)]
        if i % 5:
            ev += [ioctl("VFIO_IOMMU_MAP_DMA", 100.0 * i + 1, tid=101),
                   ioctl("VFIO_IOMMU_UNMAP_DMA", 100.0 * i + 51, tid=101)]
    sk = {"traceEvents": ev, "spyreStats": {"driverUnpaired": 8}}
    sc = {"ioctls": {"VFIO_IOMMU_MAP_DMA": 20, "VFIO_IOMMU_UNMAP_DMA": 20}}
    argv = ["skipped", "@t", "@c"]
    yield "skipped", argv, {"t": sk, "c": sc}, None
    yield "skipped --pair", argv + ["--pair"], {"t": sk, "c": sc}, None
    yield "skipped: none unpaired", argv, {"t": broken(
        sk, lambda d: d["spyreStats"].update(driverUnpaired=0)), "c": sc}, "about a fifth"
    yield "skipped: a skip uncounted", argv, {"t": broken(
        sk, lambda d: d["spyreStats"].update(driverUnpaired=5)), "c": sc}, "want every call"

    def over_two(d):
        e = [e for e in d["traceEvents"] if e["name"] == "VFIO_IOMMU_MAP_DMA"][3]
        e["dur"] = 100.0          # from one aiuMalloc to the next
    yield "skipped: a span over two calls", argv, {"t": broken(sk, over_two), "c": sc}, \
        "not inside its aiuMalloc"
    no_unmap = broken(sk, lambda d: d.update(traceEvents=[
        e for e in d["traceEvents"] if e["name"] != "VFIO_IOMMU_UNMAP_DMA"]))
    yield "skipped --pair: too many lost", argv + ["--pair"], {"t": no_unmap, "c": sc}, \
        "half at least"
