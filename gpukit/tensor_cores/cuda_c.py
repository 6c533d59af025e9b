"""Launching the chapter's CUDA C kernels (``tensor_cores.cu``) from Python.

CuPy compiles the source with NVRTC for ``sm_90a`` and launches the kernels; the
arrays are torch CUDA tensors, handed over as raw pointers, and every launch goes to
torch's current stream (so the kernels can be captured in a torch CUDA graph). The
TMA kernels take tensor maps (``CUtensorMap``) built on the host by the driver's
``cuTensorMapEncodeTiled``, called through ctypes, and passed by value.
"""

from __future__ import annotations

import ctypes
import functools
import math

from .nvrtc import SOURCE

#: tiles and launch shapes of the kernels in tensor_cores.cu
WMMA_TILE, WMMA_THREADS = (128, 128), 256
MMA_TILE, MMA_THREADS, MMA_SMEM = (128, 256), 256, 4 * (128 + 256) * 32 * 2
WG_TILE, WG_THREADS = (128, 256), 384
WG_SMEM = 4 * (128 + 256) * 128 + 2 * 4 * 8 + 1024


@functools.cache
def module(device_id: int = 0, wmma: bool = False):
    """A compiled module (NVRTC, sm_90a: wgmma and setmaxnreg need the 'a' target):
    the WMMA kernel's (``wmma=True``, with the toolkit's <mma.h>) or the others'
    (no header). Should CuPy's compilation not find a complete <mma.h>, the WMMA
    module is compiled by :mod:`.nvrtc` with the include folders it finds, and loaded."""
    import cupy
    from . import nvrtc
    options = ("-std=c++17", "-arch=sm_90a")
    if wmma:
        options += ("-DTC_WMMA",) + tuple(f"-I{d}" for d in nvrtc.include_dirs())
    with cupy.cuda.Device(device_id):
        try:
            mod = cupy.RawModule(code=SOURCE.read_text(encoding="utf-8"), options=options)
            mod.compile()
        except Exception:
            if not wmma:
                raise
            import tempfile
            cubin = nvrtc.compile_source(wmma=True)["cubin"]
            with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as fh:
                fh.write(cubin)
            mod = cupy.RawModule(path=fh.name)
    return mod


@functools.cache
def function(name: str, device_id: int = 0, smem: int = 0):
    """A kernel of the module (the driver's function, with its handle in ``.ptr``),
    allowed ``smem`` bytes of dynamic shared memory."""
    import cupy
    raw = module(device_id, name == "tc_wmma").get_function(name)
    with cupy.cuda.Device(device_id):
        fn = getattr(raw, "kernel", raw)     # CuPy 13+: a RawKernel wraps the Function
    if smem > 48 * 1024:
        drv = cupy.cuda.driver
        attr = getattr(drv, "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES", 8)
        drv.funcSetAttribute(fn.ptr, attr, smem)
    return fn


def _launch(fn, grid, block, args, smem=0):
    """cuLaunchKernel on torch's current stream. ``args`` are ctypes values (pointers
    as c_uint64, sizes as c_int32, tensor maps as :class:`TensorMap`); the driver
    copies each parameter from the address given, so a 128-byte tensor map goes by
    value like any other."""
    import cupy
    import torch
    grid = tuple(grid) + (1,) * (3 - len(grid))
    block = tuple(block) + (1,) * (3 - len(block))
    params = (ctypes.c_void_p * len(args))(*[ctypes.addressof(x) for x in args])
    cupy.cuda.driver.launchKernel(fn.ptr, *grid, *block, smem,
                                  torch.cuda.current_stream().cuda_stream,
                                  ctypes.addressof(params), 0)


def _ptr(t):
    return ctypes.c_uint64(t.data_ptr())


def _ints(*values):
    return [ctypes.c_int32(v) for v in values]


def wmma(a, w, c):
    m, k = a.shape
    n = w.shape[0]
    grid = (math.ceil(n / WMMA_TILE[1]), math.ceil(m / WMMA_TILE[0]))
    fn = function("tc_wmma", a.device.index)
    _launch(fn, grid, (WMMA_THREADS,), [_ptr(a), _ptr(w), _ptr(c), *_ints(m, n, k)])


