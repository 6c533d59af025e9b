"""``gpukit tensor-cores``: one product C = A @ W^T by one kernel of the chapter, checked
against float64 and timed."""

from __future__ import annotations

from ..cli import UserError, positive_int


def register(sub) -> None:
    from .meta import FP8_KERNELS, FP8_LIBRARY, LIBRARY, RUNGS
    kernels = list(RUNGS) + [LIBRARY] + list(FP8_KERNELS) + [FP8_LIBRARY]
    p = sub.add_parser("tensor-cores", help="run one tensor-core kernel of the chapter",
                       description="Multiply a random M x K matrix by the transpose of a "
                                   "random N x K one with one kernel of the chapter (bf16 "
                                   "in and out, or fp8 e4m3 in), check the result against "
                                   "float64 and time it.")
    p.add_argument("--kernel", default="03-wgmma-tma", metavar="NAME",
                   help=f"one of {', '.join(kernels)} (default 03-wgmma-tma)")
    p.add_argument("--m", type=positive_int, default=4096)
    p.add_argument("--n", type=positive_int, default=4096)
    p.add_argument("--k", type=positive_int, default=4096)
    p.add_argument("--repeat", type=positive_int, default=20)
    p.set_defaults(func=_main, kernels=kernels)


def _main(args) -> int:
    if args.kernel not in args.kernels:
        raise UserError(f"unknown kernel {args.kernel!r}; choose one of "
                        f"{', '.join(args.kernels)}")
    from .. import device
    if not device.has_gpu():
        raise UserError("these kernels need an NVIDIA GPU and none was found "
                        "(run `gpukit doctor`)")
    import torch
    if not torch.cuda.is_available():
        raise UserError("torch sees no CUDA GPU; the kernels are launched on torch tensors")
    from .kernels import NEEDS
    have = torch.cuda.get_device_capability()
    if have < NEEDS[args.kernel]:
        need = ".".join(map(str, NEEDS[args.kernel]))
        raise UserError(f"kernel {args.kernel} needs compute capability {need}; this GPU "
                        f"has {have[0]}.{have[1]}")
    from .. import bench
    from .kernels import linear, linear_fp8, quantize
    from .numerics import U_FP8_ACC, check_product
    m, n, k = args.m, args.n, args.k
    a = torch.randn((m, k), device="cuda").to(torch.bfloat16)
    w = torch.randn((n, k), device="cuda").to(torch.bfloat16)
    c = torch.full((m, n), float("nan"), dtype=torch.bfloat16, device="cuda")
    if args.kernel in args.kernels[len(args.kernels) - 3:]:
        a8, sa = quantize(a)
        w8, sw = quantize(w)
        call = lambda: linear_fp8(a8, sa, w8, sw, kernel=args.kernel, out=c)  # noqa: E731
        refs = (a8.double() * sa.double(), w8.double() * sw.double())
        acc_u = U_FP8_ACC
    else:
        call = lambda: linear(a, w, kernel=args.kernel, out=c)  # noqa: E731
        refs, acc_u = (a, w), 2.0**-24
    t = bench.bench(call, timer="torch", name=args.kernel, repeat=args.repeat,
                    flops=2.0 * m * n * k)
    c.fill_(float("nan"))
    call()
    torch.cuda.synchronize()
    err = check_product(c, *refs, what=args.kernel, acc_u=acc_u)
    print(t)
    print(f"error beyond the output's rounding, relative to |A| |W|^T: {err:.2e}")
    return 0
