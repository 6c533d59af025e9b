"""The chapter's dispatcher: ``linear(a, w, kernel=...)`` computes C = A @ W^T.

A (M x K) and W (N x K) are bf16 torch tensors on one CUDA GPU (W in the layout of a
linear layer's weights: K contiguous in both); C is a new bf16 M x N tensor, or ``out``.
Every kernel accumulates in fp32. The rules, the same for every kernel:

* other dtypes raise ``TypeError`` (no silent conversion), host tensors raise
  ``TypeError`` (no hidden copy), shapes that do not match raise ``ValueError``;
* any M, N, K works. The kernels that copy 16-byte chunks (``cp.async``, TMA) need
  rows of A and W that are whole chunks (K % 8 == 0; the Gluon kernel's TMA store
  needs N % 8 == 0 as well); otherwise the dispatcher copies the operands into
  zero-padded tensors first (and C out of a padded one). That copy happens only at
  such shapes and is part of what the call costs;
* K = 0 gives zeros, M or N = 0 an empty result.

fp8: ``quantize(x)`` turns a tensor into e4m3 with one per-tensor scale, and
``linear_fp8(a8, scale_a, w8, scale_w, kernel=...)`` computes scale_a scale_w a8 @ w8^T
in bf16.
"""

from __future__ import annotations

import os

from .meta import FP8_KERNELS, FP8_LIBRARY, LIBRARY, RUNGS

KERNELS = tuple(RUNGS) + (LIBRARY,)
FP8_ALL = tuple(FP8_KERNELS) + (FP8_LIBRARY,)
#: compute capability each kernel needs (wgmma and TMA are Hopper's)
NEEDS = {"01-wmma": (8, 0), "02-mma-sync": (8, 0), "03-wgmma-tma": (9, 0),
         "04-triton": (8, 0), "05-gluon": (9, 0), "cublas": (0, 0),
         "fp8-wgmma-tma": (9, 0), "fp8-triton": (8, 9), "cublaslt-fp8": (8, 9)}
#: the multiple of K (and of N) each kernel needs before the dispatcher pads
K_MULTIPLE = {"02-mma-sync": 8, "03-wgmma-tma": 8, "05-gluon": 8,
              "fp8-wgmma-tma": 16, "cublaslt-fp8": 16}
N_MULTIPLE = {"05-gluon": 8, "cublaslt-fp8": 16}


