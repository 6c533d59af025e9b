"""The host CPU's side of the chapter: its facts (the counterpart of the GPU's device query) and
its read bandwidth and strided-copy curve, measured with the host kernels on all cores."""

from __future__ import annotations

import numba
import numpy as np

from .kernels import STRIDES, cpu_read_sum, cpu_strided_copy


# ------------------------------------------------------------------------- host facts

def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read().strip()
    except OSError:
        return None


def _size_bytes(text: str | None) -> int | None:
    if not text:
        return None
    unit = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1].upper())
    return int(text[:-1]) * unit if unit else int(text)


def host_facts() -> dict:
    """The CPU's counterpart of the GPU device query: cores, SIMD, caches, memory, clock."""
    from gpukit import device
    facts = dict(device.cpu_info())
    caches = []
    base = "/sys/devices/system/cpu/cpu0/cache"
    for i in range(8):
        level = _read(f"{base}/index{i}/level")
        if level is None:
            continue
        shared = _read(f"{base}/index{i}/shared_cpu_list") or ""
        cpus = 0
        for part in filter(None, shared.split(",")):
            lo, _, hi = part.partition("-")
            cpus += int(hi or lo) - int(lo) + 1
        caches.append({"level": int(level), "type": _read(f"{base}/index{i}/type"),
                       "bytes": _size_bytes(_read(f"{base}/index{i}/size")),
                       "shared_by_cpus": cpus or None})
    facts["caches"] = caches
    meminfo = _read("/proc/meminfo") or ""
    for line in meminfo.splitlines():
        if line.startswith("MemTotal:"):
            facts["memory_bytes"] = int(line.split()[1]) * 1024
    mhz = _read("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
    if mhz:
        facts["max_mhz"] = int(mhz) / 1000
    else:
        cpuinfo = _read("/proc/cpuinfo") or ""
        for line in cpuinfo.splitlines():
            if line.startswith("cpu MHz"):
                facts["current_mhz"] = float(line.split(":")[1])
                break
    simd = facts.get("simd", [])
    facts["float32_lanes"] = 16 if "avx512f" in simd else 8 if "avx" in simd else 4
    facts["vector_registers"] = 32 if "avx512f" in simd else 16
    return facts


# ---------------------------------------------------------------------- host experiments

def host_experiments(n: int, repeat: int) -> dict:
    """Read bandwidth of all cores, and strided copies, on the host (numba parallel)."""
    from gpukit import bench
    x = np.random.default_rng(0).random(n, dtype=np.float32) + np.float32(0.5)
    ref = float(x.sum(dtype=np.float64))
    got = cpu_read_sum(x)
    if not abs(got - ref) <= 1e-6 * ref:
        raise AssertionError(f"host read sum {got} differs from {ref}")
    t = bench.bench(lambda: cpu_read_sum(x), timer="cpu", name="host read, all cores",
                    warmup=1, repeat=repeat, bytes=4 * n)
    rows = [bench.row(t, name="host read (sum), all cores", kind="read")]
    out = np.empty(n, dtype=np.float32)
    for s in STRIDES:
        m = n // s
        view = out[:m]
        view.fill(np.nan)
        cpu_strided_copy(x, view, s)
        if not np.array_equal(view, x[: m * s: s]):
            raise AssertionError(f"host strided copy, stride {s}: wrong elements")
        ts = bench.bench(lambda: cpu_strided_copy(x, view, s), timer="cpu", name=f"stride {s}",
                         warmup=1, repeat=repeat, bytes=8 * m)
        rows.append(bench.row(ts, name=f"host strided copy, stride {s}", kind="strided",
                              stride=s, elements=m))
    stride1 = {"fraction_of_stride1": bench.Roof("gbs", rows[1]["gbs"], percent=False)}
    for r in rows[1:]:
        r.update(bench.shares(r, stride1))
    return {"n": n, "rows": rows, "facts": host_facts(), "threads": numba.get_num_threads()}
