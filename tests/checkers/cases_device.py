"""check_device.py (device.bats): good, then one break per promise."""
from craft import broken, meta, x

CHECKER = "check_device.py"
KERNELS = ["embedding_fwd#0", "attention_fwd#1", "mlp_fwd#2"]


def phase_trace(threads=2, iters=4):
    ev = []
    for t in range(threads):
        for i in range(iters):
            ts = (t * iters + i) * 100.0
            ev.append(x("Memcpy (HtoD)", ts, 1.0, pid=0, tid=1, cat="gpu_memcpy",
                        end="synchronize"))
            ev += [x(k, ts + 2 + j, 1.0, pid=0, tid=2, cat="kernel",
                     end="query" if i == iters - 1 else "synchronize")
                   for j, k in enumerate(KERNELS)]
            ev.append(x("Memcpy (DtoH)", ts + 6, 1.0, pid=0, tid=3, cat="gpu_memcpy",
                        end="callback" if i % 2 == 0 else "synchronize"))
    n = threads * iters * 5
    return {"traceEvents": ev + [x("aiuLaunchComputeStream", 0.0)],
            "spyreStats": {"deviceSpans": n, "completionsWithoutLaunch": 0}}


def dtoh(d, k):
    return [e for e in d["traceEvents"] if e["name"] == "Memcpy (DtoH)"][k]


DIS = """
0000000000001000 <spyre::SpyreStream::%s const>:
    1000:\tendbr64
    1004:\tmov    (%%rdi),%%rdi
    1007:\tjmp    1200 <flex::RuntimeStream::%s@plt>
    100c:\tnopl   0x0(%%rax)
"""
FWD = {"launchH2D(flex::DmaParams*)": "launchOperationH2D(flex::DmaParams*)",
       "launchD2H(flex::DmaParams*)": "launchOperationD2H(flex::DmaParams*)",
       "launchCompute(flex::ComputeParams*)": "launchOperationCompute(flex::ComputeParams*)",
       "launchHostCallback(flex::HostCallbackParams*)":
           "launchOperationHostCallback(flex::HostCallbackParams*)",
       "synchronize()": "synchronize()", "query()": "query()"}


def cases():
    t = phase_trace()
    argv = ["phase", "@t", "2", "4"]
    yield "phase", argv, {"t": t}, None
    yield "phase: a span lost", argv, {"t": broken(t, lambda d: d["traceEvents"].pop(3))}, \
        "device spans, want 40"
    yield "phase: the stats' count", argv, {"t": broken(
        t, lambda d: d["spyreStats"].update(deviceSpans=39))}, "deviceSpans"
    yield "phase: a completion without its launch", argv, {"t": broken(
        t, lambda d: d["spyreStats"].update(completionsWithoutLaunch=1))}, "without a launch"
    yield "phase: a kernel unnamed", argv, {"t": broken(
        t, lambda d: d["traceEvents"][2].update(name="Kernel"))}, "kernel names"

    def no_query(d):
        for e in d["traceEvents"]:
            if e["args"].get("end") == "query":
                e["args"]["end"] = "synchronize"
    yield "phase: no end by query", argv, {"t": broken(t, no_query)}, "every kind"
    yield "phase: a callback copy ended later", argv, {"t": broken(
        t, lambda d: dtoh(d, 0)["args"].update(end="synchronize"))}, "DtoH ends"

    names = [meta("thread_name", n, 0, tid) for tid, n in
             [(0, "Stream 0"), (1, "Stream 1"), (10, "Memcpy HtoD lane 0"),
              (11, "Memcpy HtoD lane 1"), (12, "Memcpy DtoH lane 0"), (5, "mock", )]]
    names[-1]["pid"] = 100
    t = {"traceEvents": names}
    argv = ["lanes", "@t", "2"]
    yield "lanes", argv, {"t": t}, None
    yield "lanes: no DtoH lane", argv, {"t": broken(t, lambda d: d["traceEvents"].pop(4))}, \
        "both directions"
    yield "lanes: one lane each, no overlap", argv, {"t": broken(
        t, lambda d: d["traceEvents"].pop(3))}, "some copies overlapping"

    def shared(d):
        d["traceEvents"].append(meta("thread_name", "Memcpy DtoH lane 1", 0, 10, 5))
    yield "lanes: a lane renamed for the other direction", argv, {"t": broken(t, shared)}, \
        "a lane of both directions"
    yield "lanes: a stream without its track", ["lanes", "@t", "3"], {"t": t}, "stream tracks"

    t = {"traceEvents": [meta("thread_name", "Stream %d" % i, 0, i) for i in range(66)] +
         [meta("thread_name", "Memcpy HtoD lane 0", 0, 300),
          meta("thread_name", "Stream 99", 100, 99)]}
    yield "tracks", ["tracks", "@t", "66"], {"t": t}, None
    yield "tracks: a range", ["tracks", "@t", "64", "70"], {"t": t}, None
    yield "tracks: one short", ["tracks", "@t", "67"], {"t": t}, "want 67 to 67"
    yield "tracks: over the range", ["tracks", "@t", "60", "65"], {"t": t}, "want 60 to 65"

    t = {"traceEvents": [x("k", 1.0, pid=0, end="query"), x("k", 2.0, pid=0, end="synchronize"),
                         x("aiuDmaCallback", 3.0, end="callback")]}
    argv = ["ends", "@t", "query", "synchronize"]
    yield "ends", argv, {"t": t}, None
    yield "ends: one by callback", argv, {"t": broken(
        t, lambda d: d["traceEvents"][0]["args"].update(end="callback"))}, "device spans' ends"

    dis = "".join(DIS % (f, c) for f, c in FWD.items())
    yield "forwarders", ["forwarders", "@d"], {"d": dis}, None
    called = dis.replace("jmp    1200 <flex::RuntimeStream::query()@plt>",
                         "call   1200 <flex::RuntimeStream::query()@plt>\n    1010:\tret")
    yield "forwarders: a call and a ret", ["forwarders", "@d"], {"d": called}, \
        "query(): want a tail jump"
    yield "forwarders: one missing", ["forwarders", "@d"], {
        "d": "".join(DIS % (f, c) for f, c in list(FWD.items())[1:])}, "no function"
    other = dis.replace("<flex::RuntimeStream::synchronize()@plt>",
                        "<flex::RuntimeStream::query()@plt>")
    yield "forwarders: a jump elsewhere", ["forwarders", "@d"], {"d": other}, \
        "synchronize(): want a tail jump"
