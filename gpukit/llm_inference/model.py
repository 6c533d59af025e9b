"""A Llama-3.1-8B-shaped decoder in plain PyTorch, small enough to read in one sitting.

The pieces, in the order a token meets them:

* an **embedding** table turns token ids into vectors of ``hidden`` numbers;
* each of ``layers`` blocks applies **RMSNorm**, then **grouped-query attention**: ``heads``
  query heads share ``kv_heads`` key/value heads; queries and keys are turned by **rotary
  embeddings** (their position becomes an angle); the keys and values of every token seen so
  far wait in a **KV cache**, so a new token attends to them without recomputing them;
* then RMSNorm again and a **SwiGLU** MLP (``silu(x W_gate) * (x W_up)`` then ``W_down``);
* a last RMSNorm and the output matrix give one score (logit) per word of the vocabulary.

Weights are drawn from a seed, directly on the device and in the working precision, one layer
at a time: nothing to download, any size by configuration. The query, key and value matrices
are stored as one matrix (``wqkv``), and so are the gate and up matrices (``w13``): one large
matrix-vector product reads memory better than three small ones. Hugging Face's Llama keeps
them apart; :func:`to_hf_state_dict` splits them for the comparison in the tests.

The cache is static: allocated once for ``max_context`` tokens, so that every decode step has
the same shapes and can be captured in a CUDA graph or compiled once. Llama 3.1's long-context
change to the rotary frequencies ("llama3" rope scaling) is left out: it changes which
numbers are computed, not how many.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import torch
import torch.nn.functional as F

from .attention import rope_decode_attention
from .matvec import matvec


class ConfigError(ValueError):
    """A configuration no model can have (the command turns it into one line)."""


# --8<-- [start:config]
@dataclass(frozen=True)
class Config:
    layers: int = 32
    hidden: int = 4096
    heads: int = 32           # query heads
    kv_heads: int = 8         # key/value heads, each shared by heads // kv_heads
    ffn: int = 14336          # width of the SwiGLU MLP
    vocab: int = 128256
    rope_theta: float = 500000.0
    norm_eps: float = 1e-5

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads
# --8<-- [end:config]

    def __post_init__(self):
        for name in ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ConfigError(f"{name} must be a whole number > 0, got {value!r}")
        if self.hidden % self.heads:
            raise ConfigError(f"{self.heads} heads do not divide the hidden size {self.hidden}")
        if self.heads % self.kv_heads:
            raise ConfigError(f"{self.kv_heads} key/value heads do not divide {self.heads} heads")
        if self.head_dim % 2:
            raise ConfigError(f"rotary embeddings need an even head size, got {self.head_dim}")
        if not self.rope_theta > 0 or not self.norm_eps > 0:
            raise ConfigError("rope_theta and norm_eps must be > 0")

    @property
    def qkv_rows(self) -> int:
        return (self.heads + 2 * self.kv_heads) * self.head_dim

    def linear_shapes(self) -> dict[str, tuple[int, int]]:
        """(out, in) of every matrix a layer multiplies by, and of the output matrix."""
        h = self.hidden
        return {"wqkv": (self.qkv_rows, h), "wo": (h, self.heads * self.head_dim),
                "w13": (2 * self.ffn, h), "w2": (h, self.ffn), "output": (self.vocab, h)}

    def params(self) -> int:
        """Every parameter: embedding, layers, final norm and output matrix."""
        s = self.linear_shapes()
        per_layer = sum(o * i for k, (o, i) in s.items() if k != "output") + 2 * self.hidden
        return self.vocab * self.hidden + self.layers * per_layer + self.hidden + s["output"][0] * self.hidden

    def read_params(self, batch: int = 1) -> int:
        """Parameters one decode step reads: all but the embedding table, of which it reads
        only the rows of the ``batch`` tokens it is given."""
        return self.params() - self.vocab * self.hidden + min(batch, self.vocab) * self.hidden

    def kv_bytes_per_token(self, bytes_per_value: int = 2) -> int:
        """Keys and values of one token, all layers."""
        return 2 * self.layers * self.kv_heads * self.head_dim * bytes_per_value

    def decode_flops(self, batch: int, context: int) -> float:
        """Floating-point operations of one decode step: 2 per weight per token, plus the
        attention of each token over ``context`` cached tokens (scores and weighted sum)."""
        weights = 2.0 * (self.read_params(batch) - batch * self.hidden) * batch
        attention = 4.0 * self.layers * self.heads * self.head_dim * context * batch
        return weights + attention

    def prefill_flops(self, tokens: int) -> float:
        """One prompt of ``tokens`` through every layer (causal attention: half the square) and
        the output matrix for the last token only."""
        s = self.linear_shapes()
        layer_w = sum(o * i for k, (o, i) in s.items() if k != "output")
        attention = 2.0 * self.heads * self.head_dim * tokens * tokens  # 4 T^2 hd / 2
        return self.layers * (2.0 * layer_w * tokens + attention) + 2.0 * self.vocab * self.hidden


PRESETS: dict[str, Config] = {
    "llama-3.1-8b": Config(),
    "tiny": Config(layers=2, hidden=64, heads=4, kv_heads=2, ffn=160, vocab=256),
}


# ------------------------------------------------------------------ the small steps

# --8<-- [start:steps]
def rms_norm(x, weight, eps: float):
    """Scale each vector to unit root-mean-square, then by a learned weight."""
    xf = x.float()
    xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return xf.to(x.dtype) * weight


def add_norm(x, delta, weight, eps: float):
    """The residual connection and the next norm: (x + delta, rms_norm(x + delta))."""
    x = x + delta
    return x, rms_norm(x, weight, eps)


def rotate(x, cos, sin):
    """Rotary embedding: pairs (x_i, x_{i+d/2}) turned by an angle set by position."""
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


def split_rotate(qkv, cos, sin, heads: int, kv_heads: int):
    """Cut the fused projection into queries, keys and values; rotate q and k."""
    b, t, _ = qkv.shape
    d = cos.shape[-1]
    qkv = qkv.view(b, t, heads + 2 * kv_heads, d)
    q, k, v = qkv.split([heads, kv_heads, kv_heads], 2)
    cos, sin = cos[None, :, None, :], sin[None, :, None, :]
    return rotate(q, cos, sin), rotate(k, cos, sin), v


def swiglu(gate_up):
    """silu(gate) * up, the MLP's non-linearity."""
    gate, up = gate_up.chunk(2, dim=-1)
    return F.silu(gate) * up
