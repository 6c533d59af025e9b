"""The kernels ``gpukit profile`` can hand to Nsight Compute, each from an earlier chapter.

Each target names a kernel of an earlier chapter's public API, the regular expression that finds
its launch among the others (matched against the mangled name, which for numba kernels holds
their module path), the bytes and FLOPs its work needs at least, and the bytes one thread has
in flight per step as its code is written. :func:`launch` is what runs under ``ncu``: in a fresh
process it makes the inputs, launches the kernel ``warmup + 1`` times (the first compiles),
checks the result and returns a short record.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Target:
    label: str
    chapter: str            #: the chapter whose kernel this is
    regex: str              #: finds the launch by its mangled name
    bound: str              #: "memory" or "compute": what should limit it
    n: int                  #: elements (or the matrix side for matmul)
    in_flight: int | None   #: bytes one thread loads per step before it needs them (from the code)

    def work(self) -> tuple[int, int]:
        """(bytes moved at least, FLOPs) of one launch."""
        n = self.n
        if self.chapter == "vector_add":
            return 12 * n, n
        if self.chapter == "matmul":
            return 3 * 4 * n * n, 2 * n ** 3
        if self.chapter == "tensor_cores":
            elem = 1 if "fp8" in self.label else 2
            return 3 * elem * n * n, 2 * n ** 3
        if self.chapter == "ladder":
            return 2 * 4 * n * 4096 + 4 * 4096, 0
        if self.chapter == "llm_inference":
            k = LLM_K
            weights = {"bf16": 2 * n * k, "int8": n * k + 4 * n,
                       "int4": n * k // 2 + 2 * n * (k // 128)}[self.label.split()[0]]
            return weights + 2 * k + 2 * n, 2 * n * k
        from gpukit.why_gpus import DEGREE
        return 8 * n, 2 * DEGREE * n


#: name -> target; the order of the page's tables
TARGETS = {
    "vector-add-numba": Target("vector add, numba grid-stride loop", "vector_add", "add_kernel",
                               "memory", 2**26, 8),
    "vector-add-numba-x4": Target("vector add, numba, four loads per thread", "vector_add",
                                  "add_kernel_x4", "memory", 2**26, 32),
    "vector-add-cupy-raw": Target("vector add, CuPy RawKernel, one element per thread", "vector_add",
                                  "add_f32", "memory", 2**26, 8),
    "vector-add-cupy-elementwise": Target("vector add, CuPy ElementwiseKernel", "vector_add",
                                          "gpukit_add", "memory", 2**26, 8),
    "matmul-warptile": Target("matmul 08-warptile (CUDA C)", "matmul", "mm08_warptile",
                              "compute", 4096, None),
    "ladder-softmax-numba": Target("row softmax, numba kernel (ladder)", "ladder",
                                   "numba_softmax_kernel", "memory", 8192, None),
    "why-gpus-horner": Target("degree-128 polynomial, numba kernel (why GPUs)", "why_gpus",
                              "horner_kernel", "compute", 2**24, None),
    "why-gpus-horner-cuda-c": Target("degree-128 polynomial, CUDA C kernel, 4 elements per thread "
                                     "(why GPUs)", "why_gpus", r"hornerILi4E|horner<4>", "compute", 2**24, None),
}
#: the tensor-core ladder (M = N = K = n, bf16 unless named fp8)
TENSOR_CORES = {"01-wmma": r"^tc_wmma$", "02-mma-sync": r"^tc_mma$",
                "03-wgmma-tma": r"^tc_wgmma$", "04-triton": "dot_kernel",
                "05-gluon": "gluon_kernel", "fp8-wgmma-tma": r"^tc_wgmma_fp8$"}
TARGETS.update({f"tensor-cores-{k}": Target(f"tensor cores {k}", "tensor_cores", regex,
                                            "compute", 4096, None)
                for k, regex in TENSOR_CORES.items()})
#: the language model's matrix-vector kernels on the 8B shape's largest layer matrix
#: (gate and up: 2 x 14,336 rows of 4,096), each at one fixed tile (autotuning's trial
#: launches would be profiled instead)
LLM_K = 4096
LLM_TILES = {"bf16": {"BLOCK_N": 2, "BLOCK_K": 2048, "num_warps": 8},
             "int8": {"BLOCK_N": 8, "BLOCK_K": 512, "num_warps": 4},
             "int4": {"BLOCK_N": 8, "BLOCK_G": 16, "num_warps": 4}}
TARGETS.update({f"llm-{p}-matvec": Target(f"{p} matrix-vector product, "
                                          + ", ".join(f"{k} {v}" for k, v in tile.items()),
                                          "llm_inference", f"{p}_matvec", "memory", 28672, None)
                for p, tile in LLM_TILES.items()})
#: what ``gpukit bench profiles`` records (ncu replays each kernel tens of times: a few are plenty)
RECORDED = ("vector-add-numba", "vector-add-numba-x4", "vector-add-cupy-raw", "matmul-warptile",
            "ladder-softmax-numba", "why-gpus-horner", "why-gpus-horner-cuda-c")
#: launches before the profiled one: the first compiles, the second warms up
WARMUP = 2


def _vector_add(impl: str, backend: str, n: int):
    import cupy
    from gpukit.vector_add import vector_add
    rng = np.random.default_rng(0)
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    cx, cy = cupy.asarray(x), cupy.asarray(y)
    out = cupy.full(n, cupy.nan, dtype=cupy.float32)

    def check():
        from gpukit.verify import check_close
        return check_close(out, x + y, what=impl)
    return (lambda: vector_add(cx, cy, backend=backend, impl=impl, out=out)), check


def _matmul(n: int):
    import cupy
    from gpukit.matmul import check_matmul, matmul
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    ca, cb = cupy.asarray(a), cupy.asarray(b)
    out = cupy.full((n, n), cupy.nan, dtype=cupy.float32)
    rows = slice(0, n, max(1, n // 64))             # 64 rows spread over C, in float64

    def check():
        return check_matmul(out[rows], a[rows], b, what="08-warptile")
    return (lambda: matmul(ca, cb, kernel="08-warptile", out=out)), check


def _softmax(rows: int):
    from numba import cuda
    from gpukit.ladder import check, make_inputs
    from gpukit.ladder.levels import softmax_numba
    x, scale, bias = make_inputs(rows, 4096)
    dx, db = cuda.to_device(x), cuda.to_device(bias)
    out = cuda.to_device(np.full(x.shape, np.nan, dtype=np.float32))
    return (lambda: softmax_numba(dx, scale, db, out, 256)), \
        (lambda: check(out.copy_to_host(), x, scale, bias, what="numba softmax"))


def _horner(n: int, cuda_c: bool = False):
    from numba import cuda
    from gpukit.verify import check_close
    from gpukit.why_gpus import RTOL, reference
    from gpukit.why_gpus.kernels import launch as launch_poly
    x = np.random.default_rng(0).random(n, dtype=np.float32)
    dx = cuda.to_device(x)
    out = cuda.to_device(np.full(n, np.nan, dtype=np.float32))
    sample = slice(0, n, max(1, n // 65536))

    def check():
        host = out.copy_to_host()
        if not np.isfinite(host).all():                 # the output was poisoned with NaN
            from gpukit.verify import Mismatch
            raise Mismatch("horner: some elements were never written")
        return check_close(host[sample], reference("poly", x[sample]), rtol=RTOL["poly"], what="horner")
    if cuda_c:                                          # the fixed kernel: CUDA C, 4 elements per thread
        from gpukit.why_gpus.kernels import horner_cuda_c
        return (lambda: horner_cuda_c(n, dx, out, elems=4)), check
    return (lambda: launch_poly("poly", n, dx, out)), check


def _tensor_cores(kernel: str, n: int):
    """One kernel of the tensor-core ladder; Triton's runs one fixed configuration (no
    autotuning, whose trial launches would be profiled instead)."""
    import torch
    from gpukit.tensor_cores import check_product, linear, linear_fp8, quantize
    a = torch.randn((n, n), device="cuda").to(torch.bfloat16)
    w = torch.randn((n, n), device="cuda").to(torch.bfloat16)
    c = torch.full((n, n), float("nan"), dtype=torch.bfloat16, device="cuda")
    rows = slice(0, n, max(1, n // 64))
    if kernel == "fp8-wgmma-tma":
        from gpukit.tensor_cores.numerics import U_FP8_ACC
        a8, sa = quantize(a)
        w8, sw = quantize(w)
        call = lambda: linear_fp8(a8, sa, w8, sw, kernel=kernel, out=c)  # noqa: E731
        return call, lambda: check_product(c[rows], a8[rows].double() * sa.double(),
                                           w8.double() * sw.double(), acc_u=U_FP8_ACC)
    if kernel == "04-triton":
        from gpukit.tensor_cores import triton_dot
        cfg = {"BM": 128, "BN": 256, "BK": 64, "GROUP": 8}
        grid = (triton_dot.triton.cdiv(n, 128) * triton_dot.triton.cdiv(n, 256),)
        call = lambda: triton_dot.plain[grid](a, w, c, c, n, n, n, False, False,  # noqa: E731
                                              **cfg, num_warps=8, num_stages=4)
    else:
        call = lambda: linear(a, w, kernel=kernel, out=c)  # noqa: E731
    return call, lambda: check_product(c[rows], a[rows], w)


def _llm_matvec(precision: str, n: int):
    """One language-model matrix-vector kernel at its fixed tile, called without the
    autotuner."""
    import torch
    from gpukit.llm_inference import matvec, quant
    g = torch.Generator(device="cuda").manual_seed(0)
    w = (torch.randn((n, LLM_K), device="cuda", generator=g) * LLM_K ** -0.5).to(torch.bfloat16)
    x = torch.randn((1, LLM_K), device="cuda", generator=g).to(torch.bfloat16)
    y = torch.full((1, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    tile = dict(LLM_TILES[precision])
    grid = (-(-n // tile["BLOCK_N"]), 1)
    if precision == "bf16":
        call = lambda: matvec.kernel().fn[grid[:1]](x, w, y, n, LLM_K, **tile)  # noqa: E731
        ref = w.float()
    else:
        lin = (quant.Int8Linear if precision == "int8" else quant.Int4Linear)(w)
        k8, k4 = quant.kernels()
        if precision == "int8":
            call = lambda: k8.fn[grid](x, lin.codes, lin.scale, y, 1, n, LLM_K,  # noqa: E731
                                       **tile)
        else:
            call = lambda: k4.fn[grid](x, lin.packed, lin.scale, y, 1, n, LLM_K,  # noqa: E731
                                       GROUP=lin.group, **tile)
        ref = lin.dequantize()

    def check():
        torch.cuda.synchronize()
        want = x.double() @ ref.double().T
        return float(((y.double() - want).abs().max() / want.abs().max()).item())
    return call, check


def setup(name: str, n: int | None = None):
    """(call, check) for target ``name``: ``call()`` launches the kernel once on the default
    stream; ``check()`` verifies the output against a float64 reference."""
    t = TARGETS[name]
    n = n or t.n
    if t.chapter == "tensor_cores":
        return _tensor_cores(name.removeprefix("tensor-cores-"), n)
    if t.chapter == "llm_inference":
        return _llm_matvec(name.split("-")[1], n)
    if name == "matmul-warptile":
        return _matmul(n)
    if name == "ladder-softmax-numba":
        return _softmax(n)
    if name in ("why-gpus-horner", "why-gpus-horner-cuda-c"):
        return _horner(n, cuda_c=name.endswith("cuda-c"))
    impl, backend = {"vector-add-numba": ("grid-stride", "numba-cuda"),
                     "vector-add-numba-x4": ("grid-stride-x4", "numba-cuda"),
                     "vector-add-cupy-raw": ("raw", "cupy"),
                     "vector-add-cupy-elementwise": ("elementwise", "cupy")}[name]
    return _vector_add(impl, backend, n)


def launch(name: str, warmup: int = WARMUP, n: int | None = None) -> dict:
    """What runs under ncu: ``warmup + 1`` launches of one target, then the check."""
    import cupy
    call, check = setup(name, n)
    for _ in range(warmup + 1):
        call()
    cupy.cuda.Device().synchronize()
    from numba import cuda
    cuda.synchronize()
    return {"name": name, "launches": warmup + 1, "max_rel_err": check()}
