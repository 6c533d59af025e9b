"""What machine is this? GPU detection, device query and the machine record.

Nothing here imports numba at module level, so :func:`use_simulator_if_no_gpu`
can still switch numba to its CUDA simulator before numba is first imported.
"""

from __future__ import annotations

import datetime as _dt
import functools
import importlib.metadata
import os
import platform
import re
import shutil
import subprocess
import sys

# GPU architecture facts, kept importable from here
from .catalogue import fp32_lanes_per_sm, fp32_peak  # noqa: F401

#: Packages whose versions go into every machine record.
PACKAGES = ("numpy", "numba", "numba-cuda", "cupy-cuda13x", "cupy-cuda12x", "torch",
            "torchvision", "triton", "nvidia-ml-py")


def simulator_enabled() -> bool:
    """True when numba runs ``@cuda.jit`` kernels on its CPU simulator."""
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


def _visible_devices_hidden() -> bool:
    value = os.environ.get("CUDA_VISIBLE_DEVICES")
    return value is not None and value.strip() in ("", "-1", "none", "NoDevFiles")


@functools.cache
def _nvml_gpus() -> list[dict] | None:
    """GPUs the driver reports through NVML, or None when NVML is unavailable."""
    try:
        import pynvml  # provided by nvidia-ml-py
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:
        return None
    try:
        gpus = []
        driver = pynvml.nvmlSystemGetDriverVersion()
        driver = driver.decode() if isinstance(driver, bytes) else driver
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            name = pynvml.nvmlDeviceGetName(h)
            name = name.decode() if isinstance(name, bytes) else name
            mem = pynvml.nvmlDeviceGetMemoryInfo(h).total
            gpus.append({"index": i, "name": name, "memory_bytes": int(mem), "driver": driver})
        return gpus
    except Exception:
        return None
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass


@functools.cache
def _smi_gpus() -> list[dict] | None:
    """GPUs that ``nvidia-smi`` lists, or None when it is missing or fails."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        out = subprocess.run(
            [exe, "--query-gpu=index,name,memory.total,driver_version",
             "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    gpus = []
    for line in out.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 4:
            gpus.append({"index": int(parts[0]), "name": parts[1],
                         "memory_bytes": int(float(parts[2])) * 2**20, "driver": parts[3]})
    return gpus


def driver_gpus() -> list[dict]:
    """GPUs the NVIDIA driver knows about (ignores CUDA_VISIBLE_DEVICES)."""
    gpus = _nvml_gpus()
    if gpus is None:
        gpus = _smi_gpus()
    return gpus or []


def has_gpu() -> bool:
    """True when a CUDA program started now would see at least one NVIDIA GPU.

    Asks the driver (NVML, then ``nvidia-smi``) instead of importing a CUDA
    library, so it is safe to call before numba is imported.
    """
    if _visible_devices_hidden():
        return False
    return bool(driver_gpus())


def use_simulator_if_no_gpu() -> bool:
    """Switch numba to its CUDA simulator when there is no GPU; return True if it did.

    Must run before numba is first imported (the simulator is chosen at import).
    """
    if simulator_enabled():
        return True
    if has_gpu():
        return False
    if "numba" in sys.modules:
        raise RuntimeError("numba was imported before use_simulator_if_no_gpu(); "
                           "call it first, or set NUMBA_ENABLE_CUDASIM=1 in the environment")
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    return True


@functools.cache
def sm_count() -> int:
    """Multiprocessors of the current GPU (1 on the numba simulator)."""
    if simulator_enabled():
        return 1
    from numba import cuda
    return cuda.get_current_device().MULTIPROCESSOR_COUNT


def slugify(text: str) -> str:
    """'NVIDIA H200' -> 'nvidia-h200'."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "unknown"


def cpu_info() -> dict:
    """Model, core counts, SIMD extensions and caches of the host CPU."""
    model = platform.processor() or platform.machine()
    flags: set[str] = set()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            text = fh.read()
        m = re.search(r"^model name\s*:\s*(.+)$", text, re.M)
        if m:
            model = m.group(1).strip()
        m = re.search(r"^flags\s*:\s*(.+)$", text, re.M)
        if m:
            flags = set(m.group(1).split())
    except OSError:
        pass
    simd = [f for f in ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_bf16", "amx_tile")
            if f in flags]
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        usable = os.cpu_count() or 1
    physical = None
    try:
        out = subprocess.run(["lscpu", "-p=CORE,SOCKET"], capture_output=True, text=True,
                             timeout=10).stdout
        cores = {line for line in out.splitlines() if line and not line.startswith("#")}
        physical = len(cores) or None
    except (OSError, subprocess.SubprocessError):
        pass
    return {"model": model, "logical_cpus": os.cpu_count(), "usable_cpus": usable,
            "physical_cores": physical, "simd": simd, "arch": platform.machine()}


def package_versions(names=PACKAGES) -> dict:
    versions = {}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return versions


def _cupy_usable():
    """The cupy module when it can really talk to a GPU, else None."""
    if not has_gpu():
        return None
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
        return cupy
    except Exception:
        return None