# --8<-- [end:steps]


_COMPILED: dict = {}


def compiled(name: str):
    """``torch.compile`` of one small step, made once and shared by every model."""
    if name not in _COMPILED:
        # one compiled version per shape (batch, prompt length): allow more than the default 8
        import torch._dynamo
        cfg = torch._dynamo.config
        key = "recompile_limit" if hasattr(cfg, "recompile_limit") else "cache_size_limit"
        setattr(cfg, key, max(getattr(cfg, key), 64))
        _COMPILED[name] = torch.compile(globals()[name], dynamic=False)
    return _COMPILED[name]


def linear(x, w, fast: bool = False):
    """``x @ w.T``: a quantised matrix's own product; for a bf16 matrix, cuBLAS, or with
    ``fast`` and one row of activations the Triton matrix-vector kernel of .matvec."""
    if not isinstance(w, torch.Tensor):
        return w(x)
    return matvec(x, w) if fast else F.linear(x, w)


# ------------------------------------------------------------------ weights and cache

@dataclass
class Layer:
    attn_norm: torch.Tensor
    wqkv: object              # [qkv_rows, hidden]: queries, then keys, then values
    wo: object                # [hidden, heads * head_dim]
    mlp_norm: torch.Tensor
    w13: object               # [2 * ffn, hidden]: gate, then up
    w2: object                # [hidden, ffn]


