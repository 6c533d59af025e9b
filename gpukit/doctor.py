"""``gpukit doctor``: is this machine's GPU usable from Python, and if not, why?

Each check prints pass/fail with a one-line fix. Exit status 0 when the GPU is
usable (a driver sees it and at least one library ran a kernel on it), 1 when not.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict, dataclass

from . import device, pages
from .pages import machine_title

OK, FAIL, WARN, SKIP = "pass", "fail", "warn", "skip"


@dataclass
class Check:
    name: str
    status: str
    detail: str
    fix: str = ""


def _driver() -> Check:
    gpus = device.driver_gpus()
    if not gpus:
        return Check("NVIDIA driver and GPU", FAIL,
                     "no NVIDIA GPU found: NVML is not loadable and nvidia-smi is missing or fails",
                     "on a GPU machine install the NVIDIA driver until `nvidia-smi` lists the GPU; "
                     "otherwise use a cloud GPU (see the cloud chapter)")
    names = ", ".join(f"{g['index']}: {g['name']} ({g['memory_bytes'] / 2**30:.0f} GiB)" for g in gpus)
    return Check("NVIDIA driver and GPU", OK, f"driver {gpus[0]['driver']}; {names}")


def _visible() -> Check:
    value = os.environ.get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return Check("CUDA_VISIBLE_DEVICES", OK, "not set: every GPU is visible")
    if device.driver_gpus() and not device.has_gpu():
        return Check("CUDA_VISIBLE_DEVICES", FAIL,
                     f"CUDA_VISIBLE_DEVICES={value!r} hides every GPU the driver sees",
                     "unset CUDA_VISIBLE_DEVICES or list a GPU index, e.g. CUDA_VISIBLE_DEVICES=0")
    return Check("CUDA_VISIBLE_DEVICES", OK, f"set to {value!r}")


def _numpy_numba() -> Check:
    versions = device.package_versions(("numpy", "numba-cuda"))
    np_v, nc_v = versions.get("numpy"), versions.get("numba-cuda")
    if np_v is None:
        return Check("numpy / numba-cuda versions", FAIL, "numpy is not installed",
                     "pip install 'numpy<2.5'")
    if nc_v is None:
        return Check("numpy / numba-cuda versions", SKIP, f"numpy {np_v}; numba-cuda not installed",
                     "pip install numba-cuda[cu13] (or [cu12] for a CUDA 12 driver)")

    def tup(v):
        return tuple(int(p) for p in v.split(".")[:3] if p.isdigit())
    if tup(np_v) >= (2, 5) and tup(nc_v) <= (0, 30, 4):
        return Check("numpy / numba-cuda versions", FAIL,
                     f"numpy {np_v} with numba-cuda {nc_v}: every @cuda.jit compile fails "
                     "(numpy 2.5 removed row_stack)", "pip install 'numpy<2.5'")
    return Check("numpy / numba-cuda versions", OK, f"numpy {np_v}, numba-cuda {nc_v}")


def _numba(has_gpu: bool) -> list[Check]:
    if device.simulator_enabled():
        return [Check("numba CUDA", WARN, "NUMBA_ENABLE_CUDASIM is set: kernels run on the CPU "
                      "simulator, not the GPU", "unset NUMBA_ENABLE_CUDASIM")]
    try:
        from numba import cuda
    except Exception as exc:
        return [Check("numba CUDA", SKIP, f"numba.cuda does not import: {exc}",
                      "pip install numba numba-cuda[cu13]")]
    if not has_gpu:
        return [Check("numba CUDA", SKIP, "no GPU to run on")]
    checks = []
    try:
        if not cuda.is_available():
            return [Check("numba CUDA", FAIL, "numba sees no CUDA device",
                          "check the driver (nvidia-smi) and CUDA_VISIBLE_DEVICES")]
        rt = ".".join(map(str, cuda.runtime.get_version()))
        checks.append(Check("numba CUDA runtime", OK, f"CUDA runtime {rt}"))
    except Exception as exc:
        return [Check("numba CUDA", FAIL, _one_line(exc), "pip install numba-cuda[cu13]")]
    try:
        from numba.cuda.cudadrv import nvvm
        ver = ".".join(map(str, nvvm.NVVM().get_version()))
        checks.append(Check("numba finds NVVM", OK, f"NVVM {ver}"))
    except Exception as exc:
        checks.append(Check("numba finds NVVM", FAIL, _one_line(exc),
                            "pip install numba-cuda[cu13] (brings NVVM) or set CUDA_HOME to a toolkit"))
        return checks
    try:
        import numpy as np

        @cuda.jit
        def _plus_one(a):
            i = cuda.grid(1)
            if i < a.size:
                a[i] += 1

        d = cuda.to_device(np.arange(64, dtype=np.float32))
        _plus_one[1, 64](d)
        ok = np.array_equal(d.copy_to_host(), np.arange(64, dtype=np.float32) + 1)
        checks.append(Check("numba kernel runs", OK if ok else FAIL,
                            "a 64-thread kernel ran and its result is right" if ok
                            else "the kernel ran but gave a wrong result"))
    except Exception as exc:
        checks.append(Check("numba kernel runs", FAIL, _one_line(exc),
                            "read the error; `pip install 'numpy<2.5'` fixes the row_stack one"))
    return checks


def _cuda_ver(v: int) -> str:
    return f"{v // 1000}.{(v % 1000) // 10}"


def _cupy(has_gpu: bool) -> list[Check]:
    try:
        import cupy
    except Exception as exc:
        return [Check("CuPy", SKIP, f"not installed ({_one_line(exc)})", "pip install cupy-cuda13x")]
    if not has_gpu:
        return [Check("CuPy", SKIP, f"cupy {cupy.__version__} imports, but there is no GPU to use "
                      "(import alone proves nothing)")]
    try:
        runtime = cupy.cuda.runtime.runtimeGetVersion()
        driver = cupy.cuda.runtime.driverGetVersion()
    except Exception as exc:
        return [Check("CuPy", FAIL, _one_line(exc),
                      "match the CuPy wheel to the driver: cupy-cuda13x needs a CUDA 13 driver (580+), "
                      "cupy-cuda12x a CUDA 12 one")]
    checks = []
    if runtime // 1000 > driver // 1000:
        checks.append(Check("CuPy runtime vs driver", FAIL,
                            f"CuPy is built for CUDA {_cuda_ver(runtime)} but the driver supports only "
                            f"CUDA {_cuda_ver(driver)} (cudaErrorInsufficientDriver)",
                            "update the driver, or install the CuPy wheel of the driver's CUDA major "
                            f"(cupy-cuda{driver // 1000}x)"))
        return checks
    note = ("" if runtime <= driver else
            " (a newer minor release than the driver: allowed by CUDA's minor-version compatibility)")
    checks.append(Check("CuPy runtime vs driver", OK,
                        f"runtime CUDA {_cuda_ver(runtime)}, driver CUDA {_cuda_ver(driver)}{note}"))
    try:
        x = cupy.arange(1024, dtype=cupy.float32)
        ok = float((x + 1).sum()) == float(1024 * 1023 / 2 + 1024)
        checks.append(Check("CuPy kernel runs", OK if ok else FAIL,
                            "an elementwise kernel and a reduction ran" if ok else "wrong result"))
    except Exception as exc:
        checks.append(Check("CuPy kernel runs", FAIL, _one_line(exc),
                            "check the driver version against the CuPy wheel's CUDA version"))
    return checks


def _torch(has_gpu: bool) -> list[Check]:
    try:
        import torch
    except Exception as exc:
        return [Check("torch", SKIP, f"not installed ({_one_line(exc)})", "pip install torch")]
    if torch.version.cuda is None:
        return [Check("torch", FAIL if has_gpu else SKIP, f"torch {torch.__version__} is a CPU-only build",
                      "install a CUDA build of torch (see pytorch.org's selector)")]
    if not has_gpu:
        return [Check("torch", SKIP, f"torch {torch.__version__} (CUDA {torch.version.cuda} build); "
                      "no GPU to use")]
    try:
        if not torch.cuda.is_available():
            return [Check("torch", FAIL, f"torch {torch.__version__} (CUDA {torch.version.cuda}) sees no GPU",
                          "the driver may be older than torch's CUDA: update it, or pick an older torch")]
        x = torch.arange(1024, device="cuda", dtype=torch.float32)
        ok = float((x + 1).sum()) == float(1024 * 1023 / 2 + 1024)
        return [Check("torch kernel runs", OK if ok else FAIL,
                      f"torch {torch.__version__}, CUDA {torch.version.cuda}, "
                      f"{torch.cuda.get_device_name(0)}")]
    except Exception as exc:
        return [Check("torch kernel runs", FAIL, _one_line(exc), "check torch's CUDA version vs the driver")]


def _one_line(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:200]}"


def run_checks() -> tuple[bool, list[Check]]:
    """All checks; the GPU is usable when a driver sees it and a library ran a kernel."""
    checks = [_driver(), _visible(), _numpy_numba()]
    has_gpu = device.has_gpu()
    checks += _numba(has_gpu) + _cupy(has_gpu) + _torch(has_gpu)
    kernels_ran = any(c.status == OK and "kernel runs" in c.name for c in checks)
    return has_gpu and kernels_ran, checks


def report(ok: bool, checks: list[Check]) -> str:
    mark = {OK: " ok ", FAIL: "FAIL", WARN: "warn", SKIP: "skip"}
    lines = []
    for c in checks:
        lines.append(f"[{mark[c.status]}] {c.name}: {c.detail}")
        if c.fix and c.status in (FAIL, WARN, SKIP):
            lines.append(f"       fix: {c.fix}")
    lines.append("GPU usable: yes" if ok else
                 "GPU usable: no" + ("" if device.driver_gpus() else " (this machine has no NVIDIA GPU)"))
    return "\n".join(lines)


def command_outputs() -> dict[str, str]:
    """What `nvidia-smi` and `nvcc --version` print here (for the record; empty if missing)."""
    import shutil
    import subprocess
    outputs = {}
    for cmd in (["nvidia-smi"], ["nvcc", "--version"]):
        exe = shutil.which(cmd[0])
        if exe is None and cmd[0] == "nvcc":
            exe = next((p for p in ("/usr/local/cuda/bin/nvcc",) if os.path.exists(p)), None)
        if exe is None:
            outputs[" ".join(cmd)] = f"{cmd[0]}: command not found"
            continue
        try:
            proc = subprocess.run([exe, *cmd[1:]], capture_output=True, text=True, timeout=60)
            outputs[" ".join(cmd)] = (proc.stdout + proc.stderr).rstrip()
        except (OSError, subprocess.SubprocessError) as exc:
            outputs[" ".join(cmd)] = _one_line(exc)
    return outputs


def register(sub) -> None:
    p = sub.add_parser("doctor", help="check the NVIDIA driver, CUDA and each GPU library",
                       description="Check that the GPU is usable from numba, CuPy and torch.")
    p.add_argument("--json", action="store_true", help="print the checks as JSON")
    p.add_argument("--save", action="store_true",
                   help="also record the result under results/<machine>/doctor.json")
    p.set_defaults(func=_main)


def _main(args) -> int:
    ok, checks = run_checks()
    text = report(ok, checks)
    data = {"ok": ok, "checks": [asdict(c) for c in checks], "report": text}
    if args.save:
        from . import results
        results.save("doctor", {**data, "commands": command_outputs()})
    if args.json:
        json.dump({**data, "machine": device.machine_record()}, sys.stdout, indent=1)
        print()
    else:
        print(text)
    return 0 if ok else 1


# ----------------------------------------------------------------- page views

@pages.renderer("doctor", "report")
def _doctor(slug: str, data: dict) -> str:
    title = machine_title(data, cores=False)
    return f"**{title}**: `gpukit doctor` exited {0 if data['ok'] else 1}\n\n```text\n{data['report']}\n```"


@pages.renderer("doctor", "commands")
def _doctor_commands(slug: str, data: dict) -> str:
    title = machine_title(data, cores=False)
    blocks = [f"**{title}**"]
    for cmd, text in data["commands"].items():
        blocks.append(f"```console\n$ {cmd}\n{text}\n```")
    return "\n\n".join(blocks)
