"""Attention of one new token over the KV cache, split along the cache ("flash decoding").

At batch 1 a decode step's attention has little to do: 8 key/value heads, each read by 4
query rows. A kernel that gives each head to one program keeps 8 of the GPU's 132
multiprocessors busy. Here the cache is cut into chunks as well: each program reads one chunk
of one head and keeps, per query row, the running maximum score, the sum of exponentials
and the weighted sum of values (the online softmax). A second small kernel merges the
chunks, one program per query row: each partial result is rescaled by
``exp(its maximum - the overall maximum)``.

Only positions up to the token's own (read from ``pos`` on the device, so the launch can be
replayed from a CUDA graph) count; the rest of the static cache is masked.
"""

from __future__ import annotations

import math
import os

import torch

BLOCK_S = 32           # cache positions per step of a program
TARGET_PROGRAMS = 2048  # split the cache until about this many programs run


def _interpreting() -> bool:
    """Triton's interpreter multiplies 16-bit floats in tl.dot as integers: there, the
    products are taken in float32 (on a GPU they run on the tensor cores in bf16)."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def _kernels():
    import triton
    import triton.language as tl

    # --8<-- [start:partial]
    @triton.jit
    def partial(q_ptr, k_ptr, v_ptr, pos_ptr, o_ptr, ml_ptr, cos_ptr, sin_ptr, KV, S, CHUNK,
                scale, skb, skh, sks, QKV_ROW, H: tl.constexpr, G: tl.constexpr,
                GP: tl.constexpr, D: tl.constexpr, BLOCK_S: tl.constexpr, F32: tl.constexpr,
                FUSED: tl.constexpr):
        bh = tl.program_id(0)                 # one (sequence, key/value head) ...
        sp = tl.program_id(1)                 # ... and one chunk of its cache
        splits = tl.num_programs(1)
        seq, kvh = bh // KV, bh % KV
        pos = tl.load(pos_ptr)
        rows = tl.arange(0, GP)               # query heads sharing this key/value head
        d = tl.arange(0, D)
        base = seq.to(tl.int64) * skb + kvh * skh  # may pass 2**31
        if FUSED:
            # q, k, v of the new token straight from the projection, turned here by the
            # rotary angle of `pos`: (x_i, x_{i+D/2}) -> x cos + (-x_{i+D/2}, x_i) sin
            turn = (d + D // 2) % D
            sign = tl.where(d < D // 2, -1.0, 1.0)
            cs = tl.load(cos_ptr + pos * D + d).to(tl.float32)
            sn = tl.load(sin_ptr + pos * D + d).to(tl.float32)
            row = seq.to(tl.int64) * QKV_ROW
            qh = (kvh * G + rows)[:, None] * D
            qmask = rows[:, None] < G
            q = (tl.load(q_ptr + row + qh + d[None, :], mask=qmask, other=0.0).to(tl.float32) * cs
                 + tl.load(q_ptr + row + qh + turn[None, :], mask=qmask, other=0.0).to(tl.float32)
                 * sign * sn).to(k_ptr.dtype.element_ty)
            kat = row + (H + kvh) * D
            k_new = (tl.load(q_ptr + kat + d).to(tl.float32) * cs
                     + tl.load(q_ptr + kat + turn).to(tl.float32) * sign * sn).to(k_ptr.dtype.element_ty)
            v_new = tl.load(q_ptr + row + (H + KV + kvh) * D + d)
            length = pos                      # the cache holds positions < pos; pos is added below
        else:
            q = tl.load(q_ptr + (bh * G + rows)[:, None] * D + d[None, :],
                        mask=rows[:, None] < G, other=0.0)
            length = pos + 1
        if F32:
            q = q.to(tl.float32)
        m_i = tl.full([GP], float("-inf"), tl.float32)
        l_i = tl.zeros([GP], dtype=tl.float32)
        acc = tl.zeros([GP, D], dtype=tl.float32)
        for s0 in range(sp * CHUNK, (sp + 1) * CHUNK, BLOCK_S):
            s = s0 + tl.arange(0, BLOCK_S)
            valid = (s < length) & (s < S)
            at = base + s[:, None] * sks + d[None, :]
            k = tl.load(k_ptr + at, mask=valid[:, None], other=0.0)
            v = tl.load(v_ptr + at, mask=valid[:, None], other=0.0)
            if F32:
                k, v = k.to(tl.float32), v.to(tl.float32)
            sc = tl.dot(q, tl.trans(k)) * scale
            sc = tl.where(valid[None, :], sc, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(sc, 1))
            m_use = tl.where(m_new == float("-inf"), 0.0, m_new)
            p = tl.exp(sc - m_use[:, None])
            alpha = tl.exp(m_i - m_use)
            l_i = l_i * alpha + tl.sum(p, 1)
            acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
            m_i = m_new
        if FUSED:
            # the chunk that holds `pos` adds the new token from registers and writes it to
            # the cache; no other program reads that slot, so none waits for the write
            mine = (pos >= sp * CHUNK) & (pos < (sp + 1) * CHUNK) & (pos < S)
            sc = tl.sum(q.to(tl.float32) * k_new.to(tl.float32)[None, :], 1) * scale
            sc = tl.where(mine, sc, float("-inf"))
            m_new = tl.maximum(m_i, sc)
            m_use = tl.where(m_new == float("-inf"), 0.0, m_new)
            p = tl.exp(sc - m_use)
            alpha = tl.exp(m_i - m_use)
            l_i = l_i * alpha + p
            acc = acc * alpha[:, None] + p[:, None] * v_new.to(tl.float32)[None, :]
            m_i = m_new
            tl.store(k_ptr + base + pos * sks + d, k_new, mask=mine & (d < D))
            tl.store(v_ptr + base + pos * sks + d, v_new, mask=mine & (d < D))
        out = (bh * splits + sp) * G + rows   # only the G real rows are kept
        real = rows < G
        tl.store(o_ptr + out[:, None] * D + d[None, :], acc, mask=real[:, None])
        tl.store(ml_ptr + out * 2, m_i, mask=real)
        tl.store(ml_ptr + out * 2 + 1, l_i, mask=real)
    # --8<-- [end:partial]

    # --8<-- [start:combine]
    @triton.jit
    def combine(o_ptr, ml_ptr, out_ptr, SPLITS, G: tl.constexpr, D: tl.constexpr,
                BLOCK_SP: tl.constexpr):
        """One program per query row: BLOCK_SP chunks' results are read at once, so a
        cache cut into many chunks costs a few wide loads, not one load after another."""
        row = tl.program_id(0)                # (sequence, key/value head) * G + query row
        bh, r = row // G, row % G
        d = tl.arange(0, D)
        m = tl.full([BLOCK_SP], float("-inf"), tl.float32)
        for s0 in range(0, SPLITS, BLOCK_SP):
            sp = s0 + tl.arange(0, BLOCK_SP)
            idx = (bh * SPLITS + sp) * G + r
            m = tl.maximum(m, tl.load(ml_ptr + idx * 2, mask=sp < SPLITS, other=float("-inf")))
        top = tl.max(m, 0)                    # the largest score of the row, all chunks
        l_sum = tl.zeros([BLOCK_SP], dtype=tl.float32)
        acc = tl.zeros([BLOCK_SP, D], dtype=tl.float32)
        for s0 in range(0, SPLITS, BLOCK_SP):
            sp = s0 + tl.arange(0, BLOCK_SP)
            idx = (bh * SPLITS + sp) * G + r
            inside = sp < SPLITS
            w = tl.exp(tl.load(ml_ptr + idx * 2, mask=inside, other=float("-inf")) - top)
            l_sum += w * tl.load(ml_ptr + idx * 2 + 1, mask=inside, other=0.0)
            acc += w[:, None] * tl.load(o_ptr + idx[:, None] * D + d[None, :],
                                        mask=inside[:, None], other=0.0)
        res = tl.sum(acc, 0) / tl.sum(l_sum, 0)
        tl.store(out_ptr + row * D + d, res.to(out_ptr.dtype.element_ty))
    # --8<-- [end:combine]

    return partial, combine


_KERNELS = None


def supported(q, k) -> bool:
    """The kernels need a power-of-two head size of at least 16 and 16-bit values."""
    d = q.shape[-1]
    return (d >= 16 and d & (d - 1) == 0 and q.dtype in (torch.bfloat16, torch.float16)
            and k.dtype == q.dtype and k.stride(-1) == 1)


def _attend(q, k, v, pos, out_shape, heads, cos=None, sin=None, qkv_row=0):
    global _KERNELS
    if _KERNELS is None:
        _KERNELS = _kernels()
    partial, combine = _KERNELS
    b, kv, size, d = k.shape
    g = heads // kv
    gp = max(16, 1 << (g - 1).bit_length())
    splits = max(1, min(math.ceil(size / BLOCK_S), TARGET_PROGRAMS // (b * kv)))
    chunk = math.ceil(math.ceil(size / splits) / BLOCK_S) * BLOCK_S
    splits = math.ceil(size / chunk)
    o = torch.empty(b * kv, splits, g, d, device=k.device, dtype=torch.float32)
    ml = torch.empty(b * kv, splits, g, 2, device=k.device, dtype=torch.float32)
    fused = cos is not None
    partial[(b * kv, splits)](q, k, v, pos, o, ml, cos if fused else o, sin if fused else o,
                              kv, size, chunk, 1.0 / math.sqrt(d),
                              k.stride(0), k.stride(1), k.stride(2), qkv_row, H=heads, G=g,
                              GP=gp, D=d, BLOCK_S=BLOCK_S, F32=_interpreting(), FUSED=fused)
    out = torch.empty(out_shape, device=k.device, dtype=k.dtype)
    combine[(b * kv * g,)](o, ml, out, splits, G=g, D=d,
                           BLOCK_SP=min(64, max(16, 1 << (splits - 1).bit_length())))
    return out


def decode_attention(q, k, v, pos):
    """Attention of q [b, heads, 1, d] over caches k, v [b, kv_heads, size, d], counting
    positions ``<= pos`` (a one-element tensor). Returns [b, heads, 1, d]."""
    b, heads, t, d = q.shape
    if t != 1 or k.stride() != v.stride():
        raise ValueError("decode_attention takes one new token per sequence and k, v alike")
    return _attend(q.reshape(b * heads, d).contiguous(), k, v, pos, (b, heads, 1, d), heads)


def rope_decode_attention(qkv, cos, sin, k, v, pos, heads: int):
    """One decode step's attention from the fused projection ``qkv`` [b, 1, (heads + 2
    kv_heads) * d] (queries, keys, values, not yet rotated): the new keys and values are
    rotated and written into the caches k, v [b, kv_heads, size, d] at ``pos`` by the same
    kernel that attends, in place of a rotation kernel and two cache writes. ``cos``, ``sin``:
    the rotary tables [size, d]. Returns [b, 1, heads * d]."""
    b, t, width = qkv.shape
    kv, d = k.shape[1], k.shape[3]
    if (t != 1 or k.stride() != v.stride() or width != (heads + 2 * kv) * d
            or cos.dim() != 2 or cos.shape[0] < k.shape[2] or cos.shape[1] != d
            or sin.shape != cos.shape or not cos.is_contiguous() or not sin.is_contiguous()):
        raise ValueError("rope_decode_attention takes one token's fused projection, k and v "
                         "alike, and rotary tables [>= cache size, d]")
    return _attend(qkv.contiguous(), k, v, pos, (b, 1, heads * d), heads, cos, sin, width)