def mma_sync(a, w, c):
    """Needs K % 8 == 0 and 16-byte aligned rows (cp.async copies 16 bytes)."""
    m, k = a.shape
    n = w.shape[0]
    grid = (math.ceil(n / MMA_TILE[1]), math.ceil(m / MMA_TILE[0]))
    fn = function("tc_mma", a.device.index, MMA_SMEM)
    _launch(fn, grid, (MMA_THREADS,), [_ptr(a), _ptr(w), _ptr(c), *_ints(m, n, k)],
            MMA_SMEM)


# ------------------------------------------------------------------ tensor maps

_CUDA = None
#: CUtensorMapDataType values
_UINT8, _BFLOAT16 = 0, 9


def _libcuda():
    global _CUDA
    if _CUDA is None:
        _CUDA = ctypes.CDLL("libcuda.so.1")
        _CUDA.cuTensorMapEncodeTiled.restype = ctypes.c_int
    return _CUDA


class TensorMap(ctypes.Structure):
    """The 128 opaque bytes of a CUtensorMap (made 64-byte aligned by :func:`_new_map`)."""
    _fields_ = [("words", ctypes.c_uint64 * 16)]


def _new_map() -> TensorMap:
    """A zeroed TensorMap at a 64-byte aligned host address, as the driver requires."""
    buf = (ctypes.c_uint8 * (128 + 64))()
    addr = (ctypes.addressof(buf) + 63) // 64 * 64
    m = TensorMap.from_address(addr)
    m._buffer = buf                             # keep the memory alive with the map
    return m


def tensor_map(t, box_rows: int, box_cols: int) -> TensorMap:
    """A 2-D tensor map over row-major ``t`` (rows x cols, cols contiguous) that copies
    boxes of ``box_rows`` x ``box_cols`` with the 128-byte swizzle; elements outside
    the tensor read as zeros."""
    rows, cols = t.shape
    elem = t.element_size()
    if (cols * elem) % 16 or t.data_ptr() % 16:
        raise ValueError("a TMA row must be a multiple of 16 bytes, 16-byte aligned")
    m = _new_map()
    dims = (ctypes.c_uint64 * 2)(cols, rows)
    strides = (ctypes.c_uint64 * 1)(cols * elem)
    box = (ctypes.c_uint32 * 2)(box_cols, box_rows)
    one = (ctypes.c_uint32 * 2)(1, 1)
    dtype = _BFLOAT16 if elem == 2 else _UINT8
    # interleave none (0), swizzle 128 B (3), L2 promotion 256 B (3), zero fill (0)
    status = _libcuda().cuTensorMapEncodeTiled(
        ctypes.byref(m), dtype, 2, ctypes.c_void_p(t.data_ptr()), dims, strides, box,
        one, 0, 3, 3, 0)
    if status != 0:
        raise RuntimeError(f"cuTensorMapEncodeTiled failed with CUresult {status}")
    return m


def _sm_count(device_id: int) -> int:
    import torch
    return torch.cuda.get_device_properties(device_id).multi_processor_count


def _wgmma_launch(name, a, w, c, extra=()):
    m, k = a.shape
    n = w.shape[0]
    bk = 128 // a.element_size()
    maps = (tensor_map(a, WG_TILE[0], bk), tensor_map(w, WG_TILE[1], bk))
    tiles = math.ceil(m / WG_TILE[0]) * math.ceil(n / WG_TILE[1])
    dev = a.device.index
    fn = function(name, dev, WG_SMEM)
    _launch(fn, (min(tiles, _sm_count(dev)),), (WG_THREADS,),
            [maps[0], maps[1], _ptr(c), *_ints(m, n, k), *extra], WG_SMEM)


def wgmma(a, w, c):
    """bf16; needs K % 8 == 0 (TMA rows are multiples of 16 bytes)."""
    _wgmma_launch("tc_wgmma", a, w, c)


def wgmma_fp8(a8, w8, scales, c):
    """fp8 e4m3 ``a8`` (M x K) and ``w8`` (N x K), K % 16 == 0; ``scales`` a float32
    CUDA tensor holding the two per-tensor scales; C = scale_a scale_w a8 @ w8^T."""
    _wgmma_launch("tc_wgmma_fp8", a8, w8, c, (_ptr(scales),))
