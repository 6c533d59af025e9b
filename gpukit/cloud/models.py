"""Architectures of the models ``gpukit advise --model NAME`` knows, from their published configs.

Each preset keeps the numbers the memory and speed formulas need (layers, hidden size, attention and
key/value heads, the context window: ``max_position_embeddings`` of the config, read from
``context_source`` where ``source`` does not give it) and, for the newer ones, what the parameter count
follows from (MLP width, vocabulary, experts), so :func:`count_params` can count total and active parameters instead of
rounding a headline ("70B"). ``source`` is the config that was read; ``source_date`` the date of the
commit or release it comes from, where known.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Meta's own list of Llama architectures (dim, n_layers, n_heads, n_kv_heads, vocab, MLP rule),
#: at a fixed commit of github.com/meta-llama/llama-models
LLAMA_SKUS = ("https://github.com/meta-llama/llama-models/blob/364ed4ec2bdcc13ab3acb08e364e843b6322b9ae/"
              "models/sku_list.py")
LLAMA_SKUS_DATE = "2025-02-02"


@dataclass(frozen=True)
class Preset:
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    source: str
    params: float | None = None          # a published total, where the preset has no counting fields
    intermediate: int | None = None      # SwiGLU MLP width (three hidden x intermediate matrices)
    vocab: int | None = None
    experts: int = 1                     # mixture of experts: MLPs per layer ...
    active_experts: int = 1              # ... and how many each token uses
    qkv_bias: bool = False
    tied_embeddings: bool = False
    sliding_window: int | None = None
    source_date: str | None = None
    context: int | None = None           # the longest sequence the model was built for, in tokens
    context_source: str | None = None

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


def _hf(repo: str) -> str:
    return f"https://huggingface.co/{repo}/blob/main/config.json"


PRESETS: dict[str, Preset] = {
    "llama-2-7b": Preset(32, 4096, 32, 32, _hf("meta-llama/Llama-2-7b-hf"), intermediate=11008,
                         vocab=32000, context=4096),
    "llama-2-70b": Preset(80, 8192, 64, 8, LLAMA_SKUS, intermediate=28672, vocab=32000,
                          source_date=LLAMA_SKUS_DATE, context=4096,
                          context_source=_hf("meta-llama/Llama-2-70b-hf")),
    "llama-3-8b": Preset(32, 4096, 32, 8, _hf("meta-llama/Meta-Llama-3-8B"), intermediate=14336,
                         vocab=128256, context=8192),
    "llama-3-70b": Preset(80, 8192, 64, 8, _hf("meta-llama/Meta-Llama-3-70B"), intermediate=28672,
                          vocab=128256, context=8192),
    "llama-3.1-8b": Preset(32, 4096, 32, 8, LLAMA_SKUS, intermediate=14336, vocab=128256,
                           source_date=LLAMA_SKUS_DATE, context=131072,
                           context_source=_hf("meta-llama/Llama-3.1-8B")),
    "llama-3.1-70b": Preset(80, 8192, 64, 8, LLAMA_SKUS, intermediate=28672, vocab=128256,
                            source_date=LLAMA_SKUS_DATE, context=131072,
                            context_source=_hf("meta-llama/Llama-3.1-70B")),
    "llama-3.1-405b": Preset(126, 16384, 128, 8, LLAMA_SKUS, intermediate=53248, vocab=128256,
                             source_date=LLAMA_SKUS_DATE, context=131072,
                             context_source=_hf("meta-llama/Llama-3.1-405B")),
    "mistral-7b": Preset(32, 4096, 32, 8, _hf("mistralai/Mistral-7B-v0.1"), intermediate=14336, vocab=32000,
                         sliding_window=4096, context=32768),
    "mixtral-8x7b": Preset(32, 4096, 32, 8, "https://huggingface.co/mistralai/Mixtral-8x7B-Instruct-v0.1/blob/"
                           "eba92302a2861cdc0098cc54bc9f17cb2c47eb61/config.json",
                           intermediate=14336, vocab=32000, experts=8, active_experts=2,
                           context=32768),
    "qwen2.5-7b": Preset(28, 3584, 28, 4, _hf("Qwen/Qwen2.5-7B"), intermediate=18944, vocab=152064,
                         qkv_bias=True, context=131072),
    "qwen2.5-72b": Preset(80, 8192, 64, 8, _hf("Qwen/Qwen2.5-72B"), intermediate=29568, vocab=152064,
                          qkv_bias=True, context=131072),
}

#: Parameter counts the model makers publish, to check :func:`count_params` against.
PUBLISHED = {
    "mixtral-8x7b": dict(total=46.7e9, active=12.9e9, source="https://mistral.ai/news/mixtral-of-experts/",
                         date="2023-12-11"),
    "llama-3-8b": dict(total=8.03e9, source=_hf("meta-llama/Meta-Llama-3-8B")),
}


def count_params(p: Preset) -> tuple[float, float]:
    """(total, active) parameters of a decoder-only transformer with SwiGLU MLPs.

    Per layer: q and o projections ``2 h (a d)``, k and v ``2 h (kv d)`` (plus their biases where the
    config has them), two norms ``2 h``, ``experts x 3 h i`` for the MLPs and ``h experts`` for the
    router; then the embedding and output matrices ``vocab x h`` (once if tied) and the final norm.
    A token uses ``active_experts`` of the MLPs. A preset without counting fields returns its
    published total for both.
    """
    if p.intermediate is None or p.vocab is None:
        return float(p.params), float(p.params)
    h, d = p.hidden, p.head_dim
    attn = 2 * h * p.heads * d + 2 * h * p.kv_heads * d
    if p.qkv_bias:
        attn += p.heads * d + 2 * p.kv_heads * d
    mlp = 3 * h * p.intermediate
    router = h * p.experts if p.experts > 1 else 0
    embed = p.vocab * h * (1 if p.tied_embeddings else 2) + h
    total = p.layers * (attn + 2 * h + p.experts * mlp + router) + embed
    active = p.layers * (attn + 2 * h + p.active_experts * mlp + router) + embed
    return float(total), float(active)
