"""Weight-only int8 and int4: smaller weights, read by a dequantising Triton kernel.

At batch 1 a decode step is one matrix-vector product per matrix, and its time is the time
to read the matrix. Storing the weights in 8 or 4 bits reads 2 or 4 times fewer bytes; the
activations stay in bf16 and every product is accumulated in float32.

* **int8, per output channel**: row ``n`` of W is ``scale[n] * q[n, :]`` with ``q`` in
  [-127, 127] and ``scale[n] = max |W[n, :]| / 127``. Stored as ``q + 128`` in uint8.
* **int4, group-wise**: every ``group`` (128) consecutive inputs of a row share a scale,
  ``scale = max |W| / 7`` over the group, ``q`` in [-8, 7], stored as ``q + 8`` in 4 bits.
  Two values share a byte: in each group, byte ``j`` holds input ``j`` in its low half and
  input ``j + group/2`` in its high half, so the kernel reads the vector in two contiguous
  halves.

Why a hand-written kernel and not torchao: the point of the page is to read the few lines that
turn bytes into numbers, and the same kernel runs in Triton's interpreter on a CPU for the tests
(there with integer operations in place of the inline PTX).

The kernels turn a byte into a float with one instruction: placed as bits 8-15 of the
float 1.0 (one byte permute, ``prmt``, on the GPU), a code ``u`` becomes exactly
``f = 1 + u / 2**15``. The products sum ``f * x``, and the codes' offset comes out at the
end: ``sum (u - 128) x = 2**15 sum f x - (2**15 + 128) sum x``. Reading a code then costs a
permute and a multiply-add, where an exact conversion would add an OR and a subtraction.
The subtraction at the end cancels the leading digits of the sums (both start with
``sum x``); the tests bound what is left against the product of the dequantised matrix.
"""

from __future__ import annotations

import os

import torch

GROUP = 128          # int4: inputs per scale
#: above this many rows (a long prompt), a matrix is dequantised to bf16 and multiplied by
#: cuBLAS: the matrix-vector kernels would read the weights once per row
MAX_KERNEL_ROWS = 16


def _interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


# ------------------------------------------------------------------ quantising

def quantize_int8(w: torch.Tensor):
    """(uint8 codes [N, K], float32 scales [N]) with ``w ~ scales[:, None] * (codes - 128)``."""
    wf = w.float()
    scale = wf.abs().amax(dim=1).clamp(min=1e-12) / 127.0
    q = torch.round(wf / scale[:, None]).clamp(-127, 127)
    return (q + 128).to(torch.uint8), scale


