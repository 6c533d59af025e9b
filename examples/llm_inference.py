# %% [markdown]
# # A language model decoding on one GPU
#
# This script builds a Llama-shaped decoder with weights drawn from a seed
# (`gpukit/llm_inference/model.py`: the 8B shape on an NVIDIA GPU in bf16, a tiny
# one on the CPU in float32), reads a random prompt, decodes a few tokens through
# the KV cache, and checks each new token's logits against recomputing the whole
# sequence without a cache (in float32, with two layers of the model's shape: in
# bf16 the two orders of rounding drift apart through 32 layers of random weights). Then it times one decode step (replayed from a CUDA
# graph on a GPU) and compares the bytes it reads per second with a device copy
# measured in the same run.
#
# Run it: `python examples/llm_inference.py --tokens 8 --json out.json`

# %%
# --8<-- [start:setup]
from __future__ import annotations

import argparse
import json
import sys

import torch

from gpukit import bench, device
from dataclasses import replace

from gpukit.llm_inference import PRESETS, KVCache, random_model

GPU = device.has_gpu() and torch.cuda.is_available()
DEV = "cuda" if GPU else "cpu"
DTYPE = torch.bfloat16 if GPU else torch.float32
# --8<-- [end:setup]


# %% [markdown]
# ## Decode with the cache, check against recomputing
#
# The prompt is read at once (prefill); then each new token reads only itself
# and the cache. Recomputing the whole sequence must give the same logits, up
# to the rounding of the working precision.

# %%
# --8<-- [start:check]
def decode_and_check(model, prompt, new_tokens: int) -> float:
    """Greedy decoding through the cache; the largest relative difference of the
    logits from a full recomputation at each step."""
    b, t = prompt.shape
    dt = model.dtype
    cache = KVCache.empty(model.cfg, b, model.max_context, DEV, dt)
    logits = model(prompt, torch.arange(t, device=DEV), cache, prefill=True)
    seq, worst = prompt, 0.0
    for i in range(new_tokens):
        nxt = logits.argmax(-1, keepdim=True)
        seq = torch.cat([seq, nxt], dim=1)
        logits = model(nxt, torch.tensor([t + i], device=DEV), cache)
        fresh = KVCache.empty(model.cfg, b, model.max_context, DEV, dt)
        full = model(seq, torch.arange(seq.shape[1], device=DEV), fresh, prefill=True)
        if not torch.isfinite(logits).all():
            return float("nan")
        diff = (logits.float() - full.float()).abs().max() / full.float().abs().max()
        worst = max(worst, diff.item())
    return worst
# --8<-- [end:check]


# %% [markdown]
# ## Time one decode step against the copy bandwidth

# %%
# --8<-- [start:time]
def time_step(model, batch: int, context: int, repeat: int) -> dict:
    cache = KVCache.empty(model.cfg, batch, context, DEV, DTYPE, fill_seed=1)
    tokens = torch.randint(0, model.cfg.vocab, (batch, 1), device=DEV)
    pos = torch.tensor([context - 1], device=DEV)
    step = lambda: model(tokens, pos, cache)  # noqa: E731
    if GPU:                                    # replay the step's launches as one graph
        step()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            step()
        step = graph.replay
    t = bench.bench(step, timer="torch" if GPU else "cpu", repeat=repeat)
    nbytes = model.read_bytes(batch) + cache.nbytes
    return {"batch": batch, "context": context, "median_s": t.median_s,
            "tokens_per_s": batch / t.median_s, "gbs": nbytes / t.median_s / 1e9}
# --8<-- [end:time]


# %%
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tokens", type=int, default=6, help="tokens to decode")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--json", metavar="PATH", help="write the results record here")
    args = parser.parse_args(argv)
    if args.tokens < 1 or args.repeat < 1:
        print("--tokens and --repeat must be >= 1", file=sys.stderr)
        return 2
    cfg = PRESETS["llama-3.1-8b" if GPU else "tiny"]
    context = 1024 if GPU else 64
    print(device.describe(device.machine_record()))
    with torch.inference_mode():
        small = random_model(replace(cfg, layers=2), seed=0, device=DEV,
                             dtype=torch.float32, max_context=64)
        prompt = torch.randint(0, cfg.vocab, (2, 16), device=DEV,
                               generator=torch.Generator(device=DEV).manual_seed(1))
        worst = decode_and_check(small, prompt, args.tokens)
        del small
        bound = 1e-3                     # float32, different kernels for the two paths
        ok = worst == worst and worst <= bound
        model = random_model(cfg, seed=0, device=DEV, dtype=DTYPE, max_context=context)
        print(f"cached decoding vs recomputing: largest difference {worst:.2e} "
              f"(bound {bound:g}): {'ok' if ok else 'MISMATCH'}")
        copy = bench.copy_ceiling("torch") if GPU else bench.copy_ceiling("cpu", 2**28)
        rows = [time_step(model, b, context, args.repeat) for b in (1, 8)]
    print(f"{'batch':>5} {'tokens/s':>10} {'GB/s':>8} {'of copy':>8}")
    for r in rows:
        print(f"{r['batch']:>5} {r['tokens_per_s']:>10,.1f} {r['gbs']:>8,.1f} "
              f"{r['gbs'] / copy.gbs:>8.1%}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"example": "llm_inference", "config": cfg.__dict__, "gpu": GPU,
                       "max_rel_diff": worst, "copy_gbs": copy.gbs, "rows": rows,
                       "machine": device.machine_record()}, fh, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(None if "ipykernel" not in sys.modules else []))