@dataclass
class KVCache:
    """Keys and values for ``batch`` sequences of up to ``size`` tokens, every layer."""
    k: torch.Tensor           # [layers, batch, kv_heads, size, head_dim]
    v: torch.Tensor
    slots: torch.Tensor       # 0 .. size - 1, to mask the slots not yet written

    @classmethod
    def empty(cls, cfg: Config, batch: int, size: int, device, dtype=torch.bfloat16,
              fill_seed: int | None = None) -> "KVCache":
        """A cache; with ``fill_seed``, filled with random values (not zeros) layer by layer,
        as if ``size`` tokens had been read already."""
        shape = (cfg.layers, batch, cfg.kv_heads, size, cfg.head_dim)
        # zeros, not empty: masked slots get weight 0, and 0 x NaN (stale memory) is NaN
        k = torch.zeros(shape, device=device, dtype=dtype)
        v = torch.zeros(shape, device=device, dtype=dtype)
        if fill_seed is not None:
            g = torch.Generator(device=device).manual_seed(fill_seed)
            for t in (k, v):
                for layer in t:
                    layer.normal_(0.0, 1.0, generator=g)
        return cls(k, v, torch.arange(size, device=device))

    @property
    def nbytes(self) -> int:
        return self.k.nbytes + self.v.nbytes


@dataclass
class Model:
    cfg: Config
    embed: torch.Tensor       # [vocab, hidden]
    layers: list[Layer]
    norm: torch.Tensor
    output: object            # [vocab, hidden]
    max_context: int
    cos: torch.Tensor = field(repr=False, default=None)
    sin: torch.Tensor = field(repr=False, default=None)
    #: one token's rotation, cache write and attention by the split-cache Triton kernels of
    #: .attention (a GPU, bf16)
    fast_decode: bool = False
    #: one token's bf16 matrix products by the Triton kernel of .matvec (a GPU)
    fast_matvec: bool = False
    # the small steps, replaceable by compiled versions (see with_compiled_steps)
    steps: dict = field(repr=False, default_factory=lambda: dict(
        add_norm=add_norm, split_rotate=split_rotate, swiglu=swiglu, rms_norm=rms_norm))

    def __post_init__(self):
        if self.cos is None:
            self.cos, self.sin = rope_tables(self.cfg, self.max_context, self.embed.device,
                                             self.embed.dtype)

    @property
    def device(self):
        return self.embed.device

    @property
    def dtype(self):
        return self.embed.dtype

    def weight_bytes(self) -> int:
        """Bytes of every matrix and norm (a quantised matrix counts its scales too)."""
        def size(w):
            return w.nbytes if isinstance(w, torch.Tensor) else w.nbytes
        total = self.embed.nbytes + self.norm.nbytes + size(self.output)
        for L in self.layers:
            total += sum(size(w) for w in (L.attn_norm, L.wqkv, L.wo, L.mlp_norm, L.w13, L.w2))
        return total

    def read_bytes(self, batch: int = 1) -> int:
        """Bytes of weights one decode step reads: all but the embedding table (only ``batch``
        of its rows)."""
        row = self.embed.nbytes // self.embed.shape[0]
        return self.weight_bytes() - self.embed.nbytes + min(batch, self.cfg.vocab) * row

    @property
    def precision(self) -> str:
        w = self.layers[0].wqkv
        if isinstance(w, torch.Tensor):
            return {torch.bfloat16: "bf16", torch.float16: "fp16"}.get(w.dtype, "fp32")
        return f"int{w.bits}"

    def with_compiled_steps(self) -> "Model":
        """The same model (same weights) with its small elementwise steps fused by
        ``torch.compile``; the matrix products and the attention stay as they are."""
        return replace(self, steps={name: compiled(name) for name in self.steps})

    # --8<-- [start:forward]
    def forward(self, tokens, pos, cache: KVCache, *, prefill: bool = False):
        """Logits of the last position for ``tokens`` [batch, T] at positions ``pos``.

        ``prefill=True``: the prompt starts at position 0 and attends only to itself
        (flash attention, causal). Otherwise (decoding) the new tokens are written into
        the cache and attend to every cached position up to their own.
        """
        cfg, s = self.cfg, self.steps
        b, t = tokens.shape
        x = self.embed[tokens]
        fused = t == 1 and self.fast_decode and not prefill
        cos, sin = (None, None) if fused else (self.cos[pos], self.sin[pos])
        mask = None if prefill or fused else cache.slots[None, :] <= pos[:, None]  # [T, size]
        delta = torch.zeros_like(x)
        fast = self.fast_matvec and not prefill
        for i, L in enumerate(self.layers):
            x, h = s["add_norm"](x, delta, L.attn_norm, cfg.norm_eps)
            qkv = linear(h, L.wqkv, fast)
            if fused:
                # one Triton kernel rotates q and k, writes k and v to the cache, attends
                a = rope_decode_attention(qkv, self.cos, self.sin, cache.k[i], cache.v[i],
                                          pos, cfg.heads)
            else:
                q, k, v = s["split_rotate"](qkv, cos, sin, cfg.heads, cfg.kv_heads)
                q, k, v = (y.transpose(1, 2) for y in (q, k, v))     # [b, heads, t, d]
                cache.k[i].index_copy_(2, pos, k)
                cache.v[i].index_copy_(2, pos, v)
                if prefill:
                    a = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                       enable_gqa=True)
                else:
                    a = grouped_attention(q, cache.k[i], cache.v[i], mask)
                a = a.transpose(1, 2).reshape(b, t, cfg.heads * cfg.head_dim)
            x, h = s["add_norm"](x, linear(a, L.wo, fast), L.mlp_norm, cfg.norm_eps)
            delta = linear(s["swiglu"](linear(h, L.w13, fast)), L.w2, fast)
        x = s["rms_norm"](x[:, -1:] + delta[:, -1:], self.norm, cfg.norm_eps)
        return linear(x, self.output, fast)[:, 0]
    # --8<-- [end:forward]

    __call__ = forward