def quantize_int4(w: torch.Tensor, group: int = GROUP):
    """(packed uint8 [N, K/2], bf16 scales [N, K/group]); see the module's docstring."""
    n, k = w.shape
    if k % group or group % 2:
        raise ValueError(f"int4 needs the input size ({k}) to be a multiple of the group ({group})")
    wf = w.float().view(n, k // group, group)
    scale = (wf.abs().amax(dim=2).clamp(min=1e-12) / 7.0).to(torch.bfloat16)
    q = torch.round(wf / scale.float()[..., None]).clamp(-8, 7).to(torch.int16) + 8
    lo, hi = q[..., : group // 2], q[..., group // 2:]
    packed = (lo | (hi << 4)).to(torch.uint8).view(n, k // 2)
    return packed, scale


def dequantize_int8(codes, scale):
    return (codes.float() - 128.0) * scale[:, None]


def dequantize_int4(packed, scale, group: int = GROUP):
    n, half = packed.shape
    p = packed.view(n, -1, group // 2).to(torch.int16)
    q = torch.cat(((p & 15), (p >> 4)), dim=2).float() - 8.0
    return (q * scale.float()[..., None]).view(n, 2 * half)


# ------------------------------------------------------------------ the kernels

def _kernels():
    """Build the two kernels on first use (importing Triton costs a second)."""
    import triton
    import triton.language as tl

    # (rows per program, bytes of a row read per step, warps): the autotuner keeps the
    # fastest for each matrix shape and number of input rows M
    asm = not _interpreting()
    if not asm:
        int8_configs = [triton.Config({"BLOCK_N": 4, "BLOCK_K": 128}, num_warps=4)]
        int4_configs = [triton.Config({"BLOCK_N": 4, "BLOCK_G": 2}, num_warps=4)]
    else:
        int8_configs = [triton.Config({"BLOCK_N": n, "BLOCK_K": k}, num_warps=w, num_stages=st)
                        for n, k, w in ((16, 256, 4), (8, 512, 4), (4, 1024, 4), (4, 2048, 8),
                                        (2, 1024, 4), (8, 256, 2))
                        for st in (1, 3)]
        int4_configs = [triton.Config({"BLOCK_N": n, "BLOCK_G": g}, num_warps=w, num_stages=st)
                        for n, g, w in ((8, 16, 4), (8, 8, 4), (16, 4, 4), (4, 16, 4),
                                        (4, 8, 4), (4, 8, 2))
                        for st in (1, 3)]

    # --8<-- [start:int8]
    @triton.autotune(configs=int8_configs, key=["M", "N", "K"])
    @triton.heuristics({"EVEN": lambda a: a["N"] % a["BLOCK_N"] == 0
                        and a["K"] % a["BLOCK_K"] == 0, "ASM": lambda a: asm})
    @triton.jit
    def int8_matvec(x_ptr, w_ptr, s_ptr, y_ptr, M, N, K, BLOCK_N: tl.constexpr,
                    BLOCK_K: tl.constexpr, EVEN: tl.constexpr, ASM: tl.constexpr):
        """y[m, n] = scale[n] * sum_k x[m, k] * (w[n, k] - 128): BLOCK_N outputs of
        row m per program, BLOCK_K inputs per step, sums kept per thread until the end."""
        n = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
        m = tl.program_id(1)
        cols = tl.arange(0, BLOCK_K)
        acc = tl.zeros([BLOCK_N, BLOCK_K], dtype=tl.float32)    # sum of f * x
        xsum = tl.zeros([BLOCK_K], dtype=tl.float32)            # sum of x
        for k0 in range(0, K, BLOCK_K):
            k = k0 + cols
            if EVEN:
                x = tl.load(x_ptr + m * K + k).to(tl.float32)
                u = tl.load(w_ptr + n[:, None] * K + k[None, :])
            else:
                x = tl.load(x_ptr + m * K + k, mask=k < K, other=0.0).to(tl.float32)
                u = tl.load(w_ptr + n[:, None] * K + k[None, :],
                            mask=(n[:, None] < N) & (k[None, :] < K), other=128)
            # each code u as the float f = 1 + u / 2**15: its byte becomes bits 8-15 of 1.0
            if ASM:
                f = tl.inline_asm_elementwise(
                    asm="""prmt.b32 $0, $4, 0x3F800000, 0x7604;
                    prmt.b32 $1, $4, 0x3F800000, 0x7614;
                    prmt.b32 $2, $4, 0x3F800000, 0x7624;
                    prmt.b32 $3, $4, 0x3F800000, 0x7634;""",
                    constraints="=r,=r,=r,=r,r", args=[u], dtype=tl.int32, is_pure=True,
                    pack=4)
            else:
                f = (u.to(tl.int32) << 8) | 0x3F800000
            acc += f.to(tl.float32, bitcast=True) * x[None, :]
            xsum += x
        total = 32768.0 * tl.sum(acc, axis=1) - 32896.0 * tl.sum(xsum, axis=0)
        scale = tl.load(s_ptr + n, mask=n < N, other=0.0)
        tl.store(y_ptr + m * N + n, (total * scale).to(y_ptr.dtype.element_ty), mask=n < N)
    # --8<-- [end:int8]

    # --8<-- [start:int4]
    @triton.autotune(configs=int4_configs, key=["M", "N", "K"])
    @triton.heuristics({"EVEN": lambda a: a["N"] % a["BLOCK_N"] == 0
                        and (a["K"] // a["GROUP"]) % a["BLOCK_G"] == 0, "ASM": lambda a: asm})
    @triton.jit
    def int4_matvec(x_ptr, p_ptr, s_ptr, y_ptr, M, N, K, BLOCK_N: tl.constexpr,
                    BLOCK_G: tl.constexpr, GROUP: tl.constexpr, EVEN: tl.constexpr,
                    ASM: tl.constexpr):
        """y[m, n] = sum over groups g of scale[n, g] * sum_j x * (nibble - 8), for
        BLOCK_N outputs and BLOCK_G groups per step: a tile of bytes
        [BLOCK_N, BLOCK_G, GROUP / 2]."""
        HALF: tl.constexpr = GROUP // 2
        groups = K // GROUP
        n = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
        m = tl.program_id(1)
        j = tl.arange(0, HALF)
        acc = tl.zeros([BLOCK_N, BLOCK_G], dtype=tl.float32)
        for g0 in range(0, groups, BLOCK_G):
            g = g0 + tl.arange(0, BLOCK_G)
            xs = m * K + g[:, None] * GROUP + j[None, :]           # [BLOCK_G, HALF]
            at = n[:, None, None] * (K // 2) + g[None, :, None] * HALF + j[None, None, :]
            if EVEN:
                x_lo = tl.load(x_ptr + xs).to(tl.float32)
                x_hi = tl.load(x_ptr + xs + HALF).to(tl.float32)
                b = tl.load(p_ptr + at)
                scale = tl.load(s_ptr + n[:, None] * groups + g[None, :]).to(tl.float32)
            else:
                in_g = g[:, None] < groups
                x_lo = tl.load(x_ptr + xs, mask=in_g, other=0.0).to(tl.float32)
                x_hi = tl.load(x_ptr + xs + HALF, mask=in_g, other=0.0).to(tl.float32)
                inside = (n[:, None, None] < N) & (g[None, :, None] < groups)
                b = tl.load(p_ptr + at, mask=inside, other=0x88)
                scale = tl.load(s_ptr + n[:, None] * groups + g[None, :],
                                mask=(n[:, None] < N) & (g[None, :] < groups),
                                other=0.0).to(tl.float32)
            # low halves as 1 + lo / 2**15, high halves as 1 + hi / 2**11
            if ASM:
                lo, hi = tl.inline_asm_elementwise(
                    asm="""{
                    .reg .b32 l, h;
                    and.b32 l, $8, 0x0F0F0F0F;
                    and.b32 h, $8, 0xF0F0F0F0;
                    prmt.b32 $0, l, 0x3F800000, 0x7604;
                    prmt.b32 $1, l, 0x3F800000, 0x7614;
                    prmt.b32 $2, l, 0x3F800000, 0x7624;
                    prmt.b32 $3, l, 0x3F800000, 0x7634;
                    prmt.b32 $4, h, 0x3F800000, 0x7604;
                    prmt.b32 $5, h, 0x3F800000, 0x7614;
                    prmt.b32 $6, h, 0x3F800000, 0x7624;
                    prmt.b32 $7, h, 0x3F800000, 0x7634;
                    }""",
                    constraints="=r,=r,=r,=r,=r,=r,=r,=r,r", args=[b],
                    dtype=(tl.int32, tl.int32), is_pure=True, pack=4)
            else:
                u = b.to(tl.int32)
                lo = ((u & 0x0F) << 8) | 0x3F800000
                hi = ((u & 0xF0) << 8) | 0x3F800000
            lo = lo.to(tl.float32, bitcast=True)
            hi = hi.to(tl.float32, bitcast=True)
            # per group: sum (lo - 8) x_lo + (hi - 8) x_hi, from the sums of f * x and of x
            part = (32768.0 * tl.sum(lo * x_lo[None, :, :], axis=2)
                    - 32776.0 * tl.sum(x_lo, axis=1)[None, :]
                    + 2048.0 * tl.sum(hi * x_hi[None, :, :], axis=2)
                    - 2056.0 * tl.sum(x_hi, axis=1)[None, :])
            acc += part * scale
        tl.store(y_ptr + m * N + n, tl.sum(acc, axis=1).to(y_ptr.dtype.element_ty),
                 mask=n < N)
    # --8<-- [end:int4]

    return int8_matvec, int4_matvec


_KERNELS = None


def kernels():
    global _KERNELS
    if _KERNELS is None:
        _KERNELS = _kernels()
    return _KERNELS


def _rows(x):
    """x as contiguous rows [M, K] and the shape of the output without its last size."""
    lead = x.shape[:-1]
    return x.reshape(-1, x.shape[-1]).contiguous(), lead


class Int8Linear:
    """A matrix stored as int8 codes with one scale per output row."""

    bits = 8

    def __init__(self, w: torch.Tensor):
        self.out_features, self.in_features = w.shape
        self.codes, self.scale = quantize_int8(w)

    @property
    def nbytes(self) -> int:
        return self.codes.nbytes + self.scale.nbytes

    def dequantize(self):
        return dequantize_int8(self.codes, self.scale)

    def __call__(self, x):
        rows, lead = _rows(x)
        m, k = rows.shape
        n = self.out_features
        if m > MAX_KERNEL_ROWS:
            return torch.nn.functional.linear(x, self.dequantize().to(x.dtype))
        y = torch.empty(m, n, device=x.device, dtype=x.dtype)
        grid = lambda meta: (-(-n // meta["BLOCK_N"]), m)  # noqa: E731
        kernels()[0][grid](rows, self.codes, self.scale, y, m, n, k)
        return y.view(*lead, n)


class Int4Linear:
    """A matrix stored as 4-bit codes, two per byte, with one bf16 scale per ``group`` inputs."""

    bits = 4

    def __init__(self, w: torch.Tensor, group: int = GROUP):
        self.out_features, self.in_features = w.shape
        self.group = group
        self.packed, self.scale = quantize_int4(w, group)

    @property
    def nbytes(self) -> int:
        return self.packed.nbytes + self.scale.nbytes

    def dequantize(self):
        return dequantize_int4(self.packed, self.scale, self.group)

    def __call__(self, x):
        rows, lead = _rows(x)
        m, k = rows.shape
        n = self.out_features
        if m > MAX_KERNEL_ROWS:
            return torch.nn.functional.linear(x, self.dequantize().to(x.dtype))
        y = torch.empty(m, n, device=x.device, dtype=x.dtype)
        grid = lambda meta: (-(-n // meta["BLOCK_N"]), m)  # noqa: E731
        kernels()[1][grid](rows, self.packed, self.scale, y, m, n, k, GROUP=self.group)
        return y.view(*lead, n)


def quantized(model, bits: int, group: int = GROUP):
    """The model with every matrix (not the embedding or norms) in int8 or int4."""
    from .model import with_weights
    if bits == 8:
        return with_weights(model, Int8Linear)
    if bits == 4:
        return with_weights(model, lambda w: Int4Linear(w, group))
    raise ValueError(f"bits must be 8 or 4, got {bits}")