def interpreting() -> bool:
    """True when Triton's CPU interpreter is on (``TRITON_INTERPRET=1``)."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def _validate(a, w, kernel: str, dtypes: tuple[str, ...], kernels: tuple[str, ...]):
    import torch
    if kernel not in kernels:
        raise ValueError(f"unknown kernel {kernel!r}; choose one of {', '.join(kernels)}")
    for label, x in (("a", a), ("w", w)):
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"{label} is a {type(x).__name__}; pass a torch tensor")
        if x.dim() != 2:
            raise ValueError(f"{label} must be 2-D, got shape {tuple(x.shape)}")
        name = str(x.dtype).replace("torch.", "")
        if name not in dtypes:
            raise TypeError(f"{label} is {name}; kernel {kernel} takes "
                            f"{' or '.join(dtypes)}: convert explicitly")
    if a.shape[1] != w.shape[1]:
        raise ValueError(f"inner dimensions differ: a is {tuple(a.shape)}, w is "
                         f"{tuple(w.shape)} (both must have K columns)")
    host_ok = kernel == "04-triton" and interpreting()
    for label, x in (("a", a), ("w", w)):
        if x.device.type != "cuda" and not host_ok:
            raise TypeError(f"{label} is in host memory; these kernels run on the GPU and "
                            "copy nothing behind your back: move it first (tensor.cuda())")
    if a.device != w.device:
        raise TypeError(f"a is on {a.device} but w is on {w.device}; put both on one device")
    if a.device.type == "cuda":
        have = torch.cuda.get_device_capability(a.device)
        if have < NEEDS[kernel]:
            need = ".".join(map(str, NEEDS[kernel]))
            raise RuntimeError(f"kernel {kernel} needs compute capability {need} or "
                               f"newer; this GPU has {have[0]}.{have[1]}")


def _pad(x, rows: int, cols: int):
    import torch
    if tuple(x.shape) == (rows, cols) and x.is_contiguous() and x.data_ptr() % 16 == 0:
        return x
    y = torch.zeros((rows, cols), dtype=x.dtype, device=x.device)
    y[:x.shape[0], :x.shape[1]] = x
    return y


def _round_up(v: int, m: int) -> int:
    return -(-v // m) * m


def _prepare(a, w, kernel, out, out_dtype):
    import torch
    m, k = a.shape
    n = w.shape[0]
    if out is None:
        out = torch.empty((m, n), dtype=out_dtype, device=a.device)
    elif tuple(out.shape) != (m, n) or out.dtype != out_dtype or not out.is_contiguous():
        raise ValueError(f"out must be a contiguous {out_dtype} tensor of shape {(m, n)}, "
                         f"got {tuple(out.shape)} {out.dtype}")
    kp = _round_up(k, K_MULTIPLE.get(kernel, 1))
    np_ = _round_up(n, N_MULTIPLE.get(kernel, 1))
    return out, _pad(a, m, kp), _pad(w, n, kp), np_


def linear(a, w, *, kernel: str = "03-wgmma-tma", out=None):
    """C = a @ w.T in bf16 (fp32 accumulation) with one of ``KERNELS``."""
    import torch
    _validate(a, w, kernel, ("bfloat16",), KERNELS)
    m, n = a.shape[0], w.shape[0]
    out, ap, wp, np_ = _prepare(a, w, kernel, out, torch.bfloat16)
    if m == 0 or n == 0:
        return out
    if a.shape[1] == 0:
        return out.zero_()
    target = out if np_ == n else torch.empty((m, np_), dtype=out.dtype, device=out.device)
    _run(kernel, ap, wp, target)
    if target is not out:
        out.copy_(target[:, :n])
    return out


def _run(kernel, a, w, c):
    if kernel == "cublas":
        import torch
        torch.mm(a, w.t(), out=c)
    elif kernel == "04-triton":
        from . import triton_dot
        triton_dot.dot(a, w, c, interpret=interpreting())
    elif kernel == "05-gluon":
        from .gluon_wgmma import gluon_matmul
        gluon_matmul(a, w, c)
    else:
        from . import cuda_c
        {"01-wmma": cuda_c.wmma, "02-mma-sync": cuda_c.mma_sync,
         "03-wgmma-tma": cuda_c.wgmma}[kernel](a, w, c)


# ------------------------------------------------------------------------ fp8

def quantize(x, fmt: str = "e4m3"):
    """(x8, scale): ``x`` divided by one per-tensor scale so that its largest |value|
    lands on the format's largest (448 for e4m3), rounded to fp8; x ~ scale * x8."""
    import torch
    from .meta import PRECISIONS
    dtype = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}[fmt]
    amax = x.abs().max().float().clamp(min=1e-12)
    scale = amax / PRECISIONS[fmt][2]
    return (x.float() / scale).to(dtype), scale.reshape(1)


def linear_fp8(a8, scale_a, w8, scale_w, *, kernel: str = "fp8-wgmma-tma", out=None):
    """C = scale_a scale_w a8 @ w8.T in bf16 from e4m3 operands (fp32 accumulation);
    ``scale_a`` and ``scale_w`` are one-element float32 tensors on the same GPU."""
    import torch
    _validate(a8, w8, kernel, ("float8_e4m3fn",), FP8_ALL)
    m, n = a8.shape[0], w8.shape[0]
    given = out
    out, ap, wp, np_ = _prepare(a8, w8, kernel, out, torch.bfloat16)
    if m == 0 or n == 0:
        return out
    if a8.shape[1] == 0:
        return out.zero_()
    if kernel == "cublaslt-fp8":
        # fast accumulation: partial sums stay in the tensor core, as in the kernels
        # here; each scale is its own allocation (a view into a shared one was refused)
        wp = _pad(wp, np_, wp.shape[1])
        res = torch._scaled_mm(ap, wp.t(), scale_a=scale_a.reshape(()).float(),
                               scale_b=scale_w.reshape(()).float(),
                               out_dtype=torch.bfloat16, use_fast_accum=True)
        res = res[:, :n]
        if given is None:
            return res
        out.copy_(res)
        return out
    scales = torch.cat([scale_a.reshape(1), scale_w.reshape(1)]).float()
    target = out if np_ == n else torch.empty((m, np_), dtype=out.dtype, device=out.device)
    if kernel == "fp8-triton":
        from . import triton_dot
        triton_dot.dot(ap, wp, target, scales)
    else:
        from . import cuda_c
        cuda_c.wgmma_fp8(ap, wp, scales, target)
    if target is not out:
        out.copy_(target[:, :n])
    return out