# --8<-- [start:attention]
def grouped_attention(q, k, v, mask):
    """Attention of q [b, heads, t, d] over a cache k, v [b, kv_heads, size, d].

    The ``heads // kv_heads`` query heads that share a key/value head become extra
    rows of one attention problem: the cache is read once per key/value head, never
    copied.
    """
    b, heads, t, d = q.shape
    kv = k.shape[1]
    g = heads // kv
    q = q.reshape(b, kv, g * t, d)
    m = mask.repeat(g, 1)                                    # [g * t, size]
    a = F.scaled_dot_product_attention(q, k, v, attn_mask=m)
    return a.reshape(b, heads, t, d)
# --8<-- [end:attention]


def naive_attention(q, k, v):
    """Causal attention written out: the full [T, T] score matrix is materialised."""
    d = q.shape[-1]
    scores = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(d))
    t = q.shape[-2]
    causal = torch.ones(t, t, dtype=torch.bool, device=q.device).tril()
    scores = scores.masked_fill(~causal, float("-inf"))
    return torch.softmax(scores.float(), dim=-1).to(q.dtype) @ v


def rope_tables(cfg: Config, size: int, device, dtype):
    """cos and sin of every position's angles, [size, head_dim] (each frequency twice)."""
    d = cfg.head_dim
    inv_freq = cfg.rope_theta ** -(torch.arange(0, d, 2, device=device, dtype=torch.float32) / d)
    angles = torch.arange(size, device=device, dtype=torch.float32)[:, None] * inv_freq
    angles = torch.cat((angles, angles), dim=-1)
    return angles.cos().to(dtype), angles.sin().to(dtype)