def gpu_properties(index: int = 0) -> dict | None:
    """Hardware facts of one GPU (SMs, warps, registers, shared memory, L2, clocks...).

    Read through the CUDA runtime (CuPy, else torch). None without a usable GPU.
    """
    cupy = _cupy_usable()
    if cupy is not None:
        rt = cupy.cuda.runtime
        p = rt.getDeviceProperties(index)
        name = p["name"].decode() if isinstance(p["name"], bytes) else p["name"]

        def attr(code):
            try:
                return int(rt.deviceGetAttribute(code, index))
            except Exception:
                return None
        # attribute numbers from cudaDeviceAttr: 13 clock rate (kHz), 36 memory clock (kHz)
        sm_clock_khz, mem_clock_khz = attr(13), attr(36)
        bus_bits = int(p.get("memoryBusWidth", 0)) or None
        props = {
            "name": name,
            "compute_capability": f"{p['major']}.{p['minor']}",
            "multiprocessors": int(p["multiProcessorCount"]),
            "warp_size": int(p["warpSize"]),
            "max_threads_per_block": int(p["maxThreadsPerBlock"]),
            "max_threads_per_multiprocessor": int(p["maxThreadsPerMultiProcessor"]),
            "max_warps_per_multiprocessor": int(p["maxThreadsPerMultiProcessor"]) // int(p["warpSize"]),
            "max_blocks_per_multiprocessor": int(p.get("maxBlocksPerMultiProcessor", 0)) or None,
            "registers_per_multiprocessor": int(p["regsPerMultiprocessor"]),
            "registers_per_block": int(p["regsPerBlock"]),
            "shared_memory_per_multiprocessor_bytes": int(p["sharedMemPerMultiprocessor"]),
            "shared_memory_per_block_optin_bytes": int(p.get("sharedMemPerBlockOptin", 0)) or None,
            "l2_cache_bytes": int(p["l2CacheSize"]),
            "memory_bytes": int(p["totalGlobalMem"]),
            "memory_bus_bits": bus_bits,
            "sm_clock_mhz": sm_clock_khz / 1000 if sm_clock_khz else None,
            "memory_clock_mhz": mem_clock_khz / 1000 if mem_clock_khz else None,
        }
        if bus_bits and mem_clock_khz:
            # double data rate: two transfers per clock
            props["theoretical_bandwidth_gbs"] = round(2 * mem_clock_khz * 1e3 * bus_bits / 8 / 1e9, 1)
        return props
    if not has_gpu():
        return None
    try:
        import torch
        if not torch.cuda.is_available():
            return None
        p = torch.cuda.get_device_properties(index)
        return {"name": p.name, "compute_capability": f"{p.major}.{p.minor}",
                "multiprocessors": p.multi_processor_count, "memory_bytes": p.total_memory,
                "l2_cache_bytes": getattr(p, "L2_cache_size", None)}
    except Exception:
        return None


def cuda_versions() -> dict:
    """Driver and runtime CUDA versions as CuPy and torch see them."""
    out: dict = {}
    gpus = driver_gpus()
    if gpus:
        out["driver"] = gpus[0]["driver"]
    cupy = _cupy_usable()
    if cupy is not None:
        def fmt(v):
            return f"{v // 1000}.{(v % 1000) // 10}"
        out["driver_cuda"] = fmt(cupy.cuda.runtime.driverGetVersion())
        out["cupy_runtime_cuda"] = fmt(cupy.cuda.runtime.runtimeGetVersion())
    try:
        import torch
        out["torch_cuda"] = torch.version.cuda
    except Exception:
        pass
    return out


def gpu_slug() -> str:
    """Folder name for results of this machine: the GPU's name, or 'cpu-<model>'."""
    gpus = driver_gpus() if not _visible_devices_hidden() else []
    if gpus:
        return slugify(gpus[0]["name"])
    model = cpu_info()["model"]
    model = re.sub(r"\((R|TM)\)|CPU|Processor|@.*$", " ", model, flags=re.I)
    return "cpu-" + slugify(model)


def machine_record() -> dict:
    """Everything a reader needs to know about the machine that produced a number."""
    gpus = driver_gpus() if not _visible_devices_hidden() else []
    return {
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "slug": gpu_slug(),
        "gpu": gpu_properties() if gpus else None,
        "gpus": gpus,
        "cuda": cuda_versions() if gpus else {},
        "cpu": cpu_info(),
        "python": platform.python_version(),
        "os": f"{platform.system()} {platform.release()}",
        "packages": package_versions(),
        "numba_cuda_simulator": simulator_enabled(),
    }


def describe(record: dict) -> str:
    """One line naming the hardware of a machine record, for captions."""
    date = record.get("date", "")[:10]
    cpu = record.get("cpu", {})
    cores = cpu.get("usable_cpus")
    cpu_txt = f"{cpu.get('model', 'unknown CPU')}, {cores} cores" if cores else cpu.get("model", "")
    if record.get("gpu"):
        g = record["gpu"]
        cuda = record.get("cuda", {})
        parts = [g["name"]]
        if cuda.get("driver"):
            parts.append(f"driver {cuda['driver']}")
        if cuda.get("driver_cuda"):
            parts.append(f"CUDA {cuda['driver_cuda']}")
        return f"{', '.join(parts)}; host {cpu_txt}; {date}"
    return f"no GPU; {cpu_txt}; {date}"
