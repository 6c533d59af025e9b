"""Architectures of the models ``gpukit advise --model NAME`` knows, from their published configs.

Each preset keeps the numbers the memory and speed formulas need (layers, hidden size, attention and
key/value heads, the context window: ``max_position_embeddings`` of the config, read from
``context_source`` where ``source`` does not give it) and, for the newer ones, what the parameter count
follows from (MLP width, vocabulary, experts), so :func:`count_params` can count total and active parameters instead of
rounding a headline ("70B"). ``source`` is the config that was read; ``source_date`` the date of the
commit or release it comes from, where known.
"""

# The presets live in gpukit.cloud.meta, where the views read them.
from .meta import (LLAMA_SKUS, LLAMA_SKUS_DATE, PRESETS, PUBLISHED, Preset, count_params)

__all__ = ["LLAMA_SKUS", "LLAMA_SKUS_DATE", "PRESETS", "PUBLISHED", "Preset", "count_params"]
