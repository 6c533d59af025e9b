"""Compiling the chapter's CUDA C with NVRTC, with or without a GPU.

CuPy compiles through NVRTC on a GPU machine. This module calls the same library
directly through ctypes, so a machine without a GPU (the CPU CI) can still check that
every kernel compiles for Hopper (``sm_90a``) and read the compiler's log. It finds
``libnvrtc`` in the ``nvidia-cuda-nvrtc`` wheel or on the library path.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
import site
import sys
from pathlib import Path

SOURCE = Path(__file__).with_name("tensor_cores.cu")


class NvrtcError(RuntimeError):
    """The source did not compile; the message holds NVRTC's log."""


def _roots() -> list[Path]:
    dirs = [Path(p) for p in site.getsitepackages() + [site.getusersitepackages()]]
    dirs += [Path(p) for p in sys.path if p.endswith("site-packages")]
    return [d / "nvidia" for d in dirs if (d / "nvidia").is_dir()]


def find_library() -> str | None:
    """Path of libnvrtc (wheel first, then the system), or None."""
    for root in _roots():
        hits = sorted(glob.glob(str(root / "*" / "lib" / "libnvrtc.so.*")))
        hits = [h for h in hits if "alt" not in Path(h).name and "builtins" not in h]
        if hits:
            return hits[-1]
    return ctypes.util.find_library("nvrtc")


def include_dirs() -> list[str]:
    """Folders holding the toolkit's mma.h with the crt/mma.h it includes: the CUDA
    toolkit's ($CUDA_PATH, /usr/local/cuda*) first, then the nvidia wheels'. (A wheel's
    include folder without crt/ failed on the GPU machine: "cannot open source file
    crt/mma.h".)"""
    cands = [Path(os.environ["CUDA_PATH"], "include")] if "CUDA_PATH" in os.environ else []
    cands += [Path("/usr/local/cuda/include")]
    cands += sorted(Path("/usr/local").glob("cuda-*/include"), reverse=True)
    cands += sorted(Path("/usr/local").glob("cuda*/targets/*/include"), reverse=True)
    cands += [p for r in _roots() for p in sorted(r.glob("*/include"))]
    out = []
    for c in cands:
        if (c / "crt" / "mma.h").exists() and str(c) not in out:
            out.append(str(c))
    return out


def compile_source(source: str | None = None, arch: str = "sm_90a",
                   options: tuple[str, ...] = (), wmma: bool = False) -> dict:
    """Compile ``source`` (default: the chapter's .cu) to PTX and cubin for ``arch``;
    ``wmma=True`` compiles the WMMA kernel (``-DTC_WMMA``, with the toolkit's headers).

    Returns ``{"ptx": str, "cubin": bytes, "log": str}``; raises :class:`NvrtcError` with
    the log when compilation fails and ``OSError`` when no libnvrtc is found.
    """
    path = find_library()
    if path is None:
        raise OSError("libnvrtc not found: pip install nvidia-cuda-nvrtc")
    for builtins in sorted(Path(path).parent.glob("libnvrtc-builtins.so.*")):
        if "alt" not in builtins.name:      # NVRTC opens it by name at compile time
            ctypes.CDLL(str(builtins), mode=ctypes.RTLD_GLOBAL)
    lib = ctypes.CDLL(path)
    text = (source if source is not None else SOURCE.read_text(encoding="utf-8")).encode()
    prog = ctypes.c_void_p()
    _check(lib, lib.nvrtcCreateProgram(ctypes.byref(prog), text, b"tensor_cores.cu", 0,
                                       None, None))
    opts = [f"-arch={arch}", "-std=c++17", *options]
    if wmma:
        opts += ["-DTC_WMMA"] + [f"-I{d}" for d in include_dirs()]
    arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    status = lib.nvrtcCompileProgram(prog, len(opts), arr)
    log = _read(lib, prog, "nvrtcGetProgramLogSize", "nvrtcGetProgramLog").decode(
        errors="replace")
    if status != 0:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))
        raise NvrtcError(log.strip() or f"NVRTC error {status}")
    ptx = _read(lib, prog, "nvrtcGetPTXSize", "nvrtcGetPTX").decode(errors="replace")
    cubin = _read(lib, prog, "nvrtcGetCUBINSize", "nvrtcGetCUBIN")
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return {"ptx": ptx.rstrip("\0"), "cubin": cubin, "log": log}


def _read(lib, prog, size_fn: str, get_fn: str) -> bytes:
    size = ctypes.c_size_t()
    _check(lib, getattr(lib, size_fn)(prog, ctypes.byref(size)))
    buf = ctypes.create_string_buffer(size.value)
    _check(lib, getattr(lib, get_fn)(prog, buf))
    return buf.raw


def _check(lib, status: int) -> None:
    if status != 0:
        lib.nvrtcGetErrorString.restype = ctypes.c_char_p
        raise NvrtcError(lib.nvrtcGetErrorString(status).decode())
