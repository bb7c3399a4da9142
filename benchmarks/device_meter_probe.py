"""Can a trusted process tell that another process left work on the GPU? (issue 44, device work per process)

Two ways, both from outside the process that queued the work:
1. NVML's per-process utilisation samples (nvmlDeviceGetProcessUtilization): how often, how fine, attributed?
2. A probe: a tiny kernel and a synchronize from a process of its own, timed on the host: how much longer does it
   take while another context's work is queued (time-slicing between contexts)?
A child process ("hog") sleeps 1 s, then queues ~20 ms bursts of 4096^3 products every 200 ms for 3 s.
Prints what both see. Run on the lent GPU: python benchmarks/device_meter_probe.py
"""

import ctypes
import subprocess
import sys
import time

HOG = r"""
import time, torch
a = torch.ones(4096, 4096, device="cuda"); torch.mm(a, a); torch.cuda.synchronize()
print("hog ready", flush=True)
time.sleep(1.0)
end = time.monotonic() + 3.0
while time.monotonic() < end:
    t = time.monotonic()
    for _ in range(6):
        torch.mm(a, a)
    torch.cuda.synchronize()
    print(f"burst {time.monotonic():.4f} {1e3 * (time.monotonic() - t):.1f} ms", flush=True)
    time.sleep(0.2)
"""

PROBE = r"""
import time, torch, sys
x = torch.zeros(1, device="cuda"); torch.cuda.synchronize()
out = []
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    t = time.perf_counter(); x.add_(1); torch.cuda.synchronize()
    out.append((time.monotonic(), time.perf_counter() - t))
    time.sleep(0.002)
for m, d in out:
    print(f"{m:.4f} {d * 1e6:.0f}")
"""


class Sample(ctypes.Structure):
    _fields_ = [
        ("pid", ctypes.c_uint),
        ("timeStamp", ctypes.c_ulonglong),
        ("smUtil", ctypes.c_uint),
        ("memUtil", ctypes.c_uint),
        ("encUtil", ctypes.c_uint),
        ("decUtil", ctypes.c_uint),
    ]


def nvml_samples(nvml, dev, since):
    count = ctypes.c_uint(0)
    rc = nvml.nvmlDeviceGetProcessUtilization(dev, None, ctypes.byref(count), ctypes.c_ulonglong(since))
    if count.value == 0:
        return rc, []
    buf = (Sample * count.value)()
    rc = nvml.nvmlDeviceGetProcessUtilization(dev, buf, ctypes.byref(count), ctypes.c_ulonglong(since))
    return rc, [(s.pid, s.timeStamp, s.smUtil, s.memUtil) for s in buf[: count.value]]


def main() -> None:
    nvml = ctypes.CDLL("libnvidia-ml.so.1")
    print("nvmlInit", nvml.nvmlInit_v2())
    dev = ctypes.c_void_p()
    print("handle", nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(dev)))
    hog = subprocess.Popen([sys.executable, "-c", HOG], stdout=subprocess.PIPE, text=True)
    print(hog.stdout.readline().strip(), "pid", hog.pid)
    probe = subprocess.Popen([sys.executable, "-c", PROBE, "4.5"], stdout=subprocess.PIPE, text=True)
    start_us = int(time.time() * 1e6)
    since = start_us
    seen = []
    end = time.monotonic() + 5.0
    while time.monotonic() < end:
        rc, samples = nvml_samples(nvml, dev, since)
        for s in samples:
            if s[1] > since:
                seen.append(s)
        if samples:
            since = max(since, max(s[1] for s in samples))
        time.sleep(0.05)
    print("nvml rc", rc, "samples", len(seen))
    for pid, ts, sm, mem in sorted(seen, key=lambda s: s[1]):
        who = "hog" if pid == hog.pid else "probe" if pid == probe.pid else "?"
        print(f"  nvml t={(ts - start_us) / 1e6:7.3f}s pid={pid} {who} sm={sm} mem={mem}")
    bursts = []
    for line in hog.communicate()[0].splitlines():
        if line.startswith("burst"):
            _, at, ms, _ = line.split()
            bursts.append((float(at) - float(ms) / 1e3, float(at)))
    print("hog bursts", len(bursts), "first", bursts[:2])
    probes = [tuple(map(float, line.split())) for line in probe.communicate()[0].splitlines()]
    inside = sorted(d for at, d in probes if any(b0 <= at <= b1 for b0, b1 in bursts))
    outside = sorted(d for at, d in probes if not any(b0 - 0.005 <= at <= b1 + 0.005 for b0, b1 in bursts))
    for name, values in (("probe us during bursts", inside), ("probe us outside", outside)):
        if values:
            q = [values[int(f * (len(values) - 1))] for f in (0, 0.1, 0.5, 0.9, 1)]
            print(name, len(values), "min/p10/median/p90/max", q)


if __name__ == "__main__":
    main()
