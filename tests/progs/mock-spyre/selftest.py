#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Self-test of the mock Spyre job: exact call counts, a checksum recomputed independently here,
collectives between rank processes, and the --wait-go/--ready-file/--linger signal protocol.
Usage: selftest.py [BUILD/mock/mock-spyre-job]
"""
import json
import os
import signal
import struct
import subprocess
import sys
import tempfile
import time

M64 = 2**64
KERNELS = ["embedding_fwd", "attention_fwd", "mlp_fwd", "layernorm_fwd",
           "attention_bwd", "mlp_bwd", "embedding_bwd", "optimizer_step"]
FNV_BASIS = 0xcbf29ce484222325
failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what)


def splitmix(state):
    state = (state + 0x9e3779b97f4a7c15) % M64
    z = state
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) % M64
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) % M64
    return state, z ^ (z >> 31)


def fnv1a64(h, data):
    for c in data:
        h = ((h ^ c) * 0x100000001b3) % M64
    return h


def kernel_name(k):
    return "%s#%d" % (KERNELS[k % len(KERNELS)], k)


def salt(name):
    h = 2166136261
    for c in name.encode():
        h = ((h ^ c) * 16777619) % 2**32
    return h | 1


def ref_checksum(threads, iters, nbytes, kernels, phase=1):
    total = FNV_BASIS
    for t in range(threads):
        h = FNV_BASIS
        for i in range(iters):
            state = ((t + 1) << 40) ^ ((phase - 1) * iters + i)
            buf = bytearray()
            while len(buf) < nbytes:
                state, v = splitmix(state)
                buf += struct.pack("<Q", v)
            buf = buf[:nbytes]
            n = nbytes // 4
            xs = list(struct.unpack("<%dI" % n, buf[:n * 4]))
            for k in range(kernels):
                s = salt(kernel_name(k))
                xs = [(x * 3 + s) % 2**32 for x in xs]
            h = fnv1a64(h, struct.pack("<%dI" % n, *xs) + buf[n * 4:])
        total = fnv1a64(total, struct.pack("<Q", h))
    return "%016x" % total


def expected_calls(threads, streams, iters, kernels, devices):
    """Calls whose number follows from the options (query() is polled: at least one per
    iteration), and the worker completions."""
    n = threads * iters
    switches = kernels - 1 if streams > 1 and kernels > 1 else 0
    # the phase ends with spyre::synchronizeDevice per device: its default stream and every
    # stream of the threads on it
    sync_dev = devices + threads * streams
    # the D2H of even iterations is addressed by segment, the one torch-spyre gives a callback
    by_segment = threads * ((iters + 1) // 2)
    return {
        "flex::RuntimeContext::getDefaultStream": devices,
        "flex::FlexAllocator::allocate": 2 * n,
        "flex::FlexAllocator::deallocate": 2 * n,
        "flex::createDmaParams": 2 * n,
        "flex::destroyDmaParams": 2 * n,
        "flex::createComputeParams": kernels * n,
        "flex::destroyComputeParams": kernels * n,
        "flex::createHostCallbackParams": n,
        "flex::destroyHostCallbackParams": n,
        "flex::RuntimeStream::launchOperationH2D": n,
        "flex::RuntimeStream::launchOperationD2H": n,
        "flex::RuntimeStream::launchOperationCompute": kernels * n,
        "flex::RuntimeStream::launchOperationHostCallback": n,
        "flex::RuntimeStream::synchronize": (streams + switches) * n + sync_dev,
        "spyre::launchJobPlan": (kernels + 2) * n,
        "spyre::prepareKernel": kernels * n,
        "spyre::SpyreStream::launch": (kernels + 2) * n,
        "spyre::SpyreStream::launchH2D": n,
        "spyre::SpyreStream::launchD2H": n,
        "spyre::SpyreStream::launchCompute": kernels * n,
        "spyre::SpyreStream::launchHostCallback": n,
        "spyre::SpyreStream::synchronize": (streams + switches) * n,
        "spyre::synchronizeDevice": devices,
        "spyre::SpyreAllocator::allocate": 2 * n,
        "spyre::SpyreAllocator::ReportAndDelete": 2 * n,
        "spyre::JobPlanStepD2H::construct::{lambda(void*)#1}": by_segment,
    }, (kernels + 2) * n


POLLED = ("flex::RuntimeStream::query", "spyre::SpyreStream::query")


def run_counts(job, threads, streams, iters, kernels, nbytes, devices=1):
    out = subprocess.run([job, "--threads", str(threads), "--streams", str(streams),
                          "--iters", str(iters), "--kernels", str(kernels), "--bytes",
                          str(nbytes), "--devices", str(devices), "--compute-us", "2"],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def wait_for(path, timeout=10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if os.path.exists(path):
            return True
        time.sleep(0.02)
    return False


def main():
    job = sys.argv[1] if len(sys.argv) > 1 else "build/mock/mock-spyre-job"

    for threads, streams, iters, kernels, nbytes, devices in [
            (1, 1, 4, 0, 8, 1), (2, 2, 5, 3, 103, 1), (3, 4, 3, 9, 64, 2), (5, 1, 2, 2, 12, 3)]:
        what = "threads=%d streams=%d iters=%d kernels=%d bytes=%d devices=%d" % (
            threads, streams, iters, kernels, nbytes, devices)
        d = run_counts(job, threads, streams, iters, kernels, nbytes, devices)
        calls, completions = expected_calls(threads, streams, iters, kernels, devices)
        # Every API name is always present; those not listed must be 0 during a phase.
        want = {k: calls.get(k, 0) for k in d["calls"] if k not in POLLED}
        check(len(d["calls"]) == 54 and calls.keys() <= d["calls"].keys(), "%s: keys" % what)
        got = {k: v for k, v in d["calls"].items() if k not in POLLED}
        check(got == want, "%s: calls %s, expected %s" % (what, got, want))
        polled = [d["calls"][k] for k in POLLED]
        check(polled[0] == polled[1] >= threads * iters, "%s: query %s" % (what, polled))
        check(d["completions"] == completions, "%s: completions" % what)
        check(d["callbacks"] == threads * ((iters + 1) // 2), "%s: callbacks" % what)
        check(d["emptyAllocs"] == 0, "%s: emptyAllocs" % what)
        check(d["kernels"] == {kernel_name(k): threads * iters for k in range(kernels)},
              "%s: kernels %s" % (what, d["kernels"]))
        check(d["thrown"] == {"flex::FlexAllocator::allocate": 0,
                              "spyre::SpyreAllocator::allocate": 0}, "%s: thrown" % what)
        # a phase maps every allocation and unmaps it again; setup ioctls are outside phases
        n_alloc = calls["flex::FlexAllocator::allocate"]
        want_ioctls = {k: 0 for k in d["ioctls"]}
        want_ioctls.update({"VFIO_IOMMU_MAP_DMA": n_alloc, "VFIO_IOMMU_UNMAP_DMA": n_alloc})
        check(len(d["ioctls"]) == 13 and d["ioctls"] == want_ioctls,
              "%s: ioctls %s, expected %s" % (what, d["ioctls"], want_ioctls))
        check(d["checksum"] == ref_checksum(threads, iters, nbytes, kernels),
              "%s: checksum %s" % (what, d["checksum"]))
        # bytes as asked for: every buffer is freed within its iteration
        check(d["bytes"]["allocated"] == n_alloc * nbytes == d["bytes"]["freed"] and
              d["leaked"] == [], "%s: bytes %s" % (what, d["bytes"]))

    # --leak N: train-0's first N input buffers stay allocated, listed with their size
    out = subprocess.run([job, "--threads", "2", "--iters", "5", "--leak", "3", "--bytes", "100"],
                         capture_output=True, text=True, check=True).stdout
    d = json.loads(out)
    check(len(d["leaked"]) == 3 and all(b["bytes"] == 100 for b in d["leaked"]) and
          len({b["addr"] for b in d["leaked"]}) == 3, "--leak: %s" % d["leaked"])
    check(d["bytes"]["allocated"] - d["bytes"]["freed"] == 300, "--leak: bytes %s" % d["bytes"])
    check(d["calls"]["spyre::SpyreAllocator::allocate"] -
          d["calls"]["spyre::SpyreAllocator::ReportAndDelete"] == 3, "--leak: frees")

    # --oom-every N: a bad_alloc thrown in flex leaves through SpyreAllocator::allocate too
    out = subprocess.run([job, "--threads", "2", "--iters", "5", "--oom-every", "2"],
                         capture_output=True, text=True, check=True).stdout
    d = json.loads(out)
    check(d["thrown"] == {"flex::FlexAllocator::allocate": 6,
                          "spyre::SpyreAllocator::allocate": 6}, "--oom-every: %s" % d["thrown"])
    check(d["calls"]["spyre::SpyreAllocator::allocate"] == 26, "--oom-every: allocations")

    # --empty-every N: allocate(0) gives a null DataPtr, never freed (no ReportAndDelete)
    out = subprocess.run([job, "--threads", "2", "--iters", "5", "--empty-every", "2"],
                         capture_output=True, text=True, check=True).stdout
    d = json.loads(out)
    check(d["emptyAllocs"] == 6 and d["calls"]["spyre::SpyreAllocator::allocate"] == 26 and
          d["calls"]["spyre::SpyreAllocator::ReportAndDelete"] == 20 and
          d["calls"]["flex::FlexAllocator::allocate"] == 20, "--empty-every: %s" % d["calls"])

    # --stream-churn N: every N-th iteration new pool streams replace the old, which go
    out = subprocess.run([job, "--threads", "2", "--streams", "3", "--iters", "5",
                          "--stream-churn", "2"], capture_output=True, text=True, check=True).stdout
    d = json.loads(out)
    check(d["calls"]["flex::RuntimeContext::createStream"] == 12 and
          d["calls"]["flex::RuntimeStream::~RuntimeStream"] == 12, "--stream-churn: %s" % d["calls"])

    # --world-size: one collective an iteration by train-0 of each rank, the kinds in turn
    # (send/recv only with a peer); each rank checks what it received
    ccl = ["allreduce", "broadcast", "allgather", "gather", "reduce", "barrier", "send"]
    for world, iters in ((1, 8), (2, 9)):
        with tempfile.TemporaryDirectory() as tmp:
            counts = os.path.join(tmp, "c.json")
            ready = os.path.join(tmp, "ready")
            r = subprocess.run([job, "--world-size", str(world), "--iters", str(iters), "--quiet",
                                "--counts", counts, "--ready-file", ready],
                               capture_output=True, text=True)
            check(r.returncode == 0, "--world-size %d: exit %d %s" % (world, r.returncode,
                                                                     r.stderr))
            kinds = ccl if world > 1 else ccl[:-1]
            want = {k: sum(1 for i in range(iters) if kinds[i % len(kinds)] == k) for k in ccl}
            want["recv"] = want["send"]
            pids = []
            for rank in range(world):
                path = counts + (".r%d" % rank if world > 1 else "")
                if not os.path.exists(path):
                    check(False, "--world-size %d: no %s" % (world, path))
                    continue
                with open(path) as f:
                    d = json.load(f)
                pids.append(d["pid"])
                check(d["rank"] == rank and d["world_size"] == world, "rank %d header" % rank)
                got = {k: d["calls"]["c10d::SpyreCCLBackend::" + k] for k in want}
                check(got == want, "--world-size %d rank %d: %s, expected %s" % (
                    world, rank, got, want))
                check(all(d["calls"]["spyre_comms::Context::" + k] == want[k] for k in want),
                      "rank %d: comms calls" % rank)
                check(d["calls"]["c10d::SpyreCCLWork::wait"] == iters + want["recv"],
                      "rank %d: waits" % rank)
                check(d["checksum"] == ref_checksum(2, iters, 65536, 3), "rank %d: checksum" % rank)
            if world > 1:
                with open(ready) as f:
                    check([int(x) for x in f.read().split()] == pids, "ready file of the ranks")

    with tempfile.TemporaryDirectory() as tmp:
        ready = os.path.join(tmp, "ready")
        counts = os.path.join(tmp, "counts.json")
        p = subprocess.Popen([job, "--wait-go", "--linger", "--quiet", "--phases", "2",
                              "--iters", "3", "--bytes", "40", "--ready-file", ready,
                              "--counts", counts])
        check(wait_for(ready), "ready file")
        with open(ready) as f:
            check(f.read() == "%d\n" % p.pid, "ready file content")
        comms = set()
        for tid in os.listdir("/proc/%d/task" % p.pid):
            with open("/proc/%d/task/%s/comm" % (p.pid, tid)) as f:
                comms.add(f.read().strip())
        check({"train-0", "train-1", "spyre-d0s0", "spyre-d0s4"} <= comms, "threads %s" % comms)
        time.sleep(0.2)
        check(not os.path.exists(counts + ".1"), "phase 1 ran before SIGUSR1")
        for phase in (1, 2):
            p.send_signal(signal.SIGUSR1)
            check(wait_for("%s.%d" % (counts, phase)), "counts of phase %d" % phase)
            with open("%s.%d" % (counts, phase)) as f:
                d = json.load(f)
            check(d["pid"] == p.pid and d["phase"] == phase, "phase %d header" % phase)
            check(d["checksum"] == ref_checksum(2, 3, 40, 3, phase), "phase %d checksum" % phase)
        time.sleep(0.1)
        check(p.poll() is None, "--linger keeps the job alive")
        p.send_signal(signal.SIGTERM)
        check(p.wait(10) == 0, "exit status after SIGTERM")

        p = subprocess.Popen([job, "--wait-go", "--quiet", "--ready-file", ready + "2"])
        check(wait_for(ready + "2"), "ready file 2")
        p.send_signal(signal.SIGTERM)
        check(p.wait(10) == 0, "SIGTERM while waiting for go")

    check(subprocess.run([job, "--iters", "-1"], capture_output=True).returncode == 2, "bad option")

    print("selftest: %s" % ("ok" if not failures else "%d failures" % failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