def random_model(cfg: Config, *, seed: int = 0, device="cpu", dtype=torch.bfloat16,
                 max_context: int = 2048) -> Model:
    """A model with weights drawn from ``seed``, allocated and drawn on ``device`` in
    ``dtype``, one matrix at a time (no float32 copy of the whole model ever exists).

    Matrices are normal with standard deviation 1/sqrt(inputs), so activations keep their
    scale through the layers; norm weights are near 1; the embedding has unit variance.
    """
    if isinstance(max_context, bool) or not isinstance(max_context, int) or max_context <= 0:
        raise ConfigError(f"max_context must be a whole number > 0, got {max_context!r}")
    g = torch.Generator(device=device).manual_seed(seed)

    def draw(shape, mean=0.0, std=None):
        w = torch.empty(shape, device=device, dtype=dtype)
        return w.normal_(mean, std if std is not None else shape[-1] ** -0.5, generator=g)

    s = cfg.linear_shapes()
    embed = draw((cfg.vocab, cfg.hidden), std=1.0)
    layers = [Layer(draw((cfg.hidden,), 1.0, 0.1), draw(s["wqkv"]), draw(s["wo"]),
                    draw((cfg.hidden,), 1.0, 0.1), draw(s["w13"]), draw(s["w2"]))
              for _ in range(cfg.layers)]
    return Model(cfg, embed, layers, draw((cfg.hidden,), 1.0, 0.1), draw(s["output"]),
                 max_context)


def with_weights(model: Model, convert) -> Model:
    """The same model with every matrix (not the embedding or norms) passed through
    ``convert``: how the quantised models are made."""
    layers = [replace(L, wqkv=convert(L.wqkv), wo=convert(L.wo), w13=convert(L.w13),
                      w2=convert(L.w2)) for L in model.layers]
    return replace(model, layers=layers, output=convert(model.output),
                   steps=dict(model.steps))


def generate(model: Model, prompt, new_tokens: int, cache: KVCache | None = None):
    """Greedy decoding: read ``prompt`` [batch, T] at once, then ``new_tokens`` one at a
    time through the cache. Returns the new tokens [batch, new_tokens]."""
    b, t = prompt.shape
    if t + new_tokens > model.max_context:
        raise ConfigError(f"{t} + {new_tokens} tokens exceed the context of {model.max_context}")
    cache = cache or KVCache.empty(model.cfg, b, model.max_context, model.device, model.dtype)
    pos = torch.arange(t, device=model.device)
    logits = model(prompt, pos, cache, prefill=True)
    out = []
    for i in range(new_tokens):
        nxt = logits.argmax(-1, keepdim=True)
        out.append(nxt)
        if i + 1 < new_tokens:
            logits = model(nxt, torch.tensor([t + i], device=model.device), cache)
    return torch.cat(out, dim=1)


def to_hf_state_dict(model: Model) -> dict:
    """The weights under Hugging Face ``LlamaForCausalLM``'s names (fused matrices split)."""
    cfg = model.cfg
    d = cfg.head_dim
    sd = {"model.embed_tokens.weight": model.embed, "model.norm.weight": model.norm,
          "lm_head.weight": model.output}
    for i, L in enumerate(model.layers):
        p = f"model.layers.{i}."
        q, k, v = L.wqkv.split([cfg.heads * d, cfg.kv_heads * d, cfg.kv_heads * d])
        gate, up = L.w13.chunk(2)
        sd.update({p + "input_layernorm.weight": L.attn_norm,
                   p + "post_attention_layernorm.weight": L.mlp_norm,
                   p + "self_attn.q_proj.weight": q, p + "self_attn.k_proj.weight": k,
                   p + "self_attn.v_proj.weight": v, p + "self_attn.o_proj.weight": L.wo,
                   p + "mlp.gate_proj.weight": gate, p + "mlp.up_proj.weight": up,
                   p + "mlp.down_proj.weight": L.w2})
    return sd
